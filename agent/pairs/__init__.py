"""Moira pair trading: the causal pair screen (more modules join as the agent lands).

Names are re-exported lazily so that ``import agent.pairs`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ScreenConfig",
    "PairStats",
    "PairCandidate",
    "ScreenResult",
    "screen_pairs",
    "screen_store",
    "pair_key",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("agent.pairs.screen.causal"), name)
    raise AttributeError(f"module 'agent.pairs' has no attribute {name!r}")
