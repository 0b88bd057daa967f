"""Equal-Weight: 1/N buy-and-hold of the pool (DeMiguel et al. 2009's naive portfolio).

At the close of step 001 the capital is split equally over the N pool tickers that have a close
on that session (a ticker listed later is left out: it could not be bought), and the shares are
then held to the end of the window without rebalancing: the weights drift with prices, which is
what buy-and-hold means. The portfolio value at session t is V_t = sum_i (1/N) P_i(t) / P_i(001),
and transition t earns V_{t+1} / V_t - 1 (timing: N sessions, N-1 transitions).

Gaps: a held ticker without a close on a session is valued at its last close (a halt earns 0
until it trades again, and the move across the halt is then earned in full; a ticker that stops
trading is held at its last close, like cash). The record's note names the tickers valued that way.

Execution (:mod:`agent.pairs.market.execution`): under ``next_open`` the basket is bought at the
open of step 002 (the decision is taken at the close of step 001); fees and slippage are charged
on the entry (turnover 1); a long-only basket borrows nothing. The settlement is
:func:`agent.pairs.market.execution.resettle` of the run's ``HOLD`` decisions, the same function
that settles a recorded tape again.

Rows in ``steps.parquet`` are pool returns, not pair actions: ``pair`` is empty, ``action`` is
``HOLD``, the per-action returns are NaN and ``best`` is empty; the metrics leave the action
counts and the action accuracy empty and count every transition in the win rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent.data.store import MarketStore
from agent.pairs.baselines.ledger import Ledger
from agent.pairs.market.execution import PAPER, ExecutionSettings, resettle
from agent.pairs.market.records import StepRecord
from agent.pairs.market.tape import HOLD, Decision, PriceTape, open_on_field
from localfin.errors import InputError

__all__ = ["HOLD", "EqualWeightConfig", "equal_weight_ledger"]


@dataclass(frozen=True)
class EqualWeightConfig:
    """Equal-Weight has no parameter: 1/N at step 001, buy-and-hold (drifting weights)."""

    @property
    def method(self) -> str:
        return "equal_weight"


def equal_weight_ledger(
    store: MarketStore,
    pool: tuple[str, ...],
    sessions: np.ndarray,
    field: str = "close",
    execution: ExecutionSettings = PAPER,
) -> tuple[Ledger, dict]:
    """Settle the 1/N buy-and-hold portfolio over ``sessions`` (the test window's, step 001 first).

    ``field``: the price column (the screen's ``price_field``); ``execution``: fills and costs.
    Returns the ledger and facts for ``metrics.json`` (tickers held, tickers left out)."""
    start, end = sessions[0].item(), sessions[-1].item()
    h = store.prices(list(pool), start=start, end=end, field=field)
    if len(h.dates) != len(sessions) or not np.array_equal(h.dates, sessions):
        raise InputError(f"pool prices in {sessions[0]}..{sessions[-1]} do not lie on the window's sessions")
    p0 = h.values[0]
    with np.errstate(invalid="ignore"):
        held = np.isfinite(p0) & (p0 > 0)
    if not held.any():
        raise InputError(f"no pool ticker has a close on step 001 ({sessions[0]}); pool {list(pool)}")
    tick = [t for t, k in zip(h.tickers, held, strict=True) if k]
    prices = h.values[:, held]
    with np.errstate(invalid="ignore"):
        have = np.isfinite(prices) & (prices > 0)
    days = [str(d) for d in sessions]
    decisions = tuple(
        Decision(i + 1, days[i], days[i + 1], "", HOLD, float("nan"), float("nan"), basket=",".join(tick))
        for i in range(len(sessions) - 1)
    )
    opens = open_on_field(store, list(pool), start=start, end=end, field=field)
    tape = PriceTape(tuple(days), tuple(h.tickers), h.values.astype(np.float64), opens.values)
    fills = resettle(decisions, tape, execution)
    recs: list[StepRecord] = []
    equity = 1.0
    n_carried = 0
    for i, fill in enumerate(fills):
        r = float(fill.realized)
        equity *= 1.0 + r
        stale = [tick[k] for k in np.flatnonzero(~have[i] | ~have[i + 1])]
        n_carried += bool(stale)
        note = f"last close carried: {','.join(stale)}" if stale else ""
        recs.append(
            StepRecord(
                step=i + 1,
                date=str(sessions[i]),
                pair="",
                action=HOLD,
                ret_long_short=float("nan"),
                ret_short_long=float("nan"),
                realized=r,
                equity=equity,
                best="",
                matched=False,
                note=note,
            )
        )
    facts = {
        "held": tick,
        "left_out": [t for t, k in zip(h.tickers, held, strict=True) if not k],
        "n_carried": n_carried,
        "rebalance": "none (buy-and-hold, drifting weights)",
    }
    ledger = Ledger(
        tuple(recs), n_carried, 0, pair_actions=False, counterfactual=False, decisions=decisions, prices=tape
    )
    return ledger, facts
