"""The baselines of a Moira experiment (``[baselines]``, :mod:`agent.pairs.baselines.config`),
run on the experiment's store, pool, screen, windows, exposures, seeds and cost, into the
experiment's ``runs/`` (kind ``baseline``), so that ``localfin report`` shows them beside the agent.

* The non-LLM baselines (Long-Short, Short-Long, Equal-Weight, EG+Z, EG-DDQN, and the installed
  plugins' baselines named in ``methods``: :mod:`agent.pairs.baselines.plugins`) run before the
  agent's lockstep rounds through :func:`agent.pairs.baselines.runner.run_planned` (the pair
  selected once, at test step 001, exactly as the runner does on its own). They are
  deterministic (EG-DDQN: fixed seeds, CPU torch); on ``--resume`` a run whose folder is
  complete (``metrics.json``, and EG-DDQN's ``training.json``, written atomically) is not
  redone, an incomplete one is redone from scratch.
* FinMem runs as lockstep programs (:func:`agent.pairs.baselines.finmem.run.finmem_program`) in the
  same :func:`serving.chat.lockstep.run_lockstep` rounds as the agent's runs, on the same
  JournaledBackend and journal, so its calls are batched with the agent's, journaled, counted
  by call type and replayed on resume.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.data.store import MarketStore
from agent.pairs.baselines.config import baseline_run_id, is_seeded
from agent.pairs.baselines.finmem.context import prompt_budget
from agent.pairs.baselines.finmem.market import say_filings
from agent.pairs.baselines.finmem.memory import EmbeddingCache, TextEmbedder
from agent.pairs.baselines.finmem.run import finmem_program, prepare_finmem, write_finmem_run
from agent.pairs.experiment.config import ExperimentConfig
from agent.pairs.market.anonymize import Aliases, anonymized
from agent.pairs.market.records import read_json
from bank.embedder import MiniLMEmbedder
from localfin.files import check_json, check_parquet
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.lockstep import Program

__all__ = [
    "rule_plan",
    "run_rule_baselines",
    "finmem_programs",
    "write_finmem_outcomes",
    "baseline_docs",
]

log = logging.getLogger(__name__)


def _settings(cfg: ExperimentConfig) -> Any:
    from agent.pairs.baselines.runner import RunSettings

    ex = cfg.execution_settings()
    return RunSettings(
        screen=cfg.screen,
        cost_bps=ex.cost_bps,
        execution=ex.execution,
        slippage_bps=ex.slippage_bps,
        borrow_bps_per_year=ex.borrow_bps_per_year,
        no_beta_legs=cfg.no_beta_legs,
        beta_window=cfg.beta_window,
    )


def _windows(cfg: ExperimentConfig) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    w = cfg.windows
    return (w.train_start, w.train_end), (w.test_start, w.test_end)


def rule_plan(cfg: ExperimentConfig) -> list[tuple[Any, str, int, str]]:
    """(runner config, exposure, seed, run id) of every non-LLM baseline run: seeded methods for
    every exposure x seed, the deterministic ones once per exposure with the first seed."""
    plan = []
    for config in cfg.baselines.rule_configs():
        seeds = cfg.seeds if is_seeded(config.method) else cfg.seeds[:1]
        for e in cfg.exposures:
            for s in seeds:
                plan.append((config, e, s, baseline_run_id(config.method, e, s)))
    return plan


def _complete(run_dir: Path, method: str) -> bool:
    """Whether a rule baseline's run folder is whole (its files present and readable: a torn
    one, e.g. from a disk that filled, is redone)."""
    if not (run_dir / "metrics.json").is_file() or not (run_dir / "steps.parquet").is_file():
        return False
    if method == "eg_ddqn" and not (run_dir / "training.json").is_file():
        return False
    for f in sorted(run_dir.iterdir()):
        check = {".parquet": check_parquet, ".json": check_json}.get(f.suffix)
        problem = check(f) if check is not None else None
        if problem is not None:
            log.warning("%s: %s; the run is done again", f, problem)
            return False
    return True


def run_rule_baselines(
    store: MarketStore,
    cfg: ExperimentConfig,
    pool: Sequence[str],
    out: Path,
    *,
    resume: bool,
    progress: Progress = NULL_PROGRESS,
) -> tuple[list[str], int]:
    """Run the planned non-LLM baselines into ``out/runs``; returns (every planned run id, how
    many were skipped as already complete on resume)."""
    from agent.pairs.baselines.runner import run_planned

    plan = rule_plan(cfg)
    todo = [p for p in plan if not (resume and _complete(out / "runs" / p[3], p[0].method))]
    train, test = _windows(cfg)
    run_planned(
        store,
        todo,
        pool=pool,
        train=train,
        test=test,
        out_dir=out,
        settings=_settings(cfg),
        progress=progress,
    )
    return [p[3] for p in plan], len(plan) - len(todo)


def finmem_programs(
    store: MarketStore, cfg: ExperimentConfig, pool: Sequence[str], embedder: TextEmbedder | None = None
) -> list[tuple[str, Program[Any]]]:
    """(run id, program) of every FinMem run (exposure x seed), empty when FinMem is not
    configured. The market is read once; ``embedder`` defaults to the bank's MiniLM. Every
    request is checked against the context FinMem's model is served with
    (``baselines.finmem.max_model_len``, else its registry entry's) before it is sent."""
    if "finmem" not in cfg.baselines.methods:
        return []

    train, test = _windows(cfg)
    fm = cfg.baselines.finmem
    market = prepare_finmem(
        store, pool=pool, train=train, test=test, settings=_settings(cfg), prior_filings=fm.prior_filings
    )
    say_filings(market, fm)
    budget = prompt_budget(fm.model, fm.max_model_len) if market.series is not None else None
    if embedder is None and market.series is not None:
        embedder = MiniLMEmbedder()
    shared = (
        embedder if isinstance(embedder, EmbeddingCache) or embedder is None else EmbeddingCache(embedder)
    )
    aliases = Aliases.for_pool(market.pool, market.companies) if cfg.anonymize else None
    out = []
    for e in cfg.exposures:
        for s in cfg.seeds:
            rid = baseline_run_id("finmem", e, s)
            prog = finmem_program(
                market, fm, exposure=e, seed=s, embedder=shared, run_id=rid, aliases=aliases, budget=budget
            )
            out.append((rid, anonymized(prog, aliases) if aliases is not None else prog))
    return out


def write_finmem_outcomes(out: Path, outcomes: Sequence[Any]) -> list[str]:
    """Write every FinMem outcome's run folder; returns the run ids."""

    for o in outcomes:
        write_finmem_run(out, o)
    return [o.run_id for o in outcomes]


def baseline_docs(out: Path, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The ``metrics.json`` documents of the baseline runs (in ``run_ids`` order)."""
    return [read_json(out / "runs" / rid / "metrics.json") for rid in run_ids]
