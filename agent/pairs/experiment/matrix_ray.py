"""The matrix on a Ray cluster: runs become Ray tasks, their journals are merged into the experiment.

Unit of work. One Ray task = one experiment of the matrix (backbone x windows set) restricted
to one seed: all its exposures and variants, in lockstep. Runs of one seed share requests (the
training rounds of the two exposures are identical, and so is the warmup round of the A3
variant), so keeping them in one task means each request is asked once; tasks of different
seeds share no request (the seed is part of every request), so their journals never disagree.

Each task runs an ordinary experiment into its own folder
``<out>/.ray-tasks/<backbone>/<windows>/s<seed>/`` (its own ``journal.sqlite``; hidden, so
``localfin report`` does not count its runs twice) with the ``openai`` backend against the
backbone's ``base_url`` (a ``vllm serve`` endpoint; every worker must reach it).

A lost worker (its process killed, its node gone): Ray runs the task again, up to
:data:`TASK_RETRIES` times (system failures only; an error of ours is not retried), and the new
attempt resumes from the task folder's journal where it is on the same node, so the matrix
finishes with no journaled call sent twice. A task that failed for good resumes from its
journal when the matrix is rerun with ``--resume``. Runs are written once, by the gathering.

Gathering. When the tasks of an experiment are done, their journals are merged into the
experiment's ``journal.sqlite`` (``INSERT OR IGNORE`` by request key) and the experiment is
replayed on the driver by :func:`agent.pairs.experiment.run.run_experiment` with a backend that
refuses every call: the runs, summary and manifest are written by the same code as on the
local path, from the journal alone, and a call missing from the merged journal is an error
rather than a silent new model call. The experiment folder is then exactly what the local path
writes (``pairs run --resume`` replays it with no model call).

Workers import localfin: on a local instance they share this interpreter's environment; on a
cluster install localfin on every node (or pass a ``runtime_env``; see docs/experiments.md, "Ray").
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.matrix_config import Cell
from agent.pairs.experiment.plan import (
    BackendFactory,
    CellResult,
    MatrixPlan,
    cell_done,
    cell_facts,
    done_result,
    journal_counts,
    open_cell_backend,
    registry_for,
)
from agent.pairs.experiment.run import run_experiment
from localfin import configfile as cf
from localfin.errors import ConfigError, LocalfinError
from localfin.progress import NULL_PROGRESS, Progress
from serving.journal import Journal
from serving.open import check_backend
from serving.registry import Registry
from serving.types import ChatRequest, ChatResult

__all__ = ["TASKS_DIR", "TASK_RETRIES", "task_text", "merge_journal", "run_cells_ray"]

log = logging.getLogger(__name__)

TASKS_DIR = ".ray-tasks"
#: times Ray runs a task again after its worker died (docs/faults.md)
TASK_RETRIES = 3


def task_text(cell: Cell, seed: int) -> str:
    """The experiment TOML of ``cell`` restricted to ``seed``."""
    doc = cf.merge(cf.loads_toml(cell.config_text), {"experiment": {"seeds": [seed]}})
    return cf.dumps(doc)


def merge_journal(dst: Path, src: Path) -> int:
    """Copy every call of the journal ``src`` missing from ``dst`` into it; returns the rows
    added. Rows are keyed by the request hash, so merging twice adds nothing."""

    Journal(dst).close()  # creates the schema when new
    db = sqlite3.connect(dst, timeout=60.0, isolation_level=None)
    try:
        before = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        db.execute("ATTACH DATABASE ? AS src", (str(src),))
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT OR IGNORE INTO calls SELECT * FROM src.calls ORDER BY rowid")
        db.execute("COMMIT")
        db.execute("DETACH DATABASE src")
        return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] - before)
    except sqlite3.Error as exc:
        raise LocalfinError(f"cannot merge journal {src} into {dst}: {exc}") from exc
    finally:
        db.close()


class _JournalOnly:
    """A backend that refuses every call: the gather step must find everything journaled."""

    name = "journal-only"

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        raise LocalfinError(
            f"gathering the Ray tasks: {len(requests)} call(s) missing from the merged journal "
            f"(first: {requests[0].call_type}); rerun the matrix with --resume"
        )

    def close(self) -> None:
        return None


def _task(
    text: str,
    folder: str,
    registry: Registry,
    factory: BackendFactory | None,
    cell: Cell,
    journal: bytes | None,
) -> dict[str, Any]:
    """Body of one Ray task (runs on a worker): one seed of one experiment, own journal.

    ``journal``: the driver's copy of this task's journal from an earlier, interrupted attempt
    (written into the folder when the worker has none: a task moved to another node keeps its
    calls). Returns the journal's bytes, so the driver needs no shared filesystem."""
    cfg = parse_config(cf.loads_toml(text, "a Ray task's experiment"))
    path = Path(folder) / "journal.sqlite"
    if journal is not None and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(journal)
    backend = (factory or open_cell_backend)(cell, registry)
    try:
        check_backend(backend)
        res = run_experiment(
            cfg, folder, config_text=text, backend=backend, model=cell_facts(cell, registry), resume=True
        )
    finally:
        backend.close()
    return {
        "calls": res.model_calls,
        "replayed": res.replayed,
        "journal": path.read_bytes(),  # closed by run_experiment: the WAL is checkpointed
    }


