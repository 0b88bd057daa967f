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
