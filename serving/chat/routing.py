"""One backend in front of several: each request goes to the backend serving its model key.

For an experiment whose parts run on different models (the FinMem baseline on a fixed backbone
beside the agent's): the lockstep round is still one ``chat`` call, split here by
``ChatRequest.model`` (each part in one call to its backend, results back in request order), and
one journal records all of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from serving.chat.backend import Backend
from serving.chat.types import ChatRequest, ChatResult, ensure_requests
from serving.errors import ConfigError

__all__ = ["ModelRouter"]


class ModelRouter:
    """``backends``: registry key -> the backend that serves it (closed by :meth:`close`)."""

    name = "router"

    def __init__(self, backends: Mapping[str, Backend]) -> None:
        if not backends:
            raise ConfigError("ModelRouter needs at least one backend")
        self.backends = dict(backends)

    def _for(self, model: str) -> Backend:
        try:
            return self.backends[model]
        except KeyError:
            raise ConfigError(
                f"no backend serves model {model!r}; served here: {', '.join(self.backends)}"
            ) from None

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        reqs = ensure_requests(requests)
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(reqs):
            self._for(r.model)
            groups.setdefault(r.model, []).append(i)
        out: list[ChatResult | None] = [None] * len(reqs)
        for model, idx in groups.items():
            for i, res in zip(idx, self.backends[model].chat([reqs[i] for i in idx]), strict=True):
                out[i] = res
        return [r for r in out if r is not None]

    def effective_sampling(self, req: ChatRequest) -> dict[str, Any] | None:
        fn = getattr(self._for(req.model), "effective_sampling", None)
        return fn(req) if callable(fn) else None

    @property
    def engine_start_s(self) -> float | None:
        starts = [getattr(b, "engine_start_s", None) for b in self.backends.values()]
        known = [s for s in starts if s is not None]
        return sum(known) if known else None

    def close(self) -> None:
        for b in self.backends.values():
            b.close()
