"""``bollinger``: a ratio Bollinger-band rule on the pair localfin's screen selects.

At each decision session t the rule reads the price ratio A/B over the last ``window`` sessions
where both legs have a price, up to and including t (localfin's view holds nothing later):

- the ratio above its mean + ``width`` standard deviations: A is rich, hold SHORT_LONG;
- below the mean - ``width`` standard deviations: hold LONG_SHORT;
- a held position is closed (FLAT) once the ratio crosses back over its mean;
- with fewer than ``window`` priced sessions the rule holds what it holds.

Unlike localfin's EG+Z it uses no hedge ratio: the plain price ratio, with exits at the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agent.pairs.baselines.plugins import BaselinePlugin, Decision, PairView

__all__ = ["BollingerOptions", "decide", "BOLLINGER"]


@dataclass(frozen=True)
class BollingerOptions:
    """``[baselines.bollinger]``: window (priced sessions, >= 3) and width (standard deviations, > 0)."""

    window: int = 20
    width: float = 2.0

    def __post_init__(self) -> None:
        if self.window < 3:
            raise ValueError(f"window={self.window}; allowed: >= 3 sessions")
        if not (math.isfinite(self.width) and self.width > 0):
            raise ValueError(f"width={self.width}; allowed: a number > 0")


def decide(view: PairView) -> Decision:
    """The position to hold from the view's session (``view.position``: the rule's last one)."""
    opts = view.options or BollingerOptions()
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = view.price_a / view.price_b
    ratio = ratio[np.isfinite(ratio)][-opts.window :]
    if len(ratio) < opts.window or not math.isfinite(float(ratio[-1])):
        return Decision(view.position, "warm-up")
    mean, std = float(ratio.mean()), float(ratio.std(ddof=1))
    if std == 0.0:
        return Decision(view.position, "flat ratio")
    z = (float(ratio[-1]) - mean) / std
    note = f"ratio z={z:+.3f}"
    if z >= opts.width:
        return Decision("SHORT_LONG", note)
    if z <= -opts.width:
        return Decision("LONG_SHORT", note)
    if (view.position == "SHORT_LONG" and z <= 0) or (view.position == "LONG_SHORT" and z >= 0):
        return Decision("FLAT", note)
    return Decision(view.position, note)


BOLLINGER = BaselinePlugin(
    name="bollinger",
    decide=decide,
    description="ratio Bollinger bands: enter outside mean +/- width std, exit at the mean",
    options=BollingerOptions,
)
