"""Settlement of pair positions, shared by Moira and every
baseline so that all of them are scored by the same arithmetic.

Timing: the action decided at session t (data up to and including close t) is held from close t
to close t+1 and settled at close t+1. A window of N sessions has N-1 settlements.

Exposures (gross exposure 1 in both):
* ``no_beta``: legs of equal magnitude, read one of two ways (:data:`NO_BETA_LEGS`, the
  experiment's ``no_beta_legs``; :func:`no_beta_weights`): ``dollar_neutral``, +0.5 of
  capital in A and -0.5 in B for LONG_SHORT; ``equal_shares`` (the paper's words, "equal-magnitude
  share legs"), one share of A against one share of B at the close of t, scaled to gross 1:
  w_A = P_A / (P_A + P_B), w_B = P_B / (P_A + P_B).
* ``beta``: long 1 unit of A against ``beta`` units of B, scaled to gross 1:
  w_A = 1 / (1 + |beta|), w_B = beta / (1 + |beta|), with beta from a rolling OLS of log A on
  log B over the sessions up to t (20 by default; see :func:`causal_betas`). A negative or
  missing beta is a decision of the caller: :func:`leg_weights` accepts any finite beta (a
  negative beta makes B a second long leg) and rejects NaN.

Returns: r_X = P_X(t+1) / P_X(t) - 1 on the settled session. LONG_SHORT earns
w_A r_A - w_B r_B, SHORT_LONG its negative, FLAT 0. An optional cost of ``cost_bps`` basis
points is charged on turnover, the sum over legs of |new weight - old weight| (entering a
position from FLAT turns over 1, flipping it 2), at the decision time t (default 0, as the paper).

A settlement whose prices are missing (NaN on t or t+1 for a leg) earns 0 for every action and
is flagged ``missing``; the caller decides whether that ever happens (the backtests hold a pair
only while both legs trade).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from localfin.errors import ConfigError

__all__ = [
    "ACTIONS",
    "LONG_SHORT",
    "SHORT_LONG",
    "FLAT",
    "EXPOSURES",
    "LegWeights",
    "Settlement",
    "leg_weights",
    "NO_BETA_LEGS",
    "no_beta_weights",
    "signed_position",
    "action_returns",
    "best_action",
    "turnover",
    "settle",
    "causal_betas",
]

LONG_SHORT, SHORT_LONG, FLAT = "LONG_SHORT", "SHORT_LONG", "FLAT"
#: The three actions, in the order used for ties in :func:`best_action` after FLAT.
ACTIONS = (LONG_SHORT, SHORT_LONG, FLAT)
EXPOSURES = ("no_beta", "beta")


@dataclass(frozen=True)
class LegWeights:
    """Capital weights of the two legs for a LONG_SHORT position (|w_a| + |w_b| = 1)."""

    w_a: float
    w_b: float


@dataclass(frozen=True)
class Settlement:
    """One settled transition.

    Attributes:
        action: the action held from t to t+1.
        returns: what each of the three actions earned on the transition (before costs).
        realized: the held action's return after the turnover cost.
        cost: the cost charged (a fraction of capital, >= 0).
        best: the action with the highest return (ties: FLAT, then LONG_SHORT, then SHORT_LONG).
        matched: whether the held action earned as much as the best one.
        weights: the leg weights used.
        missing: a leg lacked a price at t or t+1 (every return is then 0).
    """

    action: str
    returns: Mapping[str, float]
    realized: float
    cost: float
    best: str
    matched: bool
    weights: LegWeights
    missing: bool = False


def _check_action(action: str) -> None:
    if action not in ACTIONS:
        raise ConfigError(f"action={action!r}; allowed: {', '.join(ACTIONS)}")


def leg_weights(exposure: str, beta: float | None = None) -> LegWeights:
    """Leg weights under ``exposure`` (``beta`` is required and finite for ``beta``)."""
    if exposure == "no_beta":
        return LegWeights(0.5, 0.5)
    if exposure == "beta":
        if beta is None or not math.isfinite(beta):
            raise ConfigError(f"beta={beta!r}; allowed: a finite hedge ratio under exposure 'beta'")
        gross = 1.0 + abs(beta)
        return LegWeights(1.0 / gross, beta / gross)
    raise ConfigError(f"exposure={exposure!r}; allowed: {', '.join(EXPOSURES)}")


#: Readings of the No-Beta exposure's "equal-magnitude share legs" (:func:`no_beta_weights`).
NO_BETA_LEGS = ("dollar_neutral", "equal_shares")


def no_beta_weights(
    legs: str = "dollar_neutral", price_a: float = math.nan, price_b: float = math.nan
) -> LegWeights:
    """No-Beta leg weights under the reading ``legs`` (:data:`NO_BETA_LEGS`): ``dollar_neutral``
    0.5 / 0.5; ``equal_shares`` one share each at the decision's closes ``price_a``, ``price_b``
    (weights P_A / (P_A + P_B) and P_B / (P_A + P_B)). Without two positive prices the legs are
    0.5 / 0.5 (such a transition settles as missing anyway)."""
    if legs not in NO_BETA_LEGS:
        raise ConfigError(f"no_beta_legs={legs!r}; allowed: {', '.join(NO_BETA_LEGS)}")
    if legs == "equal_shares" and all(math.isfinite(p) and p > 0 for p in (price_a, price_b)):
        gross = price_a + price_b
        return LegWeights(price_a / gross, price_b / gross)
    return LegWeights(0.5, 0.5)


def signed_position(action: str, weights: LegWeights) -> tuple[float, float]:
    """Signed capital in (A, B) for ``action`` (FLAT holds nothing)."""
    _check_action(action)
    if action == LONG_SHORT:
        return weights.w_a, -weights.w_b
    if action == SHORT_LONG:
        return -weights.w_a, weights.w_b
    return 0.0, 0.0


def action_returns(r_a: float, r_b: float, weights: LegWeights) -> dict[str, float]:
    """Return of each action given the legs' simple returns over the transition."""
    ls = weights.w_a * r_a - weights.w_b * r_b
    return {LONG_SHORT: ls, SHORT_LONG: -ls, FLAT: 0.0}


