"""A backend wrapper for ``localfin bench tokens``: the CPU model answers a copy of a prompt cut
to fit its own context, while the run records and counts the prompt as the agent built it.

FinMem's prompts are built for its backbone's context (the config's ``max_model_len``, 131,072
tokens for Llama-3.1-8B): three whole 10-K and three whole 10-Q excerpts. The CPU model that
answers the benchmark holds 8,192. A request whose prompt is longer than ``fit_tokens`` (counted
with the CPU model's own tokenizer) is sent as a copy whose longest memory texts (the ``text``
fields of the JSON payload, filings first since they are longest) are cut, a quarter at a time,
until it fits; the reply comes back under the original request's key, so the journal, the
recorded requests and the token counts hold the prompt as built. Requests that fit are sent
unchanged. How many were cut is counted (:attr:`FitToContext.cut`). A prompt whose fixed text
and reply budget alone exceed ``fit_tokens`` cannot be cut: it is sent whole (the engine then
refuses it and the run records a failed call), counted (:attr:`FitToContext.unfit`) and logged
once, naming ``--fit-tokens``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from serving.chat.types import ChatRequest, ChatResult, Message

__all__ = ["FitToContext", "shrink"]

log = logging.getLogger(__name__)


def _texts(node: Any, out: list[tuple[Any, Any, int]]) -> None:
    """(container, key, length) of every ``text`` string in a JSON value."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "text" and isinstance(v, str):
                out.append((node, k, len(v)))
            else:
                _texts(v, out)
    elif isinstance(node, list):
        for v in node:
            _texts(v, out)


def shrink(request: ChatRequest, count: Callable[[ChatRequest], int], limit: int) -> ChatRequest | None:
    """A copy of ``request`` whose prompt tokens plus ``max_tokens`` fit ``limit``: the longest
    ``text`` fields of its JSON user message cut by a quarter at a time (None when cutting every
    text to nothing does not make it fit, or the message is not JSON)."""
    user = next((i for i, m in enumerate(request.messages) if m.role == "user"), None)
    if user is None:
        return None
    try:
        payload = json.loads(request.messages[user].content)
    except ValueError:
        return None
    req = request
    for _ in range(200):
        if count(req) + req.max_tokens <= limit:
            return req
        spots: list[tuple[Any, Any, int]] = []
        _texts(payload, spots)
        spots = [s for s in spots if s[2] > 40]
        if not spots:
            return None
        longest = max(s[2] for s in spots)
        for node, key, n in spots:
            if n >= longest // 2:
                node[key] = node[key][: max(40, n * 3 // 4)].rstrip() + "..."
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        msgs = list(request.messages)
        msgs[user] = Message(msgs[user].role, body)
        req = dataclasses.replace(request, messages=tuple(msgs))
    return None


class FitToContext:
    """Wraps a backend (module docstring); ``count``: a request's prompt tokens for the wrapped
    model, ``fit_tokens``: the most a prompt and its reply budget may take."""

    def __init__(self, inner: Any, count: Callable[[ChatRequest], int], fit_tokens: int) -> None:
        self.inner = inner
        self.count = count
        self.fit_tokens = int(fit_tokens)
        self.name = f"fit:{getattr(inner, 'name', 'backend')}"
        self.cut = 0
        self.unfit = 0
        self._lock = threading.Lock()

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        sent = []
        for r in requests:
            small = (
                r
                if self.count(r) + r.max_tokens <= self.fit_tokens
                else shrink(r, self.count, self.fit_tokens)
            )
            if small is not r and small is not None:
                with self._lock:
                    self.cut += 1
            elif small is None:
                with self._lock:
                    self.unfit += 1
                    first = self.unfit == 1
                if first:
                    log.warning(
                        "--fit-tokens %d: a %s prompt does not fit even with its memory texts cut (its "
                        "fixed text and reply budget alone exceed it); sent whole, the model may refuse "
                        "it: raise --fit-tokens (at most the answering model's context)",
                        self.fit_tokens,
                        r.call_type or "chat",
                    )
            sent.append(small if small is not None else r)
        results = self.inner.chat(sent)
        return [
            res if s is r else dataclasses.replace(res, request_key=r.key())
            for r, s, res in zip(requests, sent, results)
        ]

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
