"""The data behind the report's figures, as pure functions (the figures only draw them).

Conventions: an equity or drawdown series has one point more than the run has transitions: the
starting equity of 1 (drawdown 0), then the value after each settlement. Per-step series (rolling
accuracy, cumulative switches, pair held) have one value per transition, the decision of test
step k (1-based). The figures draw them all on one axis of test steps, the sessions of the test
window (:data:`agent.report.figures.STEP_LABEL`): the equity after k settlements at step k + 1.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent.pairs.market.metrics import drawdown_curve, equity_curve
from agent.pairs.market.settlement import ACTIONS

__all__ = [
    "ROLLING_WINDOW",
    "equity_points",
    "drawdown_points",
    "seed_band",
    "rolling_accuracy",
    "cumulative_switches",
    "pair_share_matrix",
    "action_counts",
    "CycleView",
    "moira_cycles",
    "ddqn_curve",
    "BreakView",
    "break_scores",
    "lifecycle_thresholds",
    "validation_period",
]

#: Transitions in the trailing window of the rolling counterfactual accuracy.
ROLLING_WINDOW = 10


def equity_points(returns: Sequence[float]) -> np.ndarray:
    """Equity at x = 0..N: 1, then after each settled transition
    (:func:`agent.pairs.market.metrics.equity_curve`)."""
    return np.concatenate([[1.0], equity_curve(returns)])


def drawdown_points(returns: Sequence[float]) -> np.ndarray:
    """Drawdown at x = 0..N (0 at the start; :func:`agent.pairs.market.metrics.drawdown_curve`)."""
    return np.concatenate([[0.0], drawdown_curve(returns)])


def seed_band(curves: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """Point-wise min and max over the seeds' curves; None with fewer than 2 curves or curves of
    different lengths (runs of one setting share the window, so that means a broken folder)."""
    if len(curves) < 2 or len({len(c) for c in curves}) != 1:
        return None
    stack = np.vstack(curves)
    return stack.min(axis=0), stack.max(axis=0)


def rolling_accuracy(matched: Sequence[bool], window: int = ROLLING_WINDOW) -> np.ndarray:
    """Share of matched transitions over the trailing ``window`` transitions ending at each step
    (over all transitions so far while fewer than ``window`` have settled)."""
    if window < 1:
        raise ValueError(f"window={window}; allowed: >= 1 transition")
    m = np.asarray(matched, dtype=np.float64)
    c = np.concatenate([[0.0], np.cumsum(m)])
    idx = np.arange(1, len(m) + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


def cumulative_switches(pairs: Sequence[str | None]) -> np.ndarray:
    """Pair switches up to and including each step, counted as
    :func:`agent.pairs.market.metrics.pair_switches` counts them (a change from one held pair to
    another; holding none in between counts once, when the new pair is first held), so the last
    value equals the run's pair switches."""
    out = np.zeros(len(pairs), dtype=np.int64)
    last: str | None = None
    n = 0
    for i, p in enumerate(pairs):
        if p:
            if last is not None and p != last:
                n += 1
            last = p
        out[i] = n
    return out


def pair_share_matrix(
    columns: Sequence[tuple[str, Sequence[str | None]]],
) -> tuple[list[str], list[str], np.ndarray]:
    """Share of each column's transitions spent holding each pair.

    ``columns``: (label, pair held at each transition). Returns the pairs (rows, most held over
    all columns first, ties by name), the column labels and a (pairs x columns) matrix of shares
    in [0, 1]; a column's shares sum to its share of transitions with a pair held."""
    totals: dict[str, float] = {}
    for _, pairs in columns:
        n = len(pairs)
        for p in pairs:
            if p:
                totals[p] = totals.get(p, 0.0) + 1.0 / max(n, 1)
    rows = sorted(totals, key=lambda p: (-totals[p], p))
    mat = np.zeros((len(rows), len(columns)))
    pos = {p: i for i, p in enumerate(rows)}
    for j, (_, pairs) in enumerate(columns):
        n = len(pairs)
        for p in pairs:
            if p:
                mat[pos[p], j] += 1.0 / n
    return rows, [c[0] for c in columns], mat


def action_counts(actions: Sequence[str]) -> dict[str, int] | None:
    """Transitions per pair action (LONG_SHORT, SHORT_LONG, FLAT); None when the run's rows are
    not pair actions (Equal-Weight's HOLD)."""
    if any(a not in ACTIONS for a in actions):
        return None
    return {a: sum(1 for x in actions if x == a) for a in ACTIONS}


@dataclass(frozen=True)
class CycleView:
    """Moira's replay cycles (cycle 0 = warmup): the training return of each cycle (NaN when no
    replay ran: a reflection without a usable principle), whether it was accepted, the best
    return after it; accepted / rejected count the cycles >= 1 that replayed and went through the
    gate (the warmup memory's own replay, kept as the floor, is neither)."""

    cycles: tuple[int, ...]
    returns: tuple[float, ...]
    accepted: tuple[bool, ...]
    best_after: tuple[float, ...]
    n_accepted: int
    n_rejected: int
    n_no_replay: int


