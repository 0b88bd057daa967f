"""The pair at the close of one session as FinMem's prompts show it (computed from closes up to
that session only): an OLS hedge over the last ``hedge_window`` common sessions ending at t, as
the screen fits it; the long z over that window and the trading z over the last ``z_window``;
the relative move of A against B over ``rel_move_sessions``; and FinMem's momentum, the sign of
that relative move over the last ``momentum_sessions`` (FinMem: the sign of the stock's price
change over its last three days)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from agent.pairs.baselines.common import PairSeries

__all__ = ["Observation", "observations", "num", "signed"]


def num(x: float, digits: int) -> float | None:
    """``x`` rounded (None when not finite; never ``-0.0``)."""
    if x is None or not math.isfinite(x):
        return None
    v = round(float(x), digits)
    return 0.0 if v == 0 else v


def signed(x: float, digits: int = 2, suffix: str = "") -> str:
    """``+1.23%``-style text (``n/a`` when not finite)."""
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.{digits}f}{suffix}"


@dataclass(frozen=True)
class Observation:
    """The pair at the close of session ``index`` of the series' calendar.

    price_*: closes; change_*: simple return from the previous common session (fraction);
    hedge_ratio: rolling OLS slope of log A on log B; z_long / z_trade: z of today's spread over
    the hedge window / the last ``z_window`` sessions; rel_move_5: log move of A minus log move of
    B over the last ``rel_move_sessions`` common sessions (5 by default; the payload key names
    the count); momentum: the same over the last ``momentum_sessions`` (3), shown by its sign
    (``A ahead``, ``B ahead``, ``even``). NaN where history is too short or a leg has no close.
    """

    index: int
    price_a: float
    price_b: float
    change_a: float
    change_b: float
    hedge_ratio: float
    z_long: float
    z_trade: float
    rel_move_5: float
    rel_move_sessions: int = 5
    momentum: float = float("nan")
    momentum_sessions: int = 3

    def momentum_sign(self) -> str | None:
        """FinMem's momentum of the pair: which leg moved more over the last sessions."""
        m = self.momentum
        if m is None or not math.isfinite(m):
            return None
        return "A ahead" if m > 0 else "B ahead" if m < 0 else "even"

    def to_payload(self) -> dict[str, Any]:
        return {
            "price_a": num(self.price_a, 2),
            "price_b": num(self.price_b, 2),
            "change_a_pct": num(100 * self.change_a, 2),
            "change_b_pct": num(100 * self.change_b, 2),
            "hedge_ratio": num(self.hedge_ratio, 3),
            "z_long": num(self.z_long, 2),
            "z_trade": num(self.z_trade, 2),
            f"rel_move_{self.rel_move_sessions}_pct": num(100 * self.rel_move_5, 2),
            f"momentum_{self.momentum_sessions}_sessions": self.momentum_sign(),
        }


def observations(
    series: PairSeries,
    indices: Sequence[int],
    *,
    hedge_window: int,
    z_window: int,
    min_sessions: int,
    rel_move_sessions: int = 5,
    momentum_sessions: int = 3,
) -> dict[int, Observation]:
    """:class:`Observation` at each calendar index in ``indices``, each from closes up to it.

    The hedge is the OLS of log A on log B over the last ``hedge_window`` common sessions ending
    at t (fewer when history is shorter, NaN below ``min_sessions``), as the screen fits it."""
    from agent.pairs.baselines.common import priced
    from kernels import ols_hedge, spread_zscore

    ok = priced(series)
    idx = np.flatnonzero(ok)
    la, lb = np.log(series.price_a[ok]), np.log(series.price_b[ok])
    nan = float("nan")
    pos = {int(g): j for j, g in enumerate(idx)}
    out: dict[int, Observation] = {}
    for g in indices:
        j = pos.get(int(g))
        if j is None:
            out[int(g)] = Observation(int(g), *(nan,) * 8, rel_move_sessions, nan, momentum_sessions)
            continue
        ca = series.price_a[g] / series.price_a[idx[j - 1]] - 1.0 if j >= 1 else nan
        cb = series.price_b[g] / series.price_b[idx[j - 1]] - 1.0 if j >= 1 else nan
        k = rel_move_sessions
        rel = (la[j] - la[j - k]) - (lb[j] - lb[j - k]) if j >= k else nan
        q = momentum_sessions
        mom = (la[j] - la[j - q]) - (lb[j] - lb[j - q]) if j >= q else nan
        lo = max(0, j - hedge_window + 1)
        beta = zl = zt = nan
        if j + 1 - lo >= max(min_sessions, z_window):
            y, x = la[lo : j + 1], lb[lo : j + 1]
            alpha, beta = ols_hedge(y, x)
            if math.isfinite(beta):
                spread = y - alpha - beta * x
                zl = float(spread_zscore(spread))
                zt = float(spread_zscore(spread, z_window))
        out[int(g)] = Observation(
            int(g),
            float(series.price_a[g]),
            float(series.price_b[g]),
            ca,
            cb,
            float(beta),
            zl,
            zt,
            float(rel),
            rel_move_sessions,
            float(mom),
            momentum_sessions,
        )
    return out
