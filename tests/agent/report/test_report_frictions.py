"""The paper-protocol and with-frictions rows of the report and of the matrix summary, on real
baseline runs of the synthetic market under both exposures: the as-run row is the results
table's, the frictions row is the run's tape re-settled with the frictions (computed here
independently), a folder without a tape shows n/a with a note."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_report_page import cells, parse

from agent.pairs.market.execution import FRICTIONS, resettle
from agent.pairs.market.records import read_json
from agent.pairs.market.tables import fill_metrics
from agent.pairs.market.tape import read_decisions, read_prices
from agent.report.build import build_report
from agent.report.matrix_summary import matrix_settings, summary_markdown

POOL = ["GRNF", "HRBK", "KSTR", "MLWD", "NRGX", "OKSN", "PTRV", "SLTN"]


@pytest.fixture(scope="module")
def runs(synthetic_store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agent.data.store import MarketStore
    from agent.pairs.baselines.eg_z import EGZConfig
    from agent.pairs.baselines.equal_weight import EqualWeightConfig
    from agent.pairs.baselines.fixed_direction import LONG_SHORT_CONFIG, SHORT_LONG_CONFIG
    from agent.pairs.baselines.runner import run_all

    out = tmp_path_factory.mktemp("fr")
    with MarketStore(synthetic_store_path) as store:
        run_all(
            store,
            pool=POOL,
            train=("2016-11-01", "2016-12-30"),
            test=("2017-01-02", "2017-02-28"),
            out_dir=out,
            configs=(LONG_SHORT_CONFIG, SHORT_LONG_CONFIG, EqualWeightConfig(), EGZConfig(entry_z=1.0)),
        )
    return out


def _frictions(run_dir: Path):
    decisions = read_decisions(run_dir / "decisions.parquet")
    fills = resettle(decisions, read_prices(run_dir / "prices.parquet"), FRICTIONS)
    return fill_metrics(decisions, fills), math.fsum(f.cost for f in fills)


def test_each_setting_shows_its_paper_row_and_its_frictions_row(runs: Path) -> None:
    page = parse(build_report(runs).html)
    rows = page.tables["results frictions"]
    results = {r[0]["data-run"]: cells(r) for r in page.tables["results"]}
    assert len(rows) == 2 * len(results) == 16  # 4 methods x 2 exposures, two rows each
    seen = set()
    for attrs, row in rows:
        run = attrs["data-run"]
        got = cells((attrs, row))
        texts = [t for _, t in row]
        if attrs["data-settlement"] == "as-run":
            assert "as run (close, no costs)" in texts
            for name in ("cumulative_return", "sharpe", "max_drawdown", "annual_volatility", "sortino"):
                a, b = got[name][0], results[run][name][0]
                assert (math.isnan(a) and math.isnan(b)) or a == b, name
            assert got["costs"][0] == 0.0
        else:
            assert f"with frictions ({FRICTIONS.label()})" in texts
            m, costs = _frictions(runs / "runs" / run)
            assert got["cumulative_return"][0] == pytest.approx(m.cumulative_return, abs=1e-15)
            assert got["sharpe"][0] == pytest.approx(m.sharpe, abs=1e-12)
            assert got["max_drawdown"][0] == pytest.approx(m.max_drawdown, abs=1e-15)
            assert got["costs"][0] == pytest.approx(costs, abs=1e-15)
            # every run that held a position paid for it (Equal-Weight: its entry)
            counts = read_json(runs / "runs" / run / "metrics.json")["metrics"]["action_counts"]
            held = counts.get("LONG_SHORT", 0) + counts.get("SHORT_LONG", 0)
            assert (costs > 0) == (held > 0 or not any(counts.values()))
            seen.add(run)
    assert len(seen) == 8


def test_a_folder_without_a_tape_reads_na_with_a_note(runs: Path, tmp_path: Path) -> None:
    import shutil

    old = tmp_path / "old"
    shutil.copytree(runs, old, ignore=shutil.ignore_patterns("report"))
    for d in (old / "runs").iterdir():
        (d / "decisions.parquet").unlink()
    page = parse(build_report(old).html)
    fr = [r for r in page.tables["results frictions"] if r[0]["data-settlement"] == "frictions"]
    assert fr and all(math.isnan(cells(r)["cumulative_return"][0]) for r in fr)
    assert "No tape (decisions.parquet, prices.parquet) for:" in "".join(page.text)


def test_the_matrix_summary_carries_the_frictions_row(runs: Path) -> None:
    rows = matrix_settings(runs)
    assert len(rows) == 8
    for r in rows:
        m, _ = _frictions(runs / "runs" / r["run_id"])
        assert r["frictions"]["cumulative_return"] == pytest.approx(m.cumulative_return, abs=1e-15)
    md = summary_markdown("m", [], rows)
    assert md.count(f"with frictions ({FRICTIONS.label()})") == 8
