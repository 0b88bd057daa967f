"""Agent benchmark: a Moira experiment and a FinAcumen evaluation at a fixed small size, on the
real engine: tokens per call type, tokens per finalized trading step and per question, wall
time, and the batching speed-up (the same runs in lock-step against one after another, measured
in the same process on the same engine).

One in-process engine is started first (its start-up is a record of its own), warmed up with a
few plain and JSON-schema requests (structured-output set-up, first batches), and shared by both
agents and both modes, so neither start-up nor warm-up is in a mode's time. Its prefix cache is
emptied before each mode: greedy runs send identical prompts in both modes, and the mode run
second would otherwise skip their prefill. Each mode writes a fresh journal (nothing replays).

An agent that cannot run here (``--tiny`` needs an entry that takes a registry) prints
``skipped: ...`` on stderr and a status record (``value: "skipped"``); one that raises gets a
``value: "failed"`` record with the error, the other agent still runs and the exit code is 1.
No figure is ever made up.

The agents' timed runs are :mod:`bench.agents.runs` (see :data:`ENTRIES`), each a callable that takes
``(backend_kind, model, mode, size, out_dir)`` and optionally the keywords ``backend`` (an
already started engine) and ``registry``, with ``mode`` in ``("lockstep", "sequential")``, and
returns an object with ``journal_path`` (the run's call journal), ``units`` (finalized trading
steps for Moira, questions for FinAcumen) and optionally ``wall_s`` (the runs' own time, set-up
excluded; otherwise the whole call is timed). Token figures come from the journal
(:meth:`serving.journal.Journal.token_summary`), so they count what the model really did.

    localfin bench agent [--model smollm2-135m] [--moira-size 2] [--qa-size 4]
    localfin bench agent --tiny          # tiny random Qwen3, seconds (agents that take a registry)
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bench._args import BenchParser
from bench.agents.runs import finacumen_run, moira_run
from bench.records import RecordWriter
from serving.chat.backend import Backend
from serving.open import BackendSpec, open_backend

__all__ = [
    "HELP",
    "ENTRIES",
    "AgentRun",
    "main",
    "parser",
    "measure_modes",
    "resolve_entry",
    "token_records",
    "warm_up",
]

#: agent -> (its timed run, unit of work)
ENTRIES: dict[str, tuple[Callable[..., AgentRun], str]] = {
    "moira": (moira_run, "finalized trading step"),
    "finacumen": (finacumen_run, "question"),
}


class AgentRun(Protocol):
    journal_path: Path
    units: int


def resolve_entry(agent: str) -> tuple[Callable[..., AgentRun] | None, str]:
    """The agent's benchmark entry point (:mod:`bench.agents.runs`), or ``None`` and why it cannot
    run here."""
    return ENTRIES[agent][0], ""


def token_records(
    w: RecordWriter,
    agent: str,
    journal_path: Path,
    units: int,
    unit: str,
    *,
    headline: bool = True,
    **params: Any,
) -> dict[str, int]:
    """Records of tokens per call type and per unit of work, from a run's journal (``headline``:
    the per-unit record goes into the summary table); returns the totals."""
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
            units=units,
            work_unit=unit,
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
            headline=headline,
            label=f"{agent}: tokens per {unit}",
            note=f"{totals['calls']} engine calls, {units} {unit}s",
            **params,
        )
    return totals


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _fail(w: RecordWriter, agent: str, what: str, exc: BaseException) -> None:
    why = f"{what}: {type(exc).__name__}: {exc}"[:500]
    sys.stderr.write(f"failed: {agent} benchmark: {why}\n")
    w.metric(agent, "status", "failed", "", reason=why)


def measure_modes(
    agent: str,
    fn: Callable[..., AgentRun],
    w: RecordWriter,
    *,
    model: str,
    size: int,
    shared: dict[str, Any],
    backend_kind: str = "vllm",
) -> bool:
    """Both modes of one agent, lock-step first, each on a cold prefix cache of the shared
    engine (``shared["backend"]``); records wall times, tokens and the speed-up. False when a
    mode failed (its record says so). ``bench moira-lockstep`` measures through here too."""
    _, unit = ENTRIES[agent]
    kw = {k: v for k, v in shared.items() if _accepts(fn, k)}
    walls: dict[str, float] = {}
    totals: dict[str, dict[str, int]] = {}
    params = dict(model=model, backend=backend_kind, size=size)
    for mode in ("lockstep", "sequential"):
        cold = _cold_cache(shared.get("backend"))
        with tempfile.TemporaryDirectory(prefix=f"bench-{agent}-{mode}-") as tmp:
            t0 = time.perf_counter()
            try:
                run = fn(backend_kind, model, mode, size, Path(tmp), **kw)
            except Exception as exc:  # noqa: BLE001 - one agent failing must not lose the other's figures
                _fail(w, agent, f"{mode} run", exc)
                return False
            call_s = time.perf_counter() - t0
            own = getattr(run, "wall_s", None)
            walls[mode] = float(own) if own is not None else call_s
            w.metric(
                agent,
                "wall_time",
                walls[mode],
                "s",
                mode=mode,
                units=run.units,
                call_wall_s=call_s,
                timed="the runs' own loop" if own is not None else "the whole call",
                engine_shared="backend" in kw,
                prefix_cache_reset=cold,
                **params,
            )
            totals[mode] = token_records(
                w,
                agent,
                Path(run.journal_path),
                run.units,
                unit,
                mode=mode,
                headline=mode == "lockstep",
                **params,
            )
    lock, seq = totals["lockstep"], totals["sequential"]
    w.metric(
        agent,
        "lockstep_wall_time",
        walls["lockstep"],
        "s",
        reference="the same runs one after another",
        reference_value=walls["sequential"],
        lower_is_better=True,
        headline=True,
        label=f"{agent}: wall time, lock-step vs the same {size}-{'run' if agent == 'moira' else 'question'} "
        "set one after another",
        note=f"tokens lock-step {lock['prompt_tokens'] + lock['completion_tokens']:,}, "
        f"sequential {seq['prompt_tokens'] + seq['completion_tokens']:,}; "
        + ("engine shared, start-up excluded" if "backend" in kw else "engine start-up inside each mode"),
        **params,
    )
    return True


def _cold_cache(backend: Backend | None) -> bool:
    """Empty the engine's prefix cache (True when it was)."""
    reset = getattr(backend, "reset_prefix_cache", None)
    return bool(reset()) if callable(reset) else False


