"""A forwarding HTTP proxy in front of a model server, for the cluster tests (not a test): each
node of a test cluster gets its own address (its ``LOCALFIN_ENDPOINTS``) while one real
``vllm serve`` answers them all (one engine at a time on a CPU machine).

Every chat request is counted on arrival (``n``) and its identity recorded (``received``: a
digest of the messages, seed and completion budget, the same as :func:`request_digest` of a
journaled request), so a test knows which calls reached the model through which node. A gate
``holds[n]`` (a :class:`Hold`) stops the ``n``-th chat request before it is forwarded until the
test releases it (the test kills a node there); nothing here waits on a timer.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


def _digest(messages: list[dict[str, Any]], seed: Any, max_tokens: Any) -> str:
    msgs = [[m.get("role"), m.get("content")] for m in messages]
    blob = json.dumps([msgs, seed, max_tokens], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def request_digest(request_json: dict[str, Any]) -> str:
    """The digest of a journaled request (``request_json`` of a journal row)."""
    return _digest(request_json["messages"], request_json.get("seed"), request_json.get("max_tokens"))


@dataclass
class Hold:
    """The request waits (``arrived`` set) until the test sets ``release``; then it is forwarded."""

    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


class CountingProxy:
    """Forwards every request to ``upstream`` (``http://host:port/v1``; or the one given to
    :meth:`forward_to` later) (module doc)."""

    def __init__(self, upstream: str = "") -> None:
        self.host, self.port_up = "127.0.0.1", 0
        if upstream:
            self.forward_to(upstream)
        self.holds: dict[int, Hold] = {}
        self.n = 0
        self.received: list[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                owner._forward(self, b"")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith("/chat/completions"):
                    doc = json.loads(body or b"{}")
                    with owner._lock:
                        owner.n += 1
                        owner.received.append(
                            _digest(doc.get("messages", []), doc.get("seed"), doc.get("max_tokens"))
                        )
                        gate = owner.holds.get(owner.n)
                    if gate is not None:
                        gate.arrived.set()
                        gate.release.wait()
                owner._forward(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="proxy", daemon=True)
        self._thread.start()

    def forward_to(self, upstream: str) -> None:
        """Forward to ``upstream`` (``http://host:port/v1``) from now on."""
        u = urlsplit(upstream)
        self.host, self.port_up = u.hostname or "127.0.0.1", int(u.port or 80)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _forward(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        conn = http.client.HTTPConnection(self.host, self.port_up, timeout=900)
        try:
            headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
            conn.request(h.command, h.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            h.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except OSError:  # the client is gone (its node was killed)
            return
        finally:
            conn.close()

    def close(self) -> None:
        for gate in self.holds.values():
            gate.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=30)