def _check_backend(cell: Cell) -> None:
    m = cell.config.model
    if m.backend != "openai":
        raise ConfigError(
            f"--ray: backbone {cell.backbone.name!r} has model.backend={m.backend!r}; Ray workers call a "
            "vLLM server: set backend = 'openai' and base_url in its [[backbones]] entry"
        )


def run_cells_ray(
    plan: MatrixPlan,
    *,
    registry: Registry | None = None,
    backend_factory: BackendFactory | None = None,
    address: str = "local",
    progress: Progress = NULL_PROGRESS,
    on_cell: Callable[[CellResult], None] | None = None,
) -> list[CellResult]:
    """Run the experiments of ``plan`` not done yet as Ray tasks and gather them (module doc).

    ``address``: a Ray cluster address (``ray://host:10001``, ``auto``) or ``local`` (start a
    local instance); when Ray is already initialised in this process it is used as it is.
    ``backend_factory``: builds each task's backend on the worker (must pickle); default: the
    OpenAI client for the backbone's ``base_url``.
    """
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--ray needs the ray package: pip install 'localfin[ray]'") from exc
    out = plan.out_dir
    todo = [c for c in plan.cells if not cell_done(out, c)]
    if backend_factory is None:
        for c in todo:
            _check_backend(c)
    started = not ray.is_initialized()
    if started:
        # "local" always starts a new instance (never joins one found on this machine)
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        return _run(ray, plan, todo, registry, backend_factory, progress, on_cell)
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, LocalfinError):  # ours, from a task: its own message and exit code
            raise cause from exc
        raise LocalfinError(
            f"a Ray task of the matrix failed (rerun with --resume to continue): {exc}"
        ) from exc
    finally:
        if started:
            ray.shutdown()


def _run(
    ray: Any,
    plan: MatrixPlan,
    todo: list[Cell],
    registry: Registry | None,
    backend_factory: BackendFactory | None,
    progress: Progress,
    on_cell: Callable[[CellResult], None] | None,
) -> list[CellResult]:
    out = plan.out_dir
    remote = ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(_task)
    registries = {c.folder: registry_for(c, registry) for c in todo}
    refs: dict[str, list[Any]] = {}
    submitted = time.perf_counter()  # an experiment's wall time: from here to its gathering
    for c in todo:
        refs[c.folder] = []
        for s in c.config.seeds:
            folder = (out / TASKS_DIR / c.folder / f"s{s}").resolve()
            own = folder / "journal.sqlite"
            args = (task_text(c, s), str(folder), registries[c.folder], backend_factory, c)
            refs[c.folder].append(remote.remote(*args, own.read_bytes() if own.is_file() else None))
    results: list[CellResult] = []
    with progress.task("experiments", total=len(plan.cells)) as bar:
        for c in plan.cells:
            if c not in todo:
                results.append(done_result(out, c))
                bar.advance()
                continue
            done = ray.get(refs[c.folder])
            folder = out / c.folder
            folder.mkdir(parents=True, exist_ok=True)
            for s, d in zip(c.config.seeds, done):
                got = out / TASKS_DIR / c.folder / f"s{s}" / "journal.returned.sqlite"
                got.parent.mkdir(parents=True, exist_ok=True)
                got.write_bytes(d["journal"])
                merge_journal(folder / "journal.sqlite", got)
            res = run_experiment(
                c.config,
                folder,
                config_text=c.config_text,
                backend=_JournalOnly(),
                model=cell_facts(c, registries[c.folder]),
                resume=True,
            )
            calls, invalid = journal_counts(folder)
            cr = CellResult(
                c.folder,
                c.backbone.name,
                c.windows.name,
                "ran on ray",
                len(res.runs),
                round(time.perf_counter() - submitted, 3),
                sum(d["calls"] for d in done),
                sum(d["replayed"] for d in done),
                calls,
                invalid,
            )
            results.append(cr)
            bar.advance()
            if on_cell is not None:
                on_cell(cr)
    return results
