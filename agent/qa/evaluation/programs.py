"""Running several lockstep programs as one: the bank builder's K trajectories of one item
reach the engine in the same batch (K requests with K seeds), and the item's program goes on
(scoring, summary) when all K have ended. :class:`ByModel` sends each request of a batch to the
backend that serves its model (the solver's engine and a separate judge's)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from localfin.errors import ConfigError
from serving.chat.backend import Backend
from serving.chat.lockstep import Program, RoundInfo, run_lockstep
from serving.chat.types import ChatRequest

__all__ = ["ByModel", "merged", "run_waves"]

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


def run_waves(
    programs: Sequence[Program[T]],
    backend: Backend,
    *,
    wave: int | None,
    on_round: Callable[[int, RoundInfo], None] | None = None,
) -> list[T]:
    """:func:`serving.chat.lockstep.run_lockstep` over successive slices of at most ``wave``
    programs (None: all at once), so that at most ``wave`` programs hold their per-question
    resources (a Python worker each) at a time. ``on_round(done_before, info)`` reports each
    round with the number of programs finished in earlier waves."""
    if wave is not None and wave < 1:
        raise ConfigError(f"wave={wave}; allowed: >= 1 or None")
    size = wave or max(1, len(programs))
    out: list[T] = []
    for lo in range(0, len(programs), size):
        done = len(out)
        cb = (lambda info, d=done: on_round(d, info)) if on_round is not None else None
        out.extend(run_lockstep(programs[lo : lo + size], backend, on_round=cb))
    return out


class ByModel:
    """A backend over several: each request goes to the backend of its ``model`` key (the
    rest to ``default``), one ``chat`` call per backend per batch, results back in request
    order. Closing it closes nothing (the caller owns the backends)."""

    def __init__(self, default: Backend, by_model: dict[str, Backend]) -> None:
        self.default = default
        self.by_model = dict(by_model)
        self.name = "+".join(dict.fromkeys([default.name, *(b.name for b in self.by_model.values())]))

    def chat(self, requests: Sequence[ChatRequest]) -> list[Any]:
        groups: dict[int, tuple[Backend, list[int]]] = {}
        for i, r in enumerate(requests):
            b = self.by_model.get(r.model, self.default)
            groups.setdefault(id(b), (b, []))[1].append(i)
        out: list[Any] = [None] * len(requests)
        for b, idx in groups.values():
            for i, res in zip(idx, b.chat([requests[i] for i in idx])):
                out[i] = res
        return out

    def close(self) -> None:
        return None
