"""Figures of one serving point, and the saturation rule of the concurrency sweep (pure code)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.serving_drivers import Sample

__all__ = ["percentile", "summarize", "should_stop", "saturation_point"]


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
