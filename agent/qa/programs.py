"""Running several lockstep programs as one: the bank builder's K trajectories of one item
reach the engine in the same batch (K requests with K seeds), and the item's program goes on
(scoring, summary) when all K have ended."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from localfin.errors import ConfigError
from serving.lockstep import Program
from serving.types import ChatRequest

__all__ = ["merged"]

T = TypeVar("T")


def merged(programs: Sequence[Program[T]]) -> Program[list[T]]:
    """A program that runs ``programs`` side by side and returns their outcomes in order.

    Each round it yields the pending requests of every unfinished program, concatenated in
    program order, and hands each program its own slice of the results.
    """
    outcomes: list[Any] = [None] * len(programs)
    pending: dict[int, list[ChatRequest]] = {}
    for i, p in enumerate(programs):
        try:
            pending[i] = next(p)
        except StopIteration as stop:
            outcomes[i] = stop.value
    while pending:
        order = sorted(pending)
        batch = [r for i in order for r in pending[i]]
        results = yield batch
        if len(results) != len(batch):
            raise ConfigError(f"got {len(results)} results for {len(batch)} requests")
        nxt: dict[int, list[ChatRequest]] = {}
        k = 0
        for i in order:
            n = len(pending[i])
            try:
                nxt[i] = programs[i].send(results[k : k + n])
            except StopIteration as stop:
                outcomes[i] = stop.value
            k += n
        pending = nxt
    return outcomes
