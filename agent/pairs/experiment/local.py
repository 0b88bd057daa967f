"""The local executor of the matrix: backbone after backbone, each engine group's experiments on
one backend (opened once, closed before the next group; a group whose experiments are all done
opens none)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

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
from localfin.progress import NULL_PROGRESS, Progress
from serving.models.registry import Registry
from serving.open import check_backend

__all__ = ["run_cells_local"]


def run_cells_local(
    plan: MatrixPlan,
    *,
    registry: Registry | None = None,
    backend_factory: BackendFactory | None = None,
    progress: Progress = NULL_PROGRESS,
    on_cell: Callable[[CellResult], None] | None = None,
) -> tuple[list[CellResult], list[float | None]]:
    """Run the experiments of ``plan`` not done yet; returns every cell's result (plan order) and
    the start-up seconds of each backend opened."""
    out: Path = plan.out_dir
    factory = backend_factory or open_cell_backend
    results: list[CellResult] = []
    starts: list[float | None] = []
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
                check_backend(backend)  # a server that is down or refuses the key: before any call
                for c in todo:
                    task.update(info=c.folder)
                    t1 = time.perf_counter()
                    res = run_experiment(
                        c.config,
                        out / c.folder,
                        config_text=c.config_text,
                        backend=backend,
                        model=cell_facts(c, reg),
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
    return results, starts
