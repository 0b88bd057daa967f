"""What a FinAcumen plan sets up before it runs (:mod:`agent.reproduce.qa_run`): the solver's
settings, the tool factory, the FinTMMBench corpus folder, the lines that say what of the gold
a plan reads at test time, and what a plan adds to a variant's protocol line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.qa import sandbox
from agent.reproduce.qa_plan import QAPlan, QASource
from localfin.errors import ConfigError
from serving.open import model_facts
from serving.registry import Registry

__all__ = ["corpus_folder", "tool_factory_of", "solver_settings", "reads_gold_lines", "plan_line"]


def corpus_folder(p: QAPlan, data_root: Path, sources: Sequence[QASource]) -> Path | None:
    """The FinTMMBench folder the plan's ``retrieve`` tool and gold evidence read: ``qa.corpus``,
    else the plan's first FinTMMBench source (None: neither)."""
    from agent.qa.solver.toolset import CORPUS_DATASETS

    if p.corpus:
        c = Path(p.corpus).expanduser()
        return c if c.is_absolute() else data_root / "benchmarks" / c
    return next((s.resolve(data_root) for s in sources if s.dataset in CORPUS_DATASETS), None)


def tool_factory_of(p: QAPlan, data_root: Path, sources: Sequence[QASource]) -> tuple[Any, list[str]]:
    """The tool factory of the plan: the market store and, for FinTMMBench (or every question,
    with ``corpus_scope = "all"``), its corpus."""
    from agent.qa.solver.toolset import ToolsetConfig, tool_factory

    notes = []
    if "python" in p.tools:
        sandbox.probe()  # a worker starts and answers, or SandboxUnavailable says why and what to do
    store = p.store_path(data_root)
    if store is not None and not store.exists():
        raise ConfigError(
            f"qa.store: no market store at {store} (the lookup tool reads it); fix: localfin data import "
            f"--prices <daily prices CSV> --store {store}, or drop lookup from qa.tools"
        )
    corpus = corpus_folder(p, data_root, sources)
    if "retrieve" in p.tools and corpus is not None:
        who = "every question gets" if p.corpus_scope == "all" else "FinTMMBench questions get"
        notes.append(f"{who} the retrieve tool over FinTMMBench's corpus at {corpus}")
    elif "retrieve" in p.tools and p.corpus_scope == "all":
        notes.append(
            "no FinTMMBench corpus (qa.corpus or a FinTMMBench source): the retrieve tool is left out"
        )
    factory = tool_factory(
        ToolsetConfig(
            names=p.tools,
            store_path=store,
            corpus_path=corpus if "retrieve" in p.tools else None,
            python_unavailable="raise",  # a tools variant without its Python tool is not the paper's
            corpus_scope=p.corpus_scope,
            corpus_lookup=p.corpus_lookup,
            loop=p.loop,
            authors_code=p.authors_code if p.loop == "authors" else "",
            authors_code_verify=p.authors_code_verify,
            **p.toolset_bounds(),
        )
    )
    if "retrieve" in p.tools and corpus is not None and p.corpus_lookup == "exact":
        notes.append(
            "the retrieve tool is the exact-filter financial_data_lookup (source, symbol, date, indicator)"
        )
    return factory, notes


def solver_settings(p: QAPlan, registry: Registry | None) -> Any:
    """The solver's settings under plan ``p``: the model's defaults
    (:func:`agent.qa.solver.react.solver_config_for`) with every key the plan sets."""
    from dataclasses import replace

    from agent.qa.solver.react import solver_config_for

    cfg = solver_config_for(model_facts(p.model, registry), **p.solver_overrides())
    if p.sampling_overrides():
        cfg = replace(cfg, sampling=replace(cfg.sampling, **p.sampling_overrides()))
    return cfg


def reads_gold_lines(p: QAPlan, arm: str = "", own_bank: bool = True) -> list[str]:
    """One line per setting of ``p`` that reads the gold answer or gold evidence at test time
    (``reads_gold: ...``); one line saying there is none otherwise. ``own_bank``: the plan
    builds its bank (its trajectories then get the same inputs; False: it reads another's)."""
    where = f" (arm {arm})" if arm else ""
    bank = p.needs_bank and own_bank
    out = []
    if p.gold_format_hints != "none":
        example = (
            "; the rounding instruction's example is the gold number itself"
            if p.gold_format_hints == "authors" else ""
        )  # fmt: skip
        who = "the tools variants' prompts and the bank's trajectories carry" if bank else (
            "the tools variants' prompts carry")  # fmt: skip
        out.append(
            f'reads_gold{where}: qa.gold_format_hints = "{p.gold_format_hints}": {who} instructions '
            f"derived from the item's gold answer{example}; Base gets none"
        )
    if p.gold_evidence != "none":
        also = ", and the bank's trajectories'" if bank else ""
        out.append(
            f'reads_gold{where}: qa.gold_evidence = "{p.gold_evidence}": FinTMMBench\'s corpus rows and '
            f"charts cited by the gold annotation's sources are put into every variant's context, Base "
            f"included{also}"
        )
    return out or [f"reads_gold{where}: none (nothing reads the gold answer or gold evidence at test time)"]


def plan_line(variant: str, p: QAPlan) -> str:
    """What the plan adds to a variant's protocol line: gold inputs, OCR, memory, summarizer."""
    parts = []
    hints = p.gold_format_hints != "none" and variant != "base"
    if hints:
        parts.append(f"answer instructions from the gold answer ({p.gold_format_hints})")
    if p.gold_evidence != "none":
        parts.append(f"FinTMMBench evidence from the gold sources ({p.gold_evidence})")
    if variant != "base" and "reparse" in p.tools:
        parts.append(f"OCR by {'the served model' if p.ocr == 'model' else 'rapidocr'}")
    if variant != "base" and p.corpus_lookup == "exact":
        parts.append("the exact-filter corpus lookup")
    if p.finmme_context == "caption":
        parts.append("FinMME context: the caption alone")
    if variant == "ft_fm":
        ann = "annotator on" if p.annotator else "annotator off"
        mode = "" if p.memory_mode == "test" else "; memory mode train: nothing retrieved"
        parts.append(f"memory block of {p.memory_block} ({ann}), k_max {', '.join(map(str, p.k_max))}{mode}")
    if variant == "ft" and "ft" not in p.variants:
        lessons = "unbounded" if not p.lesson_chars or not p.max_lessons else (
            f"at most {p.max_lessons} of {p.lesson_chars} chars")  # fmt: skip
        if p.summary_prompt == "authors":
            parts.append(f"the authors' summary prompt at temperature {p.summary_temperature:g}")
        else:
            parts.append(
                f"summarizer sees the {p.summary_view} trajectories at temperature "
                f"{p.summary_temperature:g}, lessons {lessons}"
                + (", analysis first" if p.summary_analysis else "")
            )
        if p.bank_grading == "authors":
            parts.append(
                f"trajectories graded as the authors' code does (1 % rule, wrong ones scored by the model at "
                f"temperature {p.grading_temperature:g}, those that never terminate dropped)"
            )
    return "; " + "; ".join(parts) if parts else ""
