"""The retrieval benchmark runs end to end on a tiny bank and reports complete exact results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import retrieval


def test_bench_retrieval_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    rc = retrieval.main(
        [
            "--sizes",
            "1500",
            "--queries",
            "5",
            "--dim",
            "32",
            "--clusters",
            "20",
            "--no-real",
            "--taus",
            "0.6,0.8",
            "--min-rows",
            "500",
            "--stage-dims",
            "8,16",
            "--ef-construction",
            "20",
            "--evict-mib",
            "8",
        ]
    )
    assert rc == 0
    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["tau"] for r in recs] == [0.6, 0.8]
    for r in recs:
        assert r["n"] == 1500 and r["completeness"]["exact"] == 1.0 and r["completeness"]["exact_extra"] == 0
        assert r["capped_k5_identical_frac"] == 1.0
        assert r["latency_ms"]["brute"]["p50"] > 0 and r["speedup_vs_brute_p50"]["exact"] > 0
        assert set(r["speedup_vs_brute_cold_p50"]) == {"exact", "capped_k5"}
    assert recs[0]["mean_results"] > 0


def test_synthetic_bank_shape() -> None:
    x = retrieval.synthetic_bank(100, 16, clusters=4, seed=0)
    assert x.shape == (100, 16) and x.dtype == np.float32
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
