"""Tokens by call type and fallbacks of the runs that called a model, as pure functions.

Sources (written by the agents, read here): ``metrics.json`` ``extra.tokens_by_call_type``
(training + test, by call type) and the test phase's share (Moira: ``extra.test.tokens_by_call_type``;
FinMem: ``extra.tokens_by_phase.test``); ``trace.parquet`` rows of model calls (one row per call,
with its prompt and completion tokens and, when the reply was not used, the fallback reason);
the experiment's engine totals (:class:`agent.report.load.ExperimentInfo`). Per finalized step
means per settled test transition, the paper's Table 10 unit; the per-call ranges are its Table 9
(input, output and total tokens of one call, each range taken on its own, as the paper's
"ranges are reported independently").

Table 10's two cycle estimates (D.2), as the paper computes them: Moira's is its test total
divided by the finalized test steps and multiplied by the 23-step cycle
(:func:`tokens_per_cycle`); FinMem's averages its first complete 23-step cycles of the test
(:func:`finmem_tokens_per_cycle`: 13 of them in the paper's 303-step test, the four remaining
steps left out), from the chat tokens of its test calls per session step
(``extra.test_tokens_by_step``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.report.load import ExperimentInfo, RunData

__all__ = [
    "VALIDATION_PERIOD",
    "TokenRow",
    "FallbackRow",
    "token_rows",
    "CallRange",
    "call_ranges",
    "per_call_ranges",
    "tokens_per_cycle",
    "finmem_tokens_per_cycle",
    "engine_token_rows",
    "fallback_rows",
]

#: Sessions between validation boundaries, the paper's Table 10 cycle.
VALIDATION_PERIOD = 23


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# -- tokens ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenRow:
    """Tokens of one call type of one run (``call_type`` ``total`` for the sum): calls, prompt,
    completion and cached tokens over training and test (cached None when the run does not
    record it); the test phase's prompt + completion tokens per finalized test transition (None
    when the run does not split tokens by phase); the smallest and largest prompt (input),
    completion (output) and prompt + completion (total) tokens of one call, each range on its
    own (None without a trace of the calls; None on the total row)."""

    call_type: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    test_tokens_per_step: float | None
    prompt_per_call: tuple[int, int] | None = None
    completion_per_call: tuple[int, int] | None = None
    total_per_call: tuple[int, int] | None = None


def _by_type(doc: Any) -> dict[str, dict[str, Any]]:
    return {str(k): v for k, v in doc.items() if isinstance(v, Mapping)} if isinstance(doc, Mapping) else {}


def _test_tokens(extra: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    phases = extra.get("tokens_by_phase")  # FinMem: {"train": {...}, "test": {...}}
    if isinstance(phases, Mapping):
        return _by_type(phases.get("test", {}))
    test = extra.get("test")  # Moira: extra.test.tokens_by_call_type
    if isinstance(test, Mapping) and isinstance(test.get("tokens_by_call_type"), Mapping):
        return _by_type(test["tokens_by_call_type"])
    return None


def _n(v: Mapping[str, Any], key: str) -> int:
    x = v.get(key, 0)
    return int(x) if _finite(x) else 0


@dataclass(frozen=True)
class CallRange:
    """One call type's per-call tokens over the traced calls (Table 9): how many calls, and the
    (min, max) of one call's input (prompt), output (completion) and total tokens, each range
    taken on its own."""

    calls: int
    input: tuple[int, int]
    output: tuple[int, int]
    total: tuple[int, int]


def call_ranges(trace: Any, phase: str | None = None) -> dict[str, CallRange]:
    """Per call type, :class:`CallRange` over the trace rows of model calls (rows with a request
    key), training and test or only ``phase``."""
    if trace is None or not {"call_type", "request_key", "prompt_tokens", "completion_tokens"} <= set(
        trace.columns
    ):
        return {}
    calls = trace[trace["request_key"].astype(str) != ""]
    if phase is not None and "phase" in calls.columns:
        calls = calls[calls["phase"].astype(str) == phase]
    out = {}
    for ct in sorted({str(c) for c in calls["call_type"]}):
        sel = calls[calls["call_type"].astype(str) == ct]
        p = [int(x) for x in sel["prompt_tokens"]]
        c = [int(x) for x in sel["completion_tokens"]]
        t = [a + b for a, b in zip(p, c)]
        out[ct] = CallRange(len(p), (min(p), max(p)), (min(c), max(c)), (min(t), max(t)))
    return out


def per_call_ranges(trace: Any) -> dict[str, tuple[tuple[int, int], tuple[int, int]]]:
    """Per call type, (min, max) of the prompt tokens and of the completion tokens of one call,
    over the trace rows of model calls (rows with a request key), training and test."""
    return {ct: (r.input, r.output) for ct, r in call_ranges(trace).items()}


def token_rows(run: RunData, n_transitions: int) -> list[TokenRow]:
    """Token rows of a run that called a model (empty otherwise), sorted by call type, then the
    total row. ``n_transitions``: the run's finalized test transitions."""
    totals = _by_type(run.extra.get("tokens_by_call_type"))
    if not totals:
        return []
    test = _test_tokens(run.extra)
    ranges = call_ranges(run.trace)
    has_cached = all("cached_tokens" in v for v in totals.values())
    rows = []
    for ct in sorted(totals):
        v = totals[ct]
        per_step = None
        if test is not None and n_transitions > 0:
            t = test.get(ct, {})
            per_step = (_n(t, "prompt_tokens") + _n(t, "completion_tokens")) / n_transitions
        rng = ranges.get(ct)
        rows.append(
            TokenRow(
                ct,
                _n(v, "calls"),
                _n(v, "prompt_tokens"),
                _n(v, "completion_tokens"),
                _n(v, "cached_tokens") if has_cached else None,
                per_step,
                rng.input if rng else None,
                rng.output if rng else None,
                rng.total if rng else None,
            )
        )
    per = [r.test_tokens_per_step for r in rows]
    rows.append(
        TokenRow(
            "total",
            sum(r.calls for r in rows),
            sum(r.prompt_tokens for r in rows),
            sum(r.completion_tokens for r in rows),
            sum(r.cached_tokens or 0 for r in rows) if has_cached else None,
            sum(p for p in per if p is not None) if all(p is not None for p in per) else None,
        )
    )
    return rows


