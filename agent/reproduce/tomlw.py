"""A small TOML writer for the documents the reproduction configs hold (strings, numbers,
booleans, dates, arrays of scalars, tables, arrays of tables, and inline tables inside arrays of
tables). It exists so a shrunk (smoke) or augmented document can be written as the matrix file
the runner reads; :func:`dumps` output always parses back to the same document (tested)."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from localfin.errors import ConfigError

__all__ = ["dumps", "strip_tables"]

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _scalar(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ConfigError(f"{where}={v}; TOML numbers must be finite here")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x, where) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_scalar(x, where)}" for k, x in v.items()) + " }"
    raise ConfigError(f"{where}: cannot write a {type(v).__name__} as TOML")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and bool(v) and all(isinstance(x, Mapping) for x in v)


def _emit(table: Mapping[str, Any], prefix: str, out: list[str]) -> None:
    subs = []
    for k, v in table.items():
        if isinstance(v, Mapping) or _is_table_array(v):
            subs.append((k, v))
        else:
            out.append(f"{_key(k)} = {_scalar(v, prefix + k)}")
    for k, v in subs:
        name = f"{prefix}{_key(k)}"
        if isinstance(v, Mapping):
            out += ["", f"[{name}]"]
            _emit(v, name + ".", out)
        else:
            for item in v:
                out += ["", f"[[{name}]]"]
                # nested tables inside an array entry are written inline (one level is enough here)
                out += [f"{_key(ik)} = {_scalar(iv, name + '.' + ik)}" for ik, iv in item.items()]


def dumps(doc: Mapping[str, Any]) -> str:
    """``doc`` as TOML text."""
    out: list[str] = []
    _emit(doc, "", out)
    return "\n".join(out).lstrip("\n") + "\n"


def strip_tables(text: str, names: tuple[str, ...]) -> str:
    """``text`` without the tables (and arrays of tables) whose header names one of ``names`` or
    a sub-table of one, comments and layout of everything else kept."""
    keep: list[str] = []
    skipping = False
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            head = m.group(1)
            skipping = any(head == n or head.startswith(n + ".") for n in names)
        if not skipping:
            keep.append(line)
    return "\n".join(keep).rstrip("\n") + "\n"
