"""A Moira experiment: every seed x exposure x variant run in lockstep on one journaled backend.

The experiment folder holds ``config.toml`` (the file the experiment was started with, its paths
made absolute so that it names the same store from the folder),
``journal.sqlite`` (every model call; one per experiment), ``runs/<run_id>/`` (see
:mod:`agent.pairs.experiment.backtest`), ``summary.json`` + ``summary.md`` (metrics of every run and the
token table) and ``manifest.json``. Each run is a lockstep program (:mod:`serving.chat.lockstep`):
each round, the pending calls of all runs go to the engine as one batch, which the
:class:`JournaledBackend` (chunk size >= the largest round) sends as one engine call and
records in one transaction. Runs whose training is the same (the two exposures of a seed under
``pairing = "paired"``, and A4's full and no-reselection variants) share one training phase and
start their test windows from the identical policy, and A3's two conditions share one warmup
(:func:`agent.pairs.experiment.backtest.moira_group_program`);
identical requests of different runs are answered once. Resuming is rerunning: journaled calls
replay, so a killed experiment continues to the identical result and the model only sees the
calls it never answered.

The ``[baselines]`` of the config run in the same folder (:mod:`agent.pairs.experiment.baselines`):
the non-LLM ones before the lockstep rounds, FinMem's runs as lockstep programs inside them,
next to the agent's runs on the same journal. ``summary.json`` lists them under ``baselines``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.data.store import MarketStore
from agent.pairs.experiment import baselines as eb
from agent.pairs.experiment.backtest import (
    RunSpec,
    moira_group_program,
    training_groups,
    training_rounds,
    write_run,
)
from agent.pairs.experiment.config import ExperimentConfig, config_to_dict
from agent.pairs.experiment.folder_config import folder_copy, same_path
from agent.pairs.experiment.manifest import build_manifest, run_prompts, sampling_by_call_type
from agent.pairs.experiment.preflight import check_data
from agent.pairs.experiment.summary import ExperimentResult, write_summary
from agent.pairs.market.anonymize import Aliases
from agent.pairs.market.execution import FRICTIONS
from agent.pairs.market.folders import write_tables
from agent.pairs.market.records import read_json, write_json
from agent.pairs.market.view import MarketView
from bank.embedder import Embedder
from localfin import runlock
from localfin.errors import ConfigError, DamagedFileError
from localfin.files import write_text
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.chat.lockstep import RoundInfo, run_lockstep, run_sequential
from serving.chat.routing import ModelRouter
from serving.journal import Journal, JournaledBackend
from serving.open import ModelFacts, backend_settings

__all__ = ["ExperimentResult", "run_experiment"]

log = logging.getLogger(__name__)


def _prepare_folder(out: Path, config_text: str, copy_text: str, resume: bool) -> None:
    """Create the folder and write ``copy_text`` (the config with its paths made absolute:
    :mod:`agent.pairs.experiment.folder_config`) as its ``config.toml``."""
    journal = out / "journal.sqlite"
    copy = out / "config.toml"
    if journal.exists() and not resume:
        raise ConfigError(
            f"experiment folder {out} already holds a journal; pass --resume to continue it (journaled "
            "calls replay) or choose another folder"
        )
    # a folder written before copies stated their paths holds the text as given
    if resume and copy.exists() and copy.read_text(encoding="utf-8") not in (copy_text, config_text):
        raise ConfigError(
            f"--resume: {copy} differs from the config given now; a resumed experiment must use the same "
            "config (start a new folder instead)"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    write_text(copy, copy_text)


#: The keys of a recorded config whose values are paths (compared by meaning, not spelling).
_PATH_KEYS = {"config.store", "config.prompt.dir", "config.baselines.finmem.prompt_dir"}


def _differences(mine: Any, theirs: Any, where: str = "config") -> list[str]:
    """Keys whose values differ between two config documents (keys only one has are skipped:
    a folder written by another version of localfin records fewer or more fields); paths are
    compared by meaning (:func:`agent.pairs.experiment.folder_config.same_path`)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        keys = sorted(set(mine) & set(theirs))
        return [d for k in keys for d in _differences(mine[k], theirs[k], f"{where}.{k}")]
    if mine == theirs or (where in _PATH_KEYS and same_path(mine, theirs)):
        return []
    return [f"{where}: {json.dumps(theirs)[:60]} there, {json.dumps(mine)[:60]} here"]


def check_manifest(out: Path, cfg: ExperimentConfig) -> None:
    """Raise DamagedFileError when ``out/manifest.json`` is torn or records another config than
    ``cfg`` (a manifest copied from another experiment would vouch for runs it did not make)."""
    path = out / "manifest.json"
    if not path.exists():
        return
    doc = read_json(path)  # a torn file: DamagedFileError naming it
    recorded = doc.get("config") if isinstance(doc, dict) else None
    mine = json.loads(json.dumps(config_to_dict(cfg), default=str))
    diff = _differences(mine, recorded) if isinstance(recorded, dict) else ["config: missing"]
    if diff:
        raise DamagedFileError(
            f"{path} records another configuration than {out / 'config.toml'} ({'; '.join(diff[:3])}): it "
            "was not written by this experiment; move it away, then rerun with --resume (journaled calls "
            "replay and the manifest is written again)"
        )


