"""The expanded experiment matrix (:class:`MatrixPlan`), what happened to each of its experiments
(:class:`CellResult`), and the helpers both executors use (:mod:`agent.pairs.experiment.local`,
:mod:`agent.pairs.experiment.matrix_ray`): whether an experiment is done, its journal's counts, and
how each engine group's backend is opened."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.pairs.experiment.matrix_config import Cell, MatrixConfig
from agent.pairs.experiment.run import check_manifest
from localfin.errors import ConfigError
from serving.chat.backend import Backend
from serving.journal import Journal
from serving.models.registry import Registry
from serving.open import ModelFacts, model_facts, open_backend, registry_with

__all__ = [
    "BackendFactory",
    "MatrixPlan",
    "CellResult",
    "plan_matrix",
    "registry_for",
    "open_cell_backend",
    "cell_facts",
    "cell_done",
    "done_result",
    "journal_counts",
]

#: Opens the backend of one engine group from its first cell and the registry (default:
#: :func:`open_cell_backend`, the cell's ``[model]``); tests pass a scripted one.
BackendFactory = Callable[[Cell, Registry], Backend]


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


def plan_matrix(cfg: MatrixConfig, out_dir: str | Path) -> MatrixPlan:
    """Expand ``cfg`` for the folder ``out_dir`` (validates every experiment config)."""
    out = Path(out_dir)
    store = out.resolve() / "market.sqlite" if cfg.synthetic_market else None
    return MatrixPlan(cfg, out, tuple(cfg.cells(store)))


def registry_for(cell: Cell, registry: Registry | None = None) -> Registry:
    """The registry for ``cell``'s backbone: ``model_path`` applied; a ``built`` test model
    without a path is built once into the model cache (:func:`serving.open.registry_with`)."""
    return registry_with(cell.backbone.key, cell.backbone.model_path, registry)


def open_cell_backend(cell: Cell, registry: Registry) -> Backend:
    """The backend ``cell``'s ``[model]`` names (the default :data:`BackendFactory`)."""
    return open_backend(cell.config.model.backend_spec(), registry)


def cell_facts(cell: Cell, registry: Registry) -> ModelFacts | None:
    """The backbone's facts for the manifest (None for a key the registry does not hold)."""

    try:
        return model_facts(cell.config.model.backbone, registry)
    except ConfigError:
        return None


def cell_done(out: Path, cell: Cell) -> bool:
    """Whether ``cell``'s folder is complete: manifest written, config equal to the expansion.
    A torn manifest, or one of another config, is a DamagedFileError naming it (it would
    otherwise pass the experiment off as done)."""
    folder = out / cell.folder
    cfg = folder / "config.toml"
    done = (
        (folder / "manifest.json").is_file()
        and cfg.is_file()
        and cfg.read_text(encoding="utf-8") == cell.config_text
    )
    if done:
        check_manifest(folder, cell.config)
    return done


def journal_counts(folder: Path) -> tuple[int, int]:
    """(calls, invalid replies) in ``folder/journal.sqlite`` (0, 0 without one)."""
    path = folder / "journal.sqlite"
    if not path.is_file():
        return 0, 0
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
