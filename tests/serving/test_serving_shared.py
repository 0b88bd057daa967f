"""serving.chat.shared.SharedEngine: calls of participant threads merged into one engine call; every
wait is on a barrier, an event or the wrapper's own state, never on time."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from serving.chat.scripted import ScriptedBackend
from serving.chat.shared import SharedEngine
from serving.chat.types import ChatRequest, Message

WAIT_S = 60  # an upper bound for a thread that is certain to arrive, not a timing assumption


class Recording(ScriptedBackend):
    """Echoes each request's prompt and records the engine calls (one list per batch)."""

    def __init__(self) -> None:
        super().__init__(default=lambda r: f"re {r.messages[-1].content}")
        self.batches: list[list[str]] = []

    def chat(self, requests):
        self.batches.append([r.messages[-1].content for r in requests])
        return super().chat(requests)


def _req(text: str) -> ChatRequest:
    return ChatRequest(model="m", messages=(Message("user", text),), max_tokens=8, call_type="t")


def _threads(*targets: Callable[[], None]) -> list[threading.Thread]:
    ts = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in ts:
        t.start()
    return ts


def _join(ts: list[threading.Thread]) -> None:
    for t in ts:
        t.join(WAIT_S)
        assert not t.is_alive()


def _until(cond: Callable[[], bool], shared: SharedEngine) -> None:
    """Wait on the wrapper's condition until ``cond()`` (its state, under its lock)."""
    with shared._cond:
        assert shared._cond.wait_for(cond, WAIT_S)


def test_the_calls_of_all_participants_go_in_one_engine_call_each_answered_in_order() -> None:
    eng = Recording()
    shared = SharedEngine(eng)
    both_in = threading.Barrier(2)
    got: dict[str, list[str]] = {}

    def part(name: str, n: int) -> Callable[[], None]:
        def run() -> None:
            with shared.participant():
                both_in.wait(WAIT_S)
                got[name] = [r.text for r in shared.chat([_req(f"{name}{i}") for i in range(n)])]

        return run

    _join(_threads(part("a", 2), part("b", 3)))
    assert len(eng.batches) == 1 and sorted(eng.batches[0]) == ["a0", "a1", "b0", "b1", "b2"]
    assert got == {"a": ["re a0", "re a1"], "b": ["re b0", "re b1", "re b2"]}
    assert shared.stats.engine_calls == 1 and shared.stats.caller_calls == 2 and shared.stats.merged == 1


def test_a_call_waits_for_a_working_participant_and_goes_when_it_leaves() -> None:
    eng = Recording()
    shared = SharedEngine(eng)
    b_in, b_may_leave = threading.Event(), threading.Event()
    got: list[str] = []

    def b() -> None:
        with shared.participant():
            b_in.set()
            b_may_leave.wait(WAIT_S)  # working, no call

    def a() -> None:
        b_in.wait(WAIT_S)
        with shared.participant():
            got.extend(r.text for r in shared.chat([_req("a0")]))

    ts = _threads(b, a)
    _until(lambda: bool(shared._pending), shared)  # a is waiting
    assert eng.batches == []  # b is still working: no engine call yet
    b_may_leave.set()
    _join(ts)
    assert eng.batches == [["a0"]] and got == ["re a0"]


def test_rounds_alternate_in_lockstep_while_both_call() -> None:
    eng = Recording()
    shared = SharedEngine(eng)
    both_in = threading.Barrier(2)

    def part(name: str, rounds: int) -> Callable[[], None]:
        def run() -> None:
            with shared.participant():
                both_in.wait(WAIT_S)
                for i in range(rounds):
                    shared.chat([_req(f"{name}{i}")])

        return run

    _join(_threads(part("a", 3), part("b", 1)))
    # round 1 merged; then a goes on alone (b has left)
    assert sorted(eng.batches[0]) == ["a0", "b0"] and eng.batches[1:] == [["a1"], ["a2"]]


def test_a_thread_that_is_no_participant_is_answered_alone_at_once() -> None:
    eng = Recording()
    shared = SharedEngine(eng)
    inside, leave = threading.Event(), threading.Event()

    def busy() -> None:
        with shared.participant():
            inside.set()
            leave.wait(WAIT_S)

    ts = _threads(busy)
    inside.wait(WAIT_S)
    assert [r.text for r in shared.chat([_req("x")])] == ["re x"]  # not held by the busy participant
    leave.set()
    _join(ts)
    assert eng.batches == [["x"]] and shared.chat([]) == []


def test_an_engine_failure_reaches_every_call_of_its_batch() -> None:
    class Broken(Recording):
        def chat(self, requests):
            raise RuntimeError("engine died")

    shared = SharedEngine(Broken())
    both_in = threading.Barrier(2)
    errors: list[str] = []

    def part() -> None:
        with shared.participant():
            both_in.wait(WAIT_S)
            with pytest.raises(RuntimeError, match="engine died") as e:
                shared.chat([_req("q")])
            errors.append(str(e.value))

    _join(_threads(part, part))
    assert errors == ["engine died", "engine died"] and shared.stats.engine_calls == 1


def test_a_participant_that_fails_leaves_and_the_other_goes_on() -> None:
    eng = Recording()
    shared = SharedEngine(eng)
    both_in = threading.Barrier(2)
    got: list[str] = []

    def failing() -> None:
        try:
            with shared.participant():
                both_in.wait(WAIT_S)
                raise ValueError("bad item")
        except ValueError:
            pass

    def ok() -> None:
        with shared.participant():
            both_in.wait(WAIT_S)
            got.extend(r.text for r in shared.chat([_req("a")]))

    _join(_threads(failing, ok))
    assert got == ["re a"] and eng.batches == [["a"]]
