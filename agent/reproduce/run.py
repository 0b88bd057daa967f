"""``localfin reproduce CONFIG`` and ``--smoke``: run a reproduction config and write its report.

A full run uses the config as shipped (the paper's windows and backbones, the GPU settings).
A smoke run shrinks it to CPU size so that every shipped config can be exercised on a machine
without a GPU or the papers' data:

- Moira: one seed, the config's exposures and variants, one backbone (the CPU model), each
  windows set mapped onto the bundled synthetic market (the paper's session counts capped at
  :data:`SMOKE_TRAIN` / :data:`SMOKE_TEST`, consecutive sets 40 sessions apart, after ten years
  of synthetic history so the causal screen has its full lookback), compact prompts, one replay
  cycle and a 4-session validation period (so a boundary falls inside the test window), EG-DDQN
  trained for 2 episodes on 120 sessions of history (the path, not the paper's figure); our
  explicit sampling (temperature 0.3) instead of the server's default, and a FinMem fixed on one
  backbone fixed on the CPU model.
- FinAcumen: the bundled demo QA set (train items feed the bank, a few test items per set), the
  CPU model, 2 tool steps, the tools the demo set can use (Python, OCR + reparse, lookup over a
  small synthetic market store), K = 2 trajectories; variants, tau and k_max grids as the
  config has them.

A full run opens every engine where the config's placement puts it
(:func:`agent.reproduce.engine_plan.place`, the function ``reproduce plan`` prints and
``reproduce check`` checks, on the GPUs this process sees): its tensor parallelism, its memory
share, its data-parallel replicas (one engine process each, :mod:`serving.engines.replicas`), a
declared FP8 quantization. A Moira table placed in several stages (one per backbone: none fits
beside another) is served stage by stage instead: the run starts a stage's servers with the same
arguments, runs that stage's part of the matrix against them and stops them before the next
(:mod:`agent.reproduce.stage_run`). A config that cannot be placed stops here, before any engine
starts, with what would place it. A FinAcumen run whose judge is a separate model opens a second
backend for it: an in-process engine beside the solver's (``[qa] judge_gpu_memory`` of its GPU),
or a client of the judge's server (``judge_base_url``).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.data.store import MarketStore
from agent.qa.data.demo_set import build_demo_set
from agent.report.build import build_report
from agent.reproduce import engine_plan as placing
from agent.reproduce.cluster_plan import BASE_PORT
from agent.reproduce.qa.arms import run_qa
from agent.reproduce.qa.engines import judge_engine
from agent.reproduce.qa.run import shrink_plan
from agent.reproduce.report import write_report
from agent.reproduce.spec import ReproConfig
from bank.embedder import Embedder
from localfin import env
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.cluster.endpoints import Endpoints
from serving.hardware.gpus import Inventory, engine_platform, visible_inventory
from serving.models.registry import Registry
from serving.open import BackendSpec, opened, registry_with

__all__ = ["SMOKE_TRAIN", "SMOKE_TEST", "SMOKE_ANCHOR", "ReproResult", "smoke_document", "reproduce"]

log = logging.getLogger(__name__)

SMOKE_TRAIN = 6  # sessions
SMOKE_TEST = 8  # sessions
SMOKE_ANCHOR = 2525  # first synthetic session of the first windows set (after 2,520 of history)
SMOKE_QA_ITEMS = 2
SMOKE_QA_SESSIONS = 300  # sessions of the smoke run's small market store (lookup tool)
_SMOKE_PROMPT = {
    "reason_max_chars": 40,
    "principle_max_chars": 60,
    "reflection_max_chars": 60,
    "news_per_leg": 1,
    "news_lookback_sessions": 3,
    "headline_max_chars": 100,
    "description_max_chars": 0,
    "memory_records": 3,
    "reflection_max_records": 6,
}

_SMOKE_DDQN = {"episodes": 2, "min_replay": 32, "history_sessions": 120}
#: FinMem's replies bounded for the CPU model as the agent's are (the reproduction configs leave
#: them unbounded under their 16,384-token budgets, which a smoke run does not keep)
_SMOKE_FINMEM = {"reason_max_chars": 60, "reflection_max_chars": 120}


@dataclass(frozen=True)
class ReproResult:
    """Where the report is, the rows it shows and the run notes."""

    report: Path
    rows: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]


def smoke_document(
    cfg: ReproConfig, store: Path, model: str, *, train: int = SMOKE_TRAIN, test: int = SMOKE_TEST
) -> dict[str, Any]:
    """The config's matrix document shrunk onto the synthetic market in ``store`` (see the
    module docstring; ``train`` / ``test``: most sessions per windows set)."""
    import numpy as np

    with MarketStore(store, create=False) as s:
        cal = s.calendar()
    doc = copy.deepcopy(dict(cfg.document))
    doc["matrix"] = {**doc["matrix"], "seeds": [0]}
    doc["backbones"] = [{"key": model, "name": "cpu"}]
    windows = []
    for i, w in enumerate(cfg.windows):
        n_tr, n_te = min(w.paper_train_sessions, train), min(w.paper_test_sessions, test)
        a = SMOKE_ANCHOR + 40 * i
        if a + n_tr + n_te > len(cal):
            raise ValueError(f"windows set {w.name!r} does not fit the synthetic market")
        day = [
            str(np.datetime_as_string(d, unit="D"))
            for d in (cal[a], cal[a + n_tr - 1], cal[a + n_tr], cal[a + n_tr + n_te - 1])
        ]
        windows.append(
            {"name": w.name, **dict(zip(("train_start", "train_end", "test_start", "test_end"), day))}
        )
    doc["windows"] = windows
    exp = dict(doc.get("experiment", {}))
    exp["store"] = str(store)
    exp.pop("pool", None)  # the synthetic market's tickers
    doc["experiment"] = exp
    doc["model"] = {"backend": "vllm", "temperature": 0.3, "max_num_seqs": 64, "chunk_size": 256}
    doc["prompt"] = dict(_SMOKE_PROMPT)
    doc["policy"] = {"max_cycles": 1, "stop_after_rejections": 2, "max_principles": 3}
    doc["screen"] = {"lookback": 2520, "top_k": 3}
    doc["lifecycle"] = {"validation_period": 4}
    # EG-DDQN trains on the CPU in seconds, not minutes (a smoke run proves the path, not the figure)
    bl = dict(doc.get("baselines") or {})
    doc["baselines"] = {**bl, "eg_ddqn": {**(bl.get("eg_ddqn") or {}), **_SMOKE_DDQN}}
    fm = dict((doc.get("baselines") or {}).get("finmem") or {})
    if "model" in fm:  # the single FinMem row runs on the CPU model too
        fm["model"] = model
    doc["baselines"] = {**doc["baselines"], "finmem": {**fm, **_SMOKE_FINMEM}}
    return doc


def _smoke_store(out: Path) -> Path:
    """A small seeded synthetic market store for the smoke run's lookup tool (built once)."""
    from agent.data.workflows import synth_market

    path = out / "qa_market.sqlite"
    if not path.exists():
        tmp = out / "qa_market.sqlite.tmp"
        tmp.unlink(missing_ok=True)
        synth_market(out / "qa_market", n_sessions=SMOKE_QA_SESSIONS, store_path=tmp)
        tmp.replace(path)
    return path


