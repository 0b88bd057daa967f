"""One chat round trip from the command line: build the request, pick the backend (the
in-process engine, or a running server over HTTP), journal it if asked, return the result."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from localfin.errors import InputError
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.types import ChatRequest, ChatResult
from serving.journal import Journal, JournaledBackend
from serving.models.registry import Registry, default_registry
from serving.open import BackendSpec, open_backend

__all__ = ["chat_once", "read_schema", "result_record"]

log = logging.getLogger(__name__)

#: Completion budget of a command-line chat when none is given (tokens): the model's default,
#: capped so that a CPU model answers in seconds.
CLI_MAX_TOKENS = 1024


def read_schema(path: str | Path) -> dict[str, Any]:
    """A JSON schema file -> dict; a missing file, bad JSON or a non-object is an InputError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"schema file {p}: cannot read it ({exc.strerror or exc})") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"schema file {p}: not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})"
        ) from None
    if not isinstance(schema, dict):
        raise InputError(f"schema file {p}: a JSON schema must be an object, got {type(schema).__name__}")
    return schema


def chat_once(
    model: str,
    prompt: str,
    *,
    registry: Registry | None = None,
    schema_path: str | Path | None = None,
    system: str | None = None,
    thinking: bool | None = None,
    max_tokens: int | None = None,
    temperature: float = 0.0,
    base_url: str | None = None,
    api_key: str | None = None,
    journal_path: str | Path | None = None,
    progress: Progress = NULL_PROGRESS,
) -> ChatResult:
    """Send one user message to ``model`` and return the result.

    ``base_url`` (``http://host:port/v1``) talks to a running server; otherwise the vLLM engine
    starts in this process. ``schema_path``: a JSON schema the reply must satisfy.
    ``journal_path``: record the call in (and replay it from) this SQLite journal.
    """

    reg = registry or default_registry()
    spec = reg.get(model)
    json_schema = read_schema(schema_path) if schema_path else None
    if not base_url:
        spec.resolve_path()  # no weights: say how to get them before anything starts
    req = ChatRequest.simple(
        model,
        prompt,
        system=system,
        max_tokens=max_tokens or min(spec.default_max_tokens, CLI_MAX_TOKENS),
        temperature=temperature,
        thinking=thinking,
        json_schema=json_schema,
        call_type="chat",
    )
    journal = Journal(journal_path, run_id="chat") if journal_path else None
    which = (
        BackendSpec("openai", model, base_url=base_url, api_key=api_key)
        if base_url
        else BackendSpec("vllm", model)
    )
    inner = open_backend(which, reg)
    try:
        backend = JournaledBackend(inner, journal) if journal is not None else inner
        replay = journal is not None and bool(journal.get_many([req.key()]))
        if not base_url and not replay:
            with progress.task(f"starting the vLLM engine ({model})"):
                inner.start()  # type: ignore[attr-defined]
        with progress.task("chat", total=1) as task:
            result = backend.chat([req])[0]
            task.advance()
    finally:
        inner.close()
        if journal is not None:
            journal.close()
    return result


def result_record(res: ChatResult) -> dict[str, Any]:
    """The JSON form of a result that ``localfin chat`` prints."""
    return {
        "text": res.text,
        "parsed": res.parsed,
        "parse_error": res.parse_error,
        "reasoning": res.reasoning,
        "finish_reason": res.finish_reason,
        "usage": res.usage.__dict__,
        "latency_s": round(res.latency_s, 3),
        "backend": res.backend,
        "revision": res.revision,
    }
