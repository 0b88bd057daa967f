"""The causal pair screen (SPEC §2 "Screen"): :mod:`~agent.pairs.screen.causal` ranks every pair
of the pool by its Engle-Granger p-value from data up to the selection date only;
:mod:`~agent.pairs.screen.evaluate` scores it against the synthetic market's planted pairs."""

from __future__ import annotations

__all__: list[str] = []
