"""Exact threshold search equals a float64 brute-force oracle (hnswlib's recall-test style)."""

from __future__ import annotations

import numpy as np
import pytest
from bank_synth import clustered

from bank.errors import BankConfigError
from bank.exact import ExactConfig, ExactThresholdIndex, brute_force_threshold, exact_sims


def _check(idx: ExactThresholdIndex, x: np.ndarray, queries: np.ndarray, taus, limit=None) -> int:
    total = 0
    for tau in taus:
        for q in queries:
            want = brute_force_threshold(x if limit is None else x[:limit], q, tau)
            got = idx.search(q, tau, limit)
            assert np.array_equal(got[0], want[0]), (tau, set(got[0]) ^ set(want[0]))
            assert np.array_equal(got[1], want[1])
            total += len(want[0])
    return total


@pytest.mark.parametrize(
    ("n", "dim", "common", "stages"),
    [
        (300, 16, 0.0, (8, 16)),
        (4000, 48, 0.0, (32, 64)),
        (12000, 64, 1.0, (16, 48)),
        (12000, 64, 0.5, (0,)),
        (6000, 40, 0.8, (40,)),
        (6000, 37, 0.6, (5, 11, 30)),
        (5000, 24, 0.7, (8, 16, 100)),
    ],
)
def test_exact_matches_brute_force(n: int, dim: int, common: float, stages: tuple[int, ...]) -> None:
    x = clustered(n + 20, dim, clusters=60, spread=0.9, common=common, seed=n + dim)
    idx = ExactThresholdIndex(dim, ExactConfig(min_rows=1000, stage_dims=stages))
    idx.add(x[: n // 3])
    idx.add(x[n // 3 : n])  # second add is coded with the first fit's basis or triggers a refit
    found = _check(idx, x[:n], x[n:], taus=(0.3, 0.5, 0.65, 0.8, 0.95))
    assert found > 0  # the taus are not all trivially empty
    assert (idx.fitted_rows > 0) == (n >= 1000 and stages[0] > 0)


def test_exact_rows_after_fit_and_snapshot_limit() -> None:
    x = clustered(6100, 32, clusters=40, spread=0.8, common=0.7, seed=3)
    idx = ExactThresholdIndex(32, ExactConfig(min_rows=2000, stage_dims=(8, 16), refit_growth=10.0))
    idx.add(x[:4000])
    idx.add(x[4000:6000])  # coded with the basis fitted on the first 4000 (no refit yet)
    assert idx.fitted_rows == 4000 and len(idx) == 6000
    _check(idx, x[:6000], x[6000:], taus=(0.5, 0.7), limit=None)
    _check(idx, x[:6000], x[6000:], taus=(0.5, 0.7), limit=4500)
    _check(idx, x[:6000], x[6000:], taus=(0.5,), limit=100)


def test_exact_prunes_on_clustered_data() -> None:
    x = clustered(20050, 64, clusters=200, spread=0.5, common=0.0, seed=5)
    idx = ExactThresholdIndex(64, ExactConfig(min_rows=1000, stage_dims=(16, 32)))
    idx.add(x[:20000])
    dotted = []
    for q in x[20000:]:
        idx.search(q, 0.65)
        dotted.append(idx.last_stats.rows_dotted)
    assert np.mean(dotted) < 0.2 * 20000  # bounds exclude most rows without a dot product
    assert idx.last_stats.rows_bounded == 20000


def test_exact_sims_row_independent() -> None:
    x = clustered(1000, 384, clusters=5, spread=1.0, common=0.3, seed=9)
    q = x[0]
    whole = exact_sims(x, q)
    assert all(exact_sims(x[i : i + 1], q)[0] == whole[i] for i in range(0, 1000, 37))


def test_exact_rejects_bad_shapes() -> None:
    idx = ExactThresholdIndex(8)
    with pytest.raises(BankConfigError, match="shape"):
        idx.add(np.zeros((3, 7), dtype=np.float32))
    with pytest.raises(BankConfigError, match="query"):
        idx.search(np.zeros(5), 0.5)
    assert idx.search(np.ones(8) / np.sqrt(8), 0.5)[0].size == 0


def test_exact_matches_brute_force_without_jit() -> None:
    """The numba kernels run as plain Python (NUMBA_DISABLE_JIT=1) and give the same sets."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import numpy as np, sys; sys.path.insert(0, sys.argv[1]);"
        "from bank_synth import clustered;"
        "from bank.exact import ExactConfig, ExactThresholdIndex, brute_force_threshold;"
        "x = clustered(2505, 24, 20, 0.7, 0.8, seed=2);"
        "idx = ExactThresholdIndex(24, ExactConfig(min_rows=500, stage_dims=(6, 12))); idx.add(x[:2500]);"
        "assert idx.fitted_rows == 2500;"
        "bad = [(t, i) for t in (0.5, 0.7) for i, q in enumerate(x[2500:])"
        " if not np.array_equal(idx.search(q, t)[0], brute_force_threshold(x[:2500], q, t)[0])];"
        "assert not bad, bad"
    )
    here = Path(__file__).resolve().parent
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(here.parents[1])}
    res = subprocess.run(
        [sys.executable, "-c", code, str(here)], env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]


def test_canonical_dot_has_no_fast_math() -> None:
    """The jitted canonical product equals the same arithmetic in plain Python bit for bit
    (no reassociation, no fused multiply-add), for dims with and without a remainder of 8."""
    from bank._jit import dot64

    rng = np.random.default_rng(11)
    for d in (1, 7, 8, 64, 383):
        x = rng.standard_normal((20, d)).astype(np.float32)
        q = rng.standard_normal(d).astype(np.float32).astype(np.float64)
        assert [dot64(r, q) for r in x] == [dot64.py_func(r, q) for r in x]


def test_exact_holds_for_rows_outside_the_fitted_code_range() -> None:
    """Rows added after the fit whose coordinates the int8 codes cannot represent (clipped)
    still get true bounds: the clipping error is part of the coding error."""
    base = clustered(3000, 32, clusters=30, spread=0.6, common=0.5, seed=21)
    base[:2] *= np.float32(3.0)  # long rows in the fit: the off-basis code range covers norm 3
    odd = clustered(400, 32, clusters=3, spread=0.2, common=0.0, seed=22) * np.float32(3.0)
    idx = ExactThresholdIndex(32, ExactConfig(min_rows=1000, stage_dims=(8, 16), refit_growth=10.0))
    idx.add(base)
    idx.add(odd)
    assert idx.fitted_rows == 3000
    assert (np.abs(idx._codes1[:, 3000:3400]) == 127).any()  # some coordinates were clipped
    x = np.concatenate([base, odd])
    queries = np.concatenate([odd[:10] / 3.0, base[2:12]])
    assert _check(idx, x, queries, taus=(0.5, 0.9, 1.5, 2.5)) > 0


def test_exact_rejects_non_finite() -> None:
    idx = ExactThresholdIndex(4)
    with pytest.raises(BankConfigError, match="finite"):
        idx.add(np.array([[np.nan, 0, 0, 1]], dtype=np.float32))
    idx.add(np.eye(4, dtype=np.float32))
    with pytest.raises(BankConfigError, match="finite"):
        idx.search(np.array([np.inf, 0, 0, 0]), 0.5)
    with pytest.raises(BankConfigError, match="stage_dims"):
        ExactConfig(stage_dims=(8, 4))
    with pytest.raises(BankConfigError, match="stage_dims"):
        ExactConfig(stage_dims=())


def test_exact_parallel_parts_match_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    """Searches split over threads (small parts forced here) give the oracle's results, with
    snapshot limits that cut a part short."""
    import bank.exact as exact_mod

    monkeypatch.setattr(exact_mod, "_PARALLEL_MIN", 1500)
    x = clustered(9020, 40, clusters=50, spread=0.8, common=0.6, seed=31)
    idx = ExactThresholdIndex(40, ExactConfig(min_rows=1000, stage_dims=(8, 24), threads=3))
    idx.add(x[:9000])
    assert len(idx._parts(9000)) == 3
    _check(idx, x[:9000], x[9000:], taus=(0.4, 0.7, 0.9))
    _check(idx, x[:9000], x[9000:], taus=(0.6,), limit=5000)
    idx.close()
    _check(idx, x[:9000], x[9000:9005], taus=(0.6,))  # restarts its helper threads
    idx.close()


def _embedding_like(n: int, seed: int) -> np.ndarray:
    from bench.retrieval.synth import synthetic_bank

    return synthetic_bank(n, 384, seed=seed)  # calibrated to MiniLM embeddings of TAT-QA


def test_exact_on_embedding_like_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default configuration on 384-d vectors shaped like sentence embeddings, split over
    two threads, equals the oracle at the paper's tau, above and below it."""
    import bank.exact as exact_mod

    monkeypatch.setattr(exact_mod, "_PARALLEL_MIN", 10_000)
    x = _embedding_like(30_010, seed=5)
    idx = ExactThresholdIndex(384)
    idx.add(x[:30_000])
    assert idx.fitted_rows == 30_000 and len(idx._parts(30_000)) == 2
    assert _check(idx, x[:30_000], x[30_000:], taus=(0.5, 0.65, 0.8, 0.9)) > 0
    assert idx.last_stats.rows_dotted < 0.05 * 30_000


@pytest.mark.slow
def test_exact_on_embedding_like_vectors_300k() -> None:
    x = _embedding_like(300_020, seed=6)
    idx = ExactThresholdIndex(384)
    idx.add(x[:200_000])
    idx.add(x[200_000:300_000])  # refit at 1.5x
    assert idx.fitted_rows == 300_000
    assert _check(idx, x[:300_000], x[300_000:], taus=(0.65, 0.85)) > 0
    assert _check(idx, x[:300_000], x[300_000:], taus=(0.65,), limit=123_457) > 0
