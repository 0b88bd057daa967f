"""The driver of a FinAcumen cluster run: each stage sharded, gathered into the one-process folder.

:class:`QACluster` has the signatures of :func:`agent.qa.evaluation.evaluate.evaluate`,
:func:`agent.qa.evaluation.bank_build.build_bank`, :func:`agent.qa.scoring.judge_pass.judge_run`,
:func:`agent.qa.scoring.judge_check.judge_check` and :func:`agent.qa.scoring.extract_pass.extract_run` (their
``backend`` argument is not used: the shards call their servers), so
:func:`agent.reproduce.qa.arms.run_qa` and ``localfin qa`` compose the
same way on one process or a cluster. Each call is one stage:

1. **Shard.** The stage's items (a bank build: those not in the bank yet; a judge pass or
   check, an extraction pass: its requests) are dealt round-robin to ``n`` shards (item ``i`` to shard ``i mod
   n``; ``n``: ``shards`` when given, else two per node with a free CPU, at most one per item),
   each a Ray task with its own journal (:mod:`agent.qa.cluster.tasks`,
   :mod:`serving.cluster.shards`), kept by the keeper in
   ``<base>/.ray-tasks/<run folder>/<stage>-s<k>/journal.sqlite``.
2. **Merge.** The shards' journals are merged into the run folder's journal, their per-call
   engine shares into its ``timings.json`` (with the stage's wall time as one attempt), and
   their image transcriptions into its cache.
3. **Write.** The one-process function runs on all the stage's items with a backend that
   refuses every call (:class:`serving.cluster.gather.JournalOnly`): trace, scores, manifest,
   bank entries and verdicts are written by the same code from the same answers, so the folder
   is the one-process folder (same journal keys, same scores). A bank build's waves keep their
   order and meaning this way: the shards only make the calls (in waves of ``items_per_wave``
   among their own items, the memory bound), and the driver adds the entries wave by wave in
   the one-process order. A sweep's snapshots are stages of their own, evaluated against the
   same bank snapshot on every shard. The scores count the model calls as one process does:
   the calls the models answered for this run (the rows the merge added to the journal, a
   lost attempt's journaled calls included) and the requests replayed from calls journaled
   before it.

Where shards ran, with their attempts, goes to ``cluster.json`` (:meth:`QACluster.record`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.qa.cluster.tasks import TRANSCRIPTIONS, BankShard, BatchShard, EvalShard, MemoryCopy, Servers
from agent.qa.core import runs
from agent.qa.core.items import QAItem
from agent.qa.evaluation.bank_build import (
    BankBuildConfig,
    BankBuildReport,
    Scorer,
    build_bank,
    check_training,
)
from agent.qa.evaluation.evaluate import EvalConfig, EvalSummary, Transcriber, evaluate
from agent.qa.memory.memory import ExperienceMemory
from agent.qa.scoring.extract_pass import (
    EXTRACT_JOURNAL,
    EXTRACT_SCORES,
    ExtractSummary,
    extract_run,
    run_extract_requests,
)
from agent.qa.scoring.judge import CANDIDATE_CHARS, JUDGE_PROMPT, judge_requests
from agent.qa.scoring.judge_check import (
    JUDGE_CHECK_FILE,
    JUDGE_CHECK_JOURNAL,
    JudgeCheck,
    check_requests,
    judge_check,
)
from agent.qa.scoring.judge_pass import JUDGE_JOURNAL, JUDGE_SCORES, JudgeSummary, judge_run, run_answers
from agent.qa.scoring.scorer_check import check_scorers
from agent.qa.scoring.scorers import spec_of
from agent.qa.scoring.scoring import JUDGED
from agent.qa.solver.react import QASolver, ToolFactory
from agent.qa.solver.toolset import Tools
from bank.embedder import Embedder
from bank.store import ExperienceBank
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.cluster.connect import joined
from serving.cluster.gather import JournalOnly, merge_journal
from serving.cluster.keeper import JOURNAL
from serving.cluster.shards import RayRunner, Shard, ShardOutcome, ShardRunner

__all__ = ["TASKS_DIR", "SHARDS_PER_NODE", "QACluster", "qa_cluster"]

log = logging.getLogger(__name__)

TASKS_DIR = ".ray-tasks"
#: shards per node with a free CPU when the run gives no count
SHARDS_PER_NODE = 2


def _deal(seq: Sequence[Any], n: int) -> list[list[Any]]:
    """Element ``i`` to part ``i mod n``."""
    return [list(seq[k::n]) for k in range(n)]


class QACluster:
    """Sharded stages over ``runner`` (module doc); keeper keys are relative to ``base`` (the
    command's output folder); ``servers``: the solver model's servers and client settings."""

    def __init__(
        self,
        runner: ShardRunner,
        base: Path,
        servers: Servers,
        *,
        shards: int | None = None,
        address: str = "",
    ) -> None:
        if shards is not None and shards < 1:
            raise ConfigError(f"--shards {shards}; allowed: a whole number >= 1")
        self.runner, self.base, self.servers = runner, Path(base), servers
        self.shards, self.address = shards, address
        self.stages: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ the machinery
    def _count(self, work: int) -> int:
        if self.shards is not None:
            n = self.shards
        else:
            nodes = getattr(self.runner, "nodes", None)
            n = SHARDS_PER_NODE * (len(nodes()) if callable(nodes) else 1)
        return max(1, min(n, work))

    def _key(self, run_dir: Path, stage: str, k: int) -> str:
        try:
            rel = run_dir.resolve().relative_to(self.base.resolve()).parts
        except ValueError:
            rel = ()
        return "/".join([*rel] or [run_dir.name]) + f"/{stage}-s{k}"

    def _kept(self, key: str) -> Path:
        return Path(self.runner.root) / key / JOURNAL

    def _run(
        self, stage: str, run_dir: Path, bodies: Sequence[Any], journal: Path, progress: Progress
    ) -> tuple[list[ShardOutcome], float, int]:
        """Seed, run and merge the shards of one stage; returns their outcomes, its wall time and
        the calls the merge added to the run's journal (what the models answered for this run,
        over every attempt of every shard: a lost attempt's journaled calls included)."""
        shards = [Shard(self._key(run_dir, stage, k), k, b) for k, b in enumerate(bodies)]
        if journal.is_file():  # calls an earlier attempt journaled here are not asked again
            for s in shards:
                merge_journal(self._kept(s.key), journal)
        t0 = time.perf_counter()
        outs = self.runner.run(shards, f"{stage} {run_dir.name}", progress) if shards else []
        wall = round(time.perf_counter() - t0, 3)
        added = 0
        for s in shards:
            if self._kept(s.key).is_file():
                added += merge_journal(journal, self._kept(s.key), run_id=self._run_id(stage, run_dir))
        self.stages.append(
            {
                "stage": stage,
                "run": str(run_dir),
                "shards": [
                    {"key": o.key, "node": o.node, "attempts": o.attempts, "wall_s": o.wall_s}
                    | {k: o.value[k] for k in ("calls", "replayed") if k in o.value}
                    for o in outs
                ],
                "wall_s": wall,
                "calls": added,
            }
        )
        return outs, wall, added

    @staticmethod
    def _run_id(stage: str, run_dir: Path) -> str:
        """The label the one-process journal gives its rows."""
        labels = {"judge": "-judge", "judge_check": "-judge-check", "extract": "-extract"}
        return run_dir.name + labels.get(stage, "")

    def _backend(self, what: str, shards: int) -> JournalOnly:
        return JournalOnly(what, self.servers.settings(self.address, shards))

    @staticmethod
    def _counts(added: int, replayed_in_gather: int) -> tuple[int, int]:
        """(model calls, replayed) of a stage as one process counts them: the calls the models
        answered for this run, and the requests its journal already held before."""
        return added, max(0, replayed_in_gather - added)

    def record(self) -> dict[str, Any]:
        """Every stage's shards (node, attempts, calls) and where each shard ran."""
        return {
            "address": self.address,
            "placement_rule": "shard i of a stage asked for on node i mod n of the nodes with a free CPU "
            "(ordered by address, then id); soft: a lost node's shards go to any other",
            "stages": self.stages,
            "placement": self.runner.placement(),
        }

    # ------------------------------------------------------------------ the stages
    def evaluate(
        self,
        items: Sequence[QAItem],
        backend: Backend | None,
        run_dir: str | Path,
        config: EvalConfig,
        *,
        tools: ToolFactory | None = None,
        memory: ExperienceMemory | None = None,
        scorer: Scorer | None = None,
        transcriber: Transcriber | None = None,
        data_files: Sequence[str | Path] = (),
        progress: Progress = NULL_PROGRESS,
    ) -> EvalSummary:
        """:func:`agent.qa.evaluation.evaluate.evaluate`, sharded (module doc)."""
        run = Path(run_dir)
        run.mkdir(parents=True, exist_ok=True)
        n = self._count(len(items))
        mem = MemoryCopy.of(memory, [it.question for it in items]) if memory is not None else None
        toolset = _toolset(tools)
        bodies = [
            EvalShard(tuple(part), run.name, config, self.servers.only(config.solver.model), toolset, mem,
                      transcriber is not None)
            for part in _deal(items, n) if part
        ]  # fmt: skip
        outs, wall, added = self._run("eval", run, bodies, run / runs.JOURNAL, progress)
        _merge_timings(run, outs, wall, added)
        _merge_transcriptions(run, outs)
        s = evaluate(
            items,
            self._backend(f"evaluation {run}", len(bodies)),
            run,
            config,
            tools=tools,
            memory=memory,
            scorer=scorer,
            transcriber=transcriber,
            data_files=data_files,
            progress=progress,
        )
        calls, replayed = self._counts(added, s.replayed)
        s = replace(s, model_calls=calls, replayed=replayed)
        runs.write_json(run / runs.SCORES, s)
        return s

    def build_bank(
        self,
        items: Sequence[QAItem],
        solver: QASolver,
        backend: Backend | None,
        bank: ExperienceBank,
        embedder: Embedder,
        run_dir: str | Path,
        *,
        config: BankBuildConfig | None = None,
        scorer: Scorer | None = None,
        judge_model: str | None = None,
        data_files: Sequence[str | Path] = (),
        transcriber: Callable[[str], str] | None = None,
        progress: Progress = NULL_PROGRESS,
        extract_model: str | None = None,
    ) -> BankBuildReport:
        """:func:`agent.qa.evaluation.bank_build.build_bank`, sharded (module doc)."""
        cfg = config or BankBuildConfig()
        check_training(items)
        labels = check_scorers(items, scorer, judge_model, extract_model)  # before any model call
        run = Path(run_dir)
        run.mkdir(parents=True, exist_ok=True)
        have = set(bank.sources)
        todo = [it for it in items if it.item_id not in have]
        specs = [spec_of(scorer, it.question.dataset) for it in todo]
        judged = any(
            sp.judge_prompt if sp is not None else it.question.dataset in JUDGED
            for sp, it in zip(specs, todo)
        )
        extracted = any(sp is not None and sp.extract for sp in specs)
        servers = self.servers.only(solver.config.model).with_models(
            judge_model if judged else None, extract_model if extracted else None
        )
        n = self._count(len(todo))
        bodies = [
            BankShard(tuple(part), run.name, solver.config, cfg, tuple(sorted(labels.items())), servers,
                      _toolset(solver.tools), judge_model, scorer, transcriber is not None, extract_model)
            for part in _deal(todo, n) if part
        ]  # fmt: skip
        outs, wall, added = self._run("bank", run, bodies, run / runs.JOURNAL, progress)
        seen = {p: t for o in outs for p, t in o.value["transcriptions"].items()}
        rep = build_bank(
            items,
            solver,
            self._backend(f"bank build {run}", len(bodies)),
            bank,
            embedder,
            run,
            config=cfg,
            scorer=scorer,
            judge_model=judge_model,
            data_files=data_files,
            transcriber=_Cached(seen, transcriber) if transcriber is not None else None,
            progress=progress,
            extract_model=extract_model,
        )
        calls, replayed = self._counts(added, rep.replayed)
        rep = replace(rep, model_calls=calls, replayed=replayed, wall_s=rep.wall_s + wall)
        runs.write_json(run / runs.SCORES, rep)
        return rep

    def judge_run(
        self,
        run_dir: str | Path,
        items: Sequence[QAItem],
        backend: Backend | None,
        judge_model: str,
        *,
        chunk_size: int = 256,
        max_tokens: int | None = None,
        prompt_name: str = JUDGE_PROMPT,
        candidate_chars: int = CANDIDATE_CHARS,
    ) -> JudgeSummary:
        """:func:`agent.qa.scoring.judge_pass.judge_run`, its requests sharded."""
        run = Path(run_dir)
        answers = run_answers(run, items)
        requests = judge_requests(
            items, answers, judge_model, max_tokens=max_tokens, prompt_name=prompt_name,
            candidate_chars=candidate_chars,
        )  # fmt: skip
        outs, added = self._batch("judge", run, requests, JUDGE_JOURNAL, judge_model, chunk_size)
        js = judge_run(run, items, self._backend(f"judge pass {run}", len(outs)), judge_model,
                       chunk_size=chunk_size, max_tokens=max_tokens, prompt_name=prompt_name,
                       candidate_chars=candidate_chars)  # fmt: skip
        return self._restate(js, added, run / JUDGE_SCORES)

    def judge_check(
        self,
        items: Sequence[QAItem],
        backend: Backend | None,
        judge_model: str,
        out_dir: str | Path,
        *,
        chunk_size: int = 256,
        max_tokens: int | None = None,
        prompt_name: str = JUDGE_PROMPT,
    ) -> JudgeCheck:
        """:func:`agent.qa.scoring.judge_check.judge_check`, its requests sharded."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        _, _, requests = check_requests(items, judge_model, max_tokens=max_tokens, prompt_name=prompt_name)
        outs, added = self._batch("judge_check", out, requests, JUDGE_CHECK_JOURNAL, judge_model, chunk_size)
        jc = judge_check(items, self._backend(f"judge check {out}", len(outs)), judge_model, out,
                         chunk_size=chunk_size, max_tokens=max_tokens, prompt_name=prompt_name)  # fmt: skip
        return self._restate(jc, added, out / JUDGE_CHECK_FILE)

    def extract_run(
        self,
        run_dir: str | Path,
        items: Sequence[QAItem],
        backend: Backend | None,
        extract_model: str,
        *,
        chunk_size: int = 256,
    ) -> ExtractSummary:
        """:func:`agent.qa.scoring.extract_pass.extract_run`, its requests sharded."""
        run = Path(run_dir)
        requests = run_extract_requests(run, items, extract_model)
        outs, added = self._batch("extract", run, requests, EXTRACT_JOURNAL, extract_model, chunk_size)
        xs = extract_run(run, items, self._backend(f"extraction pass {run}", len(outs)), extract_model,
                         chunk_size=chunk_size)  # fmt: skip
        return self._restate(xs, added, run / EXTRACT_SCORES)

    def _restate(self, summary: Any, added: int, path: Path) -> Any:
        """``summary`` (and its file ``path``) with the pass's model calls counted as the shards
        made them, not as the one-process pass that replayed their journal."""
        calls, replayed = self._counts(added, summary.replayed)
        doc = runs.read_json(path)
        runs.write_json(path, {**doc, "model_calls": calls, "replayed": replayed})
        return replace(summary, model_calls=calls, replayed=replayed)

    def _batch(
        self, stage: str, run: Path, requests: Sequence[Any], journal: str, model: str, chunk_size: int
    ) -> tuple[list[ShardOutcome], int]:
        n = self._count(len(requests))
        servers = self.servers.only(model)
        bodies = [BatchShard(tuple(p), journal, servers, chunk_size) for p in _deal(requests, n) if p]
        outs, _, added = self._run(stage, run, bodies, run / journal, NULL_PROGRESS)
        return outs, added


def _toolset(tools: Any) -> Any:
    """What a shard builds its tools from: the config of localfin's tools
    (:class:`agent.qa.solver.toolset.Tools`), or another factory as it is."""
    return tools.config if isinstance(tools, Tools) else tools


class _Cached:
    """The shards' transcriptions first; an image none of them read goes to ``inner``."""

    def __init__(self, seen: dict[str, str], inner: Callable[[str], str]) -> None:
        self.seen, self.inner = seen, inner

    def __call__(self, path: str) -> str:
        return self.seen[path] if path in self.seen else self.inner(path)


def _merge_timings(run: Path, outs: Sequence[ShardOutcome], wall: float, calls: int) -> None:
    """The shards' engine shares into ``timings.json`` (an earlier attempt's kept) and the
    stage as one attempt (its wall time from submission to the last shard, the calls the
    models answered for it)."""
    path = run / "timings.json"
    data: dict[str, Any] = runs.read_json(path) if path.exists() else {"shares": {}, "attempts": []}
    for o in outs:
        for key, v in o.value["shares"].items():
            data["shares"].setdefault(key, v)
    data["attempts"].append({"wall_s": wall, "model_calls": calls, "failed": False, "shards": len(outs)})
    runs.write_json(path, data)


def _merge_transcriptions(run: Path, outs: Sequence[ShardOutcome]) -> None:
    path = run / TRANSCRIPTIONS
    rows = {r["path"]: r["text"] for r in runs.read_jsonl(path)} if path.exists() else {}
    new = False
    for o in outs:
        for r in o.value["transcriptions"]:
            if r["path"] not in rows:
                rows[r["path"]] = r["text"]
                new = True
    if new:
        runs.write_jsonl(path, ({"path": p, "text": t} for p, t in rows.items()))


@contextlib.contextmanager
def qa_cluster(
    address: str, base: Path, servers: Servers, *, shards: int | None = None
) -> Iterator[QACluster]:
    """Join the cluster at ``address`` and yield a :class:`QACluster` writing its keeper's
    journals under ``base/.ray-tasks``; ``base/cluster.json`` records the stages at the end."""
    with joined(address) as cluster:
        runner = RayRunner(cluster, Path(base) / TASKS_DIR)
        qc = QACluster(runner, Path(base), servers, shards=shards, address=address)
        try:
            yield qc
        finally:
            try:
                record = qc.record() | {
                    "nodes": [n.__dict__ | {"resources": dict(n.resources)} for n in cluster.nodes],
                    "driver_node": cluster.driver_node,
                }
                runs.write_json(Path(base) / "cluster.json", record)
            finally:
                runner.close()
