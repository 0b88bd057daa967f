"""Helpers shared by the benchmark loaders: typed field access, image lists, tables, and the
split an item belongs to.

Splits are taken as the data names them, never checked against a fixed list: a record's own
``split`` field first, else a split word in the file's name (``tatqa_dataset_test_gold.json``
-> ``test_gold``, ``easy_validation.json`` -> ``validation``, ``train-00000-of-00001.parquet``
-> ``train``) or a folder named exactly as one (Hugging Face's ``default/train/0000.parquet``),
else the ``split`` the caller asked for, else the loader's default.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.qa.core.items import check_split_name
from agent.qa.loaders.records import BadRecord
from localfin.errors import ConfigError

__all__ = ["text_field", "parse_path_list", "render_table", "NAMED_SPLITS", "split_from_name", "item_split"]

#: Split words recognised in file and folder names (the names the benchmarks release).
NAMED_SPLITS = ("test_gold", "train", "validation", "dev", "test")
_SPLIT_IN_NAME = re.compile(r"(?:^|[_\-.\s])(" + "|".join(NAMED_SPLITS) + r")(?=$|[_\-.\s])")


def split_from_name(f: Path) -> str | None:
    """The split a file's name states (first split word of its stem), else its folder's name
    when that is exactly a split word, else None."""
    m = _SPLIT_IN_NAME.search(f.stem.lower())
    if m:
        return m.group(1)
    return f.parent.name.lower() if f.parent.name.lower() in NAMED_SPLITS else None


def item_split(own: Any, f: Path, asked: str | None, default: str) -> str:
    """The split of a record: its own ``split`` value as given, else the file name's, else the
    split asked for, else ``default`` (see the module docstring). A malformed own value is a
    bad record."""
    if own not in (None, ""):
        try:
            return check_split_name(str(own), "split")
        except ConfigError as exc:
            raise BadRecord(str(exc)) from None
    return split_from_name(f) or asked or default


def text_field(rec: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    """``rec[key]`` as a stripped string; a missing or blank required field is a bad record."""
    value = rec.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise BadRecord(f"field {key!r} is missing or empty")
        return ""
    if not isinstance(value, (str, int, float)):
        raise BadRecord(f"field {key!r} has type {type(value).__name__}; expected text")
    return str(value).strip()


def parse_path_list(value: Any, field: str) -> list[str]:
    """A list of image paths given as a JSON list or as the text of a Python list.

    Text is parsed with :func:`ast.literal_eval` (literals only, never code); anything but a
    list of strings is a bad record.
    """
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise BadRecord(f"field {field!r} is not a list literal: {type(exc).__name__}") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise BadRecord(f"field {field!r} must be a list of path strings, got {type(value).__name__}")
    return [v.strip() for v in value]


def render_table(rows: Sequence[Sequence[Any]]) -> str:
    """A table as pipe-separated text lines, one per row (cells' inner whitespace collapsed)."""
    if not isinstance(rows, (list, tuple)):
        raise ConfigError(f"table must be a list of rows, got {type(rows).__name__}")
    width = max((len(r) for r in rows if isinstance(r, (list, tuple))), default=0)
    lines = []
    for r in rows:
        if not isinstance(r, (list, tuple)):
            raise ConfigError(f"table row must be a list of cells, got {type(r).__name__}")
        cells = [" ".join(str(c).split()) if c is not None else "" for c in r]
        cells += [""] * (width - len(cells))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
