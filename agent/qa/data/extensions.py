"""QA datasets with their scorers, and tools, from installed distributions.

Two entry-point groups (:mod:`localfin.plugins`):

``localfin.qa_datasets``
    loads a :class:`QADataset`: a name, a loader from a local file or folder to
    :class:`~agent.qa.core.items.QAItem` values (and :class:`~agent.qa.loaders.records.SkippedItem`
    for records it cannot build), and the scorer of a prediction against an item's gold
    (:class:`~agent.qa.core.item_score.ItemScore`). Once installed, the name is a dataset everywhere
    one is taken: :func:`agent.qa.data.datasets.load_items`, :func:`agent.qa.scoring.scoring.score_answer`,
    ``localfin qa eval --dataset NAME``.
``localfin.tools``
    loads a :class:`ToolPlugin`: a name, a one-line description for the prompt, the JSON schema of
    its arguments and a deterministic callable. Once installed, the name is a tool everywhere one
    is taken: ``ToolsetConfig(names=...)``, ``localfin qa eval --tools NAME``. Every question gets
    a fresh :class:`PluginTool` around it; a call that raises becomes a failed tool result the
    model sees (the loop's ``tool_crash`` fallback), never a crash of the run, and every call is
    recorded in the run's trace like the built-in tools' calls.

A tool plugin is the plugin author's own code, run in localfin's process like any installed
library; code written by the model is never run here (it goes to the sandboxed ``python`` tool).

Each entry point loads the object itself or a callable returning it; its ``name`` must equal the
entry point's name. A plugin that fails to import, loads the wrong kind of object, or takes a
built-in name is a :class:`~localfin.plugins.PluginError` naming the distribution and the entry
point.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import Gold, QAItem
from agent.qa.core.numbers import find_numbers
from agent.qa.loaders.records import IncompleteItem, SkippedItem
from agent.qa.tools.base import ToolResult
from localfin.plugins import PluginError, PluginRegistry

__all__ = [
    "QADataset",
    "ToolPlugin",
    "PluginTool",
    "BUILTIN_DATASETS",
    "BUILTIN_TOOLS",
    "DATASETS_REGISTRY",
    "TOOLS_REGISTRY",
    "dataset_names",
    "dataset_plugin",
    "tool_names",
    "tool_plugin",
    "plugin_items",
    "plugin_score",
]

#: localfin's own QA datasets (loaders in :mod:`agent.qa.loaders`, rules in :mod:`agent.qa.scoring.scoring`).
BUILTIN_DATASETS = ("tatqa", "finmmr", "bizbench", "fintmmbench", "finmme", "demo")
#: localfin's own tools (:mod:`agent.qa.solver.toolset`).
BUILTIN_TOOLS = ("python", "lookup", "reparse", "retrieve")

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name={name!r}; allowed: lowercase letters, digits and _ (a letter first)")


@dataclass(frozen=True)
class QADataset:
    """What a ``localfin.qa_datasets`` entry point provides.

    Attributes:
        name: the dataset name (``--dataset NAME``; every item's ``question.dataset``).
        load: ``(path: Path, split: str | None) -> Iterable[QAItem | SkippedItem]``: the items of
            a local file or folder (nothing downloaded). ``split`` is the split asked for (None:
            all); items of other splits may be yielded too (they are filtered). A record it cannot
            build is a ``SkippedItem(file, line, item_id, reason)``, so the run lists it.
        score: ``(gold: Gold, prediction: str) -> ItemScore``: the benchmark's rule. It reads the
            gold (the solver never does) and must be deterministic. An empty prediction never
            reaches it (it scores 0).
        scorer_name: how run reports name the rule.
        description: one line for listings.
    """

    name: str
    load: Callable[[Path, str | None], Iterable[Any]]
    score: Callable[[Gold, str], ItemScore]
    scorer_name: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name)
        for attr in ("load", "score"):
            if not callable(getattr(self, attr)):
                raise ValueError(f"{attr}={getattr(self, attr)!r}; allowed: a callable")


@dataclass(frozen=True)
class ToolPlugin:
    """What a ``localfin.tools`` entry point provides.

    Attributes:
        name: the tool name the model calls (``--tools NAME``).
        description: one line for the prompt: what it does and its arguments.
        args_schema: JSON schema of the arguments object (an ``object`` schema); the ReAct loop
            checks every call against it before the tool runs.
        run: ``(args: Mapping[str, Any]) -> str | ToolResult``: deterministic (the same
            arguments give the same output); a ``str`` is what the model sees, and the numbers
            in it count for the answer gate's provenance check. It may raise on bad arguments:
            the model sees the error as a failed call.
    """

    name: str
    description: str
    args_schema: Mapping[str, Any]
    run: Callable[[Mapping[str, Any]], Any]

    def __post_init__(self) -> None:
        _check_name(self.name)
        if not isinstance(self.description, str) or not self.description.strip():
            raise ValueError("description is empty; allowed: one line for the prompt")
        schema = self.args_schema
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise ValueError(f"args_schema={schema!r}; allowed: a JSON schema of type 'object'")
        if not callable(self.run):
            raise ValueError(f"run={self.run!r}; allowed: a callable (args) -> str | ToolResult")


class PluginTool:
    """A :class:`ToolPlugin` as a FinAcumen tool (:class:`agent.qa.tools.base.Tool`). A call that
    raises is recorded by the ReAct loop as a failed call the model sees (fallback ``tool_crash``),
    one that returns the wrong kind is a failed result naming the plugin; the run goes on."""

    def __init__(self, plugin: ToolPlugin, origin: str) -> None:
        self.plugin, self.origin = plugin, origin
        self.name, self.description, self.args_schema = plugin.name, plugin.description, plugin.args_schema

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        out = self.plugin.run(dict(args))  # raising: the loop records a failed call (tool_crash)
        if isinstance(out, ToolResult):
            return out
        if isinstance(out, (int, float)) and not isinstance(out, bool):
            out = repr(out)
        if not isinstance(out, str):
            return ToolResult(
                False,
                f"{self.name} ({self.origin}) returned {type(out).__name__}; allowed: str or ToolResult",
                error="exception",
            )
        return ToolResult(True, out, numbers=tuple(float(n.value) for n in find_numbers(out)))

    def close(self) -> None:
        return None


def _loaded(kind: type, what: str) -> Callable[[str, Any], Any]:
    def check(name: str, value: Any) -> Any:
        if not isinstance(value, kind) and callable(value):
            value = value()
        if not isinstance(value, kind):
            raise TypeError(
                f"loads {type(value).__name__}; allowed: an agent.qa.data.extensions.{kind.__name__}"
            )
        if value.name != name:
            raise ValueError(f"its name is {value.name!r}; allowed: the entry point's name {name!r}")
        return value

    check.__doc__ = f"Validate a loaded {what}."
    return check


#: Every QA dataset: localfin's own (entry None: :mod:`agent.qa.data.datasets` loads them) and the
#: installed plugins'.
DATASETS_REGISTRY: PluginRegistry[QADataset | None] = PluginRegistry(
    "QA dataset", "localfin.qa_datasets", dict.fromkeys(BUILTIN_DATASETS), _loaded(QADataset, "QA dataset")
)
#: Every tool: localfin's own (entry None: :mod:`agent.qa.solver.toolset` builds them) and the plugins'.
TOOLS_REGISTRY: PluginRegistry[ToolPlugin | None] = PluginRegistry(
    "tool", "localfin.tools", dict.fromkeys(BUILTIN_TOOLS), _loaded(ToolPlugin, "tool")
)


def dataset_names() -> list[str]:
    """Every QA dataset name: the built-ins, then the installed plugins' (by name)."""
    return DATASETS_REGISTRY.names()


def dataset_plugin(name: str) -> QADataset | None:
    """The plugin of dataset ``name`` (None for a built-in); unknown: a ConfigError naming the
    known ones."""
    return DATASETS_REGISTRY.get(name)


def tool_names() -> list[str]:
    """Every tool name: the built-ins, then the installed plugins' (by name)."""
    return TOOLS_REGISTRY.names()


def tool_plugin(name: str) -> ToolPlugin | None:
    """The plugin of tool ``name`` (None for a built-in); unknown: a ConfigError naming the known
    ones."""
    return TOOLS_REGISTRY.get(name)


def plugin_items(plugin: QADataset, path: Path, split: str | None) -> Iterable[Any]:
    """The plugin loader's output, checked: QAItem / SkippedItem / IncompleteItem values only, each
    item's ``question.dataset`` the plugin's name. A loader that raises anything but one of our
    errors (which name the bad input themselves) is a PluginError naming the plugin."""
    from localfin.errors import LocalfinError

    where = DATASETS_REGISTRY.origin(plugin.name)
    try:
        for obj in plugin.load(path, split):
            if isinstance(obj, (SkippedItem, IncompleteItem)):
                yield obj
                continue
            if not isinstance(obj, QAItem):
                raise PluginError(
                    f"QA dataset {plugin.name!r} ({where}) yielded {type(obj).__name__}; "
                    "allowed: QAItem, SkippedItem"
                )
            if obj.question.dataset != plugin.name:
                raise PluginError(
                    f"QA dataset {plugin.name!r} ({where}) yielded item {obj.item_id!r} of dataset "
                    f"{obj.question.dataset!r}; allowed: {plugin.name!r}"
                )
            yield obj
    except LocalfinError:
        raise
    except Exception as exc:  # third-party code: one error naming the plugin
        raise PluginError(
            f"QA dataset {plugin.name!r} ({where}) failed to load {path}: {type(exc).__name__}: {exc}"
        ) from exc


def plugin_score(plugin: QADataset, gold: Gold, prediction: str) -> ItemScore:
    """The plugin scorer's verdict, checked (an ItemScore with a score in [0, 1])."""
    where = DATASETS_REGISTRY.origin(plugin.name)
    try:
        out = plugin.score(gold, prediction)
    except Exception as exc:  # third-party code: one error naming the plugin
        raise PluginError(
            f"scorer of QA dataset {plugin.name!r} ({where}) failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(out, ItemScore) or not 0.0 <= float(out.score) <= 1.0:
        raise PluginError(
            f"scorer of QA dataset {plugin.name!r} ({where}) returned {out!r}; "
            "allowed: an ItemScore with a score in [0, 1]"
        )
    return out