class _Tally:
    """Live counts for the progress display."""

    def __init__(self, progress: Progress, total_sessions: int, n_runs: int) -> None:
        self.progress = progress
        self.total_sessions = total_sessions
        self.n_runs = n_runs
        self.sessions = 0
        self.calls = 0
        self.tokens = 0
        self.rounds = 0
        self.task: Any = None

    def info(self) -> str:
        return f"{self.rounds} rounds, {self.calls} calls, {self.tokens} tokens"

    def on_session(self) -> None:
        self.sessions += 1
        if self.task is not None:
            self.task.update(completed=self.sessions, info=self.info())


def _counting_runs(program: Any, runs: int, finished: list[int]) -> Any:
    """``program`` (a lockstep generator) that adds ``runs`` to ``finished[0]`` when it ends."""
    value = yield from program
    finished[0] += runs
    return value


class _Counting:
    """Passes calls through and counts results and tokens for the progress display."""

    def __init__(self, inner: Backend, tally: _Tally) -> None:
        self.inner, self.tally, self.name = inner, tally, inner.name

    def chat(self, requests: Any) -> Any:
        results = self.inner.chat(requests)
        self.tally.calls += len(results)
        self.tally.tokens += sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in results)
        return results

    def close(self) -> None:
        return None


def _check_opens(cfg: ExperimentConfig, view: MarketView) -> None:
    """``execution = "next_open"`` fills at opens: refuse a store without them before any call."""
    if cfg.execution != "next_open":
        return
    w = cfg.windows
    sessions = view.sessions(w.train_start, w.train_end) + view.sessions(w.test_start, w.test_end)
    lacking = view.missing_opens(sessions)
    if lacking:
        shown = ", ".join(f"{t} {d}" for t, d in lacking[:5]) + (", ..." if len(lacking) > 5 else "")
        raise ConfigError(
            f"experiment.execution='next_open' needs open prices, and the store {cfg.store} has "
            f"{len(lacking)} session(s) of the pool with a close but no open ({shown}); "
            "re-import prices with their open column, or use execution = 'close'"
        )


