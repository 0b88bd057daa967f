"""Values that cross the chat interface: requests, results, token usage.

Every agent builds :class:`ChatRequest` values and receives :class:`ChatResult` values; nothing
else about a backend leaks out. Requests are plain data so that they can be hashed into the
journal key, replayed, and shown in an audit.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from serving.errors import ConfigError

__all__ = [
    "ROLES",
    "ENGINE_SAMPLING",
    "Sampling",
    "ToolCall",
    "Message",
    "TOOL_CHOICES",
    "ChatRequest",
    "Usage",
    "ChatResult",
    "image_data_url",
    "ensure_requests",
]

#: Roles a message may have.
ROLES = ("system", "user", "assistant", "tool")

#: Request fields that ``None`` leaves to the engine (the model's generation config) under
#: server-default sampling (:class:`Sampling`).
ENGINE_SAMPLING = ("temperature", "top_p", "repetition_penalty")

#: A call-type label: a lower-case identifier. Serving accepts any; each agent declares its own
#: (``agent.pairs.moira.config.CALL_KINDS``, ``agent.qa.CALL_TYPES``, FinMem's ``CALL_TYPES``).
_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def image_data_url(path: str | Path) -> str:
    """Read a local image file and return it as a ``data:`` URL (no network fetch, ever)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"image file not found: {p}")
    mime = mimetypes.guess_type(p.name)[0] or "image/png"
    if not mime.startswith("image/"):
        raise ConfigError(f"image {p} has MIME type {mime!r}; allowed: image/*")
    return f"data:{mime};base64,{base64.b64encode(p.read_bytes()).decode('ascii')}"


class SamplingTable(Protocol):
    """A config table that names the sampling of its calls (``[model]``, ``[baselines.finmem]``);
    ``top_p`` and ``server_default`` are read where the table has them."""

    temperature: float | None
    repetition_penalty: float | None
    thinking: bool | None


@dataclass(frozen=True)
class Sampling:
    """How the model samples: the one value every agent's call settings share.

    Fields as on :class:`ChatRequest`: ``temperature`` (0: greedy), ``top_p``, ``seed``,
    ``repetition_penalty``, ``thinking``. A field left ``None`` is *unset*. With
    ``server_default`` False (our explicit settings) an unset field is not written onto the
    request (:meth:`request_fields`), which keeps :class:`ChatRequest`'s own default
    (temperature 0, top_p 1, seed 0; repetition penalty and thinking: the model's registry
    default). With ``server_default`` True (the papers' "server-default sampling") an unset
    temperature, top_p or repetition penalty goes onto the request as ``None``: the backend sends
    no value and the engine applies the model's own generation config
    (``generation_config.json``; vLLM's ``generation_config="auto"``). The seed is always the
    caller's (the run seed goes in every request).
    """

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    repetition_penalty: float | None = None
    thinking: bool | None = None
    server_default: bool = False

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0.0 <= float(self.temperature) <= 5.0:
            raise ConfigError(f"Sampling.temperature={self.temperature}; allowed: 0..5 or unset")
        if self.top_p is not None and not 0.0 < float(self.top_p) <= 1.0:
            raise ConfigError(f"Sampling.top_p={self.top_p}; allowed: (0, 1] or unset")
        if self.repetition_penalty is not None and not 0.5 <= self.repetition_penalty <= 3.0:
            raise ConfigError(
                f"Sampling.repetition_penalty={self.repetition_penalty}; allowed: 0.5..3 or unset"
            )
        if self.thinking not in (None, True, False):
            raise ConfigError(f"Sampling.thinking={self.thinking!r}; allowed: True, False or unset")

    @classmethod
    def of(cls, table: SamplingTable, seed: int | None) -> Sampling:
        """The sampling a config table names (its ``temperature``, ``repetition_penalty``,
        ``thinking`` and, where it has them, ``top_p`` and ``server_default``), with ``seed``."""
        return cls(
            temperature=table.temperature,
            top_p=getattr(table, "top_p", None),
            seed=seed,
            repetition_penalty=table.repetition_penalty,
            thinking=table.thinking,
            server_default=bool(getattr(table, "server_default", False)),
        )

    def request_fields(self) -> dict[str, Any]:
        """:class:`ChatRequest` keyword arguments: the fields that are set, and with
        ``server_default`` the unset engine-side ones (temperature, top_p, repetition
        penalty) as ``None`` (left to the engine)."""
        names = ("temperature", "top_p", "seed", "repetition_penalty", "thinking")
        out = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        if self.server_default:
            for n in ENGINE_SAMPLING:
                out.setdefault(n, None)
        return out


