"""A small TOML writer for the documents the experiment matrix generates (``tomllib`` only reads).

Writes what :mod:`agent.pairs.experiment.config` reads back: strings, booleans, integers, floats, dates,
arrays of those, tables (nested tables as dotted headers, e.g. ``[model.max_tokens]``) and
arrays of tables (``[[variants]]``). ``tomllib.loads(dumps(doc)) == doc`` for every such
document (tested); anything else raises ``TypeError`` naming the key.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps"]


def _scalar(v: Any, key: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise TypeError(f"{key}={v!r}: TOML here holds finite numbers only")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x, key) for x in v) + "]"
    raise TypeError(f"{key}={v!r}: no TOML value for {type(v).__name__}")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and bool(v) and all(isinstance(x, Mapping) for x in v)


_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _key(k: str) -> str:
    return k if k and set(k) <= _BARE else json.dumps(k, ensure_ascii=False)


def _emit(doc: Mapping[str, Any], prefix: str, out: list[str]) -> None:
    plain = {k: v for k, v in doc.items() if not isinstance(v, Mapping) and not _is_table_array(v)}
    for k, v in plain.items():
        out.append(f"{_key(k)} = {_scalar(v, prefix + k)}")
    for k, v in doc.items():
        name = prefix + _key(k)
        if isinstance(v, Mapping):
            out.append("")
            out.append(f"[{name}]")
            _emit(v, name + ".", out)
        elif _is_table_array(v):
            for item in v:
                out.append("")
                out.append(f"[[{name}]]")
                _emit(item, name + ".", out)


def dumps(doc: Mapping[str, Any]) -> str:
    """``doc`` as TOML text (tables in the order given; plain keys of a table before its
    sub-tables, as TOML requires)."""
    out: list[str] = []
    _emit(doc, "", out)
    return "\n".join(out).lstrip("\n") + "\n"
