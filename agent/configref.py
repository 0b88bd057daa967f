"""Every kind of configuration file localfin reads, table by table, for the configuration
reference (``docs/reference/config.md``, generated at build time) and its test.

Each :class:`ConfigFile` names the command that reads it and its tables; each :class:`Table`
names the dataclass that validates it. The keys, types, defaults and descriptions come from the
dataclasses themselves (:mod:`localfin.fielddoc`); the allowed values of string keys come from
the constants the validation uses. :func:`undocumented` lists every key without a description
(a test keeps it empty). Nested dataclass fields are tables of their own
(``[baselines.finmem.memory]``), found by recursion.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from localfin.fielddoc import FieldDoc, describe

__all__ = ["Table", "ConfigFile", "config_files", "walk", "undocumented", "render_markdown"]


@dataclass(frozen=True)
class Table:
    """One table of a config file: its TOML ``key`` (``model``, ``[[variants]]`` written as
    ``variants`` with ``array`` true), the dataclass ``cls`` that validates it, fields that are
    not keys of this table (``skip``), extra keys the parser reads besides the dataclass's
    (``extra``: name -> (type, default, description)), allowed values of keys (``allowed``) and
    a ``note`` shown above its keys."""

    key: str
    cls: type
    skip: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)
    allowed: Mapping[str, str] = field(default_factory=dict)
    note: str = ""
    array: bool = False

    @property
    def header(self) -> str:
        return f"[[{self.key}]]" if self.array else f"[{self.key}]"


@dataclass(frozen=True)
class ConfigFile:
    """A kind of config file: ``name``, the command that reads it (``read_by``), what it is for,
    its own tables, and the kinds whose tables it also accepts (``includes``)."""

    name: str
    read_by: str
    summary: str
    tables: tuple[Table, ...]
    includes: tuple[str, ...] = ()


def _words(values: Any) -> str:
    return ", ".join(f'"{v}"' for v in values)


def config_files() -> list[ConfigFile]:
    """Every kind of config file, in the order the reference shows them."""
    from agent.pairs.baselines.config import BASELINE_METHODS, BaselinesConfig
    from agent.pairs.experiment.config import PAIRINGS, ExperimentConfig, ModelConfig, WindowConfig
    from agent.pairs.experiment.matrix_config import Backbone, WindowSet, _MatrixTable
    from agent.pairs.lifecycle.config import LifecycleConfig
    from agent.pairs.market.execution import FILLS
    from agent.pairs.market.settlement import EXPOSURES, NO_BETA_LEGS
    from agent.pairs.moira.config import (
        BLOCK_ORDERS,
        DIRECTION_RULES,
        PRINCIPLE_RULES,
        SELECTION_FALLBACKS,
        MaxTokens,
        PolicyConfig,
        PromptConfig,
        SelectionConfig,
        Variant,
    )
    from agent.pairs.screen.causal import ScreenConfig
    from agent.qa.data.datasets import DATASETS
    from agent.qa.evaluation.evaluate import VARIANTS
    from agent.qa.solver.toolset import TOOL_NAMES
    from agent.reproduce.qa.plan import (
        CORPUS_SCOPES,
        EMBEDDERS,
        FORMAT_HINTS,
        GOLD_EVIDENCE,
        MEMORY_BLOCKS,
        OCR_ENGINES,
        PROTOCOLS,
        SUMMARY_VIEWS,
        QAArm,
    )
    from agent.reproduce.spec import KINDS, PAPERS, PaperFigure, QAPlan, QASource, WindowSpec, _Meta
    from serving.models.registry import ARCHS, SOURCES, ModelSpec
    from serving.open import backend_kinds

    backends = _words(backend_kinds())
    from_tables = ("windows", "model", "prompt", "screen", "lifecycle", "variants", "baselines")
    experiment = ConfigFile(
        "Experiment file",
        "localfin pairs run --config FILE",
        "One Moira experiment: a store, a pool, a training and a test window, run for every seed x "
        "exposure x variant, with the baselines beside it. Only `[experiment]` and `[windows]` are "
        "required; every other key has a default.",
        (
            Table(
                "experiment",
                ExperimentConfig,
                skip=from_tables,
                allowed={
                    "exposures": _words(EXPOSURES),
                    "pairing": _words(PAIRINGS),
                    "no_beta_legs": _words(NO_BETA_LEGS),
                    "execution": _words(FILLS),
                },
            ),
            Table("windows", WindowConfig, note="Inclusive calendar dates; sessions come from the store."),
            Table("model", ModelConfig, skip=("max_tokens",), allowed={"backend": backends}),
            Table("model.max_tokens", MaxTokens),
            Table("prompt", PromptConfig, allowed={"block_order": _words(BLOCK_ORDERS)}),
            Table(
                "policy",
                PolicyConfig,
                allowed={
                    "direction_rule": _words(DIRECTION_RULES),
                    "principle_rules": _words(PRINCIPLE_RULES),
                    "train_exposure": _words(EXPOSURES),
                },
            ),
            Table("selection", SelectionConfig, allowed={"fallback": _words(SELECTION_FALLBACKS)}),
            Table("screen", ScreenConfig),
            Table("lifecycle", LifecycleConfig),
            Table(
                "variants",
                Variant,
                skip=("policy", "selection"),
                array=True,
                note="Each variant is a name and any key of `[policy]` and `[selection]`, which it "
                "overrides for its runs (default: one variant `full` with the tables as written).",
            ),
            Table(
                "baselines",
                BaselinesConfig,
                skip=("plugin_options",),
                allowed={"methods": _words(BASELINE_METHODS) + " or an installed plugin's baseline"},
                note="An installed plugin's baseline takes its options from `[baselines.<name>]` "
                "(see Extending localfin).",
            ),
        ),
    )
    matrix = ConfigFile(
        "Matrix file",
        "localfin pairs matrix --config FILE",
        "An experiment matrix: backbones x windows sets, each cell an ordinary experiment (every "
        "table of the experiment file is accepted and shared by the cells).",
        (
            Table("matrix", _MatrixTable, allowed={"exposures": _words(EXPOSURES)}),
            Table(
                "backbones",
                Backbone,
                array=True,
                allowed={"exposures": _words(EXPOSURES)},
                note='Or `backbones = ["key", ...]`. Any `[model]` key may be set in a backbone\'s '
                "`model` table.",
            ),
            Table("windows", WindowSet, array=True, note="Or one `[windows]` table (named `main`)."),
        ),
        includes=("Experiment file",),
    )
    reproduce = ConfigFile(
        "Reproduction file",
        "localfin reproduce CONFIG",
        "One table of a paper: what it reproduces and what differs, the paper's figures, and what "
        "runs (a matrix document for Moira, a `[qa]` plan for FinAcumen).",
        (
            Table("reproduce", _Meta, allowed={"paper": _words(PAPERS), "kind": _words(KINDS)}),
            Table("paper", PaperFigure, array=True),
            Table(
                "windows",
                WindowSpec,
                skip=("paper_train_sessions", "paper_test_sessions"),
                array=True,
                note="Moira configs: the windows sets; the paper's session counts are in "
                "`[reproduce] paper_sessions`.",
            ),
            Table(
                "qa",
                QAPlan,
                skip=("bank", "sets", "arms"),
                allowed={
                    "backend": backends,
                    "tools": _words(TOOL_NAMES),
                    "variants": _words(VARIANTS),
                    "protocol": _words(PROTOCOLS),
                    "gold_format_hints": _words(FORMAT_HINTS),
                    "gold_evidence": _words(GOLD_EVIDENCE),
                    "memory_block": _words(MEMORY_BLOCKS),
                    "summary_view": _words(SUMMARY_VIEWS),
                    "ocr": _words(OCR_ENGINES),
                    "corpus_scope": _words(CORPUS_SCOPES),
                    "embedder": _words(EMBEDDERS),
                },
                note="`protocol` sets a group of the keys below to the paper's or the authors' released "
                "code's values (listed in the FinAcumen page of the guide); a key the table sets keeps "
                "its own value.",
            ),
            Table("qa.bank", QASource, array=True, allowed={"dataset": _words(DATASETS)}),
            Table("qa.sets", QASource, array=True, allowed={"dataset": _words(DATASETS)}),
            Table(
                "qa.arms",
                QAArm,
                array=True,
                note="Each arm runs the plan again into `arms/<name>` with the `[qa]` keys of its `set` "
                "table changed; its rows carry its name.",
            ),
        ),
        includes=("Matrix file",),
    )
    models = ConfigFile(
        "Models file",
        "localfin --models-file FILE (or LOCALFIN_MODELS_FILE; default $LOCALFIN_HOME/models.toml)",
        "Models added to the registry (or entries replaced) without editing localfin; see "
        "[Extending localfin](../extending.md).",
        (
            Table(
                "models",
                ModelSpec,
                skip=("stand_in",),
                array=True,
                extra={
                    "extends": ("string", "unset", "the key of an entry whose fields this one starts from")
                },
                allowed={"source": _words(SOURCES), "device": '"gpu", "cpu"', "arch": _words(ARCHS)},
                note="`key` is required; `display_name` defaults to the key and `source` to "
                "`local_dir`, which needs `path` or `dirname`. Relative paths resolve against the "
                "file's folder.",
            ),
        ),
    )
    return [experiment, matrix, reproduce, models]


def walk(table: Table) -> Iterator[tuple[str, type, list[FieldDoc], Table]]:
    """``(toml key, dataclass, keys, table)`` of ``table`` and of every table nested in it."""
    docs = describe(table.cls, table.skip)
    yield table.key, table.cls, docs, table
    for d in docs:
        if d.table is not None and "array" not in d.type:
            yield from walk(Table(f"{table.key}.{d.name}", d.table))


def undocumented() -> list[str]:
    """``file: [table] key (Class.field)`` of every key that has no description."""
    out = []
    for cf in config_files():
        for t in cf.tables:
            for key, cls, docs, _ in walk(t):
                out += [
                    f"{cf.name}: [{key}] {d.name} ({cls.__module__}.{cls.__qualname__}.{d.name})"
                    for d in docs
                    if not d.description and d.table is None
                ]
    return sorted(set(out))


_ROLE = re.compile(r":(?:data|class|func|mod|meth|attr):`~?([^`]+)`")


def _cell(text: str) -> str:
    """Docstring text as a Markdown table cell: Sphinx roles and double back-quotes as code."""
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text).replace("``", "`")
    return text.replace("|", "\\|").replace("\n", " ")


def _values(ty: str, allowed: str) -> str:
    """A key's type with its allowed values (one column: four columns fit a laptop's page)."""
    if not allowed or allowed == "true, false":
        return ty
    return f"{ty}: {'each ' if ty.startswith('array') else ''}one of {allowed}"


def render_markdown() -> str:
    """The configuration reference page (Markdown)."""
    files = config_files()
    lines = [
        "# Configuration reference",
        "",
        "Every key of every configuration file localfin reads, generated from the classes that "
        "validate them (`python -m localfin_cli.docs_pages` writes this page; a test keeps it "
        "current). Files are TOML; unknown keys are errors that name "
        'the allowed ones; values are not coerced (`"1"` is not an integer).',
        "",
    ]
    lines += [f"- [{f.name}](#{_anchor(f.name)}): `{f.read_by}`" for f in files]
    for f in files:
        lines += ["", f"## {f.name}", "", f"Read by `{f.read_by}`. {f.summary}", ""]
        if f.includes:
            inc = ", ".join(f"[{n}](#{_anchor(n)})" for n in f.includes)
            lines += [f"It also accepts every table of: {inc}.", ""]
        for t in f.tables:
            for key, cls, docs, own in walk(t):
                header = own.header if key == t.key else f"[{key}]"
                lines += ["", f"### `{header}`", ""]
                if own.note:
                    lines += [own.note, ""]
                if not cls.__qualname__.startswith("_"):  # a private class is no user's business
                    lines += [f"Validated by `{cls.__module__}.{cls.__qualname__}`.", ""]
                lines += ["| key | type and values | default | description |", "|---|---|---|---|"]
                rows = [
                    (d.name, d.type, d.default, own.allowed.get(d.name, d.allowed), d.description)
                    for d in docs
                ]
                rows += [(k, ty, de, "", desc) for k, (ty, de, desc) in own.extra.items()]
                for name, ty, default, allowed, desc in rows:
                    shown = f"`{default}`" if default else "*required*"
                    lines.append(
                        f"| `{name}` | {_cell(_values(ty, allowed))} | {_cell(shown)} | "
                        f"{_cell(desc) or '*(no description yet)*'} |"
                    )
    return "\n".join(lines) + "\n"


def _anchor(title: str) -> str:
    return title.lower().replace(" ", "-")
