"""EG+Z: the rule-based Engle-Granger pair trade with z-score thresholds.

At each session t the z of the spread log A - beta log B is taken against its trailing
``z_window`` common sessions ending at t (:func:`agent.pairs.baselines.common.spread_zscores`;
beta is the screen's hedge ratio at selection, fixed over the window). The rule is a level rule
on that z, evaluated at every decision session from step 001 (the window starts FLAT):

* z >= entry_z: A is rich against B -> SHORT_LONG (short A, long B); z <= -entry_z -> LONG_SHORT;
* otherwise a held position is closed (FLAT) once |z| <= exit_z, and kept while exit_z < |z| < entry_z;
* a held position whose z crosses to the opposite entry threshold is reversed (the reversion
  overshot past the exit band between two closes);
* no stop-loss and no time limit (the paper states none): a position is held until the exit rule fires.

A session without a z (too little history, a constant window) or not tradable leaves the rule's
state unchanged; a non-tradable session is held FLAT and the state resumes when the legs trade.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agent.pairs.baselines.common import PairSeries, spread_zscores
from agent.pairs.market.settlement import FLAT, LONG_SHORT, SHORT_LONG
from localfin.errors import ConfigError

__all__ = ["EGZConfig", "egz_step", "egz_actions"]


@dataclass(frozen=True)
class EGZConfig:
    """entry_z: enter when |z| >= this (standard deviations, > exit_z);
    exit_z: close when |z| <= this (>= 0);
    z_window: trailing common sessions of the z (>= 3; 20 = the screen's trading-window z)."""

    entry_z: float = 2.0
    exit_z: float = 0.5
    z_window: int = 20

    def __post_init__(self) -> None:
        if not (math.isfinite(self.exit_z) and self.exit_z >= 0):
            raise ConfigError(f"exit_z={self.exit_z}; allowed: a finite number >= 0")
        if not (math.isfinite(self.entry_z) and self.entry_z > self.exit_z):
            raise ConfigError(f"entry_z={self.entry_z}; allowed: a finite number > exit_z={self.exit_z}")
        if self.z_window < 3:
            raise ConfigError(f"z_window={self.z_window}; allowed: >= 3 sessions")

    @property
    def method(self) -> str:
        return "eg_z"


def egz_step(position: str, z: float, config: EGZConfig) -> str:
    """The rule's position after observing ``z`` while holding ``position``."""
    if z >= config.entry_z:
        return SHORT_LONG
    if z <= -config.entry_z:
        return LONG_SHORT
    if position != FLAT and abs(z) <= config.exit_z:
        return FLAT
    return position


def egz_actions(series: PairSeries, ok: np.ndarray, config: EGZConfig) -> tuple[list[str], list[str]]:
    """Actions for every transition of the test window and a note per step (its z)."""
    z = spread_zscores(series, config.z_window)
    position = FLAT
    actions: list[str] = []
    notes: list[str] = []
    for i in range(series.n_sessions - 1):
        t = series.first + i
        zt = float(z[t])
        if math.isfinite(zt):
            position = egz_step(position, zt, config)
        actions.append(position if ok[t] else FLAT)
        notes.append(f"z={zt:+.4f}" if math.isfinite(zt) else "z=nan")
    return actions, notes
