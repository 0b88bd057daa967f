"""The chat interface every agent speaks: the values that cross it (:mod:`~serving.chat.types`),
the :class:`~serving.chat.backend.Backend` protocol, what an engine applies to a request's sampling
(:mod:`~serving.chat.sampling`) and makes of its reply (:mod:`~serving.chat.replies`), and what
runs on any backend: routing by model key (:mod:`~serving.chat.routing`), programs in lockstep
(:mod:`~serving.chat.lockstep`), one backend shared by threads (:mod:`~serving.chat.shared`) and
the scripted backend of unit tests (:mod:`~serving.chat.scripted`)."""

from __future__ import annotations

__all__: list[str] = []
