"""The report puts a paper figure beside the row of ours that matches it, and only that one."""

from __future__ import annotations

import json
from pathlib import Path

from agent.reproduce.report import match_figures, write_report
from agent.reproduce.spec import load_repro


def test_figures_match_our_rows(tmp_path: Path) -> None:
    cfg = load_repro("finacumen_table2")
    rows = [
        {"set": "FinMMR Easy", "variant": "base", "accuracy_pct": 12.5},
        {"set": "FinMMR Easy", "variant": "ft_fm", "k_max": "5", "accuracy_pct": 50.0},
        {"set": "demo as FinMMR Easy", "variant": "ft", "accuracy_pct": 99.0},  # another set: no match
    ]
    got = {m["row"]: (m["paper"], m["ours"]) for m in match_figures(cfg.figures, rows)}
    assert got == {
        "Base only": (59.17, 12.5),
        "Base + FT": (74.08, None),
        "Base + FT + FM (full FinAcumen)": (81.67, 50.0),
    }
    md = write_report(cfg, tmp_path / "full", rows, mode="full", notes=["a note"])
    text = md.read_text(encoding="utf-8")
    assert "SMOKE RUN" not in text and "- a note" in text
    assert "| Base only | FinMMR Easy | 59.17 | accuracy % | 12.50 |" in text
    doc = json.loads((tmp_path / "full" / "reproduction.json").read_text(encoding="utf-8"))
    assert doc["mode"] == "full" and doc["paper_vs_ours"][2]["ours"] == 50.0
    # a smoke run never puts its figures beside the paper's, even where a row would match
    md = write_report(cfg, tmp_path / "smoke", rows, mode="smoke")
    text = md.read_text(encoding="utf-8")
    assert "SMOKE RUN" in text and "| Base only | FinMMR Easy | 59.17 | accuracy % | - |" in text


def test_tau_figures_match_sweep_rows() -> None:
    cfg = load_repro("finacumen_tau_sweep")
    rows = [
        {"set": "Global", "tau": "0.65", "bank_n": "120", "hit_rate_pct": 40.0, "hit_rate": 0.4},
        {"set": "Global", "tau": "0.7", "bank_n": "120", "hit_rate_pct": 1.0, "hit_rate": 0.01},
        {"set": "BizBench SEC-NUM", "tau": "0.65", "bank_n": "120", "hit_rate_pct": 30.0, "hit_rate": 0.3},
        {"set": "BizBench SEC-NUM", "tau": "0.65", "bank_n": "1200", "hit_rate_pct": 60.0, "hit_rate": 0.6,
         "mean_entries": 4.5, "jaccard_prev": 0.9},
    ]  # fmt: skip
    got = [
        (m["row"], m["column"], m["ours"]) for m in match_figures(cfg.figures, rows) if m["ours"] is not None
    ]
    # Fig. 3a's global hit rate, and Table 5's BizBench row (H, E, J at n = 1200, tau 0.65)
    assert got == [
        ("tau = 0.65, bank n = 120", "hit rate (all queries)", 40.0),
        ("Table 5 BizBench", "H_1200", 0.6),
        ("Table 5 BizBench", "E_1200", 4.5),
        ("Table 5 BizBench", "J_1080,1200", 0.9),
    ]


def test_every_matched_paper_figure_names_a_metric_of_ours() -> None:
    from agent.reproduce.report import OURS_METRIC
    from agent.reproduce.spec import load_all

    for cfg in load_all():
        for f in cfg.figures:
            assert not f.match or f.unit in OURS_METRIC, (cfg.name, f.row, f.column, f.unit)
            if f.column.startswith("FinMME"):  # FinMME's figures are its six-dimension Avg
                assert f.unit == "FinMME Avg %", (cfg.name, f.row)


def test_moira_rows_state_compounding_pairing_and_a_zero_variance_sharpe(tmp_path: Path) -> None:
    from agent.pairs.market.metrics import RETURN_NOTE, ZERO_VARIANCE_NOTE
    from agent.reproduce.moira.run import MoiraOutcome, moira_rows

    cell = tmp_path / "matrix" / "q32-think" / "main"
    cell.mkdir(parents=True)
    flat = {
        "cumulative_return": 0.0,
        "sharpe": None,
        "max_drawdown": 0.0,
        "n_transitions": 74,
        "annual_volatility": 0.0,
    }
    moving = {
        "cumulative_return": 0.05,
        "sharpe": 1.2,
        "max_drawdown": -0.02,
        "n_transitions": 74,
        "annual_volatility": 0.1,
    }
    ctrl_id = "a3-no-consolidation"
    runs = [
        {"run_id": f"{v}-no_beta-s{s}", "metrics": flat if v == ctrl_id else moving, "extra": {}}
        for v in ("full", ctrl_id) for s in (0, 1, 2)
    ]  # fmt: skip
    (cell / "summary.json").write_text(json.dumps({"runs": runs}), encoding="utf-8")
    (cell / "manifest.json").write_text(json.dumps({"config": {"pairing": "paired"}}), encoding="utf-8")
    rows = moira_rows(MoiraOutcome(tmp_path / "matrix", (cell,), "matrix", ()))
    by = {r["variant"]: r for r in rows}
    assert (
        by["full"]["pairing"] == "paired" and by["full"]["sharpe"] == 1.2 and "sharpe_note" not in by["full"]
    )
    ctrl = by["a3-no-consolidation"]
    assert ctrl["sharpe"] == 0.0 and ctrl["sharpe_note"] == "†"
    assert by["full minus a3-no-consolidation"]["return_pct"] == 5.0
    text = write_report(load_repro("moira_table6_a3"), tmp_path / "out", rows, mode="full").read_text("utf-8")
    assert RETURN_NOTE in text and ZERO_VARIANCE_NOTE in text


def test_the_pairing_note_says_what_a_beta_against_no_beta_difference_is() -> None:
    from agent.reproduce.moira.run import pairing_note

    main = load_repro("moira_table3_main").document
    assert "paired comparison" in pairing_note(main)
    independent = {**main, "experiment": {**main["experiment"], "pairing": "independent"}}
    assert "compares independent runs" in pairing_note(independent)
    # A3 runs one exposure per backbone: nothing is compared across exposures
    assert "no effect here" in pairing_note(load_repro("moira_table6_a3").document)