#: The warm-up's reply schema: a bounded object, as the agents' schemas are.
_WARM_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 40}},
    "required": ["answer"],
    "additionalProperties": False,
}


def warm_up(backend: Backend, model: str) -> float:
    """Untimed requests before the timed modes: plain and JSON-schema replies, alone and in a
    batch (the first requests of an engine pay one-off set-up); returns the seconds it took."""
    from serving.chat.types import ChatRequest

    t0 = time.perf_counter()
    for n in (1, 4):
        backend.chat(
            [
                ChatRequest.simple(
                    model,
                    f"Warm-up {n}.{i}: name a colour.",
                    max_tokens=16,
                    json_schema=_WARM_SCHEMA if i % 2 == 0 else None,
                    call_type="bench",
                )
                for i in range(n)
            ]
        )
    return time.perf_counter() - t0


def _tiny_registry() -> Any:
    from serving.models.prepare import build_tiny_model
    from serving.models.registry import default_registry

    reg = default_registry()
    path = build_tiny_model(Path(tempfile.mkdtemp(prefix="bench-agent-tiny-")) / "tiny", arch="qwen3")
    return reg.with_spec(reg.get("tiny-qwen3").with_path(path))


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """The agents end to end on the real engine: tokens per call type and per unit of work, wall time, and
the lock-step speed-up.

Runs a shortened Moira experiment and a FinAcumen evaluation on one warmed-up in-process engine,
once with every run's calls batched together (lock-step) and once one run after another, the prefix
cache emptied before each. Token figures come from the runs' call journals (per finalized trading
step for Moira, per question for FinAcumen). An agent that cannot run here is reported as skipped,
one that fails as failed (exit code 1); no figure is made up.

    localfin bench agent --moira-size 2 --qa-size 4
    localfin bench agent --tiny            # tiny random Qwen3, seconds
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench agent", description=HELP)
    ap.add_argument("--agents", default=",".join(ENTRIES), help=f"from {', '.join(ENTRIES)}")
    ap.add_argument("--backend", default="vllm", help="backend kind (vllm: the in-process engine)")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--moira-size", type=int, default=2, help="Moira runs (seeds x exposures)")
    ap.add_argument("--qa-size", type=int, default=4, help="FinAcumen questions")
    ap.add_argument("--tiny", action="store_true", help="tiny random Qwen3 (seconds; for tests)")
    return ap


def main(
    argv: list[str] | None = None, writer: RecordWriter | None = None, backend: Backend | None = None
) -> int:
    """Run the agent benchmark; ``backend``: an already started engine serving ``--model``
    (tests pass their session engine; None: one is started here)."""
    ap = parser()
    args = ap.parse_args(argv)
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    bad = [a for a in agents if a not in ENTRIES]
    if bad or not agents:
        ap.error(f"--agents {bad or 'empty'}; allowed: {', '.join(ENTRIES)}")
    for name in ("moira_size", "qa_size"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}={getattr(args, name)}; allowed: >= 1")
    sizes = {"moira": args.moira_size, "finacumen": args.qa_size}
    w = writer or RecordWriter("agent")
    entries: dict[str, Callable[..., AgentRun]] = {}
    for agent in agents:
        fn, why = resolve_entry(agent)
        if fn is not None and args.tiny and not _accepts(fn, "registry"):
            fn, why = None, "its entry takes no registry, so it cannot run the tiny test model (--tiny)"
        if fn is None:
            sys.stderr.write(f"skipped: {agent} benchmark: {why}\n")
            w.metric(agent, "status", "skipped", "", reason=why)
        else:
            entries[agent] = fn
    if not entries:
        return 0
    shared: dict[str, Any] = {}
    own = None
    if args.tiny:
        args.model = "tiny-qwen3"
        shared["registry"] = _tiny_registry()
    if backend is None and args.backend == "vllm":
        os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")  # stdout is for the records
        from localfin import env

        env.apply_offline_env()
        try:
            own = open_backend(BackendSpec("vllm", args.model), shared.get("registry"))
            w.metric("engine", "start_time", own.start(), "s", model=args.model, backend=args.backend)
        except Exception as exc:  # noqa: BLE001 - reported as a failed part, not a traceback
            for agent in entries:
                _fail(w, agent, "engine start", exc)
            if own is not None:
                own.close()
            return 1
        backend = own
    if backend is not None:
        shared["backend"] = backend
        try:
            w.metric("engine", "warm_up_time", warm_up(backend, args.model), "s", model=args.model)
        except Exception as exc:  # noqa: BLE001 - reported as a failed part, not a traceback
            for agent in entries:
                _fail(w, agent, "engine warm-up", exc)
            if own is not None:
                own.close()
            return 1
    ok = True
    try:
        for agent, fn in entries.items():
            ok = (
                measure_modes(
                    agent,
                    fn,
                    w,
                    model=args.model,
                    size=sizes[agent],
                    shared=shared,
                    backend_kind=args.backend,
                )
                and ok
            )
    finally:
        if own is not None:
            own.close()
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    from bench._args import run_main

    run_main(main)
