"""The decade case's size and goal: a 3,000-ticker market re-screened daily for ten years."""

from __future__ import annotations

__all__ = ["DECADE", "GOAL_GIB", "GOAL_S"]

#: the whole case: tickers, dates, lookback (sessions)
DECADE = {"tickers": 3000, "dates": 2520, "window": 2520}
#: the goal on two cores: the decade within 30 minutes and 8 GiB
GOAL_S = 1800.0
GOAL_GIB = 8.0
