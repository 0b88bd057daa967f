"""Analytics: definitions, paper's closed forms on a constructed bank, agreement with retrieval."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from bank_synth import clustered

from bank.analytics import (
    change_fraction,
    expected_change_fraction,
    expected_jaccard,
    hit_rate,
    jaccard,
    mean_entries,
    retrieval_sets,
    similarity_matrix,
    snapshot_table,
    stratified_order,
)
from bank.retrieval import retrieve_vector
from bank.schema import NewEntry, RetrievalConfig
from bank.store import ExperienceBank


def test_definitions() -> None:
    a = [frozenset(), frozenset({1}), frozenset({1, 2})]
    b = [frozenset(), frozenset({1, 3}), frozenset({1, 2})]
    assert hit_rate(a) == 2 / 3 and mean_entries(a) == 1.0
    assert jaccard(a, b) == (1 + 0.5 + 1) / 3  # empty/empty counts as 1
    assert change_fraction(a, b) == 1 / 3


def _bernoulli_bank(n_entries: int, n_queries: int, p: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Queries are basis vectors; entry e is above tau=0.2 for query j iff a Bernoulli(p) draw
    says so (coordinate 0.25 vs 0), the rest of its norm sits in one extra dimension."""
    rng = np.random.default_rng(seed)
    hits = rng.random((n_entries, n_queries)) < p
    while (bad := hits.sum(1) > 15).any():  # 16 * 0.25^2 = 1: cannot fit more; rare
        hits[bad] = rng.random((int(bad.sum()), n_queries)) < p
    x = np.zeros((n_entries, n_queries + 1))
    x[:, :n_queries] = 0.25 * hits
    x[:, n_queries] = np.sqrt(1.0 - (x**2).sum(1))
    q = np.eye(n_queries, n_queries + 1)
    return q.astype(np.float32), x.astype(np.float32)


def test_closed_forms_on_constructed_bank() -> None:
    n_q, p, dn = 400, 0.02, 120
    q, x = _bernoulli_bank(1320, n_q, p, seed=7)
    sims = similarity_matrix(q, x)
    sources = [f"s{i}" for i in range(len(x))]
    sizes = [240, 360, 600, 720, 1200, 1320]
    rows = {r.n: r for r in snapshot_table(sims, sources, sizes, tau=0.2)}
    for n0, n1 in ((240, 360), (600, 720), (1200, 1320)):
        a = retrieval_sets(sims, sources, np.arange(len(x)), n0, 0.2)
        b = retrieval_sets(sims, sources, np.arange(len(x)), n1, 0.2)
        assert all(s <= t for s, t in zip(a, b))  # threshold sets only grow
        jq = np.array([1.0 if not (s or t) else len(s & t) / len(s | t) for s, t in zip(a, b)])
        # tolerance: 4 standard errors of the mean over the queries, plus a floor
        tol_j = 4 * jq.std(ddof=1) / np.sqrt(n_q) + 0.005
        assert abs(rows[n1].jaccard_prev - expected_jaccard(n0, dn, p)) < tol_j
        assert abs(rows[n1].jaccard_prev - expected_jaccard(n0, dn)) < tol_j + 0.01  # paper form, P0 small
        c = expected_change_fraction(p, dn)
        tol_c = 4 * np.sqrt(c * (1 - c) / n_q)
        assert abs(rows[n1].change_prev - c) < tol_c
        assert abs(rows[n0].mean_entries - n0 * p) < 4 * np.sqrt(n0 * p / n_q) + 0.05  # E_n = n p


def test_analytics_sets_equal_bank_retrieval(tmp_path: Path) -> None:
    x = clustered(1260, 32, 25, 0.8, 0.5, seed=3)
    rng = np.random.default_rng(1)
    sources = [f"s{v}" for v in rng.integers(0, 700, 1200)]
    bank = ExperienceBank.open(tmp_path)
    bank.add([NewEntry(s, "d", f"q{i}") for i, s in enumerate(sources)], x[:1200], "m")
    sims = similarity_matrix(x[1200:], bank.vectors())
    for k_max in (None, 5):
        for n in (0, 400, 1200):
            sets = retrieval_sets(sims, sources, np.arange(1200), n, 0.65, k_max)
            cfg = RetrievalConfig(tau=0.65, k_max=k_max)
            want = [frozenset(h.entry_id for h in retrieve_vector(bank, q, cfg, n)) for q in x[1200:]]
            assert sets == want


def test_stratified_order_draws_evenly() -> None:
    ds = ["a"] * 50 + ["b"] * 30 + ["c"] * 20
    order = stratified_order(ds, seed=42)
    assert sorted(order.tolist()) == list(range(100))
    first = [ds[i] for i in order[:60]]
    assert first.count("a") == first.count("b") == first.count("c") == 20
    assert np.array_equal(order, stratified_order(ds, seed=42))