@dataclass(frozen=True)
class ToolCall:
    """One native tool call of an assistant reply (the OpenAI ``tool_calls`` entry).

    ``arguments`` is the JSON text the model wrote (it may not parse: the caller decides what
    an unparsable call means); ``id`` links the ``tool`` message that answers it.
    """

    id: str
    name: str
    arguments: str = "{}"

    def __post_init__(self) -> None:
        for f in ("id", "name", "arguments"):
            if not isinstance(getattr(self, f), str):
                raise ConfigError(f"ToolCall.{f} must be str, got {type(getattr(self, f)).__name__}")

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolCall:
        """From our plain form (``id``, ``name``, ``arguments``) or the OpenAI one."""
        fn = d.get("function") if isinstance(d.get("function"), Mapping) else d
        args = fn.get("arguments", "{}")
        return cls(
            str(d.get("id") or ""),
            str(fn.get("name") or ""),
            args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
        )


#: ``tool_choice`` values a request with tools may name (the OpenAI API's string forms).
TOOL_CHOICES = ("auto", "none", "required")


@dataclass(frozen=True)
class Message:
    """One chat message.

    ``images`` holds ``data:`` URLs (use :func:`image_data_url` for local files); only models whose
    registry entry accepts images take them. Images are part of the request key.

    Native tool calls: an ``assistant`` message may carry the ``tool_calls`` the model made, and
    a ``tool`` message answers one of them (``tool_call_id``, the tool's ``name``). Left at
    their defaults these fields stay out of :meth:`ChatRequest.to_dict`, so the journal keys of
    requests without tool calls are those they had before the fields existed.
    """

    role: str
    content: str
    images: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ConfigError(f"Message.role={self.role!r}; allowed: {', '.join(ROLES)}")
        if not isinstance(self.content, str):
            raise ConfigError(f"Message.content must be str, got {type(self.content).__name__}")
        for url in self.images:
            if not (isinstance(url, str) and url.startswith("data:image/")):
                raise ConfigError(
                    "Message.images entries must be data:image/... URLs (local files only; "
                    "use serving.types.image_data_url)"
                )
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.tool_calls and self.role != "assistant":
            raise ConfigError(
                f"Message.tool_calls on a {self.role!r} message; allowed: assistant messages only"
            )
        if not all(isinstance(c, ToolCall) for c in self.tool_calls):
            raise ConfigError("Message.tool_calls must be serving.types.ToolCall values")
        if self.tool_call_id and self.role != "tool":
            raise ConfigError(f"Message.tool_call_id on a {self.role!r} message; allowed: tool messages only")

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions form of this message (text, then image parts; an
        assistant's tool calls; a tool message's call id and name)."""
        if not self.images:
            out: dict[str, Any] = {"role": self.role, "content": self.content}
        else:
            parts: list[dict[str, Any]] = [{"type": "text", "text": self.content}]
            parts += [{"type": "image_url", "image_url": {"url": u}} for u in self.images]
            out = {"role": self.role, "content": parts}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        if self.name and self.role == "tool":
            out["name"] = self.name
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form; the tool fields only where set (see the class docstring)."""
        d: dict[str, Any] = {"role": self.role, "content": self.content, "images": list(self.images)}
        if self.tool_calls:
            d["tool_calls"] = [asdict(c) for c in self.tool_calls]
        if self.tool_call_id:
            d["tool_call_id"] = self.tool_call_id
        if self.name:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, m: Mapping[str, Any]) -> Message:
        """Inverse of :meth:`to_dict`."""
        return cls(
            m["role"],
            m["content"],
            tuple(m.get("images", ())),
            tuple(ToolCall.from_dict(c) for c in m.get("tool_calls", ())),
            str(m.get("tool_call_id", "")),
            str(m.get("name", "")),
        )


