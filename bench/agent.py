"""Agent benchmark: a Moira experiment and a FinAcumen evaluation at a fixed small size, on the
real engine: tokens per call type, tokens per finalized trading step and per question, wall
time, and the batching speed-up (the same runs in lock-step against one after another).

Until an agent's entry point exists its part prints ``skipped: ...`` on stderr and a status
record (``value: "skipped"``) on stdout, and the command exits 0; no figure is ever made up.

The contract the agents are wired to (see :data:`ENTRIES`): a callable that takes
``(backend_kind, model, mode, size, out_dir)`` with ``mode`` in ``("lockstep", "sequential")``
and returns an object with ``journal_path`` (the run's call journal) and ``units`` (finalized
trading steps for Moira, questions for FinAcumen). Token figures come from the journal
(:meth:`serving.journal.Journal.token_summary`), so they count what the model really did.

    localfin bench agent [--model smollm2-135m] [--size 2]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bench._args import BenchParser
from bench.records import RecordWriter

__all__ = ["ENTRIES", "AgentRun", "main", "resolve_entry", "token_records"]

#: agent -> (module, callable, unit of work)
ENTRIES: dict[str, tuple[str, str, str]] = {
    "moira": ("agent.pairs.experiment", "bench_run", "finalized trading step"),
    "finacumen": ("agent.qa.evaluate", "bench_run", "question"),
}


class AgentRun(Protocol):
    journal_path: Path
    units: int


def resolve_entry(agent: str) -> tuple[Callable[..., AgentRun] | None, str]:
    """The agent's benchmark entry point, or ``None`` and why it is not there."""
    module, attr, _ = ENTRIES[agent]
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        return None, f"{module} is not importable yet ({exc})"
    fn = getattr(mod, attr, None)
    if not callable(fn):
        return None, f"{module}.{attr} does not exist yet"
    return fn, ""


def token_records(
    w: RecordWriter, agent: str, journal_path: Path, units: int, unit: str, **params: Any
) -> dict[str, int]:
    """Records of tokens per call type and per unit of work, from a run's journal; returns the
    totals."""
    from serving.journal import Journal

    with Journal(journal_path) as journal:
        rows = journal.token_summary()
    totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    for row in rows:
        w.metric(
            agent,
            "tokens_by_call_type",
            row.prompt_tokens + row.completion_tokens,
            "tokens",
            call_type=row.call_type,
            calls=row.calls,
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
            cached_tokens=row.cached_tokens,
            fallbacks=row.fallbacks,
            **params,
        )
        for key in totals:
            totals[key] += getattr(row, key)
    if units > 0:
        w.metric(
            agent,
            "tokens_per_unit",
            (totals["prompt_tokens"] + totals["completion_tokens"]) / units,
            "tokens",
            work_unit=unit,
            units=units,
            headline=True,
            label=f"{agent}: tokens per {unit}",
            note=f"{totals['calls']} calls, {units} {unit}s",
            **params,
        )
    return totals


def _run_agent(agent: str, args: argparse.Namespace, w: RecordWriter) -> None:
    fn, why = resolve_entry(agent)
    if fn is None:
        sys.stderr.write(f"skipped: {agent} benchmark: {why}\n")
        w.metric(agent, "status", "skipped", "", reason=why)
        return
    _, _, unit = ENTRIES[agent]
    walls: dict[str, float] = {}
    for mode in ("lockstep", "sequential"):
        with tempfile.TemporaryDirectory(prefix=f"bench-{agent}-{mode}-") as tmp:
            t0 = time.perf_counter()
            run = fn(args.backend, args.model, mode, args.size, Path(tmp))
            walls[mode] = time.perf_counter() - t0
            params = dict(mode=mode, model=args.model, backend=args.backend, size=args.size)
            w.metric(agent, "wall_time", walls[mode], "s", units=run.units, **params)
            if mode == "lockstep":
                token_records(w, agent, Path(run.journal_path), run.units, unit, **params)
    w.metric(
        agent,
        "lockstep_wall_time",
        walls["lockstep"],
        "s",
        reference="the same runs one after another",
        reference_value=walls["sequential"],
        lower_is_better=True,
        model=args.model,
        size=args.size,
        headline=True,
        label=f"{agent}: batching speed-up (lock-step vs one run after another)",
    )


def main(argv: list[str] | None = None, writer: RecordWriter | None = None) -> int:
    ap = BenchParser(prog="localfin bench agent", description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", default=",".join(ENTRIES), help=f"from {', '.join(ENTRIES)}")
    ap.add_argument("--backend", default="vllm", help="backend kind (vllm: the in-process engine)")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--size", type=int, default=2, help="runs (Moira) / questions per run (FinAcumen)")
    args = ap.parse_args(argv)
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    bad = [a for a in agents if a not in ENTRIES]
    if bad or not agents:
        ap.error(f"--agents {bad or 'empty'}; allowed: {', '.join(ENTRIES)}")
    if args.size < 1:
        ap.error(f"--size={args.size}; allowed: >= 1")
    w = writer or RecordWriter("agent")
    for agent in agents:
        _run_agent(agent, args, w)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
