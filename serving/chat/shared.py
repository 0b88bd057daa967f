"""One engine shared by several threads, their calls merged into common engine batches.

:func:`serving.chat.lockstep.run_lockstep` merges the calls of many programs written as generators.
:class:`SharedEngine` does the same for code that calls ``backend.chat`` directly from several
threads (the demo runs its Moira part and its QA part at once on one CPU engine): every thread
that takes part enters :meth:`SharedEngine.participant`; a call waits until every participant
still running is waiting in :meth:`SharedEngine.chat` (or has left), and then one engine call
answers all of the waiting calls, each getting its own results in order. The engine decodes one
batch as long as its longest reply, so calls that would each have been a short batch of their
own ride along: on 2 cores a round costs about as much with 12 requests as with 5.

Which calls share a batch depends on the threads' timing, never what they get back: each
request carries its own seed and sampling settings, and the CPU model runs in float32, where a
reply does not depend on its batch (docs/serving.md, "Determinism on the CPU"). Journals sit above this
wrapper (each part journals its own calls), so a resumed part replays its own calls whatever
the other does. A thread that is not a participant is answered at once, alone.

An engine failure reaches every call of its batch (each re-raises it); a participant that fails
leaves, so the others go on without waiting for it.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from serving.chat.backend import Backend
from serving.chat.types import ChatRequest, ChatResult

__all__ = ["SharedEngine", "SharedStats"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SharedStats:
    """Engine calls made, caller calls answered, and how many engine calls merged two or more."""

    engine_calls: int
    caller_calls: int
    merged: int


class SharedEngine:
    """``backend`` shared by participant threads in merged rounds (module doc)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = backend.name
        self._cond = threading.Condition()
        self._participants: set[int] = set()
        self._pending: dict[int, list[ChatRequest]] = {}
        self._waiting_threads: dict[int, int] = {}  # ticket -> thread id
        self._done: dict[int, list[ChatResult] | BaseException] = {}
        self._tickets = itertools.count()
        self._busy = False
        self._engine_calls = self._caller_calls = self._merged = 0

    @contextmanager
    def participant(self) -> Iterator[SharedEngine]:
        """The calling thread takes part until the block ends (however it ends)."""
        me = threading.get_ident()
        with self._cond:
            self._participants.add(me)
        try:
            yield self
        finally:
            with self._cond:
                self._participants.discard(me)
                self._cond.notify_all()  # the others may now be all that is left

    @property
    def stats(self) -> SharedStats:
        with self._cond:
            return SharedStats(self._engine_calls, self._caller_calls, self._merged)

    def _ready(self) -> bool:
        """Every participant is waiting (calls of non-participants never wait for others)."""
        if not self._pending or self._busy:
            return False
        waiting = set(self._waiting_threads.values())
        if not waiting <= self._participants:
            return True  # a non-participant's call: answered now
        return self._participants <= waiting

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        reqs = list(requests)
        if not reqs:
            return []
        with self._cond:
            ticket = next(self._tickets)
            self._pending[ticket] = reqs
            self._waiting_threads[ticket] = threading.get_ident()
            self._caller_calls += 1
            self._cond.notify_all()
            while ticket not in self._done:
                if self._ready():
                    self._dispatch()  # this thread runs the round; the lock is released meanwhile
                else:
                    self._cond.wait()
            out = self._done.pop(ticket)
        if isinstance(out, BaseException):
            raise out
        return out

    def _dispatch(self) -> None:
        """Run one merged engine call for every pending call (called with the lock held)."""
        batch = sorted(self._pending.items())  # arrival order
        self._pending.clear()
        for ticket, _ in batch:
            del self._waiting_threads[ticket]
        self._busy = True
        merged = [r for _, reqs in batch for r in reqs]
        self._cond.release()
        try:
            try:
                results: list[ChatResult] | BaseException = list(self.backend.chat(merged))
            except BaseException as e:  # noqa: BLE001  (re-raised in every call of the batch)
                results = e
        finally:
            self._cond.acquire()
        self._engine_calls += 1
        self._merged += len(batch) > 1
        if not isinstance(results, BaseException) and len(results) != len(merged):
            results = RuntimeError(f"{self.name}: {len(results)} results for {len(merged)} requests")
        start = 0
        for ticket, reqs in batch:
            if isinstance(results, BaseException):
                self._done[ticket] = results
            else:
                self._done[ticket] = results[start : start + len(reqs)]
            start += len(reqs)
        self._busy = False
        self._cond.notify_all()

    def close(self) -> None:
        self.backend.close()
