"""The one chat protocol every agent uses, and the factory that builds a backend by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from serving.errors import ConfigError
from serving.registry import Registry, default_registry
from serving.types import ChatRequest, ChatResult

__all__ = ["Backend", "BACKENDS", "get_backend"]

BACKENDS = ("vllm", "openai", "scripted")


@runtime_checkable
class Backend(Protocol):
    """``chat(requests)`` returns one result per request, in order.

    Implementations batch where they can; a failure of one request is a result with
    ``finish_reason="error"``, never a lost batch.
    """

    name: str

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]: ...

    def close(self) -> None: ...


def get_backend(kind: str, *, registry: Registry | None = None, **options: Any) -> Backend:
    """Build a backend.

    Args:
        kind: ``vllm`` (in-process engine), ``openai`` (HTTP client for ``vllm serve``), or
            ``scripted`` (unit tests only).
        registry: model registry (default: :func:`serving.registry.default_registry`).
        options: passed to the backend's constructor (see each class).
    """
    reg = registry or default_registry()
    if kind == "vllm":
        from serving.vllm_engine import VLLMBackend

        return VLLMBackend(registry=reg, **options)
    if kind == "openai":
        from serving.openai_http import OpenAIBackend

        return OpenAIBackend(registry=reg, **options)
    if kind == "scripted":
        from serving.scripted import ScriptedBackend

        return ScriptedBackend(**options)
    raise ConfigError(f"backend kind {kind!r}; allowed: {', '.join(BACKENDS)}")