def run_placement(
    cfg: ReproConfig, registry: Registry | None, inventory: Inventory | None = None
) -> placing.Placement | None:
    """The placement a full run opens its engines with (None on the CPU build, where engines
    take vLLM's CPU defaults): :func:`agent.reproduce.engine_plan.place` on ``inventory``
    (default: the GPUs this process sees). A config that cannot be placed is a ConfigError
    naming what would place it, before any engine starts."""
    if inventory is None:
        if engine_platform() != "cuda":
            return None
        inventory = visible_inventory()
    reg = registry_with(cfg.model_keys[0], "", registry)
    placed = placing.place(cfg, inventory, registry=reg)
    if not placed.ok:
        raise ConfigError(
            f"{cfg.name} cannot be placed, nothing started: {placed.problem()} (see `localfin reproduce "
            f"plan {cfg.name}` and `localfin reproduce check {cfg.name}`)"
        )
    return placed


def _run_qa_cluster(
    cfg: ReproConfig,
    out: Path,
    plan: Any,
    registry: Registry | None,
    root: Path,
    embedder: Embedder | None,
    progress: Progress,
    address: str,
    endpoints: Endpoints | None,
    shards: int | None,
    shrink: Any = None,
) -> Any:
    """The QA plan sharded over the Ray cluster at ``address``; its servers: each node's own,
    else ``endpoints`` and the config's ``base_url`` / ``judge_base_url``. ``plan``: the plan as
    it runs (``shrink`` applied); ``shrink`` is applied to each arm's plan as well."""
    from agent.qa.cluster.driver import qa_cluster
    from agent.qa.cluster.tasks import Servers

    named = endpoints or Endpoints()
    if plan.backend == "openai" and plan.base_url:
        named = named.with_named(plan.model, [plan.base_url])
    if plan.judge_base_url:
        named = named.with_named(plan.judge, [plan.judge_base_url])
    reg = registry_with(plan.model, "", registry)
    with qa_cluster(address, out, Servers(plan.model, endpoints=named, registry=reg), shards=shards) as qc:
        return run_qa(
            cfg, out, backend=None, registry=reg, data_root=root, shrink=shrink, embedder=embedder,
            progress=progress, cluster=qc,
        )  # fmt: skip


@contextlib.contextmanager
def _maybe_opened(spec: BackendSpec | None, registry: Registry) -> Iterator[Backend | None]:
    if spec is None:
        yield None
        return
    with opened(spec, registry) as b:
        yield b