@runlock.locking("out_dir")
def run_experiment(
    cfg: ExperimentConfig,
    out_dir: str | Path,
    *,
    config_text: str,
    backend: Backend,
    model: ModelFacts | None = None,
    sequential: bool = False,
    resume: bool = False,
    progress: Progress = NULL_PROGRESS,
    on_round: Callable[[RoundInfo], None] | None = None,
    embedder: Embedder | None = None,
    finmem_backend: Backend | None = None,
) -> ExperimentResult:
    """Run every run of ``cfg`` and write the experiment folder ``out_dir``.

    Args:
        config_text: the TOML text of ``cfg`` (copied into the folder with its paths made
            absolute, :func:`agent.pairs.experiment.folder_config.folder_copy`; a resume must
            match it).
        backend: the model backend serving ``[model].backbone`` (opened and closed by the
            caller: :func:`serving.open.open_backend` of ``cfg.model.backend_spec()``); it is
            always wrapped in a JournaledBackend on the folder's journal.
        model: the backbone's facts for the manifest (weights revision and digests; None:
            recorded as unknown).
        sequential: run the runs one after another (the reference of the lockstep speed-up)
            instead of in lockstep. Results are identical; only the batching differs.
        resume: continue an existing folder (replaying its journal; complete non-LLM baseline
            runs are not redone).
        embedder: FinMem's memory embedder (default: the bank's MiniLM; tests pass a hashing one).
        finmem_backend: the backend serving FinMem's fixed model (``[baselines.finmem] model``
            other than the backbone; opened and closed by the caller); requests are routed by
            model key (:class:`serving.chat.routing.ModelRouter`), one journal for both.

    Faults (docs/faults.md): the folder's write lock is held throughout (a second writer gets
    FolderInUseError); on resume a torn journal or a manifest of another config is a
    DamagedFileError before any work; the backend's own faults stop the run at a call boundary
    with every answered call journaled.
    """

    out = Path(out_dir)
    check_data(cfg)  # the store, its pool, windows inside its data: before the folder is made
    _prepare_folder(out, config_text, folder_copy(config_text, cfg), resume)
    check_manifest(out, cfg)
    if resume and (out / "journal.sqlite").is_file():
        Journal(out / "journal.sqlite", verify=True).close()  # a torn journal stops here, before any work
    with MarketStore(cfg.store, create=False) as store:
        view = MarketView(store, cfg.pool, cfg.screen, end=cfg.windows.test_end)
        _check_opens(cfg, view)
        digest = store.digest()
        rule_ids, rule_skipped = eb.run_rule_baselines(
            store, cfg, view.pool, out, resume=resume, progress=progress
        )
        fm = eb.finmem_programs(store, cfg, view.pool, embedder)
    specs = [RunSpec(rid, v, e, s) for rid, v, e, s in cfg.run_ids()]
    groups = training_groups(specs, cfg.pairing)
    n_train = len(view.sessions(cfg.windows.train_start, cfg.windows.train_end))
    n_test = len(view.sessions(cfg.windows.test_start, cfg.windows.test_end))
    per_group = [training_rounds(g, cfg.pairing) * n_train + n_test * len(g) for g in groups]
    tally = _Tally(progress, sum(per_group), len(specs))

    inner: Backend = backend
    fm_model = cfg.baselines.finmem.model
    if fm and fm_model != cfg.model.backbone:
        if finmem_backend is None:
            raise ConfigError(
                f"baselines.finmem.model={fm_model!r} differs from model.backbone="
                f"{cfg.model.backbone!r}: pass a backend serving it (localfin pairs run opens one)"
            )
        inner = ModelRouter({cfg.model.backbone: backend, fm_model: finmem_backend})
    journal = Journal(out / "journal.sqlite", run_id=cfg.name)
    jb = JournaledBackend(inner, journal, chunk_size=cfg.model.chunk_size)
    counted = _Counting(jb, tally)
    rounds = 0
    try:
        with (
            # one count throughout: the agent's runs and FinMem's (a training group's program
            # finishes all of its runs at once)
            progress.task("runs", total=len(specs) + len(fm)) as runs_task,
            progress.task("sessions", total=tally.total_sessions) as sess_task,
        ):
            tally.task = sess_task
            finished = [0]

            def round_hook(info: RoundInfo) -> None:
                nonlocal rounds
                rounds += 1
                tally.rounds = rounds
                runs_task.update(completed=finished[0])
                sess_task.update(info=tally.info())
                if on_round is not None:
                    on_round(info)

            programs = [
                _counting_runs(
                    moira_group_program(g, cfg, view, on_session=tally.on_session), len(g), finished
                )
                for g in groups
            ]
            programs += [_counting_runs(p, 1, finished) for _, p in fm]
            t0 = time.perf_counter()
            if sequential:
                outcomes = []
                for p in programs:
                    outcomes += run_sequential([p], counted, on_round=round_hook)
            else:
                outcomes = run_lockstep(programs, counted, on_round=round_hook)
            wall = time.perf_counter() - t0
            sess_task.update(completed=tally.total_sessions, info=tally.info())
            runs_task.update(completed=finished[0])
        tokens = journal.token_summary()
        sampling = sampling_by_call_type(journal.records(), jb)
    finally:
        journal.close()
        engine_start = getattr(inner, "engine_start_s", None)
    fm_outcomes = outcomes[len(groups) :]
    by_id = {o.spec.run_id: o for group in outcomes[: len(groups)] for o in group}
    outcomes = [by_id[s.run_id] for s in specs]
    summaries = []
    for o in outcomes:
        summaries.append(write_run(out / "runs" / o.spec.run_id, o))
    fm_ids = eb.write_finmem_outcomes(out, fm_outcomes)
    baseline_ids = rule_ids + fm_ids
    result = ExperimentResult(
        out,
        "sequential" if sequential else "lockstep",
        summaries,
        wall,
        rounds,
        jb.called,
        jb.replayed,
        engine_start,
        outcomes,
        eb.baseline_docs(out, baseline_ids),
        repeated=jb.repeated,
    )
    write_summary(out, cfg, result, tokens)
    manifest = build_manifest(
        config=config_to_dict(cfg),
        store_digest=digest,
        model_key=cfg.model.backbone,
        weights_revision=model.weights_revision if model is not None else "unknown",
        weights_sha256=dict(model.weights_sha256) if model is not None else {},
        journal_path=out / "journal.sqlite",
        seeds=list(cfg.seeds),
        prompt_dir=cfg.prompt.dir,
        prompts=run_prompts("finmem" in cfg.baselines.methods),
        extra={
            "mode": result.mode,
            "runs": [s.run_id for s in specs],
            "baseline_runs": baseline_ids,
            "baseline_runs_reused_on_resume": rule_skipped,
            "wall_s": round(wall, 3),
            "engine_start_s": engine_start,
            "lockstep_rounds": rounds,
            "model_calls": jb.called,
            "replayed_from_journal": jb.replayed,
            "repeated_requests": jb.repeated,
            "sampling": sampling,
            "backend": backend_settings(backend),
            "execution": cfg.execution_settings().to_dict() | {"label": cfg.execution_settings().label()},
            "frictions_row": FRICTIONS.to_dict() | {"label": FRICTIONS.label()},
            # memorization control: the aliases every prompt used (None: real names)
            "aliases": Aliases.for_pool(view.pool, view.companies).to_dict() if cfg.anonymize else None,
        },
    )
    write_json(out / "manifest.json", manifest)
    tables = write_tables(out)  # equity_curve, trades, llm_usage per run; runs.csv
    for rel, why in tables.skipped:
        log.warning("no tables for run %s: %s", rel, why)
    return result
