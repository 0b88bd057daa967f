"""The experiment matrix: backbones x windows sets x seeds x exposures x variants from one TOML file.

A matrix file is an experiment config (:mod:`agent.pairs.experiment.config`) with three additions: a
``[matrix]`` table, a list of backbones and one or more named windows sets. It expands to one
ordinary experiment per (backbone, windows set), written to ``<out>/<backbone>/<windows>/``
(a normal experiment folder: ``localfin report`` and ``localfin pairs run --resume`` read it),
each holding every seed x exposure x variant of the matrix as lockstep runs.

Format (``agent/pairs/configs/matrix_cpu.toml`` is a complete example)::

    [matrix]
    name = "matrix-cpu"            # required; names the experiments <name>-<backbone>-<windows>
    base = "staples_gpu.toml"      # optional: an experiment TOML (relative to this file); the
                                   # tables below override its tables key by key
    seeds = [0, 1, 2]              # default [0, 1, 2] (3 seeds per setting; the base's
                                   # experiment.seeds are ignored)
    exposures = ["no_beta", "beta"]   # default: experiment.exposures of the merged document
    synthetic_market = true        # optional: the runner writes the bundled synthetic market to
                                   # <out>/market.sqlite and every experiment uses it as its store
    backbones = ["smollm2-135m", "tiny-qwen3"]    # registry keys; or, instead, [[backbones]] tables:

    [[backbones]]
    key = "qwen3-4b"               # registry key (localfin models list) -> [model].backbone
    name = "qwen3-4b-think"        # folder name (default: the key); distinct per entry
    thinking = true                # any [model] key overrides the base's [model] for this backbone:
    backend = "openai"             #   backend, base_url, temperature, thinking, repetition_penalty,
    base_url = "http://127.0.0.1:8000/v1"  # max_num_seqs, kv_cache_gib, chunk_size, max_tokens
    model_path = ""                # weights folder (``built`` test models: default
                                   # <model cache>/<key>, built on first use)
    exposures = ["beta"]           # optional: this backbone's experiments run only these
                                   # (default: the matrix's exposures)

    [[windows]]                    # one or more named windows sets (A1 long horizon, A2 another
    name = "main"                  # regime); a single [windows] table is the set "main"; with a
    train_start = "2025-01-02"     # base and no windows here, the base's [windows] is "main"
    train_end = "2025-02-11"
    test_start = "2025-02-12"
    test_end = "2025-05-30"

    [experiment]                   # every experiment table as in agent.pairs.experiment.config: store, pool,
    [model]                        # cost_bps, [model], [prompt], [policy], [selection], [screen],
    [[variants]]                   # [lifecycle], [[variants]] (A3: consolidation = false; A4:
                                   # reselection = false + fixed_pair); tables this module does not
                                   # know (e.g. [baselines]) pass through to each experiment as they are

Running (:func:`run_matrix`, ``localfin pairs matrix --config FILE``): backbone after backbone,
each backbone's experiments on one engine (started once, closed before the next backbone;
entries with the same key, weights and engine settings but different per-request settings,
such as thinking on/off, share one engine). Every model call goes through the experiment's
journal (``<cell>/journal.sqlite``). The matrix folder holds ``matrix.toml`` (the file given),
``manifest.json`` (cells, engines, calls, wall times, mode), ``summary.json`` + ``summary.md``
(the experiments' calls and invalid replies and, with a summary writer from the composing layer,
per setting across the whole matrix: the median-return run, the spread across seeds, Sharpe
and its standard error; ``localfin pairs matrix`` passes the report's,
:func:`agent.report.matrix_summary.write_matrix_summary`).

Resuming is rerunning with ``resume=True`` (``--resume``): a cell whose ``manifest.json``
exists and whose ``config.toml`` equals its expansion is done and skipped (an engine whose
cells are all done is not started); the others rerun with their journal, so no journaled call
is sent again. A resumed matrix must come from the same matrix file.

Executors, one choice: the local one (:mod:`agent.pairs.experiment.local`, one engine per
backbone) or, with ``ray_address`` (``--ray ADDRESS``), Ray tasks
(:mod:`agent.pairs.experiment.matrix_ray`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.experiment.local import run_cells_local
from agent.pairs.experiment.matrix_config import MatrixConfig
from agent.pairs.experiment.matrix_ray import run_cells_ray
from agent.pairs.experiment.plan import BackendFactory, CellResult, MatrixPlan, plan_matrix
from agent.pairs.experiment.preflight import check_data
from agent.pairs.market.folders import write_tables
from agent.pairs.market.records import read_json, write_json
from localfin import runlock
from localfin.errors import ConfigError
from localfin.files import write_text
from localfin.progress import NULL_PROGRESS, Progress
from serving.cluster.connect import preflight
from serving.cluster.endpoints import Endpoints
from serving.models.registry import Registry

__all__ = ["MatrixResult", "SummaryWriter", "run_matrix", "write_experiments_summary", "read_manifest"]

log = logging.getLogger(__name__)

#: Writes the matrix folder's ``summary.json`` / ``summary.md`` from the cells' results and
#: returns the per-setting rows (the report's: ``agent.report.matrix_summary.write_matrix_summary``).
SummaryWriter = Callable[[Path, str, Sequence[CellResult]], list[dict[str, Any]]]


@dataclass
class MatrixResult:
    """The matrix folder, the per-cell results and the summary rows."""

    out_dir: Path
    mode: str
    cells: list[CellResult]
    wall_s: float
    engine_start_s: list[float | None] = field(default_factory=list)
    settings: list[dict[str, Any]] = field(default_factory=list)


def _prepare(out: Path, config_text: str, resume: bool) -> None:
    copy = out / "matrix.toml"
    if copy.exists() and not resume:
        raise ConfigError(
            f"matrix folder {out} already holds a matrix; pass --resume to continue it (journaled calls "
            "replay) or choose another folder"
        )
    if resume and copy.exists() and copy.read_text(encoding="utf-8") != config_text:
        raise ConfigError(
            f"--resume: {copy} differs from the matrix file given now; a resumed matrix must use the same "
            "file (start a new folder instead)"
        )
    out.mkdir(parents=True, exist_ok=True)
    write_text(copy, config_text)


def write_experiments_summary(out_dir: Path, name: str, cells: Sequence[CellResult]) -> list[dict[str, Any]]:
    """The matrix summary without settings rows (no summary writer given): the experiments'
    calls and invalid replies only."""
    write_json(out_dir / "summary.json", {"matrix": name, "experiments": [c.__dict__ for c in cells]})
    lines = [
        f"# Experiment matrix `{name}`",
        "",
        "| experiment | status | runs | wall s | model calls | replayed | journal calls | invalid replies |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {c.folder} | {c.status} | {c.runs} | {c.wall_s:.1f} | {c.model_calls} | {c.replayed} | "
        f"{c.journal_calls} | {c.invalid_replies} |"
        for c in cells
    ]
    write_text(out_dir / "summary.md", "\n".join(lines) + "\n")
    return []


@runlock.locking("out_dir")
def run_matrix(
    cfg: MatrixConfig,
    out_dir: str | Path,
    *,
    config_text: str,
    resume: bool = False,
    registry: Registry | None = None,
    backend_factory: BackendFactory | None = None,
    ray_address: str | None = None,
    endpoints: Endpoints | None = None,
    summary: SummaryWriter | None = None,
    progress: Progress = NULL_PROGRESS,
    on_cell: Callable[[CellResult], None] | None = None,
) -> MatrixResult:
    """Run the matrix into ``out_dir`` (see the module doc) and write its manifest and summary.

    Args:
        config_text: the matrix file's text (copied to ``matrix.toml``; a resume must match).
        resume: continue an existing matrix folder.
        registry: model registry (default: the packaged one).
        backend_factory: opens each engine group's backend (default: from ``[model]``).
        ray_address: run the runs as Ray tasks on this cluster (``local`` starts one here;
            :mod:`agent.pairs.experiment.matrix_ray`).
        endpoints: with ``ray_address``: servers of the backbones besides the file's ``base_url``
            (:mod:`serving.cluster.endpoints`).
        summary: writes the per-setting summary (the report's writer; None: the experiments'
            table only, :func:`write_experiments_summary`).
        on_cell: called after each experiment finishes (tests use it as a gate).
    """
    from agent.pairs.experiment.demo import synthetic_store

    out = Path(out_dir)
    plan = plan_matrix(cfg, out)
    if ray_address is not None:
        preflight(ray_address)  # a head that does not answer: nothing written yet
    _prepare(out, config_text, resume)
    if cfg.synthetic_market:
        synthetic_store(out)
    for cell in plan.cells:
        check_data(cell.config)  # a store, pool or window outside the data fails before any engine
    t0 = time.perf_counter()
    starts: list[float | None] = []
    if ray_address is not None:
        results = run_cells_ray(
            plan,
            registry=registry,
            backend_factory=backend_factory,
            address=ray_address,
            endpoints=endpoints,
            progress=progress,
            on_cell=on_cell,
        )
        mode = "ray"
    else:
        results, starts = run_cells_local(
            plan, registry=registry, backend_factory=backend_factory, progress=progress, on_cell=on_cell
        )
        mode = "local"
    return _finish(plan, results, time.perf_counter() - t0, mode, starts, ray_address, summary)


def _finish(
    plan: MatrixPlan,
    results: list[CellResult],
    wall: float,
    mode: str,
    starts: list[float | None],
    ray_address: str | None,
    summary: SummaryWriter | None,
) -> MatrixResult:
    out = plan.out_dir
    res = MatrixResult(out, mode, results, round(wall, 3), starts)
    res.settings = (summary or write_experiments_summary)(out, plan.config.name, results)
    write_tables(out)  # every run's tables again and the matrix's runs.csv (all experiments)
    write_json(
        out / "manifest.json",
        {
            "matrix": plan.config.name,
            "mode": mode,
            "ray_address": ray_address,
            "wall_s": res.wall_s,
            "engine_start_s": starts,
            "engines": [
                {
                    "backbone": g[0].config.model.backbone,
                    "backend": g[0].config.model.backend,
                    "base_url": g[0].config.model.base_url,
                    "experiments": [c.folder for c in g],
                }
                for g in plan.engines
            ],
            "experiments": [r.__dict__ for r in results],
            "model_calls": sum(r.model_calls for r in results),
            "replayed_from_journal": sum(r.replayed for r in results),
            "journal_calls": sum(r.journal_calls for r in results),
            "invalid_replies": sum(r.invalid_replies for r in results),
        },
    )
    return res


def read_manifest(out_dir: str | Path) -> dict[str, Any]:
    """The matrix folder's ``manifest.json``."""
    return read_json(Path(out_dir) / "manifest.json")
