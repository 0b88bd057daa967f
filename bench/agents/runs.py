"""The agents' runs that ``localfin bench agent`` (and ``bench moira-lockstep``) time: a shortened
Moira demo experiment and a FinAcumen ``ft`` evaluation of the demo QA set, each in one of two
modes (``lockstep``: every run's pending call in one engine batch per round; ``sequential``: one
run after another), on the engine the benchmark shares between both modes and both agents.

Each returns a :class:`BenchRun`: the run's call journal (token figures come from it), its units
of work (finalized trading steps for Moira, questions for FinAcumen) and ``wall_s``, the time of
the runs' own loop (set-up, folder writing and engine start-up excluded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.demo import demo_document, synthetic_store
from agent.pairs.experiment.run import run_experiment
from agent.qa.core import runs
from agent.qa.data.datasets import load_items
from agent.qa.data.demo_set import build_demo_set
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.solver.react import solver_config_for
from agent.qa.solver.toolset import ToolsetConfig, tool_factory
from localfin import configfile as cf
from localfin.errors import ConfigError
from serving.chat.backend import Backend
from serving.models.registry import Registry
from serving.open import BackendSpec, model_facts, open_backend, opened

__all__ = ["MODES", "QA_MAX_SIZE", "BenchRun", "moira_run", "finacumen_run"]

MODES = ("lockstep", "sequential")
#: Largest ``size`` of :func:`finacumen_run` (text questions of the demo set's test split).
QA_MAX_SIZE = 40


@dataclass(frozen=True)
class BenchRun:
    """One timed agent run: its journal, its units of work and the runs' own wall time (s)."""

    journal_path: Path
    units: int
    wall_s: float
    #: the Moira ExperimentResult or the FinAcumen EvalSummary
    result: object = None

    @property
    def summary(self) -> object:
        """The FinAcumen run's evaluation summary (its ``result``)."""
        return self.result


def _check(backend_kind: str, mode: str) -> None:
    if backend_kind != "vllm":
        raise ConfigError(f"backend_kind={backend_kind!r}; allowed: vllm (the in-process engine)")
    if mode not in MODES:
        raise ConfigError(f"mode={mode!r}; allowed: {', '.join(MODES)}")


def moira_document(model: str, size: int) -> dict[str, object]:
    """The packaged demo experiment shortened for the benchmark: a 20-session test window, one
    replay cycle, ``size`` runs (seeds 0.. x both exposures; one No-Beta run for size 1), the
    agent's runs alone (no baseline)."""
    seeds = list(range((size + 1) // 2))
    exposures = ["no_beta"] if size == 1 else ["no_beta", "beta"]
    return cf.merge(
        demo_document(model),
        {
            "experiment": {"seeds": seeds, "exposures": exposures},
            "windows": {"test_end": "2022-09-09"},
            "policy": {"max_cycles": 1},
            "baselines": {"methods": []},
        },
    )


def moira_run(
    backend_kind: str,
    model: str,
    mode: str,
    size: int,
    out_dir: Path,
    *,
    backend: Backend | None = None,
    registry: Registry | None = None,
) -> BenchRun:
    """The Moira part of ``localfin bench agent`` (:func:`moira_document`) into ``out_dir``.

    ``backend``: an already started engine serving ``model`` (``bench agent`` shares one);
    None: an in-process engine is opened here and closed. ``registry``: the registry holding
    ``model`` (default: the packaged one)."""
    _check(backend_kind, mode)
    if size < 1:
        raise ConfigError(f"size={size}; allowed: >= 1 runs")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    synthetic_store(out)
    doc = moira_document(model, size)
    cfg = parse_config(doc, base_dir=out)
    with opened(cfg.model.backend_spec(), registry, backend=backend) as engine:
        res = run_experiment(
            cfg,
            out / "experiment",
            config_text=cf.dumps(doc),
            backend=engine,
            model=model_facts(model, registry),
            sequential=mode == "sequential",
        )
    units = sum(int(r["metrics"]["n_transitions"]) for r in res.runs)
    return BenchRun(out / "experiment" / "journal.sqlite", units, res.wall_s, res)


def finacumen_run(
    backend_kind: str,
    model: str,
    mode: str,
    size: int,
    out_dir: Path,
    *,
    backend: Backend | None = None,
    registry: Registry | None = None,
) -> BenchRun:
    """The FinAcumen part of ``localfin bench agent``: the ``ft`` variant (ReAct loop with the
    Python tool and the answer gate, no memory) on the first ``size`` text questions of the demo
    set's test split (seed 0; statement and table questions, so no OCR runs), at most 3 tool steps
    each as in the CPU demo; ``sequential`` runs the questions in waves of one.

    Args:
        size: questions, 1..:data:`QA_MAX_SIZE`.
        out_dir: folder of the demo set and the run folder (a fresh folder: nothing replays).
        backend: an already started engine serving ``model``; None: an in-process engine is
            opened and started here, and closed.
        registry: the registry holding ``model`` (default: the packaged one).
    """
    _check(backend_kind, mode)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= QA_MAX_SIZE:
        raise ConfigError(f"size={size!r}; allowed: 1..{QA_MAX_SIZE} questions")
    facts = model_facts(model, registry)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # text kinds are 4 of every 6 dealt questions: 2 * size + 2 test items hold size of them
    set_dir = build_demo_set(out / "qa_set", seed=0, n_train=1, n_test=min(71, 2 * size + 2))
    test = [it for it in load_items("demo", set_dir).items if it.split == "test"]
    items = [it for it in test if not it.question.images][:size]
    if len(items) < size:  # pragma: no cover - the dealing above guarantees enough
        raise ConfigError(f"size={size}: the demo set has only {len(items)} text test questions")
    factory = tool_factory(ToolsetConfig(names=("python",), python_unavailable="refuse"))
    config = EvalConfig(
        "ft", solver_config_for(facts, max_steps=3), max_active=None if mode == "lockstep" else 1
    )
    engine = backend
    if engine is None:
        engine = open_backend(BackendSpec("vllm", model), registry)
        engine.start()  # type: ignore[attr-defined]
    try:
        summary = evaluate(
            items, engine, out / "runs" / mode, config, tools=factory, data_files=[set_dir / "items.jsonl"]
        )
    finally:
        if backend is None:
            engine.close()
    return BenchRun(out / "runs" / mode / runs.JOURNAL, summary.n, summary.run_wall_s, summary)
