"""The one chat protocol every agent uses (backends are opened by :mod:`serving.open`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from serving.chat.types import ChatRequest, ChatResult

__all__ = ["Backend"]


@runtime_checkable
class Backend(Protocol):
    """``chat(requests)`` returns one result per request, in order.

    Implementations batch where they can; a failure of one request is a result with
    ``finish_reason="error"``, never a lost batch.
    """

    name: str

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]: ...

    def close(self) -> None: ...
