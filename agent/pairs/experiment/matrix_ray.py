"""The matrix on a Ray cluster: runs become Ray tasks, their journals are merged into the experiment.

Unit of work. One shard (a Ray task, :mod:`serving.cluster.shards`) = one experiment of the
matrix (backbone x windows set) restricted to one seed: all its exposures and variants, in
lockstep. Runs of one seed share requests (the training rounds of the two exposures are
identical, and so is the warmup round of the A3 variant), so keeping them in one task means
each request is asked once; tasks of different seeds share no request (the seed is part of
every request), so their journals never disagree.

Each task runs an ordinary experiment in a scratch folder of its node with the ``openai``
backend against a server of the backbone: its node's own (``LOCALFIN_ENDPOINTS`` where that
node's ``ray start`` ran) or the backbone's ``base_url`` (:mod:`serving.cluster.endpoints`).
Every answered call also goes to the journal keeper on the driver's node, which keeps each
task's journal in ``<out>/.ray-tasks/<backbone>/<windows>/s<seed>/journal.sqlite`` (hidden,
so ``localfin report`` does not count its runs twice).

Placement: the tasks, in matrix order (backbone, windows, seed), are asked for on the nodes
with a free CPU in turn (:class:`serving.cluster.shards.RayRunner`); which node ran each
attempt goes to ``<out>/cluster.json``. The experiment folders do not depend on it.

A lost worker or node: Ray runs the task again, up to :data:`TASK_RETRIES` times (system
failures only; an error of ours is not retried), on any node; the new attempt starts from the
keeper's journal, so no journaled call is sent twice and none is lost. A task that failed for
good resumes from its journal when the matrix is rerun with ``--resume``.

Gathering. When the tasks are done, each experiment's task journals are merged into the
experiment's ``journal.sqlite`` and the experiment is replayed on the driver by
:func:`agent.pairs.experiment.run.run_experiment` with a backend that refuses every call
(:class:`serving.cluster.gather.JournalOnly`): the runs, summary and manifest are written by
the same code as on the local path, from the journal alone. The experiment folder is then
exactly what the local path writes (``pairs run --resume`` replays it with no model call).

Workers import localfin: on a ``local`` instance they share this interpreter's environment; on
a cluster install localfin on every node (docs/cluster.md) and give every node the market
store at the same path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
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
    registry_for,
)
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import write_json
from localfin import configfile as cf
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.cluster.connect import joined
from serving.cluster.endpoints import Endpoints, node_endpoints
from serving.cluster.gather import JournalOnly, merge_journal
from serving.cluster.keeper import JOURNAL
from serving.cluster.shards import TASK_RETRIES, RayRunner, Shard, ShardContext, ShardRunner
from serving.models.registry import Registry
from serving.open import check_backend, open_backend

__all__ = ["TASKS_DIR", "TASK_RETRIES", "task_text", "merge_journal", "named_endpoints", "run_cells_ray"]

log = logging.getLogger(__name__)

TASKS_DIR = ".ray-tasks"


def task_text(cell: Cell, seed: int) -> str:
    """The experiment TOML of ``cell`` restricted to ``seed``."""
    doc = cf.merge(cf.loads_toml(cell.config_text), {"experiment": {"seeds": [seed]}})
    return cf.dumps(doc)


def named_endpoints(plan: MatrixPlan) -> Endpoints:
    """The servers the matrix file names: ``base_url`` of each ``openai`` backbone, per key."""
    table: dict[str, list[str]] = {}
    for c in plan.cells:
        m = c.config.model
        if m.backend == "openai" and m.base_url:
            table.setdefault(m.backbone, []).append(m.base_url)
    return Endpoints.of(table)


@dataclass(frozen=True)
class SeedTask:
    """A shard's body: one seed of one experiment in the node's scratch folder (module doc)."""

    text: str
    cell: Cell
    registry: Registry
    factory: BackendFactory | None
    endpoints: Endpoints

    def backend(self, ctx: ShardContext) -> Backend:
        if self.factory is not None:
            return self.factory(self.cell, self.registry)
        m = self.cell.config.model
        url = ctx.endpoint(self.endpoints, m.backbone)
        spec = replace(m.backend_spec(), kind="openai", base_url=url)
        return open_backend(spec, self.registry)

    def __call__(self, ctx: ShardContext) -> dict[str, int]:
        cfg = parse_config(cf.loads_toml(self.text, "a Ray task's experiment"))
        folder = ctx.folder / "experiment"
        ctx.restore(folder / JOURNAL)
        backend = ctx.relay(self.backend(ctx))
        try:
            check_backend(backend)
            res = run_experiment(
                cfg,
                folder,
                config_text=self.text,
                backend=backend,
                model=cell_facts(self.cell, self.registry),
                resume=True,
            )
        finally:
            backend.close()
        return {"calls": res.model_calls, "replayed": res.replayed}


def _precheck(todo: list[Cell], endpoints: Endpoints, address: str, factory: BackendFactory | None) -> None:
    """On a ``local`` instance every task runs here: a backbone with no server fails now."""
    if factory is not None or address != "local":
        return
    here = node_endpoints()
    for c in todo:
        endpoints.choose(c.config.model.backbone, 0, here, where="this machine (--ray local)")


def run_cells_ray(
    plan: MatrixPlan,
    *,
    registry: Registry | None = None,
    backend_factory: BackendFactory | None = None,
    address: str = "local",
    endpoints: Endpoints | None = None,
    progress: Progress = NULL_PROGRESS,
    on_cell: Callable[[CellResult], None] | None = None,
) -> list[CellResult]:
    """Run the experiments of ``plan`` not done yet as Ray tasks and gather them (module doc).

    ``address``: ``local``, ``auto`` or ``HOST:PORT`` (:mod:`serving.cluster.connect`); when
    Ray is already initialised in this process it is used as it is. ``backend_factory``:
    builds each task's backend on the worker (must pickle); default: the OpenAI client for a
    server of the backbone (module doc); ``endpoints``: servers named besides the file's
    ``base_url``.
    """
    out = plan.out_dir
    todo = [c for c in plan.cells if not cell_done(out, c)]
    named = named_endpoints(plan)
    for key, urls in endpoints.named if endpoints is not None else ():
        named = named.with_named(key, urls)
    endpoints = named
    _precheck(todo, endpoints, address, backend_factory)
    with joined(address) as cluster:
        runner = RayRunner(cluster, out / TASKS_DIR)
        try:
            results = _run(runner, plan, todo, registry, backend_factory, endpoints, progress, on_cell)
            write_json(
                out / "cluster.json",
                {
                    "address": address,
                    "nodes": [n.__dict__ | {"resources": dict(n.resources)} for n in cluster.nodes],
                    "driver_node": cluster.driver_node,
                    "placement": runner.placement(),
                    "placement_rule": "task i (matrix order) asked for on node i mod n of the nodes with a "
                    "free CPU (ordered by address, then id); soft: a lost node's tasks go to any other",
                },
            )
        finally:
            runner.close()
    return results


def _run(
    runner: ShardRunner,
    plan: MatrixPlan,
    todo: list[Cell],
    registry: Registry | None,
    backend_factory: BackendFactory | None,
    endpoints: Endpoints,
    progress: Progress,
    on_cell: Callable[[CellResult], None] | None,
) -> list[CellResult]:
    out = plan.out_dir
    registries = {c.folder: registry_for(c, registry) for c in todo}
    shards: list[Shard] = []
    for c in todo:
        earlier = out / c.folder / JOURNAL  # calls journaled by an earlier run of this experiment
        for s in c.config.seeds:
            if earlier.is_file():
                merge_journal(Path(runner.root) / c.folder / f"s{s}" / JOURNAL, earlier)
            body = SeedTask(task_text(c, s), c, registries[c.folder], backend_factory, endpoints)
            shards.append(Shard(f"{c.folder}/s{s}", len(shards), body))
    submitted = time.perf_counter()  # an experiment's wall time: from here to its gathering
    outcomes = {o.key: o for o in runner.run(shards, "matrix tasks", progress)} if shards else {}
    results: list[CellResult] = []
    with progress.task("experiments", total=len(plan.cells)) as bar:
        for c in plan.cells:
            if c not in todo:
                results.append(done_result(out, c))
                bar.advance()
                continue
            folder = out / c.folder
            folder.mkdir(parents=True, exist_ok=True)
            done: list[dict[str, Any]] = []
            for s in c.config.seeds:
                key = f"{c.folder}/s{s}"
                kept = Path(runner.root) / key / JOURNAL
                if kept.is_file():
                    merge_journal(folder / JOURNAL, kept)
                done.append(outcomes[key].value)
            res = run_experiment(
                c.config,
                folder,
                config_text=c.config_text,
                backend=JournalOnly(f"the Ray tasks of {c.folder}"),
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
