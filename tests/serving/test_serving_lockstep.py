"""Lockstep driving: one backend call per round across programs, same outcomes as sequential."""

from __future__ import annotations

import pytest

from serving.chat.lockstep import run_lockstep, run_one, run_sequential
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest
from serving.errors import ConfigError


class CountingBackend(ScriptedBackend):
    def __init__(self) -> None:
        super().__init__([Rule("*", lambda r: r.messages[-1].content.upper())])
        self.batches: list[int] = []

    def chat(self, requests):
        self.batches.append(len(requests))
        return super().chat(requests)


def program(name: str, steps: int):
    seen = []
    for s in range(steps):
        n = 2 if s % 2 == 0 else 1
        results = yield [ChatRequest.simple("m", f"{name}-{s}-{k}", max_tokens=8) for k in range(n)]
        seen.extend(r.text for r in results)
    return seen


def test_lockstep_batches_all_programs_per_round_and_matches_sequential():
    lock = CountingBackend()
    out = run_lockstep([program("a", 3), program("b", 1), program("c", 2)], lock)
    seq = CountingBackend()
    ref = run_sequential([program("a", 3), program("b", 1), program("c", 2)], seq)
    assert out == ref
    assert out[0] == ["A-0-0", "A-0-1", "A-1-0", "A-2-0", "A-2-1"]
    assert lock.batches == [6, 2, 2]  # round 1: 2+2+2, round 2: 1+1, round 3: 2
    assert len(seq.batches) == 6


def test_program_that_needs_no_calls_and_empty_rounds():
    def quiet():
        got = yield []
        return len(got)

    def nothing():
        return "x"
        yield  # pragma: no cover

    backend = CountingBackend()
    assert run_lockstep([quiet(), nothing()], backend) == [0, "x"]
    assert backend.batches == []
    assert run_one(nothing(), backend) == "x"


def test_a_program_yielding_the_wrong_thing_is_named():
    def bad():
        yield "not a list"

    with pytest.raises(ConfigError, match="program 0 yielded str"):
        run_lockstep([bad()], CountingBackend())
