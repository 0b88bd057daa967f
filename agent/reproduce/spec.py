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
  settings, the solver's settings and a ``protocol``, :mod:`agent.reproduce.qa.plan`),
  ``[[qa.bank]]`` sources (training/validation splits only), ``[[qa.sets]]`` evaluation sets
  and, optionally, ``[[qa.arms]]``: the plan run again with some keys changed. Relative data
  paths resolve against ``<data root>/benchmarks``.

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

from agent.qa.data.datasets import DATASETS
from agent.reproduce.qa.plan import _QA_TOOLS, QAArm, QAPlan, QASource, arm_plan  # noqa: F401 (_QA_TOOLS: tests)
from agent.reproduce.qa.protocols import apply_protocol
from localfin import configfile as cf
from localfin.errors import ConfigError

__all__ = [
    "KINDS",
    "PAPERS",
    "PaperFigure",
    "WindowSpec",
    "QASource",
    "QAPlan",
    "QAArm",
    "ReproConfig",
    "config_names",
    "load_repro",
    "load_all",
]

KINDS = ("moira", "qa")
PAPERS = ("moira", "finacumen")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


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
    #: the ``[qa]`` keys the file sets itself (the others come from its protocol)
    qa_explicit: frozenset[str] = frozenset()

    def qa_arms(self) -> tuple[tuple[QAArm | None, QAPlan], ...]:
        """What a FinAcumen config runs: ``(None, plan)`` without arms, else each arm with its
        plan (:func:`agent.reproduce.qa.plan.arm_plan`)."""
        assert self.qa is not None
        return qa_arms(self.qa, self.qa_explicit)

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


def qa_arms(plan: QAPlan, explicit: frozenset[str]) -> tuple[tuple[QAArm | None, QAPlan], ...]:
    """``(None, plan)`` for a plan without arms, else ``(arm, its plan)`` per arm."""
    if not plan.arms:
        return ((None, plan),)
    return tuple((a, arm_plan(plan, a, explicit)) for a in plan.arms)


def _qa(raw: Any, file: Any) -> tuple[QAPlan, frozenset[str]]:
    if not isinstance(raw, Mapping):
        raise cf.key_error("qa", "allowed: a table", file=file)
    plan = cf.load(QAPlan, apply_protocol(raw), key="qa", file=file)
    explicit = frozenset(raw)
    for _arm, p in qa_arms(plan, explicit):
        for s in (*p.bank, *p.sets):
            if s.dataset not in DATASETS:
                raise ConfigError(
                    f"qa source {s.label!r}: dataset={s.dataset!r}; allowed: {', '.join(DATASETS)}"
                )
    return plan, explicit


def parse_repro(data: Mapping[str, Any], source: Path) -> ReproConfig:
    """A :class:`ReproConfig` from a parsed TOML document (errors name ``source`` and the key)."""
    doc = copy.deepcopy(dict(data))
    meta_t = doc.pop("reproduce", None)
    if not isinstance(meta_t, Mapping):
        raise ConfigError(
            f"{source}: the [reproduce] table is required (a reproduction config); an experiment "
            "file is checked with localfin pairs run --config FILE --check"
        )
    figures = _figures(doc.pop("paper", []), source)
    meta = cf.load(_Meta, meta_t, key="reproduce", file=source)
    windows: tuple[WindowSpec, ...] = ()
    qa = None
    explicit: frozenset[str] = frozenset()
    if meta.kind == "moira":
        windows = _windows(doc, meta, source)
        if "matrix" not in doc or "backbones" not in doc:
            raise ConfigError(f"{source}: a moira config is a matrix document ([matrix] and backbones)")
    else:
        qa, explicit = _qa(doc.get("qa", {}), source)
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
        qa_explicit=explicit,
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
