"""Long-Short and Short-Long: one fixed direction on the screen's top pair at every session.

LONG_SHORT is long A and short B with (A, B) as the screen orients the pair (alphabetical), the
orientation the Moira agent sees; SHORT_LONG is the reverse. The legs are sized by the run's
exposure (No-Beta 0.5 / 0.5; Beta from the rolling 20-session hedge ratio, rebalanced daily).
On a session that is not tradable (a leg without a close, or no rolling beta under Beta) the
baseline holds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent.pairs.baselines.common import PairSeries
from agent.pairs.market.settlement import FLAT, LONG_SHORT, SHORT_LONG
from localfin.errors import ConfigError

__all__ = ["FixedDirectionConfig", "LONG_SHORT_CONFIG", "SHORT_LONG_CONFIG", "fixed_actions"]


@dataclass(frozen=True)
class FixedDirectionConfig:
    """direction: LONG_SHORT (method ``long_short``) or SHORT_LONG (method ``short_long``)."""

    direction: str = LONG_SHORT

    def __post_init__(self) -> None:
        if self.direction not in (LONG_SHORT, SHORT_LONG):
            raise ConfigError(f"direction={self.direction!r}; allowed: {LONG_SHORT}, {SHORT_LONG}")

    @property
    def method(self) -> str:
        return self.direction.lower()


LONG_SHORT_CONFIG = FixedDirectionConfig(LONG_SHORT)
SHORT_LONG_CONFIG = FixedDirectionConfig(SHORT_LONG)


def fixed_actions(series: PairSeries, ok: np.ndarray, config: FixedDirectionConfig) -> list[str]:
    """The configured direction at every tradable decision session, FLAT elsewhere."""
    f = series.first
    return [config.direction if ok[f + i] else FLAT for i in range(series.n_sessions - 1)]
