"""Reproduction configs: one TOML file per table of the two seed papers, shipped as package data
in ``agent/reproduce/configs/``.

Every file has a ``[reproduce]`` table (what it reproduces, what differs from the paper, the
session counts the paper states for its windows) and ``[[paper]]`` rows (figures copied from
the paper, labelled as the paper's). The rest of the file is what runs:

- Moira tables (``kind = "moira"``): an experiment-matrix document (the ``localfin pairs
  matrix`` format: ``[matrix]``, ``backbones``, ``[[windows]]`` and the experiment tables of
  :mod:`agent.pairs.experiment.config`). The ``[reproduce]`` and ``[[paper]]`` tables are stripped before
  the document is handed on.
- FinAcumen tables (``kind = "qa"``): a ``[qa]`` table (model, tools, variants, retrieval
  settings), ``[[qa.bank]]`` sources (training/validation splits only) and ``[[qa.sets]]``
  evaluation sets. Relative data paths resolve against ``<data root>/benchmarks``.

A paper figure is ``{row, column, value, unit}`` plus an optional ``match`` table: the fields an
output row of ours must equal for the figure to be printed beside it (e.g. ``{set = "FinMMR
Easy", variant = "ft_fm"}``). Figures of proprietary backbones have no match: they are listed as
the paper's only.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from agent.qa.datasets import DATASETS
from localfin import configfile as cf
from localfin.errors import ConfigError
from serving.engine_args import check_engine_fields
from serving.open import BACKEND_KINDS, backend_kinds

__all__ = [
    "KINDS",
    "PAPERS",
    "PaperFigure",
    "WindowSpec",
    "QASource",
    "QAPlan",
    "ReproConfig",
    "config_names",
    "load_repro",
    "load_all",
]

KINDS = ("moira", "qa")
PAPERS = ("moira", "finacumen")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_QA_VARIANTS = ("base", "ft", "ft_fm")
_QA_TOOLS = ("python", "lookup", "reparse", "retrieve")  # = agent.qa.toolset.TOOL_NAMES (a test checks)
_QA_BASES = ("model_only", "constrained")  # = agent.qa.solver_config.BASE_MODES (a test checks)


@dataclass(frozen=True)
class PaperFigure:
    """One published figure, copied from the paper (never computed here).

    row, column: where the figure stands in the paper's table (e.g. the method and the metric).
    value: the figure as the paper prints it; unit: its unit (``%``, ``ratio``, ``tokens``).
    match: the fields an output row must equal for the figure to be printed beside it (empty:
        listed as the paper's only, e.g. a proprietary backbone's).
    """

    row: str
    column: str
    value: float
    unit: str
    match: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.row or not self.column or not math.isfinite(self.value):
            raise ConfigError(f"paper figure {self.row!r}/{self.column!r}: row, column and a finite value")


@dataclass(frozen=True)
class WindowSpec:
    """A Moira windows set and the session counts the paper states for it.

    name: the windows set's name (A1 long horizon, A2 another regime, ...).
    train_start, train_end, test_start, test_end: its windows (inclusive dates).
    paper_train_sessions, paper_test_sessions: the sessions the paper states for them.
    """

    name: str
    train_start: dt.date
    train_end: dt.date
    test_start: dt.date
    test_end: dt.date
    paper_train_sessions: int
    paper_test_sessions: int

    def __post_init__(self) -> None:
        if not self.train_start <= self.train_end < self.test_start <= self.test_end:
            raise ConfigError(
                f"windows {self.name!r}: {self.train_start}..{self.train_end} then {self.test_start}.."
                f"{self.test_end}; allowed: train_start <= train_end < test_start <= test_end"
            )


@dataclass(frozen=True)
class QASource:
    """A benchmark file or folder: bank source (``[[qa.bank]]``) or evaluation set (``[[qa.sets]]``).

    label: the name its results carry (e.g. ``FinMMR Easy``).
    dataset: the benchmark's loader (``localfin qa eval --dataset``).
    path: its file or folder as the benchmark releases it (relative: under
        ``<data root>/benchmarks``).
    split: the benchmark's split (``train``, ``validation``, ``test``, ``dev``; unset: all).
    subset: a part of the benchmark (e.g. FinMMR's difficulty level; unset: all).
    limit: most items taken (unset: all).
    test_share: for a benchmark without a split: the share of items drawn as its test part.
    require_images: skip an item whose image files are missing (false: keep it, reported).

    ``test_share`` (> 0) is for a benchmark that ships no train/test split (FinTMMBench, FinMME):
    that share of its items is its test part and the rest its train part, drawn by a seeded hash
    of the item ids (:func:`agent.qa.holdout.hold_out`); ``split`` (``train`` or ``test``) then
    picks the part, and ``limit`` applies after the draw. ``require_images = false`` keeps an
    item whose image files this copy lacks (loaded incomplete and reported) instead of skipping
    it (reported too).
    """

    label: str
    dataset: str
    path: str
    split: str | None = None
    subset: str | None = None
    limit: int | None = None
    test_share: float = 0.0
    require_images: bool = True

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"qa source {self.label!r}: limit={self.limit!r}; allowed: a whole number >= 1")
        if not 0.0 <= self.test_share < 1.0:
            raise ConfigError(f"qa source {self.label!r}: test_share={self.test_share!r}; allowed: [0, 1)")
        if self.test_share and self.split not in ("train", "test"):
            raise ConfigError(
                f"qa source {self.label!r}: test_share needs split 'train' or 'test' (the part to take); "
                f"got split={self.split!r}"
            )

    def resolve(self, data_root: Path) -> Path:
        p = Path(self.path).expanduser()
        return p if p.is_absolute() else data_root / "benchmarks" / p


@dataclass(frozen=True)
class QAPlan:
    """The ``[qa]`` table: one model, the variants, and the retrieval grid."""

    #: registry key of the model that answers (the paper: Qwen3-VL-8B-Instruct)
    model: str
    #: ``vllm`` (in-process engine), ``openai`` (a running server) or a plugin's kind
    backend: str = "vllm"
    #: the server of ``openai`` (e.g. http://127.0.0.1:8000/v1)
    base_url: str = ""
    #: most tool steps per question after the plan (the paper: 16)
    max_steps: int = 16
    #: the tools of Base+FT and Base+FT+FM (the paper's four)
    tools: tuple[str, ...] = ("python", "lookup", "reparse", "retrieve")
    #: the market store the ``lookup`` tool reads (relative: under the data root); required
    #: when ``tools`` has ``lookup``
    store: str = ""
    #: the variants evaluated: Base, Base+FT (tools), Base+FT+FM (tools and experience memory)
    variants: tuple[str, ...] = ("base", "ft", "ft_fm")
    #: cosine threshold of the experience memory (the paper: 0.65)
    tau: float = 0.65
    #: retrieval depths evaluated (the paper: 5; a sweep lists several)
    k_max: tuple[int, ...] = (5,)
    bank_sizes: tuple[int, ...] = ()  # () = the whole bank only
    taus: tuple[float, ...] = ()  # non-empty: retrieval analytics (tau sweep) over bank_sizes
    #: trajectories sampled per training item when the bank is built (the paper: 8)
    bank_k: int = 8
    #: sampling temperature of those trajectories
    bank_temperature: float = 0.7
    bank: tuple[QASource, ...] = ()
    sets: tuple[QASource, ...] = ()
    #: registry key of the model that judges FinTMMBench answers, in the evaluation's judge
    #: pass and in the bank build ("" = ``model``). The paper judged with GPT-4o-mini, out of
    #: scope offline; the GPU configs name a separate local model. With ``backend = "vllm"`` a
    #: judge other than ``model`` gets its own in-process engine beside the solver's
    #: (``judge_gpu_memory``); with ``backend = "openai"`` the server must serve both.
    judge_model: str = ""
    #: fraction of each GPU's memory the separate judge's in-process engine takes (the solver's
    #: engine keeps its registry share minus this); unused when the judge is ``model``
    judge_gpu_memory: float = 0.25
    #: the judge's server with ``backend = "openai"`` ("" = ``base_url``, a server that serves
    #: both models)
    judge_base_url: str = ""
    #: items of each judged set on which the judge is checked (its verdicts on their gold
    #: answers and on perturbed wrong ones, as ``localfin qa judge-check``); 0 = no check
    judge_check_items: int = 200
    #: the Base variant's protocol: ``model_only`` (the paper's: question and context in, free
    #: text out, the final answer read from the text) or ``constrained``
    #: (one JSON reply with the question's answer format and a numeric pattern)
    base: str = "model_only"
    #: completion budget of the model-only Base reply (tokens; free text has no schema bound)
    base_max_tokens: int = 4096
    #: longest thought of one ReAct action (characters; the paper states none)
    thought_chars: int = 400
    #: most characters of one tool output or image transcription shown to the solver
    observation_chars: int = 2000
    #: failed answer checks sent back before a proposed answer stands; ``max_steps`` or more:
    #: only the step budget stops the loop (the paper states no separate cap)
    gate_rejections: int = 1
    #: constrain the solver's plan and action replies by their JSON schema (off: free replies,
    #: the first JSON object in each read and checked against the same schema)
    action_schema: bool = True
    #: the scorer of each benchmark, by name: ``localfin`` (the rules
    #: the papers state), ``official`` (the benchmark's released scorer: FinMMR with its answer
    #: extractor, FinMME's eval.py, TAT-QA's), ``authors`` (the FinAcumen authors' released
    #: scorers: what produced their Table 1), ``authors_em`` (FinTMMBench's SQuAD match alone),
    #: or an installed plugin's name; a benchmark not named: ``localfin`` (TAT-QA: ``official``),
    #: written out here for every benchmark the plan reads
    scorer: dict[str, str] = field(default_factory=dict)
    #: registry key of the model that reads the final answers for a scorer that extracts them
    #: (FinMMR ``official``); "" = the judge model (``judge_model``, else ``model``)
    extract_model: str = ""
    #: ``backend = "vllm"``: a declared weight quantization of the solver's engine, ``fp8``
    #: (vLLM ``--quantization fp8``, half the memory of bf16; not the weights the paper ran),
    #: or "" (the checkpoint's own)
    quantization: str = ""
    #: ``backend = "vllm"``: declared pipeline stages of the solver's engine (1: none; more
    #: spans nodes, which needs a Ray cluster)
    pipeline_parallel: int = 1
    #: ``backend = "vllm"``: vLLM's batch-invariant kernels (``VLLM_BATCH_INVARIANT=1``) in the
    #: solver's and the judge's engines, so a resumed GPU run's new replies equal an
    #: uninterrupted run's (see "Faults and recovery", Determinism)
    batch_invariant: bool = False
    #: ``backend = "vllm"``: vLLM's asynchronous scheduling (its CUDA default), off until a GPU
    #: check validates it with structured outputs and seeded requests
    async_scheduling: bool = False
    #: ``backend = "vllm"``: how the engines' processes start (``spawn``, as the CPU build
    #: always does, or ``fork``)
    worker_start_method: str = "spawn"

    def __post_init__(self) -> None:
        bad = [v for v in self.variants if v not in _QA_VARIANTS]
        if (not self.variants and not self.taus) or bad:
            raise ConfigError(f"qa.variants={list(self.variants)}; allowed: {', '.join(_QA_VARIANTS)}")
        if self.backend not in BACKEND_KINDS and self.backend not in backend_kinds():
            raise ConfigError(f"qa.backend={self.backend!r}; allowed: {', '.join(backend_kinds())}")
        if not 0.05 <= self.judge_gpu_memory <= 0.6:
            raise ConfigError(f"qa.judge_gpu_memory={self.judge_gpu_memory}; allowed: 0.05..0.6")
        if self.judge_check_items < 0:
            raise ConfigError(f"qa.judge_check_items={self.judge_check_items}; allowed: >= 0")
        from agent.qa.scorers import check_scorer_choice, default_scorer_name

        given = check_scorer_choice(self.scorer)
        # every benchmark the plan reads gets its scorer written out (the effective settings
        # then list each one, the default ones included)
        used = dict.fromkeys(s.dataset for s in (*self.sets, *self.bank))
        resolved = {d: given.get(d) or default_scorer_name(d) for d in used}
        object.__setattr__(self, "scorer", resolved | given)
        if self.extract_model and self.extract_model not in (self.model, self.judge):
            raise ConfigError(
                f"qa.extract_model={self.extract_model!r}; allowed: the solver model {self.model!r} or the "
                f'judge model {self.judge!r} (their engines serve it), or "" for the judge model'
            )
        if self.base not in _QA_BASES:
            raise ConfigError(f"qa.base={self.base!r}; allowed: {', '.join(_QA_BASES)}")
        if not 16 <= self.base_max_tokens <= 131_072:
            raise ConfigError(f"qa.base_max_tokens={self.base_max_tokens}; allowed: 16..131072")
        if not 10 <= self.thought_chars <= 20_000:
            raise ConfigError(f"qa.thought_chars={self.thought_chars}; allowed: 10..20000")
        if not 100 <= self.observation_chars <= 100_000:
            raise ConfigError(f"qa.observation_chars={self.observation_chars}; allowed: 100..100000")
        if not 0 <= self.gate_rejections <= 64:
            raise ConfigError(f"qa.gate_rejections={self.gate_rejections}; allowed: 0..64")
        if not 1 <= self.max_steps <= 64:
            raise ConfigError(f"qa.max_steps={self.max_steps}; allowed: 1..64")
        check_engine_fields(self, "qa")
        if not 0.0 < self.tau < 1.0 or any(not 0.0 < t < 1.0 for t in self.taus):
            raise ConfigError(f"qa.tau / qa.taus must lie in (0, 1); got {self.tau}, {list(self.taus)}")
        if not self.k_max or any(k < 1 for k in self.k_max):
            raise ConfigError(f"qa.k_max={list(self.k_max)}; allowed: whole numbers >= 1")
        if any(n < 0 for n in self.bank_sizes):
            raise ConfigError(f"qa.bank_sizes={list(self.bank_sizes)}; allowed: whole numbers >= 0")
        if not self.sets:
            raise ConfigError("[[qa.sets]] is empty; allowed: at least one evaluation set")
        bad_tools = [t for t in self.tools if t not in _QA_TOOLS]
        if bad_tools:
            raise ConfigError(f"qa.tools has {bad_tools}; allowed: {', '.join(_QA_TOOLS)}")
        if "lookup" in self.tools and not self.store:
            raise ConfigError(
                "qa.tools has lookup but qa.store is empty; allowed: the market store's path "
                '(relative: under the data root, e.g. store = "market.sqlite"), or drop lookup'
            )
        if ("ft_fm" in self.variants or self.taus) and not self.bank:
            raise ConfigError("ft_fm or a tau sweep needs [[qa.bank]] sources (training splits)")
        for s in self.bank:
            if s.split in ("test",):
                raise ConfigError(
                    f"qa.bank source {s.label!r} uses split 'test'; the bank reads train/validation only"
                )

    @property
    def needs_bank(self) -> bool:
        return "ft_fm" in self.variants or bool(self.taus)

    @property
    def needs_tools(self) -> bool:
        """Whether anything runs the tools (Base+FT, Base+FT+FM, or the bank build's solver)."""
        return bool({"ft", "ft_fm"} & set(self.variants)) or self.needs_bank

    def store_path(self, data_root: Path) -> Path | None:
        """The market store of the lookup tool (None: no lookup)."""
        if "lookup" not in self.tools or not self.store:
            return None
        p = Path(self.store).expanduser()
        return p if p.is_absolute() else data_root / p

    @property
    def judge(self) -> str:
        """The judge model's registry key (``judge_model``, or ``model`` when unset)."""
        return self.judge_model or self.model

    @property
    def separate_judge(self) -> bool:
        """Whether the judge is another model than the solver's."""
        return self.judge != self.model

    @property
    def extractor(self) -> str:
        """The answer extractor's registry key (``extract_model``, or the judge's)."""
        return self.extract_model or self.judge

    def scorer_of(self, dataset: str) -> Any:
        """The :class:`agent.qa.scorers.ScorerSpec` this plan grades ``dataset`` by."""
        from agent.qa.scorers import scorer_spec

        return scorer_spec(dataset, self.scorer.get(dataset))

    def _sources(self) -> list[QASource]:
        return [*self.sets, *(self.bank if self.needs_bank else ())]

    @property
    def needs_judge(self) -> bool:
        """Whether anything this plan runs is judged (a judged set, or a judged bank source)."""
        return any(self.scorer_of(s.dataset).judge_prompt for s in self._sources())

    @property
    def needs_extract(self) -> bool:
        """Whether anything this plan runs is scored through the answer extractor."""
        return any(self.scorer_of(s.dataset).extract for s in self._sources())

    def solver_overrides(self) -> dict[str, Any]:
        """The solver settings this plan fixes (:class:`agent.qa.solver_config.SolverConfig`
        fields)."""
        return {
            "max_steps": self.max_steps,
            "base_mode": self.base,
            "base_max_tokens": self.base_max_tokens,
            "thought_chars": self.thought_chars,
            "observation_chars": self.observation_chars,
            "gate_rejections": self.gate_rejections,
            "action_schema": self.action_schema,
        }


@dataclass(frozen=True)
class ReproConfig:
    """One shipped reproduction config (see the module docstring)."""

    name: str
    paper: str
    table: str
    title: str
    kind: str
    differs: tuple[str, ...]
    figures: tuple[PaperFigure, ...]
    document: Mapping[str, Any] = field(repr=False)
    source: Path = Path(".")
    windows: tuple[WindowSpec, ...] = ()
    qa: QAPlan | None = None
    baselines: tuple[str, ...] = ()

    @property
    def model_keys(self) -> tuple[str, ...]:
        """Registry keys the config names (backbones, or the QA model and its judge)."""
        if self.qa is not None:
            return tuple(dict.fromkeys((self.qa.model, self.qa.judge)))
        keys: list[str] = []
        for b in self.document.get("backbones", []):
            k = b if isinstance(b, str) else b.get("key", "")
            if k not in keys:
                keys.append(k)
        return tuple(keys)

    @property
    def pool(self) -> tuple[str, ...]:
        return tuple(self.document.get("experiment", {}).get("pool", ()))


def config_names() -> list[str]:
    """Names of the shipped configs (file stems), sorted."""
    root = resources.files("agent.reproduce").joinpath("configs")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


@dataclass(frozen=True)
class _Meta:
    """The ``[reproduce]`` table: what is reproduced and what differs from the paper.

    name: the config's name (``localfin reproduce NAME``; lower-case letters, digits, ``-``, ``_``).
    paper: the paper (``moira`` or ``finacumen``); table: the table or figure it reproduces.
    title: a one-line title of what runs; kind: what runs (``moira``: a matrix; ``qa``: a plan).
    differs: in words, every way this run differs from the paper's.
    baselines: the paper's baseline rows this config runs (Moira).
    """

    name: str
    paper: str
    table: str
    title: str
    kind: str
    differs: tuple[str, ...]
    baselines: tuple[str, ...] = ()
    #: per windows set name: [training sessions, test sessions] as the paper states them
    paper_sessions: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(f"reproduce.name={self.name!r}; allowed: lower-case letters, digits, '-', '_'")
        if self.paper not in PAPERS or self.kind not in KINDS:
            raise ConfigError(
                f"reproduce.paper={self.paper!r} / kind={self.kind!r}; allowed: {PAPERS} / {KINDS}"
            )
        if not self.differs:
            raise ConfigError("reproduce.differs must list, in words, what differs from the paper")


def _figures(raw: Any, file: Any) -> tuple[PaperFigure, ...]:
    if not isinstance(raw, list):
        raise cf.key_error("paper", "allowed: [[paper]] tables (an array of tables)", file=file)
    out = []
    for i, f in enumerate(raw):
        row = dict(f) if isinstance(f, Mapping) else f
        if isinstance(row, dict) and isinstance(row.get("match"), Mapping):
            row["match"] = [[k, v] for k, v in row["match"].items()]
        out.append(cf.load(PaperFigure, row, key=f"paper[{i}]", file=file))
    return tuple(out)


def _windows(doc: Mapping[str, Any], meta: _Meta, file: Any) -> tuple[WindowSpec, ...]:
    raw = doc.get("windows")
    sets = raw if isinstance(raw, list) else [{"name": "main", **raw}] if isinstance(raw, Mapping) else []
    if not sets:
        raise ConfigError("a moira config needs [[windows]] sets")
    out = []
    for i, w in enumerate(sets):
        name = w.get("name") if isinstance(w, Mapping) else None
        counts = meta.paper_sessions.get(name) if isinstance(name, str) else None
        if counts is None:
            raise cf.key_error(
                f"reproduce.paper_sessions.{name}",
                "must be [train sessions, test sessions] as the paper states",
                file=file,
            )
        row = {**w, "paper_train_sessions": counts[0], "paper_test_sessions": counts[1]}
        out.append(cf.load(WindowSpec, row, key=f"windows[{i}]", file=file))
    return tuple(out)


def _qa(raw: Any, file: Any) -> QAPlan:

    plan = cf.load(QAPlan, raw, key="qa", file=file)
    for s in (*plan.bank, *plan.sets):
        if s.dataset not in DATASETS:
            raise ConfigError(f"qa source {s.label!r}: dataset={s.dataset!r}; allowed: {', '.join(DATASETS)}")
    return plan


def parse_repro(data: Mapping[str, Any], source: Path) -> ReproConfig:
    """A :class:`ReproConfig` from a parsed TOML document (errors name ``source`` and the key)."""
    doc = copy.deepcopy(dict(data))
    meta_t = doc.pop("reproduce", None)
    if not isinstance(meta_t, Mapping):
        raise ConfigError(f"{source}: the [reproduce] table is required")
    figures = _figures(doc.pop("paper", []), source)
    meta = cf.load(_Meta, meta_t, key="reproduce", file=source)
    windows: tuple[WindowSpec, ...] = ()
    qa = None
    if meta.kind == "moira":
        windows = _windows(doc, meta, source)
        if "matrix" not in doc or "backbones" not in doc:
            raise ConfigError(f"{source}: a moira config is a matrix document ([matrix] and backbones)")
    else:
        qa = _qa(doc.get("qa", {}), source)
    return ReproConfig(
        name=meta.name,
        paper=meta.paper,
        table=meta.table,
        title=meta.title,
        kind=meta.kind,
        differs=meta.differs,
        figures=figures,
        document=doc,
        source=source,
        windows=windows,
        qa=qa,
        baselines=meta.baselines,
    )


def load_repro(name_or_path: str | Path) -> ReproConfig:
    """A shipped config by name (``localfin reproduce list``) or any config file by path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.exists():
        text, source = p.read_text(encoding="utf-8"), p.resolve()
    else:
        names = config_names()
        if str(name_or_path) not in names:
            raise ConfigError(
                f"unknown reproduction config {str(name_or_path)!r}; "
                f"allowed: {', '.join(names)} or a .toml path"
            )
        res = resources.files("agent.reproduce").joinpath("configs", f"{name_or_path}.toml")
        text, source = res.read_text(encoding="utf-8"), Path(str(res))
    return parse_repro(cf.loads_toml(text, f"config {source}"), source)


def load_all() -> list[ReproConfig]:
    """Every shipped config, in name order."""
    return [load_repro(n) for n in config_names()]
