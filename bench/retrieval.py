"""Threshold retrieval benchmark: exact threshold index and hnswlib vs numpy brute force.

For each bank size: build times, p50/p99 query latency, completeness of threshold results
against an exact oracle, and the speed-up over float32 numpy brute force measured in the same
run. Vectors are synthetic clustered unit vectors shaped like sentence embeddings (a shared
direction, topic clusters, noise; see --common/--spread); with --real, MiniLM embeddings of
../shared/data/qa/tatqa_dev.jsonl questions + context heads are measured too. Prints JSON lines.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bank.exact import ExactConfig, ExactThresholdIndex, exact_sims
from bank.index import HnswConfig, HnswIndex
from bank.retrieval import threshold_hits
from bank.schema import RetrievalConfig
from bench._args import BenchParser, run_main

__all__ = ["main", "synthetic_bank", "embedding_stats"]

log = logging.getLogger(__name__)
_QA = Path(__file__).resolve().parents[2] / "shared" / "data" / "qa" / "tatqa_dev.jsonl"


def synthetic_bank(
    n: int,
    dim: int,
    clusters: int = 100,
    common: float = 0.8,
    between: float = 1.0,
    within: float = 0.7,
    beta: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """Unit float32 rows shaped like sentence embeddings: a shared direction (weight
    ``common``), topic centres and within-topic noise, both Gaussian with a power-law spectrum
    (variance of the i-th direction of a random basis ~ i^-beta), scaled by ``between`` and
    ``within``. Defaults were chosen to match MiniLM embeddings of TAT-QA dev questions
    (top-64 energy, mean pairwise cosine, nearest-neighbour cosine; `stats` records compare)."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    scale = np.arange(1, dim + 1) ** (-beta / 2)
    scale /= np.sqrt((scale**2).sum())
    mix = (basis * scale).T.astype(np.float32)  # z @ mix = basis @ (scale * z)
    g = rng.standard_normal(dim)
    g /= np.linalg.norm(g)
    centres = (between * rng.standard_normal((clusters, dim)).astype(np.float32)) @ mix + np.float32(
        common
    ) * g
    out = np.empty((n, dim), dtype=np.float32)
    for lo in range(0, n, 65_536):
        m = min(n, lo + 65_536) - lo
        blk = (
            centres[rng.integers(0, clusters, m)]
            + (within * rng.standard_normal((m, dim), dtype=np.float32)) @ mix
        )
        out[lo : lo + m] = blk / np.linalg.norm(blk, axis=1, keepdims=True)
    return out


def embedding_stats(v: np.ndarray) -> dict[str, float]:
    """Shape statistics of a sample of unit rows (use ~2k rows): energy in the top 16/64
    uncentred principal directions, mean pairwise and mean nearest-neighbour cosine, fraction
    of pairs >= 0.65, norm of the mean vector."""
    x = np.asarray(v, dtype=np.float64)
    ev = np.linalg.eigvalsh(x.T @ x)[::-1]
    cum = np.cumsum(ev) / ev.sum()
    sims = x @ x.T
    pairs = sims[np.triu_indices(len(x), 1)]
    np.fill_diagonal(sims, -np.inf)
    return {
        "energy_top16": round(float(cum[15]), 3),
        "energy_top64": round(float(cum[63]), 3),
        "mean_cos": round(float(pairs.mean()), 3),
        "frac_pairs_ge_0.65": round(float((pairs >= 0.65).mean()), 4),
        "mean_nn_cos": round(float(sims.max(1).mean()), 3),
        "mean_vector_norm": round(float(np.linalg.norm(x.mean(0))), 3),
    }


