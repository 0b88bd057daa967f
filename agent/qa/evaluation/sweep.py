"""One variant of an evaluation, whole: the bank-size x k_max sweep of Base+FT+FM and the judge
pass of judged benchmarks, so that ``localfin qa eval`` and ``localfin reproduce`` only compose.

:func:`sweep_memory` runs Base+FT+FM once per (bank-size snapshot, k_max), one run folder each
(``<root>/<prefix>n<size|all>-k<k>``). :func:`evaluate_variant` evaluates one variant: ``base``
and ``ft`` once into ``root``; ``ft_fm`` into ``root`` when the grid has one point and through
:func:`sweep_memory` otherwise; then, for a judged benchmark (FinTMMBench) and a judge model, the
judge pass of every run (:func:`agent.qa.scoring.judge_pass.judge_run`, its own journal in the run folder;
the judge reads the gold, the solver never does), with the judge prompt of the chosen scorer
(:mod:`agent.qa.scoring.scorers`); under FinMMR's ``official`` scorer, the extraction pass
(:func:`agent.qa.scoring.extract_pass.extract_run`) instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.qa.core.items import QAItem
from agent.qa.evaluation.evaluate import EvalConfig, EvalSummary, evaluate
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.scoring.extract_pass import ExtractSummary, extract_run
from agent.qa.scoring.judge_pass import JudgeSummary, judge_run
from agent.qa.scoring.scorers import spec_of
from bank.retrieval import Retriever
from localfin.errors import ConfigError
from serving.backend import Backend

__all__ = ["MemoryGrid", "VariantResult", "sweep_memory", "evaluate_variant"]


@dataclass(frozen=True)
class MemoryGrid:
    """The experience memory of Base+FT+FM over a grid: bank-size snapshots (None: the whole
    bank) x retrieval depths, at one cosine threshold ``tau``; ``config``: the memory's other
    settings (block, annotator, bounds; its tau, k_max and bank_limit are the grid's)."""

    retriever: Retriever
    tau: float = 0.65
    bank_sizes: tuple[int | None, ...] = (None,)
    k_maxes: tuple[int, ...] = (5,)
    config: MemoryConfig = field(default_factory=MemoryConfig)
    #: the authors' checkout, for their memory block (``config.block = "authors"``)
    authors: Any = None

    def memory(self, bank_limit: int | None, k_max: int) -> ExperienceMemory:
        cfg = replace(self.config, tau=self.tau, k_max=k_max, bank_limit=bank_limit)
        return ExperienceMemory(self.retriever, cfg, authors=self.authors)


@dataclass(frozen=True)
class VariantResult:
    """The evaluations of one variant (one per grid point) and their judge passes (judged
    benchmarks only; same order)."""

    summaries: tuple[EvalSummary, ...]
    judged: tuple[JudgeSummary, ...] = ()
    extracted: tuple[ExtractSummary, ...] = ()  # FinMMR's official scorer: its extraction passes


def sweep_memory(
    items: Sequence[QAItem],
    backend: Backend,
    root: str | Path,
    config: EvalConfig,
    make_memory: Callable[[int | None, int], ExperienceMemory],
    *,
    bank_sizes: Sequence[int | None] = (None,),
    k_maxes: Sequence[int] = (5,),
    prefix: str = "ft_fm-",
    evaluator: Callable[..., EvalSummary] = evaluate,
    **kwargs: Any,
) -> list[EvalSummary]:
    """Base+FT+FM over bank-size snapshots and k_max values, one run folder each
    (``root/<prefix>n<size>-k<k>``, ``nall`` for the whole bank); ``make_memory(bank_limit,
    k_max)`` builds the memory; ``kwargs`` go to ``evaluator`` (:func:`agent.qa.evaluation.evaluate.evaluate`,
    or a cluster's, :meth:`agent.qa.cluster.driver.QACluster.evaluate`)."""
    if config.variant != "ft_fm":
        raise ConfigError("sweep_memory evaluates variant ft_fm")
    out = []
    for size in bank_sizes:
        for k in k_maxes:
            name = f"{prefix}n{'all' if size is None else size}-k{k}"
            out.append(
                evaluator(items, backend, Path(root) / name, config, memory=make_memory(size, k), **kwargs)
            )
    return out


def evaluate_variant(
    items: Sequence[QAItem],
    backend: Backend,
    root: str | Path,
    config: EvalConfig,
    *,
    grid: MemoryGrid | None = None,
    judge_model: str = "",
    judge_backend: Backend | None = None,
    cluster: Any = None,
    **kwargs: Any,
) -> VariantResult:
    """Evaluate ``config.variant`` on ``items`` into ``root`` (module doc) and judge the runs of a
    judged benchmark with ``judge_model`` (on ``judge_backend``, default ``backend``; "" skips
    the judge pass), or have the same model extract the answers where the scorer (``kwargs``'
    ``scorer``, default the benchmarks') does. ``grid`` is required for ``ft_fm``; ``kwargs`` go
    to ``evaluate``. ``cluster``: a :class:`agent.qa.cluster.driver.QACluster` that runs the
    evaluations, judge and extraction passes sharded over a Ray cluster (``backend`` is then
    not used)."""
    ev = cluster.evaluate if cluster is not None else evaluate
    judge = cluster.judge_run if cluster is not None else judge_run
    extract = cluster.extract_run if cluster is not None else extract_run
    if config.variant == "ft_fm":
        if grid is None:
            raise ConfigError("variant ft_fm needs an experience memory (a bank and an embedder)")
        points = [(s, k) for s in grid.bank_sizes for k in grid.k_maxes]
        if len(points) == 1:
            summaries = [ev(items, backend, root, config, memory=grid.memory(*points[0]), **kwargs)]
        else:
            summaries = sweep_memory(
                items,
                backend,
                root,
                config,
                grid.memory,
                bank_sizes=grid.bank_sizes,
                k_maxes=grid.k_maxes,
                evaluator=ev,
                **kwargs,
            )
    else:
        summaries = [ev(items, backend, root, config, **kwargs)]
    judged: list[JudgeSummary] = []
    extracted: list[ExtractSummary] = []
    inner = getattr(kwargs.get("scorer"), "inner", kwargs.get("scorer"))
    spec = spec_of(inner, items[0].question.dataset) if items else None
    jb = judge_backend or backend
    if judge_model and spec is not None and spec.judge_prompt:
        judged = [judge(s.run_dir, items, jb, judge_model, prompt_name=spec.judge_prompt) for s in summaries]
    elif judge_model and spec is not None and spec.extract:
        extracted = [extract(s.run_dir, items, jb, judge_model) for s in summaries]
    return VariantResult(tuple(summaries), tuple(judged), tuple(extracted))