@dataclass(frozen=True)
class ChatRequest:
    """One model call.

    Attributes:
        model: registry key (e.g. ``"qwen3-4b"``), never a hub id.
        messages: the conversation, oldest first.
        max_tokens: completion budget in tokens; always explicit.
        temperature: sampling temperature; 0 means greedy; ``None``: the engine's default (the
            model's generation config; server-default sampling, :class:`Sampling`).
        seed: per-request sampling seed (``None``: backend default).
        thinking: Qwen3-style thinking on/off; ``None`` keeps the model's default.
        json_schema: JSON schema the final reply must satisfy (always checked after parsing).
        constrained: with a ``json_schema``, whether the engine constrains decoding to it
            (structured outputs). False: the model writes freely (the prompt asks for JSON);
            the final text, after any reasoning, is read for its JSON object
            (:func:`serving.replies.parse_reply`) and checked against the schema. Left out of
            :meth:`to_dict` when True, so a constrained request keeps the journal key it had
            before the field existed.
        call_type: label used for journaling and token accounting (any lower-case identifier;
            the agents declare theirs).
        top_p: nucleus sampling mass in (0, 1]; ``None``: the engine's default.
        repetition_penalty: ``None`` uses the registry default of the model where it names one
            (not 1.0), else the engine's default.
        stop: extra stop strings.
        tools: native tool specs offered to the model (OpenAI ``{"type": "function",
            "function": {...}}`` tables); the chat template renders them and the backend reads
            the reply's tool calls with the model's tool-call parser (its registry entry's
            ``tool_call_parser``) into :attr:`ChatResult.tool_calls`. Empty: no tools (left out
            of :meth:`to_dict`, as ``tool_choice`` then is).
        tool_choice: one of :data:`TOOL_CHOICES` (with ``tools``).
    """

    model: str
    messages: tuple[Message, ...]
    max_tokens: int
    temperature: float | None = 0.0
    seed: int | None = 0
    thinking: bool | None = None
    json_schema: Mapping[str, Any] | None = None
    call_type: str = "chat"
    top_p: float | None = 1.0
    repetition_penalty: float | None = None
    stop: tuple[str, ...] = ()
    constrained: bool = True
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: str = "auto"

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("ChatRequest.model must be a registry key, got an empty string")
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if not self.messages:
            raise ConfigError("ChatRequest.messages must hold at least one message")
        if not all(isinstance(m, Message) for m in self.messages):
            raise ConfigError("ChatRequest.messages must be serving.types.Message values")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise ConfigError(f"ChatRequest.max_tokens must be an int, got {self.max_tokens!r}")
        if not 1 <= self.max_tokens <= 131_072:
            raise ConfigError(f"ChatRequest.max_tokens={self.max_tokens}; allowed: 1..131072")
        if self.temperature is not None and not 0.0 <= float(self.temperature) <= 5.0:
            raise ConfigError(f"ChatRequest.temperature={self.temperature}; allowed: 0..5 or None")
        if self.top_p is not None and not 0.0 < float(self.top_p) <= 1.0:
            raise ConfigError(f"ChatRequest.top_p={self.top_p}; allowed: (0, 1] or None")
        if self.repetition_penalty is not None and not 0.5 <= self.repetition_penalty <= 3.0:
            raise ConfigError(
                f"ChatRequest.repetition_penalty={self.repetition_penalty}; allowed: 0.5..3 or None"
            )
        if self.thinking not in (None, True, False):
            raise ConfigError(f"ChatRequest.thinking={self.thinking!r}; allowed: True, False, None")
        if not _LABEL.match(self.call_type):
            raise ConfigError(
                f"ChatRequest.call_type={self.call_type!r}; allowed: a lower-case identifier "
                "(a-z first, then a-z, 0-9, '_'; at most 64 characters)"
            )
        if self.json_schema is not None:
            if not isinstance(self.json_schema, Mapping):
                raise ConfigError("ChatRequest.json_schema must be a mapping (a JSON schema)")
            try:
                json.dumps(self.json_schema)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"ChatRequest.json_schema is not JSON-serialisable: {exc}") from exc
        if not isinstance(self.stop, tuple):
            object.__setattr__(self, "stop", tuple(self.stop))
        if self.constrained not in (True, False):
            raise ConfigError(f"ChatRequest.constrained={self.constrained!r}; allowed: True, False")
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))
        for i, t in enumerate(self.tools):
            fn = t.get("function") if isinstance(t, Mapping) else None
            if not isinstance(fn, Mapping) or t.get("type") != "function" or not fn.get("name"):
                raise ConfigError(
                    f"ChatRequest.tools[{i}]: allowed: a table "
                    "{'type': 'function', 'function': {'name': ..., 'parameters': ...}}"
                )
        try:
            json.dumps(list(self.tools))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"ChatRequest.tools is not JSON-serialisable: {exc}") from exc
        if self.tool_choice not in TOOL_CHOICES:
            raise ConfigError(
                f"ChatRequest.tool_choice={self.tool_choice!r}; allowed: {', '.join(TOOL_CHOICES)}"
            )
        if self.tools and self.json_schema is not None and self.constrained:
            raise ConfigError(
                "ChatRequest: tools and a constrained json_schema together; allowed: one of them"
            )

    @classmethod
    def simple(
        cls,
        model: str,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int,
        **kwargs: Any,
    ) -> ChatRequest:
        """A one-turn request: optional system message, then ``prompt`` as the user message."""
        msgs = ([Message("system", system)] if system else []) + [Message("user", prompt)]
        return cls(model=model, messages=tuple(msgs), max_tokens=max_tokens, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (used for the journal key and the audit log)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["messages"] = [m.to_dict() for m in self.messages]
        d["json_schema"] = dict(self.json_schema) if self.json_schema is not None else None
        d["stop"] = list(self.stop)
        if self.constrained:
            del d["constrained"]  # the default: keys of constrained requests predate the field
        if self.tools:
            d["tools"] = [json.loads(json.dumps(t)) for t in self.tools]
        else:  # keys of requests without tools predate the fields
            del d["tools"], d["tool_choice"]
        return d

    def key(self) -> str:
        """sha256 of the canonical JSON of the exact request: the journal key."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChatRequest:
        """Inverse of :meth:`to_dict`."""
        data = dict(d)
        data["messages"] = tuple(Message.from_dict(m) for m in data["messages"])
        data["stop"] = tuple(data.get("stop", ()))
        data["tools"] = tuple(data.get("tools", ()))
        return cls(**data)


@dataclass(frozen=True)
class Usage:
    """Token counts of one call. ``cached_tokens`` is the prompt prefix served from cache."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ChatResult:
    """The outcome of one :class:`ChatRequest`.

    Attributes:
        text: the final answer text (reasoning removed); the only text that is ever parsed.
        reasoning: the thinking text kept apart, or ``None``.
        parsed: the parsed JSON reply when the request had a schema and the reply satisfied it.
        parse_error: why parsing or schema validation failed (``None`` when it did not).
        finish_reason: ``"stop"``, ``"length"`` (cut at max_tokens), or ``"error"``.
        usage: token counts.
        latency_s: wall-clock seconds of the backend call that produced this result (for a
            batched engine call: the whole batch's wall time).
        backend / model / revision: what produced it (revision: weights hash or tag).
        call_type: copied from the request.
        request_key: :meth:`ChatRequest.key` of the request.
        from_journal: ``True`` when replayed from the journal instead of calling the model.
        tool_calls: the native tool calls the backend read from the reply (a request with
            ``tools``; ``text`` is then what the model wrote besides them); empty otherwise.
    """

    text: str
    reasoning: str | None
    parsed: Any
    parse_error: str | None
    finish_reason: str
    usage: Usage
    latency_s: float
    backend: str
    model: str
    revision: str
    call_type: str
    request_key: str
    from_journal: bool = field(default=False, compare=False)
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def is_fallback(self) -> bool:
        """True when a schema was asked for and no valid JSON came back (incl. a ``length`` cut)."""
        return self.parse_error is not None or self.finish_reason in ("length", "error")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("from_journal")
        if not self.tool_calls:  # stored results without tool calls keep their form
            d.pop("tool_calls")
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, from_journal: bool = False) -> ChatResult:
        data = dict(d)
        data["usage"] = Usage(**data["usage"])
        data["tool_calls"] = tuple(ToolCall.from_dict(c) for c in data.get("tool_calls", ()))
        return cls(**data, from_journal=from_journal)


def ensure_requests(requests: Sequence[ChatRequest]) -> list[ChatRequest]:
    """Validate a batch argument (a sequence of requests) and return it as a list."""
    reqs = list(requests)
    for i, r in enumerate(reqs):
        if not isinstance(r, ChatRequest):
            raise ConfigError(f"requests[{i}] is {type(r).__name__}; allowed: ChatRequest")
    return reqs