def reproduce(
    cfg: ReproConfig,
    out_dir: str | Path,
    *,
    smoke: bool = False,
    backend: Backend | None = None,
    registry: Registry | None = None,
    data_root: Path | None = None,
    model: str = "smollm2-135m",
    embedder: Embedder | None = None,
    html_report: bool = True,
    progress: Progress = NULL_PROGRESS,
    inventory: Inventory | None = None,
    ray_address: str | None = None,
    endpoints: Endpoints | None = None,
    shards: int | None = None,
    base_port: int = BASE_PORT,
) -> ReproResult:
    """Run ``cfg`` (``smoke``: shrunk to CPU size with ``model``) into ``out_dir`` and write
    ``reproduction.md``/``.json`` there. ``backend`` serves every call when given (it is not
    closed here); otherwise engines are built from the config (Moira: one per backbone; QA: the
    solver and its judge) where :func:`run_placement` puts them on ``inventory`` (default: the
    visible GPUs), and closed at the end.

    ``ray_address``: run on that Ray cluster instead (docs/cluster.md): Moira's runs as Ray
    tasks (:mod:`agent.pairs.experiment.matrix_ray`), FinAcumen's stages sharded
    (:mod:`agent.qa.cluster.driver`, ``shards`` per stage, default two per node), every call to
    a ``vllm serve`` of each node (``LOCALFIN_ENDPOINTS``) or one of ``endpoints`` / the
    config's ``base_url``. The report is the one-process run's; where the shards ran goes to
    ``cluster.json`` (FinAcumen) or the matrix folder's (Moira).

    A Moira table whose placement has several stages (one per backbone) runs them one after
    another, each stage's servers started by the run from ``base_port`` and stopped before the
    next (:mod:`agent.reproduce.stage_run`; their logs in ``out_dir/servers``)."""
    if ray_address is not None and (smoke or backend is not None):
        raise ConfigError("a cluster run calls servers: give no backend and no smoke mode with ray_address")
    # on a cluster the engines are the nodes' servers: nothing is opened (or placed) here
    cluster = ray_address is not None
    placed = None if (smoke or backend is not None or cluster) else run_placement(cfg, registry, inventory)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reg = registry
    notes: list[str] = []
    reads_gold: Sequence[str] = ()
    extra: dict[str, Any] = {}
    tables: Sequence[tuple[str, Sequence[Mapping[str, Any]]]] = ()
    if cfg.kind == "moira":
        from agent.reproduce.moira.run import FALLBACK_TABLE, moira_fallback_rows, moira_rows, run_moira
        from agent.reproduce.moira.token_tables import token_tables

        document: Mapping[str, Any] | None = None
        if smoke:
            from agent.pairs.experiment.demo import synthetic_store

            document = smoke_document(cfg, synthetic_store(out), model)
        served = None
        if placed is not None and len(placed.stages()) > 1:  # stages one after another, served
            from agent.reproduce.stage_run import served_stages

            served = served_stages(
                cfg, placed, registry_with(cfg.model_keys[0], "", reg), logs=out / "servers",
                base_port=base_port, say=log.info,
            )  # fmt: skip
        outcome = run_moira(
            cfg, out, document=document, backend=backend, registry=reg, progress=progress, placement=placed,
            ray_address=ray_address, endpoints=endpoints, backend_factory=served,
        )  # fmt: skip
        rows = moira_rows(outcome)
        notes += list(outcome.notes)
        tables = [(FALLBACK_TABLE, moira_fallback_rows(outcome)), *token_tables(outcome.cells)]
        if html_report:
            res = build_report(outcome.matrix_dir, out / "report", progress=progress)
            notes.append(f"HTML report of every run: {res.html}")
    else:
        assert cfg.qa is not None
        plan = cfg.qa
        root = data_root or env.data_dir()
        shrink = None
        if smoke:
            demo = build_demo_set(out / "qa_set", seed=0, n_train=4, n_test=4)

            def shrink(p: Any) -> Any:
                store = _smoke_store(out) if "lookup" in p.tools else None
                return shrink_plan(p, demo, model=model, n_items=SMOKE_QA_ITEMS, max_steps=2, store=store)

            plan = shrink(plan)
        if ray_address is not None:
            where = (ray_address, endpoints, shards)
            qo = _run_qa_cluster(cfg, out, plan, reg, root, embedder, progress, *where, shrink=shrink)
        else:
            reg, spec, judge_spec = judge_engine(plan, reg, own=backend is None, placed=placed)
            with opened(spec, reg, backend=backend) as be, _maybe_opened(judge_spec, reg) as jb:
                qo = run_qa(
                    cfg,
                    out,
                    backend=be,
                    registry=reg,
                    data_root=root,
                    shrink=shrink,
                    embedder=embedder,
                    judge_backend=jb,
                    progress=progress,
                )
        rows = list(qo.rows)
        notes += list(qo.notes)
        tables = qo.tables
        reads_gold = qo.reads_gold
        if qo.details:
            extra["qa_details"] = qo.details

    mode = "smoke" if smoke else "full"
    md = write_report(
        cfg, out, rows, mode=mode, notes=notes, extra=extra, tables=tables, reads_gold=reads_gold
    )
    if cfg.kind == "qa" and html_report:  # the page reads reproduction.json, written just now
        res = build_report(out, out / "report", progress=progress)
        notes.append(f"HTML report: {res.html}")
    return ReproResult(md, tuple(rows), tuple(notes))
