"""A small OpenAI-compatible server on 127.0.0.1 for the fault tests (not a test): the scripted
Moira model (tests/agent/pairs/moira_support.py) behind ``GET /v1/models`` and ``POST
/v1/chat/completions``, with gates that fire at a known chat request (never on a timer).

The call type is not part of an OpenAI request; it is read back from the reply schema's
properties (each Moira call type has its own). Every chat request is counted in arrival order
(``n``, 1-based) and its request key recorded once answered (``answered``), so a test knows
exactly which calls reached the "model" (``received``: every request key in arrival order,
answered or not). Gates (``gates[n] = action``) run when the ``n``-th
chat request arrives, before it is answered:

- ``Die()``: that request and every later one (models list included) get their connection
  closed without a reply, as the clients of a dying ``vllm serve`` see it, until the test calls
  :meth:`FakeOpenAI.revive` ("the server restarted"; the port stays bound, so no other process
  can take it in between);
- ``Hold()``: set ``arrived`` and wait until the test sets ``release`` (a signal is sent to the
  client meanwhile); then answer;
- ``Call(fn)``: run ``fn(server)`` (e.g. lower the client's file-size limit), then answer;
- ``Status(code)``: answer with that HTTP status and no completion (e.g. 503 from a proxy).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from moira_support import scripted

from serving.chat.types import ChatRequest, Message

#: the reply schema's properties -> the Moira call type that asks for them
_CALL_TYPES = {
    "selected_pair": "pair_selection",
    "action": "direction",
    "principles": "reflection",
    "news_break_level": "break_check",
    "event_type": "news_verify",
}


def call_type_of(schema: dict[str, Any] | None) -> str:
    props = set((schema or {}).get("properties", {}))
    for prop, ct in _CALL_TYPES.items():
        if prop in props:
            return ct
    return "chat"


@dataclass
class Die:
    """The server goes away at this request."""


@dataclass
class Hold:
    """The request waits for the test (``arrived`` set when it does, answered on ``release``)."""

    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class Status:
    """This request gets HTTP ``code`` (a proxy's 502/503/504, a server error)."""

    code: int


@dataclass
class Call:
    """``fn(server)`` runs before this request is answered."""

    fn: Callable[[FakeOpenAI], None]


class FakeOpenAI:
    """The server (module doc). ``model``: the name ``/v1/models`` lists; ``api_key``: the
    bearer token it wants (None: any)."""

    def __init__(self, *, model: str = "smollm2-135m", api_key: str | None = "k") -> None:
        self.model, self.api_key = model, api_key
        self.backend = scripted()
        self.gates: dict[int, Any] = {}
        self.n = 0
        self.answered: list[str] = []  # request keys, in the order their replies were sent
        self.received: list[str] = []  # request keys, in the order the requests arrived
        self.models_asked = 0
        self.dead = False
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return None

            def do_GET(self) -> None:
                owner._get(self)

            def do_POST(self) -> None:
                owner._post(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- handlers ---------------------------------------------------------------------------
    def _authorized(self, h: BaseHTTPRequestHandler) -> bool:
        if self.api_key is None or h.headers.get("Authorization") == f"Bearer {self.api_key}":
            return True
        self._send(h, 401, {"error": {"message": "Unauthorized"}})
        return False

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        if self.dead:
            return self._drop(h)
        if not self._authorized(h):
            return None
        if h.path.rstrip("/") != "/v1/models":
            return self._send(h, 404, {"error": {"message": "Not Found"}})
        self.models_asked += 1
        return self._send(h, 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]})

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length") or 0)) or b"{}")
        if self.dead:
            return self._drop(h)
        if not self._authorized(h):
            return None
        if body.get("model") != self.model:
            missing = {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
            return self._send(h, 404, missing)
        schema = (body.get("structured_outputs") or {}).get("json")
        req = ChatRequest(
            model=body["model"],
            messages=tuple(Message(m["role"], m["content"]) for m in body["messages"]),
            max_tokens=int(body["max_tokens"]),
            temperature=body.get("temperature"),
            seed=body.get("seed"),
            json_schema=schema,
            call_type=call_type_of(schema),
        )
        with self._lock:
            self.n += 1
            self.received.append(req.key())
            gate = self.gates.get(self.n)
        if isinstance(gate, Die):
            self.dead = True
            return self._drop(h)
        if isinstance(gate, Status):
            return self._send(h, gate.code, {"error": {"message": f"status {gate.code} (test gate)"}})
        if isinstance(gate, Hold):
            gate.arrived.set()
            gate.release.wait()
        elif isinstance(gate, Call):
            gate.fn(self)
        [res] = self.backend.chat([req])
        reply = {
            "id": "x",
            "object": "chat.completion",
            "model": self.model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": res.text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": res.usage.prompt_tokens,
                "completion_tokens": res.usage.completion_tokens,
            },
        }
        try:
            self._send(h, 200, reply)
        except OSError:  # the client is gone (stopped at once): this reply never arrived
            return None
        with self._lock:
            self.answered.append(req.key())
        return None

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, code: int, doc: Any) -> None:
        data = json.dumps(doc).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    @staticmethod
    def _drop(h: BaseHTTPRequestHandler) -> None:
        """Close the connection without a reply (what a dying server's clients see)."""
        h.close_connection = True
        try:
            h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def revive(self) -> None:
        """The server is back (a restart): requests are answered again, counted from 1."""
        with self._lock:
            self.n, self.answered, self.gates, self.dead = 0, [], {}, False

    def close(self) -> None:
        for gate in self.gates.values():
            if isinstance(gate, Hold):
                gate.release.set()
        self.dead = True
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=30)