def tokens_per_cycle(rows: list[TokenRow], period: int = VALIDATION_PERIOD) -> float | None:
    """Test tokens per validation cycle of ``period`` finalized steps (the total row's tokens per
    step times ``period``: the paper's Table 10 estimate); None without a per-step figure."""
    total = next((r for r in rows if r.call_type == "total"), None)
    if total is None or total.test_tokens_per_step is None:
        return None
    return total.test_tokens_per_step * period


def finmem_tokens_per_cycle(
    extra: Mapping[str, Any], n_transitions: int, period: int = VALIDATION_PERIOD
) -> tuple[float | None, int]:
    """FinMem's Table 10 cycle estimate: the mean chat tokens (prompt + completion) of its first
    complete ``period``-step cycles of the test, and how many there are (``n_transitions //
    period``: 13 of 303 steps; the remaining steps are left out). None (and 0) without
    ``extra.test_tokens_by_step`` or without a complete cycle. The calls made at session step k
    (1-based: the reflection on the decision of step k - 1 and the decision of step k) belong to
    the cycle of transition k."""
    by_step = extra.get("test_tokens_by_step")
    cycles = n_transitions // period if period > 0 else 0
    if not isinstance(by_step, (list, tuple)) or cycles == 0:
        return None, 0
    steps = [int(x) if _finite(x) else 0 for x in by_step]
    return sum(steps[: cycles * period]) / cycles, cycles


