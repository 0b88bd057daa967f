"""The causal pair screen: :mod:`~agent.pairs.screen.causal` ranks every pair
of the pool by its Engle-Granger p-value from data up to the selection date only;
:mod:`~agent.pairs.screen.rolling` gives the same screen date after date with each pair's
regression sums carried forward; :mod:`~agent.pairs.screen.evaluate` scores it against the
synthetic market's planted pairs and counts candidates over a pool's month-ends."""

from __future__ import annotations

__all__: list[str] = []
