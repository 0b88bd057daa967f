"""What each field of a config dataclass means, read from its source: the generator of the
configuration reference (``docs/reference/config.md``) and of its test that every key a config
file accepts is described.

A field's description is, first found:

1. the ``#:`` comment lines right above the field (``#: what it is``), or a comment at the end
   of the field's line (``x: int = 3  # what it is``);
2. an entry of the class docstring that names it: ``name: text``, ``name / other: text`` or
   ``name, other: text`` (names may be in double back-quotes), in an ``Attributes:`` section or
   as free lines, several on a line when separated by ``;``; the entry goes on over the
   following lines until a blank line or the next entry.

Types are shown in TOML's words (``integer``, ``array of strings``, ``table``), defaults as TOML
values; ``allowed`` lists the values of a ``Literal`` type and ``true, false`` for booleans.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import inspect
import io
import re
import textwrap
import tokenize
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["FieldDoc", "field_docs", "describe", "type_words", "toml_value"]


@dataclass(frozen=True)
class FieldDoc:
    """One key of a config table: its ``name``, ``type`` and ``default`` in TOML's words
    (``default`` empty: required), ``allowed`` values where the type says them, and the
    ``description`` from the source (empty: none found). ``table``: the dataclass of a nested
    table (None for a value)."""

    name: str
    type: str
    default: str
    allowed: str
    description: str
    table: type | None = None


def _comments(cls: type) -> dict[str, str]:
    """``#:`` comments above fields and end-of-line comments of fields, by field name."""
    try:
        lines, _ = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return {}
    source = textwrap.dedent("".join(lines))
    src_lines = source.splitlines()
    tail: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and src_lines[tok.start[0] - 1][: tok.start[1]].strip():
            tail[tok.start[0]] = tok.string.lstrip("#").strip()
    out: dict[str, str] = {}
    body = ast.parse(source).body[0]
    for node in getattr(body, "body", []):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above: list[str] = []
        k = node.lineno - 2
        while k >= 0 and src_lines[k].strip().startswith("#:"):
            above.insert(0, src_lines[k].strip()[2:].strip())
            k -= 1
        text = " ".join(above) or tail.get(node.lineno, "")
        if text:
            out[node.target.id] = text
    return out


_ENTRY = re.compile(r"^\s*((?:``)?\w+(?:``)?(?:\s*(?:,|/)\s*(?:``)?\w+(?:``)?)*)\s*:\s+(\S.*)$")


def _docstring_entries(cls: type, names: set[str]) -> dict[str, str]:
    """Entries ``name: text`` of the class docstring; several may share a line when separated
    by ``;`` (``lr: learning rate; gamma: discount``)."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    out: dict[str, str] = {}
    current: list[str] = []
    texts: list[str] = []

    def flush() -> None:
        if current:
            text = " ".join(t.strip() for t in texts).strip().rstrip(";").strip()
            for name in current:
                out.setdefault(name, text)

    for line in doc.splitlines():
        if not line.strip():
            flush()
            current, texts = [], []
            continue
        for k, segment in enumerate(re.split(r";\s+", line)):
            m = _ENTRY.match(segment)
            found = [n.strip("`") for n in re.split(r"\s*[,/]\s*", m.group(1))] if m else []
            if found and all(n in names for n in found):
                flush()
                current, texts = found, [m.group(2)]
            elif current and k:
                texts[-1] += "; " + segment
            elif current:
                texts.append(segment)
    flush()
    return out


@cache
def field_docs(cls: type) -> Mapping[str, str]:
    """The description of every documented field of the dataclass ``cls`` (see module doc)."""
    names = {f.name for f in dataclasses.fields(cls)}
    found = _docstring_entries(cls, names)
    found.update(_comments(cls))
    return {k: " ".join(v.split()) for k, v in found.items() if k in names}


def _is_table(tp: Any) -> type | None:
    return tp if dataclasses.is_dataclass(tp) and isinstance(tp, type) else None


_WORDS = {
    int: "integer",
    float: "number",
    bool: "boolean",
    str: "string",
    dt.date: "date (YYYY-MM-DD)",
    dt.datetime: "date and time",
    Path: "path (string)",
    Any: "any value",
}


def type_words(tp: Any) -> str:
    """``tp`` in TOML's words: ``integer``, ``array of strings``, ``table``, ``string or unset``."""
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp) if a is not Ellipsis]
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        words = " or ".join(type_words(a) for a in inner)
        return f"{words} or unset" if len(inner) < len(args) else words
    if origin is typing.Literal:
        return "one of the allowed values"
    if origin in (tuple, list, set, frozenset) or tp in (tuple, list):
        raw = typing.get_args(tp)
        if origin is tuple and raw and Ellipsis not in raw:  # a fixed-length tuple
            return "array [" + ", ".join(type_words(a) for a in raw) + "]"
        if not args:
            return "array"
        inner = type_words(args[0])
        return f"array of {inner}s" if inner.isalpha() else f"array of ({inner})"
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        return "table"
    if _is_table(tp):
        return "table"
    return _WORDS.get(tp, getattr(tp, "__name__", str(tp)))


def toml_value(value: Any) -> str:
    """A default shown as a TOML value (``unset`` for None; nested tables as ``(table)``)."""
    if value is None:
        return "unset"
    if dataclasses.is_dataclass(value):
        return "(table)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '""' if not value else '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, (dt.date, Path)):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _allowed(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return ", ".join(toml_value(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        parts = [_allowed(a) for a in typing.get_args(tp) if a is not type(None)]
        return ", ".join(p for p in parts if p)
    if tp is bool:
        return "true, false"
    return ""


def describe(cls: type, skip: tuple[str, ...] = ()) -> list[FieldDoc]:
    """Every field of the dataclass ``cls`` (but ``skip``) as a :class:`FieldDoc`, in order."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        tp = hints.get(f.name, Any)
        if f.default is not dataclasses.MISSING:
            default = toml_value(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = toml_value(f.default_factory())
        else:
            default = ""
        table = None
        for cand in (tp, *typing.get_args(tp)):
            table = table or _is_table(cand)
        out.append(FieldDoc(f.name, type_words(tp), default, _allowed(tp), docs.get(f.name, ""), table))
    return out
