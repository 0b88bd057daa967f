"""Registries that installed distributions extend without editing localfin: entry points.

A registry holds named entries of one kind (model backends, models, ...). It is filled from
localfin's own entries and from the entry points of every installed distribution in the
registry's group, the way pytest and lm-evaluation-harness find their plugins. A plugin
distribution declares, in its ``pyproject.toml``::

    [project.entry-points."localfin.backends"]
    mybackend = "my_package.backend:open_my_backend"

and, once installed (``pip install my-package``), ``mybackend`` is a backend kind everywhere a
kind is accepted. The groups and what each entry point must load are listed in
:data:`GROUPS`; the guide is ``docs/extending.md``.

Entry points are read once per registry (on first use; :meth:`PluginRegistry.refresh` reads them
again) and loaded then. A plugin that fails to import, loads something of the wrong kind, or
registers a name localfin already has is a :class:`PluginError` naming the distribution and the
entry point: a plugin never silently replaces a built-in entry or disappears.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

from localfin.errors import ConfigError, LocalfinError

__all__ = [
    "GROUPS",
    "PluginError",
    "Plugin",
    "entry_points_of",
    "Installed",
    "review",
    "PluginRegistry",
    "BUILTIN",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The entry-point groups localfin reads, and what an entry point of each must load.
GROUPS: Mapping[str, str] = {
    "localfin.backends": (
        "a backend factory: a callable (spec: serving.open.BackendSpec, registry: "
        "serving.models.registry.Registry) -> serving.chat.backend.Backend; the entry point's name "
        "is the kind"
    ),
    "localfin.models": (
        "model entries: a serving.models.registry.ModelSpec, an iterable of them, or a callable returning "
        "either; the entry point's name only names the plugin"
    ),
    "localfin.baselines": (
        "a pair-trading baseline: an agent.pairs.baselines.plugins.BaselinePlugin (or a callable "
        "returning one) whose name is the entry point's name"
    ),
    "localfin.qa_datasets": (
        "a QA dataset with its scorer: an agent.qa.data.extensions.QADataset (or a callable returning "
        "one) whose name is the entry point's name"
    ),
    "localfin.tools": (
        "a FinAcumen tool: an agent.qa.data.extensions.ToolPlugin (or a callable returning one) whose "
        "name is the entry point's name"
    ),
}

#: the origin of localfin's own entries
BUILTIN = "localfin"


class PluginError(LocalfinError):
    """An installed plugin is broken: it does not import, loads the wrong kind of object, or
    registers a name that is already taken (exit code 1: the installation needs fixing)."""


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point: its ``name``, the distribution that declares it (``dist``), the
    ``target`` it points at (``module:attr``) and the loaded object (``value``)."""

    name: str
    dist: str
    target: str
    value: Any

    @property
    def origin(self) -> str:
        """How listings show where an entry came from: ``plugin <dist> (<target>)``."""
        return f"plugin {self.dist} ({self.target})"


def _dist_name(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) or (dist.metadata["Name"] if dist is not None else None)
    return str(name or "unknown distribution")


