"""Figures of one serving point, and the saturation rule of the concurrency sweep (pure code)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.serving.drivers import Sample

__all__ = ["percentile", "summarize", "should_stop", "saturation_point", "VLLM_FIGURES", "vllm_figures"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated ``q`` quantile (0..1) of ``values``; ``None`` when empty."""
    if not values:
        return None
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _ms(v: float | None) -> float | None:
    return None if v is None else 1e3 * v


def summarize(wall_s: float, samples: Sequence[Sample]) -> dict[str, Any]:
    """The figures of one point. Names carry their units; a figure a backend cannot observe
    (TTFT of the batch API, prefix-cache hits of transformers, schema validity without a schema)
    is ``None``."""
    if wall_s <= 0 or not samples:
        raise ValueError(f"a point needs wall_s > 0 and samples; got {wall_s} and {len(samples)}")
    out_tokens = sum(s.completion_tokens for s in samples)
    prompt = sum(s.prompt_tokens for s in samples)
    ttft = [s.ttft_s for s in samples if s.ttft_s is not None]
    itl = [x for s in samples for x in s.itl_s]
    lat = [s.latency_s for s in samples]
    cached = [s.cached_tokens for s in samples if s.cached_tokens is not None]
    valid = [s.valid for s in samples if s.valid is not None]
    return {
        "output_tokens_per_s": out_tokens / wall_s,
        "requests_per_s": len(samples) / wall_s,
        "ttft_p50_ms": _ms(percentile(ttft, 0.5)),
        "ttft_p99_ms": _ms(percentile(ttft, 0.99)),
        "itl_p50_ms": _ms(percentile(itl, 0.5)),
        "itl_p99_ms": _ms(percentile(itl, 0.99)),
        "latency_p50_s": percentile(lat, 0.5),
        "latency_p99_s": percentile(lat, 0.99),
        "prefix_cache_hit_rate": (sum(cached) / prompt) if cached and prompt else None,
        "schema_valid_share": (sum(valid) / len(valid)) if valid else None,
        "mean_prompt_tokens": prompt / len(samples),
        "mean_output_tokens": out_tokens / len(samples),
        "finish_length_share": sum(s.finish == "length" for s in samples) / len(samples),
        "output_tokens": out_tokens,
        "requests": len(samples),
        "wall_s": wall_s,
    }


def should_stop(throughputs: Sequence[float], margin: float, patience: int = 1) -> bool:
    """True when each of the newest ``patience`` points failed to raise output tokens/s by more
    than ``margin`` (a fraction) over the best point before it: the sweep has stopped paying.
    A patience of 2 keeps one noisy point on a shared machine from ending the sweep early."""
    if patience < 1:
        raise ValueError(f"patience={patience}; allowed: >= 1")
    if len(throughputs) < patience + 1:
        return False
    for k in range(len(throughputs) - patience, len(throughputs)):
        if throughputs[k] > (1.0 + margin) * max(throughputs[:k]):
            return False
    return True


def saturation_point(levels: Sequence[int], throughputs: Sequence[float], margin: float) -> int:
    """The smallest concurrency whose output tokens/s is within ``margin`` of the best measured:
    where adding concurrency stops paying."""
    if not levels or len(levels) != len(throughputs):
        raise ValueError("levels and throughputs must be non-empty and of equal length")
    best = max(throughputs)
    return next(c for c, t in zip(levels, throughputs) if t >= best / (1.0 + margin))


#: vLLM's serving-benchmark figures, under its names (``vllm bench serve --save-result``):
#: throughputs per second of the benchmark's duration, latencies in ms as mean, median and p99.
VLLM_FIGURES = (
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    *(f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("mean", "median", "p99")),
)


def vllm_figures(wall_s: float, samples: Sequence[Sample]) -> dict[str, float]:
    """:data:`VLLM_FIGURES` of one point of our driver, computed as vLLM's benchmark computes
    them (vllm/benchmarks/serve.py, ``calculate_metrics``): TPOT per request is (E2EL - TTFT) /
    (output tokens - 1) over requests with more than one output token, ITL pools every gap
    between streamed chunks, percentiles interpolate linearly, throughputs divide by the
    point's wall time (first request sent to last reply)."""
    if wall_s <= 0 or not samples:
        raise ValueError(f"a point needs wall_s > 0 and samples; got {wall_s} and {len(samples)}")
    out_tokens = sum(s.completion_tokens for s in samples)
    prompt = sum(s.prompt_tokens for s in samples)
    series = {
        "ttft": [s.ttft_s for s in samples if s.ttft_s is not None],
        "tpot": [
            (s.latency_s - s.ttft_s) / (s.completion_tokens - 1)
            for s in samples
            if s.ttft_s is not None and s.completion_tokens > 1
        ],
        "itl": [x for s in samples for x in s.itl_s],
        "e2el": [s.latency_s for s in samples],
    }
    out: dict[str, float] = {
        "request_throughput": len(samples) / wall_s,
        "output_throughput": out_tokens / wall_s,
        "total_token_throughput": (prompt + out_tokens) / wall_s,
    }
    for name, values in series.items():
        out[f"mean_{name}_ms"] = 1e3 * sum(values) / len(values) if values else 0.0
        out[f"median_{name}_ms"] = 1e3 * (percentile(values, 0.5) or 0.0)
        out[f"p99_{name}_ms"] = 1e3 * (percentile(values, 0.99) or 0.0)
    return out