def _f(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else math.nan


def moira_cycles(training: Mapping[str, Any] | None) -> CycleView | None:
    """The cycles of a Moira ``training.json`` (None when it has none)."""
    cycles = (training or {}).get("cycles")
    if not isinstance(cycles, list) or not cycles:
        return None
    cs = [c for c in cycles if isinstance(c, Mapping)]
    rets = tuple(_f(c.get("training_return")) for c in cs)
    acc = tuple(bool(c.get("accepted")) for c in cs)
    nums = tuple(int(c.get("cycle", i)) for i, c in enumerate(cs))
    gated = [not c.get("floor") for c in cs]
    later = [(r, a) for n, r, a, g in zip(nums, rets, acc, gated) if n >= 1 and g]
    return CycleView(
        nums,
        rets,
        acc,
        tuple(_f(c.get("best_return_after")) for c in cs),
        sum(1 for r, a in later if a and math.isfinite(r)),
        sum(1 for r, a in later if not a and math.isfinite(r)),
        sum(1 for r, _ in later if not math.isfinite(r)),
    )


def ddqn_curve(training: Mapping[str, Any] | None) -> dict[str, np.ndarray] | None:
    """EG-DDQN's training curve: episode, return (epsilon-greedy, summed over the training
    transitions), greedy_return (the greedy policy replayed on them), loss (NaN before updates)."""
    eps = (training or {}).get("episodes")
    if not isinstance(eps, list) or not eps:
        return None
    rows = [e for e in eps if isinstance(e, Mapping)]
    return {
        "episode": np.array([_f(e.get("episode")) for e in rows]),
        "return": np.array([_f(e.get("return")) for e in rows]),
        "greedy_return": np.array([_f(e.get("greedy_return")) for e in rows]),
        "loss": np.array([_f(e.get("loss")) for e in rows]),
    }


@dataclass(frozen=True)
class BreakView:
    """The test window's lifecycle checks of a Moira run: per checked step its break score,
    level and the pair held; the validation boundaries (step, kept) and the replacements
    (step, old pair, new pair)."""

    steps: tuple[int, ...]
    scores: tuple[float, ...]
    levels: tuple[str, ...]
    pairs: tuple[str, ...]
    boundaries: tuple[tuple[int, bool], ...]
    replacements: tuple[tuple[int, str, str], ...]


def _json(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text:
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def break_scores(trace: Any, phase: str = "test") -> BreakView | None:
    """Break-score evolution from ``trace.parquet`` rows of ``phase``: ``lifecycle`` rows carry
    the score and level, ``boundary`` rows the verdict (``keep``), and a ``select`` row at a
    boundary step whose verdict was not to keep names the new pair (state_before -> state_after).
    None without lifecycle rows."""
    if trace is None or "kind" not in getattr(trace, "columns", ()):
        return None
    t = trace[trace["phase"].astype(str) == phase].sort_values("seq") if "seq" in trace.columns else trace
    life = t[t["kind"].astype(str) == "lifecycle"]
    if life.empty:
        return None
    steps, scores, levels, pairs = [], [], [], []
    for st, dec, pair in zip(life["step"], life["decision"], life["pair"]):
        d = _json(dec)
        steps.append(int(st))
        scores.append(_f(d.get("break_score")))
        levels.append(str(d.get("level", "")))
        pairs.append(str(pair))
    bounds = []
    replaced_at = set()
    for st, dec in zip(t[t["kind"] == "boundary"]["step"], t[t["kind"] == "boundary"]["decision"]):
        keep = bool(_json(dec).get("keep", True))
        bounds.append((int(st), keep))
        if not keep:
            replaced_at.add(int(st))
    repl = []
    sel = t[t["kind"].astype(str) == "select"]
    for st, before, after in zip(sel["step"], sel["state_before"], sel["state_after"]):
        if int(st) in replaced_at and str(after) and str(after) != str(before):
            repl.append((int(st), str(before), str(after)))
    return BreakView(tuple(steps), tuple(scores), tuple(levels), tuple(pairs), tuple(bounds), tuple(repl))


def lifecycle_thresholds(manifest: Mapping[str, Any] | None) -> tuple[float, float]:
    """(WARNING, BREAK) levels of the break score: warning_factors / break_factors and 1, from the
    experiment manifest's ``config.lifecycle`` (defaults 2 and 3 when absent)."""
    cfg = ((manifest or {}).get("config") or {}).get("lifecycle") or {}
    w, b = _f(cfg.get("warning_factors", 2)), _f(cfg.get("break_factors", 3))
    if not (math.isfinite(w) and math.isfinite(b) and b > 0):
        w, b = 2.0, 3.0
    return min(1.0, w / b), 1.0


def validation_period(manifest: Mapping[str, Any] | None, default: int = 23) -> int:
    """The experiment's validation cycle in sessions (its manifest's
    ``config.lifecycle.validation_period``; ``default``, the paper's 23, when absent)."""
    cfg = ((manifest or {}).get("config") or {}).get("lifecycle") or {}
    v = cfg.get("validation_period", default)
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v > 0 else default