def _dist_version(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(getattr(dist, "version", None) or "unknown")


def _found(group: str) -> list[metadata.EntryPoint]:
    """The entry points of ``group`` by name, then distribution; one distribution seen twice on
    sys.path (an editable install and a copy) counts once."""
    if group not in GROUPS:
        raise ConfigError(f"entry-point group {group!r}; allowed: {', '.join(GROUPS)}")
    found = sorted(metadata.entry_points(group=group), key=lambda ep: (ep.name, _dist_name(ep), ep.value))
    out: list[metadata.EntryPoint] = []
    seen: set[tuple[str, str, str]] = set()
    for ep in found:
        ident = (ep.name, _dist_name(ep), ep.value)
        if ident not in seen:
            seen.add(ident)
            out.append(ep)
    return out


def entry_points_of(group: str) -> list[Plugin]:
    """Every entry point of ``group`` in the installed distributions, loaded, in a fixed order
    (by name, then distribution). An entry point that fails to load is a :class:`PluginError`."""
    out: list[Plugin] = []
    for ep in _found(group):
        ident = (ep.name, _dist_name(ep), ep.value)
        try:
            value = ep.load()
        except Exception as exc:  # any failure of third-party code on import: one error naming it
            raise PluginError(
                f"plugin {ident[1]}: entry point {ep.name} = {ep.value!r} in group {group} does not load: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        out.append(Plugin(ep.name, ident[1], ep.value, value))
    return out


@dataclass(frozen=True)
class Installed:
    """One installed entry point as ``localfin plugins list`` shows it: its ``kind`` (the group
    without ``localfin.``), ``name``, the distribution and its version, the ``target`` it points
    at, and ``problem``: why localfin refuses it ("" when it loads and is accepted)."""

    kind: str
    name: str
    dist: str
    version: str
    target: str
    problem: str = ""


def review(
    group: str, builtins: Mapping[str, Any] | None = None, check: Callable[[str, Any], Any] | None = None
) -> list[Installed]:
    """Every entry point of ``group``, each loaded and checked as a registry of ``builtins``
    with ``check`` would (:class:`PluginRegistry`), without raising: a plugin that does not load,
    is refused by ``check`` or takes a name already taken carries its ``problem``."""
    taken = dict.fromkeys(builtins or {}, BUILTIN)
    out: list[Installed] = []
    for ep in _found(group):
        dist = _dist_name(ep)
        problem = ""
        try:
            value = ep.load()
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code on import: shown
            problem = f"does not load: {type(exc).__name__}: {exc}"
        else:
            if ep.name in taken and group != "localfin.models":  # model plugins' names only name them
                problem = f"{ep.name!r} is taken by {taken[ep.name]}; rename the entry point"
            elif check is not None:
                try:
                    check(ep.name, value)
                except (TypeError, ValueError) as exc:
                    problem = f"refused: {exc}"
        taken.setdefault(ep.name, f"plugin {dist}")
        kind = group.removeprefix("localfin.")
        out.append(Installed(kind, ep.name, dist, _dist_version(ep), ep.value, problem))
    return out


class PluginRegistry(Generic[T]):
    """Named entries of one kind: localfin's own (``builtins``) and the entry points of ``group``.

    ``what`` names the kind in messages (``backend``); ``check`` (optional) validates a plugin's
    loaded object and returns the entry to store (raise ``TypeError``/``ValueError`` to refuse it).
    Lookups of an unknown name raise :class:`~localfin.errors.ConfigError` naming the known ones.
    """

    def __init__(
        self,
        what: str,
        group: str,
        builtins: Mapping[str, T],
        check: Callable[[str, Any], T] | None = None,
    ) -> None:
        if group not in GROUPS:
            raise ConfigError(f"entry-point group {group!r}; allowed: {', '.join(GROUPS)}")
        self.what = what
        self.group = group
        self._builtins = dict(builtins)
        self._check = check
        self._entries: dict[str, T] | None = None
        self._origins: dict[str, str] = {}

    def refresh(self) -> None:
        """Forget the entry points read so far; the next lookup reads them again."""
        self._entries = None
        self._origins = {}

    def _load(self) -> dict[str, T]:
        if self._entries is not None:
            return self._entries
        entries = dict(self._builtins)
        origins = dict.fromkeys(entries, BUILTIN)
        for plugin in entry_points_of(self.group):
            if plugin.name in entries:
                raise PluginError(
                    f"{plugin.origin} registers {self.what} {plugin.name!r}, which {origins[plugin.name]} "
                    "already has; rename the entry point"
                )
            try:
                entries[plugin.name] = self._check(plugin.name, plugin.value) if self._check else plugin.value
            except (TypeError, ValueError) as exc:
                raise PluginError(f"{plugin.origin}: {self.what} {plugin.name!r} is refused: {exc}") from exc
            origins[plugin.name] = plugin.origin
            log.debug("%s %r from %s", self.what, plugin.name, plugin.origin)
        self._entries, self._origins = entries, origins
        return entries

    def get(self, name: str) -> T:
        """The entry ``name``; unknown: a ConfigError naming the known ones."""
        entries = self._load()
        try:
            return entries[name]
        except KeyError:
            raise ConfigError(f"unknown {self.what} {name!r}; allowed: {', '.join(entries)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._builtins or name in self._load()

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def names(self) -> list[str]:
        """Every name: localfin's own first, then the plugins' (by name)."""
        return list(self._load())

    def review(self) -> list[Installed]:
        """Every installed entry point of the group, with why it is refused, if it is
        (:func:`review`); never raises for a broken plugin."""
        return review(self.group, self._builtins, self._check)

    def origin(self, name: str) -> str:
        """``localfin`` or ``plugin <dist> (<target>)``."""
        self.get(name)
        return self._origins[name]
