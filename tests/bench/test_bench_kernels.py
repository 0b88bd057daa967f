"""bench.kernels runs end to end on a tiny problem and prints its JSON lines."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("statsmodels")


def test_quick_bench_prints_rescreen_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.kernels import main

    argv = [
        "--quick",
        "--series",
        "3",
        "--window",
        "120",
        "--days",
        "5",
        "--subset",
        "2",
        "--beta-window",
        "10",
    ]
    assert main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    cases = {line["case"]: line for line in lines}
    assert {
        "meta",
        "jit_compile",
        "one_window",
        "pairs_one_window",
        "rescreen",
        "rolling_beta",
        "done",
    } <= set(cases)
    rescreen = cases["rescreen"]
    assert rescreen["rescreen_ratio"] > 0 and rescreen["cells"] == 3 * 5
    assert rescreen["statsmodels_cells_measured"] == 2 and rescreen["statsmodels_extrapolated"] is True
    assert rescreen["max_abs_dstat"] <= 1e-9 and rescreen["max_abs_dpvalue"] <= 1e-9
    assert cases["rolling_beta"]["first_pair_max_abs_err_vs_exact_ours"] <= 1e-9
