"""bench.kernels.speed runs end to end on a tiny problem and prints well-formed records."""

from __future__ import annotations

import numpy as np
import pytest

from bench.records import read_records

pytest.importorskip("statsmodels")


def test_quick_bench_prints_every_case(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.kernels.speed import main

    argv = "--quick --series 3 --window 120 --days 5 --subset 2 --beta-window 10 --pool 6 --pool-sample 3"
    universe = "--universe-tickers 7 --universe-days 6 --universe-window 90 --universe-sample 3"
    universe += " --decade-tickers 6 --decade-dates 3 --decade-window 90 --decade-sample 2"
    assert main(argv.split() + universe.split() + ["--busy-repeats", "1", "--busy-days", "4"]) == 0
    recs = list(read_records(capsys.readouterr().out.splitlines()))
    by = {(r.case, r.metric, r.params.get("load")): r for r in recs}
    assert {r.case for r in recs} == {
        "jit_compile",
        "one_window",
        "pairs_one_window",
        "rescreen",
        "rolling_beta",
        "large_pool",
        "busy_core",
        "universe",
        "decade",
    }
    assert all(r.benchmark == "kernels" for r in recs)
    rescreen = by[("rescreen", "time", None)]
    assert rescreen.ratio > 0 and rescreen.params["cells"] == 3 * 5
    assert rescreen.params["statsmodels_cells_measured"] == 2 and rescreen.params["statsmodels_extrapolated"]
    assert by[("rescreen", "max_abs_dstat_vs_statsmodels", None)].value <= 1e-9
    assert by[("rescreen", "max_abs_dpvalue_vs_statsmodels", None)].value <= 1e-9
    pool = by[("large_pool", "time", None)]
    assert pool.params["pairs"] == 15 and pool.params["statsmodels_pairs_measured"] == 3
    assert by[("large_pool", "max_abs_dstat_vs_statsmodels", None)].value <= 1e-9
    assert by[("rolling_beta", "first_pair_max_abs_err_vs_exact_ours", None)].value <= 1e-9
    for load in ("idle", "busy"):
        par = by[("busy_core", "parallel_time", load)]
        assert par.reference["name"] == "one thread" and par.ratio > 0
        assert par.params["cells"] == 4 * 3 and par.params["busy_processes"] == (load == "busy")
    assert [r.case for r in recs if r.headline] == [
        "one_window",
        "rescreen",
        "rolling_beta",
        "large_pool",
        "busy_core",
        "universe",
        "decade",
    ]
    uni = by[("universe", "time", None)]
    assert uni.params["pairs"] == 21 and uni.params["days"] == 6 and uni.params["cells"] == 126
    assert uni.params["synthetic_tickers"] == 7 and uni.params["speed_index_us"] > 0
    assert uni.params["exact_pair_sums"] == 21 and uni.params["slid_pair_sums"] == 21 * 6
    assert uni.ratio > 0 and uni.reference["name"].startswith("per-date")
    assert by[("universe", "max_abs_dpvalue_vs_per_date", None)].value <= 1e-10
    assert by[("universe", "lag_agreement_vs_per_date", None)].value == 1.0
    assert by[("universe", "max_abs_dpvalue_vs_statsmodels", None)].value <= 1e-9
    assert by[("universe", "peak_memory", None)].unit == "GiB"
    assert by[("universe", "peak_memory", None)].value >= by[("universe", "memory_before_run", None)].value
    # the bound: counted operations, the measured peak, the fraction reached, the decade
    ops = by[("universe", "ops_per_pair_date", None)]
    assert ops.params["counted"] and ops.value == pytest.approx(sum(ops.params["by_kind"].values()), rel=1e-3)
    assert ops.params["by_kind"]["factor"] > 0 and ops.params["by_kind"]["pair_slide"] > 0
    assert by[("universe", "peak", None)].value > 0
    frac = by[("universe", "fraction_of_peak", None)].value
    assert frac == pytest.approx(
        by[("universe", "achieved", None)].value / by[("universe", "peak", None)].value, rel=1e-4
    )
    assert by[("universe", "decade_time_extrapolated", None)].params["decade"]["tickers"] == 3000
    dec = by[("decade", "time", None)]
    assert dec.params["pairs"] == 15 and dec.params["dates"] == 3 and dec.params["slice"]
    assert dec.ratio > 0 and dec.reference["name"].startswith("per-date")
    assert by[("decade", "max_abs_dpvalue_vs_per_date", None)].value <= 1e-10
    assert by[("decade", "lag_agreement_vs_per_date", None)].value == 1.0
    assert by[("decade", "max_abs_dpvalue_vs_statsmodels", None)].value <= 1e-9
    assert by[("decade", "ops_per_pair_date", None)].value > 0
    assert by[("decade", "fraction_of_peak", None)].value > 0
    assert by[("decade", "parquet_bytes", None)].value > 0


def test_universe_panel_takes_real_tickers_first(shared_data: object) -> None:
    from pathlib import Path

    from bench.kernels.universe import universe_panel

    files = [
        Path(str(shared_data)) / "prices" / f
        for f in ("staples_energy_daily_2003_2023.csv", "tech_daily_2003_2023.csv")
    ]
    if not all(f.is_file() for f in files):
        pytest.skip("shared price files absent")
    panel, names = universe_panel(45, 2771, 0, files)
    assert panel.shape == (2771, 45) and np.isfinite(panel).all()
    # every staples/energy and tech ticker has ten years and a half up to 2023-10-27
    assert len(names) == 37 and {"KO", "XOM", "AAPL", "META"} <= set(names)
    assert names.index("KO") < names.index("AAPL")  # file order, then the rest is synthetic
    # a span longer than the files: no real ticker, all synthetic
    assert universe_panel(3, 6000, 0, files)[1] == []
