"""Driving many model-using programs in lockstep, so that their calls reach the engine together.

An agent run is written as a generator that *yields* the list of :class:`ChatRequest` it needs
next and is *sent* the matching list of :class:`ChatResult`; it returns its outcome. Because
the program holds all of its state, the same code runs alone (:func:`run_one`), one program
after another (:func:`run_sequential`), or many at once (:func:`run_lockstep`), where every
round gathers the pending requests of all programs into one ``backend.chat`` call (one engine
batch) and hands each program its own results. Nothing here knows any agent.

Resuming a killed run is replaying it: with a :class:`serving.journal.JournaledBackend`, every
request answered before the kill comes back from the journal, so a deterministic program
reaches the same state and only the rest reaches the model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from serving.chat.backend import Backend
from serving.chat.types import ChatRequest, ChatResult
from serving.errors import ConfigError

__all__ = ["Program", "RoundInfo", "run_lockstep", "run_sequential", "run_one"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A program yields request lists, receives result lists, and returns its outcome.
Program = Generator[list[ChatRequest], list[ChatResult], T]


@dataclass(frozen=True)
class RoundInfo:
    """What one lockstep round did: programs still running, requests sent, programs finished."""

    round: int
    active: int
    requests: int
    finished: int


def _start(program: Program[Any]) -> tuple[bool, Any]:
    try:
        return False, next(program)
    except StopIteration as stop:
        return True, stop.value


def _resume(program: Program[Any], results: list[ChatResult]) -> tuple[bool, Any]:
    try:
        return False, program.send(results)
    except StopIteration as stop:
        return True, stop.value


def _check(reqs: Any, index: int) -> list[ChatRequest]:
    if not isinstance(reqs, list) or not all(isinstance(r, ChatRequest) for r in reqs):
        raise ConfigError(f"program {index} yielded {type(reqs).__name__}; allowed: a list of ChatRequest")
    return reqs


def run_lockstep(
    programs: Sequence[Program[T]],
    backend: Backend,
    *,
    on_round: Callable[[RoundInfo], None] | None = None,
) -> list[T]:
    """Run ``programs`` together; returns their outcomes in order.

    Each round, every unfinished program's pending requests are concatenated (program order,
    then each program's own order) into one ``backend.chat`` call. A program may yield an empty
    list (it gets an empty list back in the same round). ``on_round`` is called after each round.
    """
    outcomes: list[Any] = [None] * len(programs)
    pending: dict[int, list[ChatRequest]] = {}
    finished = 0
    for i, p in enumerate(programs):
        done, value = _start(p)
        if done:
            outcomes[i] = value
            finished += 1
        else:
            pending[i] = _check(value, i)
    rnd = 0
    while pending:
        rnd += 1
        order = sorted(pending)
        batch = [r for i in order for r in pending[i]]
        results = backend.chat(batch) if batch else []
        if len(results) != len(batch):
            raise ConfigError(
                f"backend {backend.name!r} returned {len(results)} results for {len(batch)} requests"
            )
        nxt: dict[int, list[ChatRequest]] = {}
        k = 0
        for i in order:
            n = len(pending[i])
            done, value = _resume(programs[i], results[k : k + n])
            k += n
            if done:
                outcomes[i] = value
                finished += 1
            else:
                nxt[i] = _check(value, i)
        pending = nxt
        if on_round is not None:
            on_round(RoundInfo(rnd, len(pending), len(batch), finished))
    return outcomes


def run_one(program: Program[T], backend: Backend) -> T:
    """Run a single program to its end."""
    return run_lockstep([program], backend)[0]


def run_sequential(
    programs: Sequence[Program[T]],
    backend: Backend,
    *,
    on_round: Callable[[RoundInfo], None] | None = None,
) -> list[T]:
    """Run ``programs`` one after another (the reference for the lockstep speed-up)."""
    return [run_lockstep([p], backend, on_round=on_round)[0] for p in programs]
