"""The Moira CPU demo: a real backtest of the bundled synthetic market on the CPU model.

:func:`run_moira_demo` writes the synthetic market (``agent.data.synthetic``) into
``out_dir/market.sqlite`` (with the demo's breaks, :func:`demo_breaks`), runs the packaged demo
experiment (``agent/pairs/configs/demo.toml``: 5 training sessions, at most 2 replay cycles, 9
test sessions with the planted break at step 004 and a validation boundary at step 007, seed 0 x
2 exposures, all in lockstep, beside every baseline: Long-Short, Short-Long,
Equal-Weight, EG+Z, EG-DDQN and FinMem, whose runs share the agent's lockstep rounds) with
``out_dir`` as the experiment folder, and writes a short ``report.md``. A rerun replays the
journal (nothing reaches the model twice).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from agent.data.synthetic import DEFAULT_PAIRS, BreakSpec
from agent.data.workflows import synth_market
from agent.pairs.experiment.config import ExperimentConfig, parse_config
from agent.pairs.experiment.run import run_experiment
from agent.pairs.experiment.summary import ExperimentResult
from bank.embedder import Embedder
from localfin import configfile as cf
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.models.registry import Registry
from serving.open import check_weights, model_facts, opened

__all__ = [
    "DemoResult",
    "DEMO_BREAK_SESSION",
    "demo_breaks",
    "demo_document",
    "demo_config_text",
    "synthetic_store",
    "run_moira_demo",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoResult:
    """Where the demo wrote its report, and its figures."""

    report: Path
    experiment: ExperimentResult
    wall_s: float
    store_s: float


def demo_document(model: str = "smollm2-135m", name: str = "demo") -> dict[str, Any]:
    """The packaged config ``configs/<name>.toml`` as a document, its ``[model].backbone`` set to
    ``model`` (a derived config is a merged dictionary, never edited text)."""
    text = resources.files("agent.pairs").joinpath("configs", f"{name}.toml").read_text("utf-8")
    return cf.merge(cf.loads_toml(text, f"packaged config {name}.toml"), {"model": {"backbone": model}})


def demo_config_text(model: str = "smollm2-135m", name: str = "demo") -> str:
    """:func:`demo_document` as TOML text (the experiment folder's ``config.toml``)."""
    return cf.dumps(demo_document(model, name))


#: Session of the demo's planted breaks (2022-08-17, test step 004 of ``configs/demo.toml``).
DEMO_BREAK_SESSION = 2473


def demo_breaks() -> tuple[BreakSpec, ...]:
    """The demo market's breaks: every planted pair's y leg restates its accounts (log-price jump
    -0.30, then its own random walk, with restatement news around it) at
    :data:`DEMO_BREAK_SESSION`. The screen's five candidates at the demo's test start are the
    five planted pairs, so the held pair breaks whichever one the model picks; the restatement
    breaches three or more lifecycle factors on most sessions after it (the demo's 6-session
    cycle replaces the pair at its boundary) and its news carries the keyword path's words."""
    return tuple(BreakSpec(p.y, DEMO_BREAK_SESSION, "restatement", -0.30) for p in DEFAULT_PAIRS)


def synthetic_store(out_dir: Path) -> Path:
    """``out_dir/market.sqlite`` holding the demo's synthetic market (the default one with the
    breaks of :func:`demo_breaks`; built once, atomically, by
    :func:`agent.data.workflows.synth_market`; its files go to ``out_dir/market``)."""
    path = out_dir / "market.sqlite"
    if path.exists():
        return path
    tmp = out_dir / "market.sqlite.tmp"
    tmp.unlink(missing_ok=True)
    synth_market(out_dir / "market", store_path=tmp, breaks=demo_breaks())
    tmp.replace(path)
    return path


def run_moira_demo(
    out_dir: str | Path,
    model: str = "smollm2-135m",
    progress: Progress = NULL_PROGRESS,
    *,
    registry: Registry | None = None,
    backend: Backend | None = None,
    sequential: bool = False,
    embedder: Embedder | None = None,
) -> DemoResult:
    """Run the demo experiment into ``out_dir`` and return its report.

    Args:
        model: registry key of the backbone (the demo is sized for ``smollm2-135m``).
        registry: model registry (default: the packaged one; tests pass one holding the tiny model).
        backend: an already started backend for ``model`` (tests share one); default: the
            in-process vLLM engine, opened (:func:`serving.open.open_backend`) and closed here.
        sequential: run the runs one after another (the lockstep speed-up reference).
        embedder: FinMem's memory embedder (default: MiniLM).
    """
    facts = model_facts(model, registry)  # an unknown key fails before any work
    if backend is None:
        check_weights(model, registry)  # weights not prepared: the error says how, before any work
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    synthetic_store(out)
    store_s = time.perf_counter() - t0
    text = demo_config_text(model)
    cfg: ExperimentConfig = parse_config(demo_document(model), base_dir=out)
    resume = (out / "journal.sqlite").exists()
    with opened(cfg.model.backend_spec(), registry, backend=backend) as engine:
        res = run_experiment(
            cfg,
            out,
            config_text=text,
            backend=engine,
            model=facts,
            sequential=sequential,
            resume=resume,
            progress=progress,
            embedder=embedder,
        )
    wall = time.perf_counter() - t0
    report = out / "report.md"
    report.write_text(_report(cfg, res, wall, store_s), encoding="utf-8")
    log.info("Moira demo report written to %s", report)
    return DemoResult(report, res, wall, store_s)


def _report(cfg: ExperimentConfig, res: ExperimentResult, wall: float, store_s: float) -> str:
    invalid = sum(r["extra"]["fallbacks_total"] for r in res.runs)
    calls = sum(r["extra"]["test"]["calls"] + r["extra"]["train"]["calls"] for r in res.runs)
    fm = [b for b in res.baselines if b.get("method") == "finmem"]
    fm_calls = sum(v.get("calls", 0) for b in fm for v in b["extra"].get("tokens_by_call_type", {}).values())
    fm_invalid = sum(b["extra"].get("fallbacks", {}).get("total", 0) for b in fm)
    summary = (res.out_dir / "summary.md").read_text(encoding="utf-8")
    head = [
        "# localfin demo: Moira pair trading on the CPU model",
        "",
        f"Synthetic market store built in {store_s:.1f} s; experiment `{cfg.name}` ({res.mode}) in "
        f"{res.wall_s:.1f} s (engine start {res.engine_start_s or 0:.1f} s); demo total {wall:.1f} s.",
        f"Invalid replies (fallbacks, cut replies included) over all runs: {invalid} of {calls} calls.",
        f"FinMem baseline: {fm_invalid} invalid replies of {fm_calls} calls; "
        f"{len(res.baselines)} baseline runs in all.",
        f"Files: {res.out_dir / 'summary.json'}, runs/*/metrics.json, runs/*/trace.parquet, "
        f"runs/*/steps.parquet, runs/*/training.json, manifest.json, journal.sqlite.",
        "",
    ]
    return "\n".join(head) + summary