def _oracle(x: np.ndarray, q: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact (labels, sims) by descending similarity: float32 candidates within 1e-4 of tau,
    decided by the float64 dot product."""
    cand = np.flatnonzero(x @ q >= tau - 1e-4)
    sims = exact_sims(x[cand], q)
    keep = sims >= tau
    labels, sims = cand[keep], sims[keep]
    order = np.lexsort((labels, -sims))
    return labels[order], sims[order]


def _capped(hnsw: HnswIndex, exact: ExactThresholdIndex, q: np.ndarray, tau: float, k: int) -> np.ndarray:
    """The paper's retrieval (cosine >= tau, at most k; every entry its own source) through the
    same function the bank uses: hnswlib only seeds the threshold, the exact index decides."""
    n = len(exact)
    hits = threshold_hits(
        q,
        RetrievalConfig(tau=tau, k_max=k),
        n,
        search=exact.search,
        knn=hnsw.knn,
        vectors=exact.vectors,
        sources=range(n),
    )
    return np.array([h.entry_id for h in hits], dtype=np.int64)


def _hnsw_threshold(index: HnswIndex, q: np.ndarray, tau: float, ef: int) -> np.ndarray:
    """hnswlib alone: widen k (doubling, ef >= k) until the k-th similarity falls below tau."""
    k = 64
    while True:
        labels, sims = index.knn(q, k, ef=max(ef, k))
        if len(labels) < k or sims[-1] < tau:
            return labels[sims >= tau]
        k *= 2


def _pct(ms: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(ms, 50)), 3), "p99": round(float(np.percentile(ms, 99)), 3)}


def _timed(fn, queries: np.ndarray, evict: np.ndarray | None = None) -> tuple[list[float], list]:
    """Run ``fn`` over all queries back to back (one method at a time, so BLAS worker threads
    spinning after a brute-force call do not slow the next method); ms per query and results.
    With ``evict``, a buffer larger than the CPU caches is summed before each (untimed) query,
    so every query starts cold, as one does between model calls in an agent loop."""
    ms, out = [], []
    for q in queries:
        if evict is not None:
            evict.sum()
        t0 = time.perf_counter()
        out.append(fn(q))
        ms.append(1e3 * (time.perf_counter() - t0))
    return ms, out


def _hnsw_for(x: np.ndarray, name: str, args: argparse.Namespace) -> tuple[HnswIndex, float | None]:
    """Build the hnsw index (seconds) or load it from --cache (None) when built before."""
    n, dim = x.shape
    path = None
    if args.cache:
        digest = hashlib.blake2b(
            np.ascontiguousarray(x[:: max(1, n // 4096)]).tobytes(), digest_size=8
        ).hexdigest()
        key = f"{name}_n{n}_d{dim}_m{args.m}_efc{args.ef_construction}_{digest}.hnsw"  # keyed by the rows
        path = Path(args.cache) / key
        if path.exists():
            return HnswIndex.load(path, dim, HnswConfig(m=args.m, threads=args.threads)), None
    t0 = time.perf_counter()
    hnsw = HnswIndex(
        dim,
        HnswConfig(m=args.m, ef_construction=args.ef_construction, initial_capacity=n, threads=args.threads),
    )
    for lo in range(0, n, 100_000):
        hnsw.add(x[lo : lo + 100_000])
    built = time.perf_counter() - t0
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        hnsw.save(path)
    return hnsw, built


def _measure(
    name: str, x: np.ndarray, queries: np.ndarray, taus: Sequence[float], args: argparse.Namespace
) -> list[dict]:
    n, dim = x.shape
    evict = np.ones(args.evict_mib << 17) if args.evict_mib else None  # float64: MiB * 2**17 values
    hnsw, t_hnsw = _hnsw_for(x, name, args)
    t0 = time.perf_counter()
    exact = ExactThresholdIndex(dim, ExactConfig(min_rows=args.min_rows, stage_dims=args.stage_dims))
    exact.add(x)
    t_exact = time.perf_counter() - t0
    out = []
    for q in queries[:3]:  # warm up: numba compile/cache load, page-in, BLAS threads
        exact.search(q, taus[0])
        _capped(hnsw, exact, q, taus[0], 5)
        np.flatnonzero(x @ q >= taus[0])
    for tau in taus:
        oracle = [_oracle(x, q, tau)[0] for q in queries]
        lat: dict[str, list[float]] = {}
        lat["brute"], _ = _timed(lambda q: np.flatnonzero(x @ q >= tau), queries)  # noqa: B023

        def run_exact(q: np.ndarray) -> tuple[np.ndarray, float]:
            labels, _ = exact.search(q, tau)  # noqa: B023
            return labels, exact.last_stats.rows_dotted / n

        lat["exact"], ex = _timed(run_exact, queries)
        lat["hnsw"], hn = _timed(lambda q: _hnsw_threshold(hnsw, q, tau, args.ef), queries)  # noqa: B023
        lat["capped_k5"], cp = _timed(lambda q: _capped(hnsw, exact, q, tau, 5), queries)  # noqa: B023
        cold: dict[str, list[float]] = {}
        if evict is not None:
            cold["brute"], _ = _timed(lambda q: np.flatnonzero(x @ q >= tau), queries, evict)  # noqa: B023
            cold["exact"], _ = _timed(lambda q: exact.search(q, tau), queries, evict)  # noqa: B023
            cold["capped_k5"], _ = _timed(lambda q: _capped(hnsw, exact, q, tau, 5), queries, evict)  # noqa: B023
        total = sum(len(w) for w in oracle)
        found_exact = sum(len(set(w.tolist()) & set(e[0].tolist())) for w, e in zip(oracle, ex))
        extra = sum(len(set(e[0].tolist()) - set(w.tolist())) for w, e in zip(oracle, ex))
        found_hnsw = sum(len(set(w.tolist()) & set(h.tolist())) for w, h in zip(oracle, hn))
        capped_ok = sum(int(np.array_equal(c, w[:5])) for w, c in zip(oracle, cp))
        p50 = {k: float(np.percentile(v, 50)) for k, v in lat.items()}
        rec = {
            "bench": "retrieval",
            "bank": name,
            "n": n,
            "dim": dim,
            "tau": tau,
            "queries": len(queries),
            "build_s": {
                "hnsw": None if t_hnsw is None else round(t_hnsw, 2),
                "hnsw_cached": t_hnsw is None,
                "exact": round(t_exact, 2),
            },
            "latency_ms": {k: _pct(v) for k, v in lat.items()},
            "mean_results": round(total / len(queries), 2),
            "completeness": {
                "exact": 1.0 if total == 0 else found_exact / total,
                "exact_extra": extra,
                f"hnsw_ef{args.ef}": 1.0 if total == 0 else round(found_hnsw / total, 5),
            },
            "capped_k5_identical_frac": capped_ok / len(queries),
            "exact_rows_dotted_frac": round(float(np.mean([e[1] for e in ex])), 5),
            "speedup_vs_brute_p50": {
                k: round(p50["brute"] / p50[k], 2) for k in ("exact", "hnsw", "capped_k5")
            },
        }
        if cold:
            c50 = {k: float(np.percentile(v, 50)) for k, v in cold.items()}
            rec["latency_cold_ms"] = {k: _pct(v) for k, v in cold.items()}
            rec["speedup_vs_brute_cold_p50"] = {
                k: round(c50["brute"] / c50[k], 2) for k in ("exact", "capped_k5")
            }
        print(json.dumps(rec), flush=True)
        out.append(rec)
    return out


def _real(args: argparse.Namespace) -> list[dict]:
    from bank.embedder import MiniLMEmbedder
    from bank.schema import query_text

    path = Path(args.qa)
    if not path.exists():
        log.warning("%s absent: skipping real embeddings", path)
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: args.real_limit] if args.real_limit else rows
    texts = [query_text(r["question"], "\n".join(r.get("paragraphs", []))) for r in rows]
    emb = MiniLMEmbedder(threads=args.threads)
    emb.embed(texts[:4])  # load + warm up
    t0 = time.perf_counter()
    v = emb.embed(texts)
    rate = len(texts) / (time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "bench": "retrieval",
                "embed": "minilm",
                "texts": len(texts),
                "texts_per_s": round(rate, 1),
                "threads": args.threads,
            }
        ),
        flush=True,
    )
    print(json.dumps({"bench": "retrieval", "stats": "tatqa-minilm", **embedding_stats(v)}), flush=True)
    n_q = min(args.queries, len(v) // 4)
    return _measure("tatqa-minilm", v[n_q:], v[:n_q], args.taus, args)


def main(argv: Sequence[str] | None = None) -> int:
    p = BenchParser(prog="localfin bench retrieval", description=__doc__)
    p.add_argument(
        "--sizes", type=lambda s: [int(v) for v in s.split(",")], default=[2400, 100_000, 1_000_000]
    )
    p.add_argument("--quick", action="store_true", help="sizes 2400,20000 and fewer queries")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--taus", type=lambda s: [float(v) for v in s.split(",")], default=[0.65])
    p.add_argument("--clusters", type=int, default=100)
    p.add_argument("--common", type=float, default=0.8, help="weight of the shared direction")
    p.add_argument("--between", type=float, default=1.0, help="spread of topic centres")
    p.add_argument("--within", type=float, default=0.7, help="spread inside a topic")
    p.add_argument("--beta", type=float, default=1.0, help="power-law exponent of the spectrum")
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=100)
    p.add_argument("--ef", type=int, default=200)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--min-rows", type=int, default=20_000)
    p.add_argument(
        "--stage-dims",
        type=lambda s: tuple(int(v) for v in s.split(",")),
        default=ExactConfig().stage_dims,
        help="basis prefix of each bound stage, e.g. 16,64,128",
    )
    p.add_argument(
        "--evict-mib",
        type=int,
        default=0,
        help="also time cold queries: sum a buffer this large (MiB, > CPU caches) before each",
    )
    p.add_argument("--real", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--real-limit", type=int, default=0, help="use only this many QA items (0 = all)")
    p.add_argument("--qa", default=str(_QA))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default="", help="folder to keep built hnsw indexes in (reused when present)")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.queries = [2400, 20_000], min(args.queries, 30)

    def gen(n: int) -> np.ndarray:
        return synthetic_bank(
            n, args.dim, args.clusters, args.common, args.between, args.within, args.beta, args.seed
        )

    if args.dim >= 64:
        print(
            json.dumps({"bench": "retrieval", "stats": "synthetic", **embedding_stats(gen(1668))}), flush=True
        )
    for n in args.sizes:
        x = gen(n + args.queries)
        _measure("synthetic", x[args.queries :], x[: args.queries], args.taus, args)
        del x
    if args.real:
        _real(args)
    return 0


if __name__ == "__main__":
    run_main(main)
