"""Lifecycle monitoring of the held pair (Moira paper §3.2.3): thresholds
(:mod:`~agent.pairs.lifecycle.config`), the six statistical factors
(:mod:`~agent.pairs.lifecycle.factors`), the keyword news matcher
(:mod:`~agent.pairs.lifecycle.news`), the ``news_verify`` and ``break_check`` calls
(:mod:`~agent.pairs.lifecycle.calls`), the pure state machine (:mod:`~agent.pairs.lifecycle.machine`)
and the monitor a run opens for its pair (:mod:`~agent.pairs.lifecycle.monitor`)."""

from __future__ import annotations

__all__: list[str] = []
