"""The models a user adds without editing localfin: models files and plugins' entry points.

A models file (``LOCALFIN_MODELS_FILE``, default ``$LOCALFIN_HOME/models.toml``; ``localfin
--models-file FILE``) holds ``[[models]]`` tables::

    [[models]]
    key = "my-llama"                 # the registry key runs and commands name
    extends = "llama-3.1-8b"         # optional: start from this entry's facts
    path = "/data/ckpt/my-llama"     # the checkpoint folder (relative: to this file's folder)
    chat_template = "template.jinja" # optional, overrides the model's own
    tensor_parallel_size = 2
    max_model_len = 16384
    default_max_tokens = 4096        # the completion budget, below the context

Any :class:`~serving.models.registry.ModelSpec` field may be set (:data:`MODELS_FILE_KEYS`). A file's
entry replaces a packaged or plugin entry of the same key (so a file can point ``qwen3-4b`` at
another folder); a plugin (entry-point group ``localfin.models``) may only add keys.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from localfin import configfile as cf
from localfin import env
from localfin.plugins import PluginError, entry_points_of
from serving.errors import ConfigError
from serving.models.model_specs import ModelSpec, Registry, packaged_specs

__all__ = [
    "MODELS_FILE_KEYS",
    "parse_models",
    "load_models_file",
    "plugin_models",
    "forget_plugin_models",
    "with_plugins_and_files",
]

log = logging.getLogger(__name__)

#: The keys of a ``[[models]]`` table: every :class:`ModelSpec` field except ``stand_in`` (set by
#: the rehearsal only), and ``extends``: the key of an entry whose fields this one starts from.
MODELS_FILE_KEYS = (*(f.name for f in fields(ModelSpec) if f.name != "stand_in"), "extends")

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def parse_models(
    doc: Mapping[str, Any],
    *,
    base: Registry | None = None,
    file: str | Path | None = None,
    base_dir: Path | None = None,
) -> list[ModelSpec]:
    """The :class:`ModelSpec` of every ``[[models]]`` table of a parsed models file.

    A table names ``key`` and any other :class:`ModelSpec` field (:data:`MODELS_FILE_KEYS`);
    ``display_name`` defaults to the key and ``source`` to ``local_dir``, which needs ``path``
    (a folder; relative to the file's folder) or ``dirname`` (under ``LOCALFIN_MODELS_DIR``).
    ``extends = "llama-3.1-8b"`` starts from that entry of ``base`` (default: localfin's own
    entries and the plugins'), so a fine-tuned checkpoint only names what differs (its path).
    ``chat_template`` is resolved against the file's folder too. Errors name the file and the key.
    """
    cf.check_keys(doc, ["models"], file=file)
    tables = doc.get("models", [])
    if not isinstance(tables, list):
        allowed = "[[models]] tables (an array of tables)"
        raise cf.key_error("models", f"{tables!r}; allowed: {allowed}", file=file)
    out: list[ModelSpec] = []
    for i, raw in enumerate(tables):
        key = f"models[{i}]"
        if not isinstance(raw, Mapping):
            raise cf.key_error(key, f"{raw!r}; allowed: a table", file=file)
        cf.check_keys(raw, MODELS_FILE_KEYS, key=key, file=file)
        table = dict(raw)
        name = table.get("key")
        if not isinstance(name, str) or not _KEY.match(name):
            allowed = "1-64 letters, digits, '_', '-', '.' (a registry key)"
            raise cf.key_error(f"{key}.key", f"{name!r}; allowed: {allowed}", file=file)
        for k in ("path", "chat_template"):
            v = table.get(k)
            if isinstance(v, str) and base_dir is not None and not Path(v).expanduser().is_absolute():
                table[k] = str(base_dir / v)
        parent = table.pop("extends", None)
        if parent is not None:
            try:
                start = (base or _with_plugins(Registry(packaged_specs()))).get(str(parent))
            except ConfigError as exc:
                raise cf.key_error(f"{key}.extends", str(exc), file=file) from None
            table.setdefault("display_name", name)
            spec = cf.load(ModelSpec, table, key=key, file=file, base=start)
        else:
            table.setdefault("display_name", name)
            table.setdefault("source", "local_dir")
            spec = cf.load(ModelSpec, table, key=key, file=file)
        if spec.source == "local_dir" and spec.path is None and not spec.dirname:
            where = "give path (the model's folder) or dirname (a folder under LOCALFIN_MODELS_DIR)"
            raise cf.key_error(key, where, file=file)
        if name in {s.key for s in out}:
            raise cf.key_error(f"{key}.key", f"{name!r} appears twice in this file", file=file)
        out.append(spec)
    return out


def load_models_file(path: str | Path, base: Registry | None = None) -> list[ModelSpec]:
    """The entries of one models file (see :func:`parse_models`)."""
    p = Path(path).expanduser()
    return parse_models(cf.read_toml(p, "models file"), base=base, file=p, base_dir=p.resolve().parent)


_PLUGINS: list[tuple[ModelSpec, str]] | None = None


def forget_plugin_models() -> None:
    """Forget the plugins' models read so far; the next lookup reads the entry points again."""
    global _PLUGINS
    _PLUGINS = None


def plugin_models() -> list[tuple[ModelSpec, str]]:
    """``(spec, origin)`` of every model the installed plugins register (entry-point group
    ``localfin.models``), read once per process (:func:`forget_plugin_models` reads again)."""
    global _PLUGINS
    if _PLUGINS is not None:
        return _PLUGINS
    out: list[tuple[ModelSpec, str]] = []
    for plugin in entry_points_of("localfin.models"):
        value = plugin.value
        if callable(value) and not isinstance(value, ModelSpec):
            try:
                value = value()
            except Exception as exc:  # third-party code: one error naming the plugin
                raise PluginError(f"{plugin.origin}: calling it failed: {type(exc).__name__}: {exc}") from exc
        items = [value] if isinstance(value, ModelSpec) else value
        try:
            specs = list(items)
        except TypeError:
            specs = [items]
        bad = [type(s).__name__ for s in specs if not isinstance(s, ModelSpec)]
        if bad:
            raise PluginError(
                f"{plugin.origin}: loads {', '.join(bad)}; allowed: a ModelSpec, an iterable of them, or a "
                "callable returning either"
            )
        out += [(s, plugin.origin) for s in specs]
    _PLUGINS = out
    return out


def _with_plugins(reg: Registry) -> Registry:
    """``reg`` (localfin's own entries) with the plugins' models (what ``extends`` may name)."""
    for spec, origin in plugin_models():
        if spec.key in reg:
            raise PluginError(
                f"{origin} registers model {spec.key!r}, which {reg.origin(spec.key)} already has; "
                "rename it (a models file may replace an entry, a plugin may not)"
            )
        reg = reg.with_spec(spec, origin)
    return reg


def with_plugins_and_files(reg: Registry) -> Registry:
    """``reg`` (localfin's own entries) with the plugins' models, then the user's models files."""
    reg = _with_plugins(reg)
    for path in env.models_files():
        specs = load_models_file(path, base=reg)
        for spec in specs:
            if spec.key in reg:
                log.info("models file %s replaces registry entry %r", path, spec.key)
        reg = reg.with_specs(specs, f"file {path}")
    return reg
