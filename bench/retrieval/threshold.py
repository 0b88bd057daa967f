"""Threshold retrieval benchmark: exact threshold index and hnswlib vs numpy brute force.

For each bank size: build times, p50/p99 query latency, completeness of threshold results
against an exact oracle, and the speed-up over float32 numpy brute force measured in the same
run. Vectors are synthetic clustered unit vectors shaped like sentence embeddings (a shared
direction, topic clusters, noise; see --common/--spread); with --real, MiniLM embeddings of
the questions and context heads of a QA items file (``--qa``, the project's item format) are
measured too. Prints one
:mod:`bench.records` JSON line per figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bank.exact import ExactConfig, ExactThresholdIndex, exact_sims
from bank.retrieval import threshold_hits
from bank.schema import RetrievalConfig
from bench._args import BenchParser, run_main
from bench.records import RecordWriter
from bench.retrieval.synth import embedding_stats, synthetic_bank

if TYPE_CHECKING:
    from bank.index import HnswIndex

__all__ = ["HELP", "main", "parser", "synthetic_bank", "embedding_stats"]

log = logging.getLogger(__name__)
_QA = Path("localfin_data") / "qa" / "tatqa_dev.jsonl"


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
    from bank.index import HnswConfig, HnswIndex  # hnswlib: only where it is used (gpu_check has none)

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
    name: str,
    x: np.ndarray,
    queries: np.ndarray,
    taus: Sequence[float],
    args: argparse.Namespace,
    w: RecordWriter,
    headline: bool = False,
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
        _emit_measure(w, rec, headline=headline and tau == taus[0])
        out.append(rec)
    return out


def _emit_measure(w: RecordWriter, rec: dict, headline: bool) -> None:
    """One bank size and tau as records: p50/p99 latency of each method against brute force,
    completeness against the float64 oracle, build times."""
    params = {
        "bank": rec["bank"],
        "n": rec["n"],
        "dim": rec["dim"],
        "tau": rec["tau"],
        "queries": rec["queries"],
        "mean_results": rec["mean_results"],
    }
    brute = rec["latency_ms"]["brute"]
    w.metric("threshold_search", "brute_p50", brute["p50"], "ms", method="numpy brute force", **params)
    labels = {
        "capped_k5": "retrieval (cosine >= tau, k_max 5)",
        "exact": "exact full threshold set",
        "hnsw": "hnswlib alone (widening k)",
    }
    for method in ("capped_k5", "exact", "hnsw"):
        for q in ("p50", "p99"):
            w.metric(
                "threshold_search",
                f"{method}_{q}",
                rec["latency_ms"][method][q],
                "ms",
                reference="numpy brute force",
                reference_value=brute[q],
                lower_is_better=True,
                method=labels[method],
                headline=headline and q == "p50" and method == "capped_k5",
                label=f"bank retrieval, {rec['n']:,} entries, tau {rec['tau']}",
                **params,
            )
    for method, cold in rec.get("latency_cold_ms", {}).items():
        if method != "brute":
            w.metric(
                "threshold_search_cold_cache",
                f"{method}_p50",
                cold["p50"],
                "ms",
                reference="numpy brute force (cold cache)",
                reference_value=rec["latency_cold_ms"]["brute"]["p50"],
                lower_is_better=True,
                method=labels[method],
                **params,
            )
    for key, value in rec["completeness"].items():
        unit = "count" if key == "exact_extra" else "fraction"
        w.metric("threshold_search", f"completeness_{key}", value, unit, **params)
    w.metric("threshold_search", "capped_k5_identical", rec["capped_k5_identical_frac"], "fraction", **params)
    w.metric("threshold_search", "exact_rows_dotted", rec["exact_rows_dotted_frac"], "fraction", **params)
    for key in ("hnsw", "exact"):
        if rec["build_s"][key] is not None:
            w.metric("build", f"{key}_build", rec["build_s"][key], "s", **params)


def _real(args: argparse.Namespace, w: RecordWriter) -> list[dict]:
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
    w.metric("embed", "minilm_rate", rate, "texts/s", texts=len(texts), threads=args.threads)
    _emit_stats(w, "tatqa-minilm", embedding_stats(v))
    n_q = min(args.queries, len(v) // 4)
    return _measure("tatqa-minilm", v[n_q:], v[:n_q], args.taus, args, w)


def _emit_stats(w: RecordWriter, name: str, stats: dict[str, float]) -> None:
    for key, value in stats.items():
        w.metric("embedding_stats", key, value, "", vectors=name)


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """Threshold retrieval of the experience bank: the exact threshold index and hnswlib against numpy
brute force.

For each bank size: build times, p50 and p99 query latency, completeness of the threshold results
against an exact oracle, and the speed-up over float32 numpy brute force, measured in the same run.
The vectors are synthetic unit vectors shaped like sentence embeddings (see --common, --spread);
with --real and --qa, MiniLM embeddings of a QA items file are measured too. One JSON line per
figure.

    localfin bench retrieval --quick
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    p = BenchParser(prog="localfin bench retrieval", description=HELP)
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
    return p


def main(argv: Sequence[str] | None = None, writer: RecordWriter | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.queries = [2400, 20_000], min(args.queries, 30)

    def gen(n: int) -> np.ndarray:
        return synthetic_bank(
            n, args.dim, args.clusters, args.common, args.between, args.within, args.beta, args.seed
        )

    w = writer or RecordWriter("retrieval")
    if args.dim >= 64:
        _emit_stats(w, "synthetic", embedding_stats(gen(1668)))
    for n in args.sizes:
        x = gen(n + args.queries)
        _measure("synthetic", x[args.queries :], x[: args.queries], args.taus, args, w, n == max(args.sizes))
        del x
    if args.real:
        _real(args, w)
    return 0


if __name__ == "__main__":
    run_main(main)
