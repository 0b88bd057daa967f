"""Data-parallel replicas of one model: several in-process engines (one per
:class:`~serving.hardware.gpus.ReplicaSlot` of its layout, each its own engine process on its own
GPUs) behind one :class:`~serving.chat.backend.Backend`.

vLLM's ``LLM`` refuses ``data_parallel_size > 1``, so the replicas are separate engines and
this backend spreads each ``chat`` call over them: every replica gets its share of the call's
requests at once (a thread per replica waits on its engine), and the results come back in the
call's order. The journal wraps this backend as it wraps one engine: a request's key, its
result and its record do not depend on the replica that answered it.

**Which replica.** Requests that continue one conversation go to the same replica, so its
prefix cache holds their shared beginning: a request is keyed by its first two messages (the
system prompt and the first user turn: a ReAct question's every step, a FinMem run's
decisions), a key seen before goes where it went, a new key to the replica that has been given
the fewest keys so far (the lowest index on a tie). The assignment depends only on the order of
the requests, never on timing.

**Failures.** A replica that raises ends the call with its error after the others have
answered; the answered requests travel with a :class:`~serving.errors.BackendError` (its
``done``), so the journal keeps them. Replicas start one after the other, before the first
call's threads (an engine's start sets the environment its processes inherit), and close one
after the other (``close`` waits for each engine's processes and memory).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from serving.chat.types import ChatRequest, ChatResult, ensure_requests
from serving.errors import BackendError, ConfigError

__all__ = ["ReplicatedBackend", "conversation_key"]

log = logging.getLogger(__name__)


def conversation_key(req: ChatRequest) -> str:
    """The key of ``req``'s conversation: a digest of its first two messages."""
    head = [m.to_openai() for m in req.messages[:2]]
    return hashlib.sha256(json.dumps(head, sort_keys=True).encode("utf-8")).hexdigest()[:16]


class ReplicatedBackend:
    """Replicas of one model's engine (module docstring). ``replicas``: backends serving the
    same model (``VLLMBackend`` each with a one-replica layout), opened and owned here."""

    name = "vllm"

    def __init__(self, replicas: Sequence[Any]) -> None:
        if len(replicas) < 2:
            raise ConfigError(f"ReplicatedBackend of {len(replicas)} replica(s); allowed: 2 or more")
        keys = {r.spec.key for r in replicas}
        if len(keys) != 1:
            raise ConfigError(f"replicas serve {sorted(keys)}; allowed: one model")
        self.replicas = list(replicas)
        self.spec = replicas[0].spec
        self.options = replicas[0].options
        self._where: dict[str, int] = {}
        self._given = [0] * len(replicas)
        self._started = False

    @property
    def engine_start_s(self) -> float | None:
        starts = [r.engine_start_s for r in self.replicas if r.engine_start_s is not None]
        return sum(starts) if starts else None

    def settings(self) -> dict[str, Any]:
        """The first replica's settings, with every replica's layout."""
        out = dict(self.replicas[0].settings())
        layouts = [r.settings().get("engine", {}).get("layout") for r in self.replicas]
        out["replicas"] = len(self.replicas)
        out["replica_layouts"] = layouts
        return out

    def start(self) -> float:
        """Start every replica's engine, one after the other (an engine's start sets the
        variables its processes inherit, such as ``CUDA_VISIBLE_DEVICES``, in this process's
        environment: two starts at once would mix them); the seconds of all starts."""
        total = 0.0
        for r in self.replicas:
            start = getattr(r, "start", None)
            if callable(start):
                total += float(start())
        self._started = True
        return total

    def replica_of(self, req: ChatRequest) -> int:
        """The replica ``req`` goes to (module docstring); remembers new conversations."""
        key = conversation_key(req)
        k = self._where.get(key)
        if k is None:
            k = min(range(len(self.replicas)), key=lambda i: (self._given[i], i))
            self._where[key] = k
            self._given[k] += 1
        return k

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        reqs = ensure_requests(requests)
        if not reqs:
            return []
        if not self._started:
            self.start()  # before the threads: never two engine starts at once
        parts: dict[int, list[int]] = {}
        for i, r in enumerate(reqs):
            parts.setdefault(self.replica_of(r), []).append(i)
        results: list[ChatResult | None] = [None] * len(reqs)
        errors: list[BaseException] = []

        def run(k: int) -> None:
            idx = parts[k]
            try:
                out = self.replicas[k].chat([reqs[i] for i in idx])
            except BaseException as exc:  # noqa: BLE001 - re-raised below after the others finish
                errors.append(exc)
                done = getattr(exc, "done", {}) or {}
                for pos, res in done.items():
                    results[idx[pos]] = res
                return
            for i, res in zip(idx, out):
                results[i] = res

        if len(parts) == 1:
            run(next(iter(parts)))
        else:
            with ThreadPoolExecutor(max_workers=len(parts), thread_name_prefix="replica") as pool:
                list(pool.map(run, sorted(parts)))
        if errors:
            first = errors[0]
            done = {i: r for i, r in enumerate(results) if r is not None}
            if isinstance(first, BackendError):
                raise BackendError(str(first), done=done) from first
            raise first
        return [r for r in results if r is not None]

    def effective_sampling(self, req: ChatRequest) -> dict[str, Any]:
        return self.replicas[0].effective_sampling(req)

    def sampling_defaults(self) -> dict[str, Any]:
        return self.replicas[0].sampling_defaults()

    def reset_prefix_cache(self) -> bool:
        return all([r.reset_prefix_cache() for r in self.replicas])

    def close(self) -> None:
        """Close every replica (each waits for its engine's processes and memory); the first
        error is raised after all have been tried."""
        first: BaseException | None = None
        for r in self.replicas:
            try:
                r.close()
            except BaseException as exc:  # noqa: BLE001 - close the others first
                first = first or exc
        if first is not None:
            raise first
