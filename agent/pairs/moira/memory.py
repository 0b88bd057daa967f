"""Moira's derived memory: counterfactual reflection records (short-term, per settled step) and
the pair-quality memory (what each pair held so far did for spread mean reversion).

No raw observation is kept: a counterfactual record holds what the three actions earned on one
settled transition, the best one, whether the chosen one matched, and a one-line lesson written
by code (not by the model), so the memory shown to the next decision cannot invent outcomes.
Returns in records are fractions; prompts show them in percent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from agent.pairs.market.settlement import FLAT, LONG_SHORT, SHORT_LONG

__all__ = [
    "CounterfactualRecord",
    "lesson_for",
    "QualityRule",
    "PairQuality",
    "PairMemory",
    "reflection_summary",
]


def _pct(x: float) -> str:
    return f"{100.0 * x:+.2f}%"


def lesson_for(action: str, returns: Mapping[str, float], best: str, matched: bool) -> str:
    """A short, deterministic lesson of one settled step (no dates, no tickers)."""
    if matched:
        return "right: no side earned" if action == FLAT else "right: best action"
    if action == FLAT:
        return f"missed: {best} earned {_pct(returns[best])}"
    if best == FLAT:
        return f"lost {_pct(returns[action])}: FLAT was better"
    return f"wrong side: {best} earned {_pct(returns[best])}"


@dataclass(frozen=True)
class CounterfactualRecord:
    """One settled transition as the agent remembers it.

    step: 1-based step number of the decision (settled at step + 1).
    pair: ``"A/B"`` held; action: the action held; returns: fractions per action (before cost);
    best, matched: counterfactual best action and whether the held one earned as much;
    z_trade: trading-window z at the decision; rel_change: today's % change of A minus B at the
    decision (fractions); lesson: :func:`lesson_for`.
    """

    step: int
    pair: str
    action: str
    ret_long_short: float
    ret_short_long: float
    best: str
    matched: bool
    z_trade: float
    rel_change: float
    lesson: str

    @property
    def realized(self) -> float:
        return {LONG_SHORT: self.ret_long_short, SHORT_LONG: self.ret_short_long, FLAT: 0.0}[self.action]


@dataclass(frozen=True)
class QualityRule:
    """How a pair's record becomes its one-word quality: ``new`` below ``min_held`` settled
    steps held, then by the share of them on which the spread moved toward its mean:
    ``reverting`` at or above ``reverting``, ``weak`` below ``weak``, ``mixed`` between
    (the settings ``prompt.pair_quality_*``)."""

    min_held: int = 3
    reverting: float = 0.55
    weak: float = 0.45


@dataclass(frozen=True)
class PairQuality:
    """What one held pair did: sessions held, settled steps whose spread moved toward its mean
    (|z| fell), whether the holding ended in a BREAK, and the last lifecycle level seen while
    it was held (``state``; empty before its first monitored session)."""

    pair: str
    held: int = 0
    reverted: int = 0
    broke: bool = False
    state: str = ""

    @property
    def quality(self) -> str:
        return self.quality_under(QualityRule())

    def quality_under(self, rule: QualityRule) -> str:
        """The one-word quality under ``rule`` (``broken`` for a pair whose holding broke)."""
        if self.broke:
            return "broken"
        if self.held < rule.min_held:
            return "new"
        share = self.reverted / self.held
        return "reverting" if share >= rule.reverting else "weak" if share < rule.weak else "mixed"

    def line(self, rule: QualityRule = QualityRule()) -> str:
        note = f"held {self.held} steps, spread moved toward its mean on {self.reverted}"
        if self.broke:
            note += ", ended in a lifecycle BREAK"
        return f"{self.pair}: {self.quality_under(rule)} ({note})"


class PairMemory:
    """Pair-quality memory (shown to pair selection and direction, A.6): an ordered,
    copyable map pair -> :class:`PairQuality`. Values are immutable; updates replace them."""

    def __init__(self, entries: Sequence[PairQuality] = ()) -> None:
        self._items: dict[str, PairQuality] = {e.pair: e for e in entries}

    def copy(self) -> PairMemory:
        return PairMemory(list(self._items.values()))

    def observe(self, pair: str, reverted: bool) -> None:
        """One more settled step on ``pair``; ``reverted``: |z| fell over it."""
        q = self._items.get(pair, PairQuality(pair))
        self._items[pair] = replace(q, held=q.held + 1, reverted=q.reverted + int(reverted))

    def mark_break(self, pair: str) -> None:
        q = self._items.get(pair, PairQuality(pair))
        self._items[pair] = replace(q, broke=True, state="BREAK")

    def set_state(self, pair: str, level: str) -> None:
        """The lifecycle level of held ``pair`` at its latest monitored session."""
        q = self._items.get(pair, PairQuality(pair))
        self._items[pair] = replace(q, state=level)

    def states(self) -> dict[str, str]:
        """``pair -> lifecycle level`` of every pair with one (what pair selection is shown)."""
        return {q.pair: q.state for q in self._items.values() if q.state}

    def lines(self, rule: QualityRule = QualityRule()) -> list[str]:
        return [q.line(rule) for q in self._items.values()]

    def entries(self) -> list[PairQuality]:
        return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)


def reflection_summary(records: Sequence[CounterfactualRecord]) -> dict[str, float | int]:
    """Diagnostic counts of a training round for the reflection call (A.6): how often the
    chosen action matched the best, FLAT use and misses, wrong sides, best-action counts, and
    steps where today's relative move went against spread reversion."""
    n = len(records)
    flat = [r for r in records if r.action == FLAT]
    wrong = [r for r in records if r.action in (LONG_SHORT, SHORT_LONG) and r.best not in (r.action, FLAT)]
    # spread reversion says: z > 0 (A rich) -> A should underperform; a positive relative move
    # of A on such a day goes against reversion (and vice versa)
    against = [r for r in records if r.z_trade * r.rel_change > 0]
    return {
        "decisions": n,
        "matched_best": sum(r.matched for r in records),
        "flat_chosen": len(flat),
        "flat_missed_profit": sum(1 for r in flat if not r.matched),
        "wrong_side": len(wrong),
        "best_long_short": sum(r.best == LONG_SHORT for r in records),
        "best_short_long": sum(r.best == SHORT_LONG for r in records),
        "best_flat": sum(r.best == FLAT for r in records),
        "delta_against_reversion": len(against),
    }
