"""bench.kernels runs end to end on a tiny problem and prints well-formed records."""

from __future__ import annotations

import pytest

from bench.records import read_records

pytest.importorskip("statsmodels")


def test_quick_bench_prints_every_case(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.kernels import main

    argv = "--quick --series 3 --window 120 --days 5 --subset 2 --beta-window 10 --pool 6 --pool-sample 3"
    assert main(argv.split() + ["--busy-repeats", "1", "--busy-days", "4"]) == 0
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
    ]
