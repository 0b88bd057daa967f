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
    ("n", "dim", "common", "pca"),
    [(300, 16, 0.0, 48), (4000, 48, 0.0, 48), (12000, 64, 1.0, 48), (12000, 64, 0.5, 0)],
)
def test_exact_matches_brute_force(n: int, dim: int, common: float, pca: int) -> None:
    x = clustered(n + 20, dim, clusters=60, spread=0.9, common=common, seed=n + dim)
    idx = ExactThresholdIndex(dim, ExactConfig(min_partition=1000, pca_dims=pca))
    idx.add(x[: n // 3])
    idx.add(x[n // 3 : n])  # second add goes to the unpartitioned tail or triggers a rebuild
    found = _check(idx, x[:n], x[n:], taus=(0.3, 0.5, 0.65, 0.8, 0.95))
    assert found > 0  # the taus are not all trivially empty
    if n >= 1000:
        assert idx._parted > 0


def test_exact_tail_and_snapshot_limit() -> None:
    x = clustered(6100, 32, clusters=40, spread=0.8, common=0.7, seed=3)
    idx = ExactThresholdIndex(32, ExactConfig(min_partition=2000, rebuild_growth=10.0))
    idx.add(x[:4000])
    idx.add(x[4000:6000])  # stays in the tail (growth limit not reached)
    assert idx._parted == 4000 and len(idx) == 6000
    _check(idx, x[:6000], x[6000:], taus=(0.5, 0.7), limit=None)
    _check(idx, x[:6000], x[6000:], taus=(0.5, 0.7), limit=4500)
    _check(idx, x[:6000], x[6000:], taus=(0.5,), limit=100)


def test_exact_prunes_on_clustered_data() -> None:
    x = clustered(20050, 64, clusters=200, spread=0.5, common=0.0, seed=5)
    idx = ExactThresholdIndex(64, ExactConfig(min_partition=1000))
    idx.add(x[:20000])
    dotted = []
    for q in x[20000:]:
        idx.search(q, 0.65)
        dotted.append(idx.last_stats.rows_dotted)
    assert np.mean(dotted) < 0.2 * 20000  # bounds exclude most rows without a dot product


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
        "idx = ExactThresholdIndex(24, ExactConfig(min_partition=500, pca_dims=12)); idx.add(x[:2500]);"
        "assert idx._parted == 2500;"
        "bad = [(t, i) for t in (0.5, 0.7) for i, q in enumerate(x[2500:])"
        " if not np.array_equal(idx.search(q, t)[0], brute_force_threshold(x[:2500], q, t)[0])];"
        "assert not bad, bad"
    )
    here = Path(__file__).resolve().parent
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(here.parents[1])}
    res = subprocess.run([sys.executable, "-c", code, str(here)], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
