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
    seeds = [0, 1, 2]              # default [0, 1, 2] (SPEC §2: 3 seeds per setting; the base's
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
(per setting across the whole matrix: the median-return run, the spread across seeds, Sharpe
and its standard error, computed by :mod:`agent.report.tables`).

Resuming is rerunning with ``resume=True`` (``--resume``): a cell whose ``manifest.json``
exists and whose ``config.toml`` equals its expansion is done and skipped (an engine whose
cells are all done is not started); the others rerun with their journal, so no journaled call
is sent again. A resumed matrix must come from the same matrix file.

With ``ray_address`` (``--ray ADDRESS``) the runs are Ray tasks instead
(:mod:`agent.pairs.experiment.matrix_ray`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.experiment.matrix_config import Cell, MatrixConfig
from agent.pairs.market.records import read_json, write_json
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.backend import Backend

__all__ = [
    "BackendFactory",
    "MatrixPlan",
    "CellResult",
    "MatrixResult",
    "plan_matrix",
    "registry_for",
    "cell_done",
    "done_result",
    "journal_counts",
    "read_manifest",
    "run_matrix",
]

log = logging.getLogger(__name__)

#: Builds the backend of one engine group from its first cell and the registry (default: the
#: cell's ``[model]``: in-process vLLM or the OpenAI client); tests pass a scripted one.
BackendFactory = Callable[[Cell, Any], Backend]


@dataclass(frozen=True)
class MatrixPlan:
    """The expanded matrix: its cells, grouped by engine, in run order."""

    config: MatrixConfig
    out_dir: Path
    cells: tuple[Cell, ...]

    @property
    def engines(self) -> list[tuple[Cell, ...]]:
        """Cells grouped by engine (consecutive cells with equal ``engine_key``)."""
        groups: list[list[Cell]] = []
        for c in self.cells:
            if groups and groups[-1][0].engine_key == c.engine_key:
                groups[-1].append(c)
            else:
                groups.append([c])
        return [tuple(g) for g in groups]

    def describe(self) -> list[str]:
        """Human-readable lines: engines, their experiments and runs (for ``--dry-run``)."""
        lines = [
            f"matrix {self.config.name}: {len(self.cells)} experiments, "
            f"{sum(len(c.config.run_ids()) for c in self.cells)} runs, {len(self.engines)} engines"
        ]
        for k, group in enumerate(self.engines, 1):
            m = group[0].config.model
            where = f"openai {m.base_url}" if m.backend == "openai" else "vllm in-process"
            lines.append(f"engine {k}: {m.backbone} ({where})")
            for c in group:
                w = c.windows
                lines.append(
                    f"  {self.out_dir / c.folder}: train {w.train_start}..{w.train_end}, "
                    f"test {w.test_start}..{w.test_end}, thinking={c.config.model.thinking}"
                )
                for run_id, *_ in c.config.run_ids():
                    lines.append(f"    {run_id}")
        return lines


@dataclass(frozen=True)
class CellResult:
    """What happened to one experiment of the matrix in this invocation."""

    folder: str
    backbone: str
    windows: str
    status: str  # "ran" | "done before" | "ran on ray"
    runs: int
    wall_s: float
    model_calls: int
    replayed: int
    journal_calls: int
    invalid_replies: int


@dataclass
class MatrixResult:
    """The matrix folder, the per-cell results and the summary rows."""

    out_dir: Path
    mode: str
    cells: list[CellResult]
    wall_s: float
    engine_start_s: list[float | None] = field(default_factory=list)
    settings: list[dict[str, Any]] = field(default_factory=list)


def plan_matrix(cfg: MatrixConfig, out_dir: str | Path) -> MatrixPlan:
    """Expand ``cfg`` for the folder ``out_dir`` (validates every experiment config)."""
    out = Path(out_dir)
    store = out.resolve() / "market.sqlite" if cfg.synthetic_market else None
    return MatrixPlan(cfg, out, tuple(cfg.cells(store)))


def registry_for(cell: Cell, registry: Any = None) -> Any:
    """The registry for ``cell``'s backbone: ``model_path`` applied; a ``built`` test model
    without a path is built once into the model cache (``<model cache>/<key>``)."""
    from serving.registry import default_registry

    reg = registry or default_registry()
    spec = reg.get(cell.backbone.key)
    if cell.backbone.model_path:
        return reg.with_spec(spec.with_path(Path(cell.backbone.model_path).expanduser()))
    if spec.source == "built" and spec.path is None:
        from localfin import env
        from serving.models import build_tiny_model

        if not spec.key.startswith("tiny-"):
            raise ConfigError(f"backbone {spec.key!r} is built at run time; give backbones.model_path")
        path = env.model_cache_dir() / spec.key
        if not (path / "config.json").is_file():
            log.info("building the tiny test model %s into %s", spec.key, path)
            build_tiny_model(path, arch=spec.key.split("-", 1)[1], seed=0)
        return reg.with_spec(spec.with_path(path))
    return reg


def cell_done(out: Path, cell: Cell) -> bool:
    """Whether ``cell``'s folder is complete: manifest written, config equal to the expansion."""
    folder = out / cell.folder
    cfg = folder / "config.toml"
    return (
        (folder / "manifest.json").is_file()
        and cfg.is_file()
        and cfg.read_text(encoding="utf-8") == cell.config_text
    )


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
    copy.write_text(config_text, encoding="utf-8")


def _default_factory(cell: Cell, registry: Any) -> Backend:
    from agent.pairs.experiment.run import build_backend

    return build_backend(cell.config, registry)


def journal_counts(folder: Path) -> tuple[int, int]:
    """(calls, invalid replies) in ``folder/journal.sqlite`` (0, 0 without one)."""
    path = folder / "journal.sqlite"
    if not path.is_file():
        return 0, 0
    from serving.journal import Journal

    with Journal(path) as j:
        rows = j.token_summary()
    return sum(t.calls for t in rows), sum(t.fallbacks for t in rows)


def done_result(out: Path, cell: Cell) -> CellResult:
    """The :class:`CellResult` of an experiment finished by an earlier invocation."""
    calls, invalid = journal_counts(out / cell.folder)
    return CellResult(
        cell.folder,
        cell.backbone.name,
        cell.windows.name,
        "done before",
        len(cell.config.run_ids()),
        0.0,
        0,
        0,
        calls,
        invalid,
    )


def run_matrix(
    cfg: MatrixConfig,
    out_dir: str | Path,
    *,
    config_text: str,
    resume: bool = False,
    registry: Any = None,
    backend_factory: BackendFactory | None = None,
    ray_address: str | None = None,
    progress: Progress = NULL_PROGRESS,
    on_cell: Callable[[CellResult], None] | None = None,
) -> MatrixResult:
    """Run the matrix into ``out_dir`` (see the module doc) and write its manifest and summary.

    Args:
        config_text: the matrix file's text (copied to ``matrix.toml``; a resume must match).
        resume: continue an existing matrix folder.
        registry: model registry (default: :func:`serving.registry.default_registry`).
        backend_factory: builds each engine group's backend (default: from ``[model]``).
        ray_address: run the runs as Ray tasks on this cluster (``local`` starts one here;
            :mod:`agent.pairs.experiment.matrix_ray`).
        on_cell: called after each experiment finishes (tests use it as a gate).
    """
    from agent.pairs.experiment.run import run_experiment

    out = Path(out_dir)
    plan = plan_matrix(cfg, out)
    _prepare(out, config_text, resume)
    if cfg.synthetic_market:
        from agent.pairs.experiment.demo import synthetic_store

        synthetic_store(out)
    factory = backend_factory or _default_factory
    t0 = time.perf_counter()
    results: list[CellResult] = []
    starts: list[float | None] = []
    if ray_address is not None:
        from agent.pairs.experiment.matrix_ray import run_cells_ray

        results = run_cells_ray(
            plan,
            registry=registry,
            backend_factory=backend_factory,
            address=ray_address,
            progress=progress,
            on_cell=on_cell,
        )
        return _finish(plan, results, time.perf_counter() - t0, "ray", starts, ray_address)
    with progress.task("experiments", total=len(plan.cells)) as task:
        for group in plan.engines:
            todo = [c for c in group if not cell_done(out, c)]
            for c in group:
                if c not in todo:
                    results.append(done_result(out, c))
                    task.advance()
            if not todo:
                continue  # every experiment of this engine is complete: no engine start
            reg = registry_for(todo[0], registry)
            backend = factory(todo[0], reg)
            try:
                for c in todo:
                    task.update(info=c.folder)
                    t1 = time.perf_counter()
                    res = run_experiment(
                        c.config,
                        out / c.folder,
                        config_text=c.config_text,
                        backend=backend,
                        registry=reg,
                        resume=True,
                        progress=progress,
                    )
                    calls, invalid = journal_counts(out / c.folder)
                    cr = CellResult(
                        c.folder,
                        c.backbone.name,
                        c.windows.name,
                        "ran",
                        len(res.runs),
                        round(time.perf_counter() - t1, 3),
                        res.model_calls,
                        res.replayed,
                        calls,
                        invalid,
                    )
                    results.append(cr)
                    task.advance()
                    if on_cell is not None:
                        on_cell(cr)
            finally:
                starts.append(getattr(backend, "engine_start_s", None))
                backend.close()
    return _finish(plan, results, time.perf_counter() - t0, "local", starts, None)


def _finish(
    plan: MatrixPlan,
    results: list[CellResult],
    wall: float,
    mode: str,
    starts: list[float | None],
    ray_address: str | None,
) -> MatrixResult:
    from agent.pairs.experiment.matrix_summary import write_matrix_summary

    out = plan.out_dir
    res = MatrixResult(out, mode, results, round(wall, 3), starts)
    res.settings = write_matrix_summary(out, plan.config.name, results)
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
