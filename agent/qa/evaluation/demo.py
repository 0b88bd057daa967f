"""The QA part of the CPU demo: the project's own demo set, a small bank built from its train
split with the given model, the three variants evaluated on its test split, and a report
section (accuracy, memory hit rate, tokens and wall time per variant).

Sizes are kept small so that it fits in about a minute on two cores with the CPU model
(:class:`QADemoConfig`); every model call is journaled under ``out_dir``, so a rerun replays.
The demo uses the real engine it is given; nothing here is scripted.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.qa.core.items import Question
from agent.qa.data.datasets import load_items
from agent.qa.data.demo_set import build_demo_set
from agent.qa.evaluation.bank_build import BankBuildConfig, BankBuildReport, build_bank
from agent.qa.evaluation.evaluate import EvalConfig, EvalSummary, evaluate
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.solver.react import QASolver, solver_config_for
from agent.qa.solver.toolset import ToolsetConfig, ocr_transcriber, tool_factory
from bank.embedder import Embedder, MiniLMEmbedder
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.models.registry import Registry
from serving.open import model_facts

__all__ = ["QADemoConfig", "QADemoResult", "run_qa_demo"]

log = logging.getLogger(__name__)

_LABELS = {"base": "Base", "ft": "Base+FT", "ft_fm": "Base+FT+FM"}


@dataclass(frozen=True)
class QADemoConfig:
    """Demo sizes (small on purpose: the whole QA part takes well under a minute on two cores
    with the CPU model). With seed 0 the three train questions are of the kinds growth,
    table_diff and table_sum and the six test questions one of each kind, so that with MiniLM at
    tau 0.65 two test questions find a bank entry (memory hits) and four find none (misses),
    whatever the model answers.

    Attributes:
        seed: demo set and sampling seed.
        n_train / n_test: demo items in each split (the set has 72).
        k: trajectories per training item for the bank (the paper uses 8; one bank entry per
            item whatever ``k``).
        max_steps: tool steps per question (the paper uses 16; the demo's 1 is enough for a
            Python call and a gate rejection, which come at the first step; then a final
            answer is forced unless one stood).
        tools: tools of the ft variants (``lookup`` needs a store; the demo set does not).
        thought_chars / plan_chars / answer_chars / arg_chars / observation_chars: the
            solver's bounds of a step's thought, of each plan field, of the final answer, of a
            tool argument (a Python cell) and of a tool output shown to the model (the CPU
            model's defaults are 120 / 160 / 80 / 400 / 600,
            :func:`agent.qa.solver.react.solver_config_for`): shorter replies and prompts on two
            cores, where decoding a token costs as much as reading thirty.
    """

    seed: int = 0
    n_train: int = 3
    n_test: int = 6
    k: int = 1
    max_steps: int = 1
    tools: tuple[str, ...] = ("python", "reparse")
    thought_chars: int = 60
    plan_chars: int = 60
    answer_chars: int = 40
    arg_chars: int = 160
    observation_chars: int = 300

    def __post_init__(self) -> None:
        if not 1 <= self.n_train <= 60 or not 1 <= self.n_test <= 60:
            raise ConfigError(
                f"QADemoConfig n_train={self.n_train}, n_test={self.n_test}; allowed: 1..60 each"
            )
        if not 1 <= self.k <= 16:
            raise ConfigError(f"QADemoConfig.k={self.k}; allowed: 1..16")
        if not 1 <= self.max_steps <= 16:
            raise ConfigError(f"QADemoConfig.max_steps={self.max_steps}; allowed: 1..16")
        for name, lo, hi in (
            ("thought_chars", 10, 2000),
            ("plan_chars", 10, 2000),
            ("answer_chars", 10, 2000),
            ("arg_chars", 10, 2000),
            ("observation_chars", 100, 5000),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"QADemoConfig.{name}={v!r}; allowed: an integer in {lo}..{hi}")


@dataclass(frozen=True)
class QADemoResult:
    """What the demo did; ``report`` is the Markdown section it wrote."""

    report: Path
    bank: BankBuildReport
    summaries: dict[str, EvalSummary]
    wall_s: dict[str, float] = field(default_factory=dict)
    sandbox: str = ""


def _cached(fn: Callable[[str], str]) -> Callable[[str], str]:
    cache: dict[str, str] = {}

    def run(path: str) -> str:
        if path not in cache:
            cache[path] = fn(path)
        return cache[path]

    return run


def _sandbox_state(factory: Callable) -> str:

    tools = factory(Question("probe", "demo", "probe?"))
    try:
        py = next((t for t in tools if t.name == "python"), None)
        if py is None:
            return "python tool not offered"
        return "isolated" if getattr(py, "session", True) is not None else "unavailable: calls refused"
    finally:
        for t in tools:
            t.close()


def run_qa_demo(
    out_dir: str | Path,
    *,
    backend: Backend,
    model: str,
    registry: Registry | None = None,
    embedder: Embedder | None = None,
    config: QADemoConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> QADemoResult:
    """Run the QA demo into ``out_dir``; returns its figures and the report section's path.

    Args:
        out_dir: demo folder (demo set, bank, one run folder per variant, report).
        backend: a backend serving ``model`` (the demo's engine; start it first, or its
            start-up is counted in the bank build's time).
        model: registry key of the model.
        registry: the registry holding ``model`` (default: the packaged one).
        embedder: bank embedder (default: the real MiniLM).
        config: demo sizes.
        progress: progress display.
    """
    from bank.retrieval import Retriever
    from bank.store import ExperienceBank

    cfg = config or QADemoConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    walls: dict[str, float] = {}

    t0 = time.perf_counter()
    set_dir = build_demo_set(out / "qa_set", seed=cfg.seed, n_train=cfg.n_train, n_test=cfg.n_test)
    items = load_items("demo", set_dir).items
    train = [it for it in items if it.split == "train"]
    test = [it for it in items if it.split == "test"]
    walls["demo_set"] = time.perf_counter() - t0

    spec = model_facts(model, registry)
    solver_cfg = solver_config_for(
        spec,
        max_steps=cfg.max_steps,
        thought_chars=cfg.thought_chars,
        plan_chars=cfg.plan_chars,
        answer_chars=cfg.answer_chars,
        arg_chars=cfg.arg_chars,
        observation_chars=cfg.observation_chars,
    )
    factory = tool_factory(ToolsetConfig(names=cfg.tools, python_unavailable="refuse"))
    sandbox = _sandbox_state(factory)
    transcriber = _cached(ocr_transcriber()) if "reparse" in cfg.tools else None
    emb = embedder or MiniLMEmbedder()
    data = [set_dir / "items.jsonl"]

    with ExperienceBank.open(out / "bank") as bank:
        t0 = time.perf_counter()
        bank_rep = build_bank(
            train,
            QASolver(solver_cfg, tools=factory),
            backend,
            bank,
            emb,
            out / "runs" / "bank_build",
            config=BankBuildConfig(k=cfg.k, seed=cfg.seed),
            data_files=data,
            transcriber=transcriber,
            progress=progress,
        )
        walls["bank_build"] = time.perf_counter() - t0
        memory = ExperienceMemory(Retriever(bank, emb), MemoryConfig())
        summaries: dict[str, EvalSummary] = {}
        for v in ("base", "ft", "ft_fm"):
            t0 = time.perf_counter()
            summaries[v] = evaluate(
                test,
                backend,
                out / "runs" / v,
                EvalConfig(v, solver_cfg),
                tools=factory if v != "base" else None,
                memory=memory if v == "ft_fm" else None,
                transcriber=transcriber,
                data_files=data,
                progress=progress,
            )
            walls[v] = time.perf_counter() - t0
    walls["total"] = time.perf_counter() - t_all
    report = _write_report(
        out, cfg, model, spec.display_name, bank_rep, summaries, walls, sandbox, len(train)
    )
    return QADemoResult(report, bank_rep, summaries, walls, sandbox)


def _write_report(
    out: Path,
    cfg: QADemoConfig,
    model: str,
    display: str,
    bank: BankBuildReport,
    summaries: dict[str, EvalSummary],
    walls: dict[str, float],
    sandbox: str,
    n_train: int,
) -> Path:
    def f(x: float | None, nd: int = 2) -> str:
        return "-" if x is None else f"{x:.{nd}f}"

    n = next(iter(summaries.values())).n
    lines = [
        f"## Financial QA (FinAcumen) on the demo set ({display})",
        "",
        f"Demo set: {n_train} train and {n} test questions generated from the synthetic market "
        f"(statements, tables and charts; charts go through OCR before the loop). Model `{model}`, real "
        f"engine; tools {', '.join(cfg.tools)} (Python sandbox: {sandbox}); at most {cfg.max_steps} tool "
        f"steps per question (paper: 16); temperature 0.",
        "",
        f"Bank: {bank.entries_added} entries from {bank.items} train questions x {cfg.k} sampled "
        f"trajectories (paper: 8); {bank.success_rate:.0%} of the trajectories were right; "
        f"built in {walls['bank_build']:.0f} s.",
        "",
        "| variant | accuracy | memory hit rate | tokens / question | engine s / question | wall s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for v, s in summaries.items():
        hit = "-" if s.memory_hit_rate is None else f"{s.memory_hit_rate:.0%}"
        lines.append(
            f"| {_LABELS[v]} | {s.correct}/{s.n} ({s.accuracy:.0%}) | {hit} | {s.mean_total_tokens:.0f} | "
            f"{f(s.mean_engine_s)} | {walls[v]:.1f} |"
        )
    fm = summaries.get("ft_fm")
    if fm is not None:
        lines += [
            "",
            f"With memory: {f(fm.mean_tokens_with_memory, 0)} tokens per question that got a memory block, "
            f"{f(fm.mean_tokens_without_memory, 0)} per question without one.",
        ]
    lines += [
        "",
        f"QA part wall time: {walls['total']:.0f} s. Run folders (journal, trace, scores, manifest): "
        f"{out / 'runs'}. A 135M-parameter model is far too small for these questions; the figures show "
        "the pipeline, not the method's accuracy.",
    ]
    report = out / "qa_report.md"
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "qa_report.json").write_text(
        json.dumps(
            {
                "model": model,
                "config": asdict(cfg),
                "sandbox": sandbox,
                "bank": asdict(bank),
                "variants": {v: asdict(s) for v, s in summaries.items()},
                "wall_s": walls,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    log.info("QA demo report written to %s", report)
    return report
