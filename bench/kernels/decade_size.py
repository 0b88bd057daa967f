"""The decade case's size and goal: a 3,000-ticker market re-screened daily for ten years."""

from __future__ import annotations

__all__ = ["DECADE", "GOAL_GIB", "GOAL_S", "decade_seconds"]

#: the whole case: tickers, dates, lookback (sessions)
DECADE = {"tickers": 3000, "dates": 2520, "window": 2520}
#: the goal on two cores: the decade within 30 minutes and 8 GiB
GOAL_S = 1800.0
GOAL_GIB = 8.0


def decade_seconds(first_s: float, n_pairs: int, later_pair_date_us: float) -> float:
    """The whole decade extrapolated from a slice of ``n_pairs`` pairs: its first date (the
    exact sums, growing with the pairs) scaled to every pair, then every later date at the
    slice's time per pair and date."""
    whole = DECADE["tickers"] * (DECADE["tickers"] - 1) // 2
    return first_s * whole / n_pairs + later_pair_date_us * 1e-6 * whole * (DECADE["dates"] - 1)
