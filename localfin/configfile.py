"""The one config layer of every TOML file localfin reads or writes (experiments, matrices, the
baselines and lifecycle tables, reproduction configs and their QA plans).

The values stay the packages' frozen dataclasses; this module only moves TOML in and out of them:

- :func:`read_toml` reads a file (a missing file or bad TOML is a :class:`ConfigError` naming it);
- :func:`load` turns one parsed table into a dataclass value, validated by pydantic in strict
  mode: no coercion (``"1"`` is not an integer, ``1`` is not ``true``), unknown keys refused,
  nested dataclasses and the elements of arrays checked, then the value's own ``__post_init__``
  checks (which name the key and the allowed range);
- :func:`config_error` is the one translator from pydantic's errors to ours: one line
  ``file F, key experiment.seeds[1]='1'; allowed: an integer`` (or ``unknown key(s) ...;
  allowed: ...``, ``key K is required (missing key)``, ``key K: <the value's own message>``),
  raised as :class:`ConfigError` (exit code 2);
- :func:`merge` derives a config from a config (tables merge key by key, recursively; anything
  else replaces), so nothing ever edits TOML text;
- :func:`dumps` is the one TOML writer (``tomli-w``).

Why JSON mode: TOML is a JSON-like text format (dates are written as strings in our files,
arrays are lists), and pydantic's strict JSON mode accepts exactly its scalars: an ISO date
string for a date, an array for a tuple, an integer for a float, and nothing looser. The
dataclasses validated here are made closed (``extra="forbid"``) and strict the first time they
are loaded, by setting pydantic's ``__pydantic_config__`` on them and on the dataclasses nested
in their fields; nothing else in localfin validates them with pydantic.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from localfin.errors import ConfigError

__all__ = [
    "read_toml",
    "load",
    "check_keys",
    "key_error",
    "config_error",
    "merge",
    "dumps",
    "plain",
]

T = TypeVar("T")

#: pydantic config of every dataclass loaded from a file: no coercion, no unknown keys.
_CLOSED: dict[str, Any] = {"strict": True, "extra": "forbid"}

#: What each pydantic error type means in words (the "allowed" part of our message).
_ALLOWED = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "str": "a string",
    "tuple": "an array",
    "list": "an array",
    "set": "an array",
    "frozen_set": "an array",
    "dict": "a table",
    "mapping": "a table",
    "dataclass": "a table",
    "model": "a table",
    "date": "a date YYYY-MM-DD",
    "datetime": "a date and time",
    "path": "a path (a string)",
    "none": "nothing",
}


def _where(file: str | Path | None) -> str:
    return f"file {file}, " if file is not None else ""


def read_toml(path: str | Path, what: str = "config") -> dict[str, Any]:
    """The parsed TOML document at ``path``; an unreadable file or bad TOML is a ConfigError
    (``cannot read config F: ...`` / ``config F is not valid TOML: ...``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {p}: {exc}") from exc
    return loads_toml(text, f"{what} {p}")


def loads_toml(text: str, what: str = "config") -> dict[str, Any]:
    """``text`` parsed as TOML; bad TOML is a ConfigError naming ``what``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} is not valid TOML: {exc}") from exc


# -- loading -------------------------------------------------------------------------------------


def _dataclasses_in(annotation: Any) -> list[type]:
    """The dataclass types an annotation names (inside unions, tuples, mappings)."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return [annotation]
    out: list[type] = []
    for arg in typing.get_args(annotation):
        out += _dataclasses_in(arg)
    return out


def _close(cls: type, seen: set[type]) -> None:
    if cls in seen:
        return
    seen.add(cls)
    if "__pydantic_config__" not in cls.__dict__:
        cls.__pydantic_config__ = _CLOSED  # type: ignore[attr-defined]
    for hint in typing.get_type_hints(cls).values():
        for inner in _dataclasses_in(hint):
            _close(inner, seen)


@cache
def _adapter(cls: type) -> Any:
    from pydantic import TypeAdapter

    _close(cls, set())
    return TypeAdapter(cls)


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


def load(cls: type[T], table: Any, *, key: str = "", file: str | Path | None = None, base: Any = None) -> T:
    """``table`` (a parsed TOML table) as a ``cls`` value.

    Strict types, unknown keys refused, nested dataclasses and array elements checked, then
    ``cls.__post_init__``. Any problem is one :class:`ConfigError` naming ``file`` and the key
    (``key`` is the table's own key, e.g. ``model`` or ``variants[1]``; empty at the top).
    ``base``: a value of ``cls`` the table is merged over (:func:`merge`), so that a nested table
    that names one key keeps the base's other values (default: ``cls``'s own field defaults)."""
    from pydantic import ValidationError

    if not isinstance(table, Mapping):
        raise ConfigError(f"{_where(file)}key {key or '<top>'}={table!r}; allowed: a table")
    if base is not None:
        table = merge(plain(base), table)
    try:
        text = json.dumps(table, default=_json_default, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{_where(file)}key {key or '<top>'}: {exc}") from None
    try:
        return _adapter(cls).validate_json(text, strict=True)
    except ValidationError as exc:
        raise config_error(exc, cls, key=key, file=file) from None


def _join(key: str, loc: Sequence[Any]) -> str:
    out = key
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def _unwrap(annotation: Any) -> Any:
    """``X | None`` (or a union holding one dataclass) as the dataclass ``X``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = _dataclasses_in(annotation)
        if len(found) == 1:
            return found[0]
    return annotation


def _field_names(cls: Any, loc: Sequence[Any]) -> list[str]:
    """The field names of the dataclass found at ``loc`` inside ``cls`` ([] when none)."""
    current: Any = cls
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            args = [a for a in typing.get_args(current) if a is not Ellipsis]
            current = args[0] if len(args) == 1 else (args[part] if part < len(args) else None)
        elif dataclasses.is_dataclass(current):
            current = typing.get_type_hints(current).get(str(part))
        else:
            return []
    current = _unwrap(current)
    return [f.name for f in dataclasses.fields(current)] if dataclasses.is_dataclass(current) else []


def _allowed(err: Mapping[str, Any]) -> str:
    kind = str(err["type"])
    if kind == "literal_error":
        return str(err.get("ctx", {}).get("expected", "one of the listed values"))
    for prefix, words in _ALLOWED.items():
        if kind.startswith(prefix + "_"):
            return words
    return str(err.get("msg", kind)).lower()


def config_error(exc: Any, cls: Any, *, key: str = "", file: str | Path | None = None) -> ConfigError:
    """pydantic's ``ValidationError`` of loading ``cls`` as ONE :class:`ConfigError` line: the
    first problem (unknown keys and missing keys of one table grouped), naming file and key."""
    errors = list(exc.errors())
    first = errors[0]
    loc = tuple(first["loc"])
    kind = str(first["type"])
    where = _where(file)
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        parent = loc[:-1]
        group = [e for e in errors if e["type"] == kind and tuple(e["loc"])[:-1] == parent]
        keys = [_join(key or ("<top>" if not parent else ""), tuple(e["loc"])) for e in group]
        allowed = _field_names(cls, parent)
        msg = f"unknown key(s) {', '.join(keys)}" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        rest = len(errors) - len(group)
    elif kind == "missing":
        parent = loc[:-1]
        group = [e for e in errors if e["type"] == kind and tuple(e["loc"])[:-1] == parent]
        keys = [_join(key, tuple(e["loc"])) for e in group]
        if isinstance(loc[-1], int):
            msg = f"key {_join(key, parent)} has too few items (missing key {keys[0]})"
        elif len(keys) == 1:
            msg = f"key {keys[0]} is required (missing key)"
        else:
            msg = f"keys {', '.join(keys)} are required (missing keys)"
        rest = len(errors) - len(group)
    elif kind == "value_error":
        own = first.get("ctx", {}).get("error")
        text = str(own) if own is not None else str(first["msg"])
        k = _join(key, loc)
        msg = f"key {k}: {text}" if k else text
        rest = len(errors) - 1
    else:
        k = _join(key, loc) or "<top>"
        msg = f"key {k}={first.get('input')!r}; allowed: {_allowed(first)}"
        rest = len(errors) - 1
    more = f" (and {rest} more problem{'s' if rest > 1 else ''})" if rest > 0 else ""
    return ConfigError(f"{where}{msg}{more}")


def check_keys(
    table: Mapping[str, Any], allowed: Sequence[str], *, key: str = "", file: str | Path | None = None
) -> None:
    """Refuse keys of a raw table outside ``allowed`` (the same message as :func:`load`'s)."""
    unknown = [k for k in table if k not in allowed]
    if unknown:
        names = ", ".join(_join(key or "<top>", (k,)) for k in unknown)
        raise ConfigError(f"{_where(file)}unknown key(s) {names}; allowed: {', '.join(allowed)}")


def key_error(key: str, message: str, *, file: str | Path | None = None) -> ConfigError:
    """A :class:`ConfigError` about ``key`` in the same form as the translated ones."""
    return ConfigError(f"{_where(file)}key {key}: {message}")


# -- deriving and writing ------------------------------------------------------------------------


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: tables merge key by key (recursively); anything else (values,
    arrays, arrays of tables such as ``[[variants]]``) replaces."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def plain(value: Any) -> Any:
    """A dataclass value (or a document holding some) as plain TOML/JSON-ready data: tables as
    dicts, tuples as lists, paths as strings; dates stay dates."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _check_writable(value: Any, key: str) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise TypeError(f"{key}={value!r}: TOML here holds finite numbers only")
    if isinstance(value, Mapping):
        return {k: _check_writable(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_check_writable(v, f"{key}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (types.FunctionType, type)):
        raise TypeError(f"{key}={value!r}: no TOML value for {type(value).__name__}")
    return value


def dumps(doc: Mapping[str, Any]) -> str:
    """``doc`` as TOML text (``tomli-w``; tables in the order given). ``tomllib.loads(dumps(doc))
    == doc`` for the documents localfin writes; a non-finite number or a value TOML cannot hold
    (``None``) raises ``TypeError`` naming the key."""
    import tomli_w

    return tomli_w.dumps(_check_writable(plain(doc), ""))