def best_action(returns: Mapping[str, float]) -> str:
    """The action with the highest return; ties go to FLAT, then LONG_SHORT."""
    order = (FLAT, LONG_SHORT, SHORT_LONG)
    return max(order, key=lambda a: (returns[a], -order.index(a)))


def turnover(previous: tuple[float, float], new: tuple[float, float]) -> float:
    """Sum over legs of |new - previous| signed capital."""
    return abs(new[0] - previous[0]) + abs(new[1] - previous[1])


def settle(
    action: str,
    prices_a: tuple[float, float],
    prices_b: tuple[float, float],
    weights: LegWeights,
    *,
    previous: tuple[float, float] = (0.0, 0.0),
    cost_bps: float = 0.0,
) -> Settlement:
    """Settle ``action`` held from t to t+1.

    Args:
        prices_a, prices_b: (price at t, price at t+1) of each leg.
        weights: leg weights fixed at t.
        previous: signed position held before the decision at t (for the turnover cost).
        cost_bps: cost in basis points per unit of turnover (>= 0).
    """
    _check_action(action)
    if cost_bps < 0:
        raise ConfigError(f"cost_bps={cost_bps}; allowed: >= 0 basis points")
    (a0, a1), (b0, b1) = prices_a, prices_b
    missing = not all(math.isfinite(p) and p > 0 for p in (a0, a1, b0, b1))
    if missing:
        rets = {a: 0.0 for a in ACTIONS}
    else:
        rets = action_returns(a1 / a0 - 1.0, b1 / b0 - 1.0, weights)
    cost = cost_bps * 1e-4 * turnover(previous, signed_position(action, weights))
    best = best_action(rets)
    matched = rets[action] >= rets[best] - 1e-15
    return Settlement(action, rets, rets[action] - cost, cost, best, matched, weights, missing)


def causal_betas(log_a: np.ndarray, log_b: np.ndarray, window: int = 20) -> np.ndarray:
    """Hedge ratio usable at each session t: OLS slope of log A on log B over the ``window``
    sessions ending at t (inclusive), so it uses no price after t. NaN before enough history."""
    from kernels import rolling_hedge_ratio

    if window < 3:
        raise ConfigError(f"window={window}; allowed: >= 3 sessions")
    _, beta = rolling_hedge_ratio(np.asarray(log_a, float), np.asarray(log_b, float), window)
    return beta
