"""The retrieval benchmark runs end to end on a tiny bank and reports complete exact results."""

from __future__ import annotations

import numpy as np
import pytest

from bench.records import read_records
from bench.retrieval import synth, threshold


def test_bench_retrieval_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    argv = (
        "--sizes 1500 --queries 5 --dim 32 --clusters 20 --no-real --taus 0.6,0.8 --min-rows 500 "
        "--stage-dims 8,16 --ef-construction 20 --evict-mib 8"
    )
    assert threshold.main(argv.split()) == 0
    recs = list(read_records(capsys.readouterr().out.splitlines()))
    assert {r.benchmark for r in recs} == {"retrieval"}
    search = [r for r in recs if r.case == "threshold_search"]
    assert sorted({r.params["tau"] for r in search}) == [0.6, 0.8]
    by = {(r.metric, r.params["tau"]): r for r in search}
    for tau in (0.6, 0.8):
        assert (
            by[("completeness_exact", tau)].value == 1.0 and by[("completeness_exact_extra", tau)].value == 0
        )
        assert by[("capped_k5_identical", tau)].value == 1.0
        assert by[("brute_p50", tau)].value > 0 and by[("exact_p50", tau)].ratio > 0
        assert by[("capped_k5_p50", tau)].reference["name"] == "numpy brute force"
    cold = {r.metric for r in recs if r.case == "threshold_search_cold_cache"}
    assert cold == {"exact_p50", "capped_k5_p50"}
    assert [r.params["tau"] for r in recs if r.headline] == [0.6]  # largest size, first tau
    assert by[("capped_k5_p50", 0.6)].params["mean_results"] > 0


def test_synthetic_bank_shape() -> None:
    x = synth.synthetic_bank(100, 16, clusters=4, seed=0)
    assert x.shape == (100, 16) and x.dtype == np.float32
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
