"""serving.engines.continuous.ContinuousEngine: calls from several threads in one engine's running batch.

A stand-in engine with vLLM's step interface (add a request, step, collect finished outputs)
decodes a request ``name:n`` in ``n`` steps. Every wait is on an event or the engine's own
state, never on time. The real engine is exercised by the demo's end-to-end test
(``tests/agent/test_demo.py``).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

import pytest

from serving.chat.replies import build_result
from serving.chat.types import ChatRequest, ChatResult, Message, Usage
from serving.engines.continuous import ContinuousEngine
from serving.errors import BackendError, ConfigError

WAIT_S = 60  # an upper bound for a thread that is certain to finish, not a timing assumption


@dataclass
class _Out:
    request_id: str
    text: str
    finished: bool = True


class StepEngine:
    """vLLM's step interface in miniature: ``name:n`` finishes after ``n`` steps of its own.

    ``hold``: while set, steps make no progress (callers keep stepping; nothing finishes), so a
    test can have a request in the engine for certain when another call arrives.
    """

    name = "step-fake"

    def __init__(self) -> None:
        self.left: dict[str, int] = {}
        self.text: dict[str, str] = {}
        self.ids = itertools.count()
        self.hold = threading.Event()
        self.added = threading.Event()
        self.step_error: BaseException | None = None
        self.aborted: list[str] = []
        self.finish_order: list[str] = []
        self.in_flight_at_finish: dict[str, set[str]] = {}
        self.closed = False

    def start(self) -> float:
        return 0.0

    def enqueue(self, req: ChatRequest) -> str:
        name, _, n = req.messages[-1].content.partition(":")
        if name == "refused":
            raise ValueError("prompt longer than the context")
        if name == "misrouted":
            raise ConfigError("request for model 'other' sent to the vLLM backend serving 'm'")
        rid = f"{next(self.ids)}-abcdefgh"
        self.left[rid], self.text[rid] = int(n), name
        self.added.set()
        return rid

    def has_unfinished(self) -> bool:
        return bool(self.left)

    def step(self) -> list[_Out]:
        if self.step_error is not None:
            raise self.step_error
        if self.hold.is_set():
            return []
        done = []
        for rid in list(self.left):
            self.left[rid] -= 1
            if self.left[rid] == 0:
                del self.left[rid]
                self.finish_order.append(self.text[rid])
                self.in_flight_at_finish[self.text[rid]] = {self.text[r] for r in self.left}
                done.append(_Out(rid.split("-")[0], f"re {self.text[rid]}"))
        return done

    def abort(self, ids) -> None:
        self.aborted += list(ids)
        for rid in ids:
            self.left.pop(rid, None)

    def result(self, req: ChatRequest, out: _Out, latency_s: float) -> ChatResult:
        return build_result(
            req,
            out.text,
            finish_reason="stop",
            usage=Usage(),
            latency_s=latency_s,
            backend=self.name,
            revision="",
        )

    def close(self) -> None:
        self.closed = True


def _req(text: str) -> ChatRequest:
    return ChatRequest(model="m", messages=(Message("user", text),), max_tokens=8, call_type="t")


def _run(target, box: dict, key: str) -> threading.Thread:
    def go() -> None:
        try:
            box[key] = target()
        except BaseException as e:  # noqa: BLE001 - checked by the test
            box[key] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def _join(*ts: threading.Thread) -> None:
    for t in ts:
        t.join(WAIT_S)
        assert not t.is_alive()


def test_a_short_call_returns_while_a_long_one_is_still_decoding() -> None:
    eng = StepEngine()
    cont = ContinuousEngine(eng)
    eng.hold.set()  # the long request stays in the engine until the short one is in too
    box: dict = {}
    a = _run(lambda: cont.chat([_req("long:10")]), box, "a")
    assert eng.added.wait(WAIT_S)
    eng.added.clear()
    b = _run(lambda: cont.chat([_req("short:2")]), box, "b")
    assert eng.added.wait(WAIT_S)
    eng.hold.clear()
    _join(a, b)
    assert [r.text for r in box["a"]] == ["re long"] and [r.text for r in box["b"]] == ["re short"]
    assert eng.finish_order == ["short", "long"]
    assert eng.in_flight_at_finish["short"] == {"long"}  # it did not wait for the long one
    st = cont.stats
    assert st.calls == 2 and st.overlapped == 1 and st.steps >= 10


def test_one_call_gets_its_results_in_request_order_whatever_finishes_first() -> None:
    cont = ContinuousEngine(StepEngine())
    out = cont.chat([_req("c:3"), _req("a:1"), _req("b:2")])
    assert [r.text for r in out] == ["re c", "re a", "re b"]
    assert cont.stats.overlapped == 0


def test_a_refused_request_is_its_own_fallback_and_the_rest_run() -> None:
    cont = ContinuousEngine(StepEngine())
    out = cont.chat([_req("a:1"), _req("refused:1"), _req("b:1")])
    assert [r.finish_reason for r in out] == ["stop", "error", "stop"]
    assert "prompt longer than the context" in (out[1].parse_error or "")
    assert out[0].text == "re a" and out[2].text == "re b"


def test_a_failed_step_reaches_every_waiting_call_and_aborts_their_requests() -> None:
    eng = StepEngine()
    cont = ContinuousEngine(eng)
    eng.hold.set()
    box: dict = {}
    a = _run(lambda: cont.chat([_req("a:5")]), box, "a")
    assert eng.added.wait(WAIT_S)
    eng.added.clear()
    b = _run(lambda: cont.chat([_req("b:5"), _req("c:5")]), box, "b")
    assert eng.added.wait(WAIT_S)
    with cont._cond:  # all three in the engine: the next step fails for every one of them
        assert cont._cond.wait_for(lambda: len(cont._live) == 3, WAIT_S)
        eng.step_error = RuntimeError("kernel fault")
    _join(a, b)
    assert isinstance(box["a"], RuntimeError) and isinstance(box["b"], RuntimeError)
    assert sorted(eng.aborted) == ["0-abcdefgh", "1-abcdefgh", "2-abcdefgh"]
    assert not cont._live and not cont._inbox  # nothing left behind
    cont.close()


def test_a_dead_engine_is_a_backend_error() -> None:
    class EngineDeadError(RuntimeError):
        pass

    eng = StepEngine()
    eng.step_error = EngineDeadError("EngineCore encountered an issue")
    cont = ContinuousEngine(eng)
    with pytest.raises(BackendError, match="died"):
        cont.chat([_req("a:2")])


def test_no_requests_no_engine_work_and_close_reaches_the_engine() -> None:
    eng = StepEngine()
    cont = ContinuousEngine(eng)
    assert cont.chat([]) == []
    assert cont.stats.calls == 0
    cont.close()
    assert eng.closed


def test_the_engine_lives_in_one_thread_of_its_own_and_closes_there() -> None:
    seen: set[str] = set()

    class Tracked(StepEngine):
        def start(self) -> float:
            seen.add(threading.current_thread().name)
            return 0.0

        def step(self):
            seen.add(threading.current_thread().name)
            return super().step()

        def close(self) -> None:
            seen.add(threading.current_thread().name)
            super().close()

    eng = Tracked()
    cont = ContinuousEngine(eng)
    box: dict = {}
    _join(_run(lambda: cont.chat([_req("a:2")]), box, "a"), _run(lambda: cont.chat([_req("b:1")]), box, "b"))
    cont.close()
    assert seen == {"step-fake-engine"} and eng.closed
    with pytest.raises(BackendError, match="closed"):
        cont.chat([_req("c:1")])


def test_a_failed_start_is_raised_by_start_and_by_every_call() -> None:
    class Broken(StepEngine):
        def start(self) -> float:
            raise BackendError("vLLM engine failed to start")

    cont = ContinuousEngine(Broken())
    with pytest.raises(BackendError, match="failed to start"):
        cont.start()
    with pytest.raises(BackendError, match="failed to start"):
        cont.chat([_req("a:1")])


def test_requests_the_engine_lost_fail_instead_of_waiting_for_ever() -> None:
    class Losing(StepEngine):
        def step(self):
            self.left.clear()  # the engine drops every request without a reply
            return []

    cont = ContinuousEngine(Losing())
    with pytest.raises(RuntimeError, match="none left in the engine"):
        cont.chat([_req("a:3")])
    cont.close()


def test_close_with_a_call_waiting_fails_it_and_leaves_nothing_in_a_shared_engine() -> None:
    eng = StepEngine()
    eng.hold.set()  # the request never finishes until the test says so
    cont = ContinuousEngine(eng, close_engine=False)
    box: dict = {}
    a = _run(lambda: cont.chat([_req("a:2")]), box, "a")
    with cont._cond:
        assert cont._cond.wait_for(lambda: len(cont._live) == 1, WAIT_S)
    cont.close()
    _join(a)
    assert isinstance(box["a"], BackendError) and "closed" in str(box["a"])
    assert eng.aborted == ["0-abcdefgh"] and not eng.closed  # the engine is someone else's


def test_a_request_this_backend_cannot_serve_raises_its_config_error() -> None:
    eng = StepEngine()
    cont = ContinuousEngine(eng)
    with pytest.raises(ConfigError, match="sent to the vLLM backend"):
        cont.chat([_req("a:1"), _req("misrouted:1")])
    assert eng.aborted == ["0-abcdefgh"]  # the call's request already in the engine is dropped
    assert [r.text for r in cont.chat([_req("b:1")])] == ["re b"]  # the engine goes on
    cont.close()
