"""Execution of pair decisions: when a decision is filled, what the fill costs, and the settlement
of a run's recorded decisions under any execution settings (beyond the papers).

Settings (:class:`ExecutionSettings`, TOML keys of ``[experiment]``):

* ``execution = "close"`` (the papers' protocol, the default): the action decided at the close of
  t is filled at that close and settled at the close of t+1;
* ``execution = "next_open"``: decided at the close of t, filled at the open of t+1, settled at
  the close of t+1. The position decided at t-1 is still held overnight from the close of t to
  the open of t+1, so transition t earns ``(1 + o)(1 + x) - 1``: ``o`` the previous position's
  overnight return (its legs' open t+1 over close t, signed capital weights), ``x`` the new
  position's intraday return (close t+1 over open t+1). The weights are capital fractions
  rebalanced at each fill, as under ``close``. It needs open prices: a leg with a close but no
  open on a fill session is an :class:`~localfin.errors.InputError` naming the setting;
* ``cost_bps``: commission and fees, basis points per unit of turnover (the sum over legs of
  |new signed weight - old|: entering from FLAT turns over 1, flipping 2, switching pairs closes
  the old legs and opens the new ones);
* ``slippage_bps``: basis points per unit of turnover, the first-order cost of a fill that much
  worse than the reference price (buying at P(1 + s), selling at P(1 - s));
* ``borrow_bps_per_year``: the short leg's lending fee, accrued per session held:
  ``borrow_bps_per_year / 252`` of the short leg's capital for every transition that holds it.

Costs are fractions of the equity at the start of the transition and are subtracted from its
return: ``realized = return of the held action - fees - slippage - borrow``. The three actions'
returns (the counterfactual record, best action, match) are before costs, as under ``close``
before this module existed. Under the defaults every number equals the papers' close-to-close,
zero-cost settlement to the bit (:func:`agent.pairs.market.settlement.settle`).

Settlement is a pure function of (recorded decisions, prices, settings): :func:`settle_transition`
settles one transition; a :class:`Book` carries the position between transitions (the run's
online settlement uses it); :func:`resettle` folds a run's recorded tape
(:mod:`agent.pairs.market.tape`) through a Book under any settings, which is how the report's
"with frictions" row is computed from the decisions a run made, with no model call repeated.
Holding the decisions fixed is the point of that row and its limit: a run *executed* under
frictions sees other returns in its counterfactual memory and may decide otherwise.

Missing prices: a leg without a close at t or t+1 (a halt) makes that part of the transition earn
0 for every action, flagged ``missing``, as before; costs are still charged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agent.pairs.market.settlement import (
    ACTIONS,
    FLAT,
    LONG_SHORT,
    SHORT_LONG,
    LegWeights,
    best_action,
    signed_position,
)
from agent.pairs.market.tape import HOLD, Decision, PriceTape, Quote
from localfin.errors import ConfigError, InputError

__all__ = [
    "FILLS",
    "SESSIONS_PER_YEAR",
    "ExecutionSettings",
    "PAPER",
    "FRICTIONS",
    "Quote",
    "Fill",
    "settle_transition",
    "Book",
    "resettle",
]

FILLS = ("close", "next_open")
#: Sessions a year over which the borrow fee accrues (the metrics' 252 trading days).
SESSIONS_PER_YEAR = 252


def _bps(name: str, value: float, top: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"experiment.{name}={value!r}; allowed: a number in 0..{top:g} basis points")
    if not 0.0 <= value <= top:
        raise ConfigError(f"experiment.{name}={value}; allowed: 0..{top:g} basis points")


@dataclass(frozen=True)
class ExecutionSettings:
    """How decisions are filled and what fills cost (the module doc has the rules).

    execution: ``close`` (the papers') or ``next_open``.
    cost_bps: commission and fees, basis points per unit of turnover (0..1000).
    slippage_bps: basis points per unit of turnover (0..1000).
    borrow_bps_per_year: the short leg's lending fee, basis points a year (0..10000),
        accrued per session held.
    """

    execution: str = "close"
    cost_bps: float = 0.0
    slippage_bps: float = 0.0
    borrow_bps_per_year: float = 0.0

    def __post_init__(self) -> None:
        if self.execution not in FILLS:
            raise ConfigError(f"experiment.execution={self.execution!r}; allowed: {', '.join(FILLS)}")
        _bps("cost_bps", self.cost_bps, 1000.0)
        _bps("slippage_bps", self.slippage_bps, 1000.0)
        _bps("borrow_bps_per_year", self.borrow_bps_per_year, 10000.0)

    @property
    def next_open(self) -> bool:
        return self.execution == "next_open"

    @property
    def frictionless(self) -> bool:
        return not (self.cost_bps or self.slippage_bps or self.borrow_bps_per_year)

    def label(self) -> str:
        """Words for the settings, e.g. ``next open, 5 bps cost, 5 bps slippage, 50 bps/yr borrow``."""
        fill = "next open" if self.next_open else "close"
        if self.frictionless:
            return f"{fill}, no costs"
        return (
            f"{fill}, {self.cost_bps:g} bps cost, {self.slippage_bps:g} bps slippage, "
            f"{self.borrow_bps_per_year:g} bps/yr borrow"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any] | None) -> ExecutionSettings:
        """Settings from a run's recorded ``execution`` document (absent keys: the papers')."""
        doc = doc or {}
        return cls(
            str(doc.get("execution", "close")),
            float(doc.get("cost_bps", 0.0) or 0.0),
            float(doc.get("slippage_bps", 0.0) or 0.0),
            float(doc.get("borrow_bps_per_year", 0.0) or 0.0),
        )


#: The papers' protocol: close to close, no costs.
PAPER = ExecutionSettings()
#: The report's "with frictions" row (docs/moira_runs.md, "Execution, frictions", says why these numbers):
#: a decision taken on the close trades at the next open; 5 bps commission and fees and 5 bps
#: slippage per unit of turnover, as for a liquid US large cap; 50 bps a year to borrow the
#: short leg, a general-collateral fee (every ticker of our pools is an easy-to-borrow large cap).
FRICTIONS = ExecutionSettings("next_open", 5.0, 5.0, 50.0)


def _ok(*prices: float) -> bool:
    return all(math.isfinite(p) and p > 0 for p in prices)


@dataclass(frozen=True)
class Fill:
    """One settled transition.

    returns: what each of the three actions earned (before costs; under ``next_open`` each
    includes the overnight return of the position carried in); realized: the held action's
    return after costs; fees, slippage, borrow: the costs (fractions of equity, >= 0); best,
    matched: the counterfactual best action and whether the held one earned as much;
    position: the signed capital in (A, B) held after the fill; turnover: sum over legs of the
    change of signed capital; missing: a price the transition needed was absent."""

    action: str
    returns: Mapping[str, float]
    realized: float
    fees: float
    slippage: float
    borrow: float
    best: str
    matched: bool
    position: tuple[float, float]
    turnover: float
    missing: bool = False

    @property
    def cost(self) -> float:
        return self.fees + self.slippage + self.borrow


def _leg_return(q0: float, q1: float) -> float:
    return q1 / q0 - 1.0


def settle_transition(
    action: str,
    weights: LegWeights | None,
    legs: tuple[Quote, Quote] | None,
    held: tuple[float, float],
    held_legs: tuple[Quote, Quote] | None,
    same_pair: bool,
    settings: ExecutionSettings,
    *,
    where: str = "",
) -> Fill:
    """Settle one transition (pure; the module doc has the rules).

    Args:
        action: the action decided at t.
        weights: its leg weights, or None when no position can be sized (no pair, no hedge
            ratio): the target is then flat and every action earns the same.
        legs: the decided pair's quotes (A, B) over the transition (None without a pair).
        held: the signed capital (A, B) carried in from the previous transition.
        held_legs: the quotes of the pair ``held`` is in (None when nothing is held).
        same_pair: whether the decided pair is the one held (else the old legs are closed).
        settings: the execution settings.
        where: the transition's name for error messages (``KO/PEP 2020-03-02``).
    """
    if action not in ACTIONS:
        raise ConfigError(f"action={action!r}; allowed: {', '.join(ACTIONS)}")
    sized = weights is not None and legs is not None
    target = signed_position(action, weights) if sized else (0.0, 0.0)  # type: ignore[arg-type]
    if same_pair:
        turnover = abs(target[0] - held[0]) + abs(target[1] - held[1])
    else:
        turnover = abs(held[0]) + abs(held[1]) + abs(target[0]) + abs(target[1])
    missing = False
    overnight = 0.0
    if settings.next_open and held != (0.0, 0.0) and held_legs is not None:
        qa, qb = held_legs
        if _ok(qa.close0, qb.close0):
            _need_open(qa, qb, where)
            if _ok(qa.open1, qb.open1):
                overnight = held[0] * _leg_return(qa.close0, qa.open1) + held[1] * _leg_return(
                    qb.close0, qb.open1
                )
            else:
                missing = True
        else:
            missing = True
    spread = 0.0
    if sized:
        qa, qb = legs  # type: ignore[misc]
        w = weights
        assert w is not None
        if settings.next_open:
            _need_open(qa, qb, where)
            if _ok(qa.open1, qa.close1, qb.open1, qb.close1):
                spread = w.w_a * _leg_return(qa.open1, qa.close1) - w.w_b * _leg_return(qb.open1, qb.close1)
            else:
                missing = True
        elif _ok(qa.close0, qa.close1, qb.close0, qb.close1):
            spread = w.w_a * _leg_return(qa.close0, qa.close1) - w.w_b * _leg_return(qb.close0, qb.close1)
        else:
            missing = True
    if settings.next_open:
        rets = {
            LONG_SHORT: (1.0 + overnight) * (1.0 + spread) - 1.0,
            SHORT_LONG: (1.0 + overnight) * (1.0 - spread) - 1.0,
            FLAT: overnight,
        }
    else:
        rets = {LONG_SHORT: spread, SHORT_LONG: -spread, FLAT: 0.0}
    fees = settings.cost_bps * 1e-4 * turnover
    slippage = settings.slippage_bps * 1e-4 * turnover
    short = sum(-x for x in target if x < 0)
    borrow = settings.borrow_bps_per_year * 1e-4 / SESSIONS_PER_YEAR * short
    best = best_action(rets)
    matched = rets[action] >= rets[best] - 1e-15
    realized = rets[action] - fees - slippage - borrow
    return Fill(action, rets, realized, fees, slippage, borrow, best, matched, target, turnover, missing)


def _need_open(qa: Quote, qb: Quote, where: str) -> None:
    for leg, q in (("A", qa), ("B", qb)):
        _need_open_leg(q, f"leg {leg}{' of ' + where if where else ''}")


def _need_open_leg(q: Quote, where: str) -> None:
    if _ok(q.close1) and not _ok(q.open1):
        raise InputError(
            f"execution='next_open' needs an open price on every fill session; {where} has a close "
            "but no open (a store imported without the open column); re-import prices with open, "
            "or use execution = 'close'"
        )


#: (ticker, transition index) -> the ticker's quote over that transition.
QuoteFn = Callable[[str, int], Quote]


class Book:
    """The position a run carries from one transition to the next (one per window pass).

    ``quote(ticker, i)`` gives a ticker's prices over transition ``i`` (the caller's index: a
    session index of the market view, of a pair series, or a row of a recorded tape)."""

    def __init__(self, settings: ExecutionSettings, quote: QuoteFn) -> None:
        self.settings = settings
        self.quote = quote
        self.reset()

    def reset(self) -> None:
        """Hold nothing (the start of a window; a session the position cannot be held over)."""
        self.pair: tuple[str, str] | None = None
        self.position: tuple[float, float] = (0.0, 0.0)

    def settle(self, i: int, pair: tuple[str, str] | None, action: str, weights: LegWeights | None) -> Fill:
        """Settle the decision (``pair``, ``action``, ``weights``; weights None: nothing can be
        sized) taken at the start of transition ``i``, and carry its position on."""
        legs = (self.quote(pair[0], i), self.quote(pair[1], i)) if pair else None
        held_legs = (
            (self.quote(self.pair[0], i), self.quote(self.pair[1], i))
            if self.pair is not None and self.position != (0.0, 0.0)
            else None
        )
        where = "/".join(pair or self.pair or ("",))
        fill = settle_transition(
            action,
            weights,
            legs,
            self.position,
            held_legs,
            pair == self.pair or self.position == (0.0, 0.0),
            self.settings,
            where=f"{where} transition {i}",
        )
        self.pair = pair if fill.position != (0.0, 0.0) else None
        self.position = fill.position
        return fill


def resettle(decisions: Sequence[Decision], prices: PriceTape, settings: ExecutionSettings) -> list[Fill]:
    """Settle a run's recorded decisions under ``settings`` (pure: no model, no store).

    Pair runs go through a :class:`Book`; Equal-Weight's ``HOLD`` rows through
    :func:`_buy_and_hold`. Under the settings the run was executed with, the realized returns
    equal its ``steps.parquet`` (tested)."""
    if decisions and all(d.action == HOLD for d in decisions):
        return _buy_and_hold(decisions, prices, settings)

    def quote(ticker: str, i: int) -> Quote:
        d = decisions[i]
        return prices.quote(ticker, d.date, d.settle_date)

    book = Book(settings, quote)
    out = []
    for i, d in enumerate(decisions):
        pair = d.legs()
        weights = d.weights() if pair else None
        out.append(book.settle(i, pair, d.action, weights))
    return out


def _buy_and_hold(
    decisions: Sequence[Decision], prices: PriceTape, settings: ExecutionSettings
) -> list[Fill]:
    """1/N buy-and-hold of the tickers in the first HOLD row (Equal-Weight, its module's rules):
    bought at the fill (close of step 001, or the open of step 002 under ``next_open``; a
    ticker without an open there is bought at its last close), valued at closes with a halted
    ticker at its last close, never rebalanced; fees and slippage on the entry's turnover of 1,
    no borrow (long only)."""
    tickers = decisions[0].tickers()
    if not tickers:
        raise InputError("an Equal-Weight tape names no ticker in its first decision")
    sessions = [d.date for d in decisions] + [decisions[-1].settle_date]
    closes = [[prices.close(t, day) for t in tickers] for day in sessions]
    carried = [list(closes[0])]
    for row in closes[1:]:
        prev = carried[-1]
        carried.append([p if _ok(p) else q for p, q in zip(row, prev)])
    if settings.next_open:
        opens = [prices.open(t, sessions[1]) for t in tickers]
        for k, (o, c) in enumerate(zip(opens, closes[1])):
            if _ok(c) and not _ok(o):
                _need_open_leg(Quote(math.nan, o, c), f"{tickers[k]} on {sessions[1]}")
        basis = [o if _ok(o) else c for o, c in zip(opens, carried[0])]
    else:
        basis = carried[0]
    n = len(tickers)
    value = [math.fsum(p / b for p, b in zip(row, basis)) / n for row in carried]
    entry = 1.0
    out = []
    for i in range(len(decisions)):
        start = entry if (i == 0 and settings.next_open) else value[i]
        r = value[i + 1] / start - 1.0
        turnover = 1.0 if i == 0 else 0.0
        fees = settings.cost_bps * 1e-4 * turnover
        slip = settings.slippage_bps * 1e-4 * turnover
        nan = {a: math.nan for a in ACTIONS}
        out.append(Fill(HOLD, nan, r - fees - slip, fees, slip, 0.0, "", False, (0.0, 0.0), turnover))
    return out