def engine_token_rows(info: ExperimentInfo) -> list[dict[str, Any]]:
    """The engine's totals by call type (what reached the model, from the journal), then a total
    row: calls, prompt / completion / cached tokens, latency (seconds), invalid replies."""
    keys = ("calls", "prompt_tokens", "completion_tokens", "cached_tokens", "fallbacks")
    rows = []
    for t in sorted(info.engine_tokens, key=lambda x: str(x.get("call_type", ""))):
        row: dict[str, Any] = {"call_type": str(t.get("call_type", ""))}
        row |= {k: _n(t, k) for k in keys}
        lat = t.get("latency_s")
        row["latency_s"] = float(lat) if _finite(lat) else math.nan
        rows.append(row)
    if rows:
        total: dict[str, Any] = {"call_type": "total"}
        total |= {k: sum(r[k] for r in rows) for k in keys}
        total["latency_s"] = math.fsum(r["latency_s"] for r in rows)
        rows.append(total)
    return rows


# -- fallbacks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FallbackRow:
    """Fallbacks (replies not used) of one phase and call type of one run: how many, the steps
    where they happened (``"12"`` in the test, ``"r1:12"`` for step 12 of training round 1; empty
    when only a count is known) and the reasons with their counts (most frequent first)."""

    phase: str
    call_type: str
    count: int
    steps: tuple[str, ...]
    reasons: tuple[tuple[str, int], ...]


def _reason(text: str, limit: int = 70) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _from_trace(trace: Any) -> list[FallbackRow]:
    rows = trace[trace["fallback"].astype(str) != ""]
    out = []
    keys = sorted({(str(p), str(c)) for p, c in zip(rows["phase"], rows["call_type"])})
    for phase, ct in keys:
        sel = rows[(rows["phase"].astype(str) == phase) & (rows["call_type"].astype(str) == ct)]
        steps = []
        for rnd, st in zip(sel["round"], sel["step"]):
            s = str(int(st))
            steps.append(s if phase == "test" else f"r{int(rnd)}:{s}")
        reasons = Counter(_reason(f) for f in sel["fallback"])
        out.append(
            FallbackRow(phase, ct or "(no call)", len(sel), tuple(steps), tuple(reasons.most_common()))
        )
    return out


def _counts_from_extra(extra: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    """Fallback counts by (phase, call type) as the run's ``extra`` records them."""
    out: dict[tuple[str, str], int] = {}
    fb = extra.get("fallbacks")
    if isinstance(fb, Mapping) and isinstance(fb.get("by_phase"), Mapping):  # FinMem
        for phase, d in fb["by_phase"].items():
            for ct, n in _by_type_counts(d).items():
                out[(str(phase), ct)] = n
    for phase in ("train", "test"):  # Moira
        d = extra.get(phase)
        if isinstance(d, Mapping):
            for ct, n in _by_type_counts(d.get("fallbacks_by_call_type")).items():
                out[(phase, ct)] = n
    return {k: v for k, v in out.items() if v > 0}


def _by_type_counts(d: Any) -> dict[str, int]:
    return {str(k): int(v) for k, v in d.items() if _finite(v)} if isinstance(d, Mapping) else {}


def fallback_rows(run: RunData) -> list[FallbackRow]:
    """Every fallback of a run: from ``trace.parquet`` when there is one (each with its phase,
    call type, step and reason); else the test steps flagged in ``steps.parquet`` (attributed to
    the one call type whose test fallbacks ``extra`` counts, ``decision`` when that is not
    unique) and the counts ``extra`` records for the rest, without steps."""
    tr = run.trace
    if tr is not None and {"fallback", "phase", "call_type", "round", "step"} <= set(tr.columns):
        return _from_trace(tr)
    counts = _counts_from_extra(run.extra)
    flagged = tuple(str(int(s.step)) for s in run.steps if bool(s.fallback))
    out = []
    test_types = [ct for (ph, ct) in counts if ph == "test"]
    if flagged:
        ct = test_types[0] if len(test_types) == 1 else "decision"
        out.append(FallbackRow("test", ct, len(flagged), flagged, ()))
        counts.pop(("test", ct), None)
    for (phase, ct), n in sorted(counts.items()):
        out.append(FallbackRow(phase, ct, n, (), ()))
    return out
