"""Helpers shared by the benchmark loaders: typed field access, skip records, image lists."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.qa.datasets import Row, SkippedItem
from localfin.errors import ConfigError, InputError

__all__ = ["BadRecord", "skip_of", "text_field", "parse_path_list", "render_table", "parquet_rows"]


class BadRecord(ValueError):
    """A record that cannot become an item; the message is the reason listed in the report."""


def skip_of(row: Row | tuple[Path, int, str], item_id: str = "", reason: str = "") -> SkippedItem:
    """The :class:`SkippedItem` of a row (or of an unparsable line from ``iter_json_rows``)."""
    if isinstance(row, tuple):
        path, line, why = row
        return SkippedItem(str(path), line, "", why)
    return SkippedItem(str(row.path), row.line, item_id, reason)


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


def parquet_rows(f: Path, columns: Sequence[str] | None = None) -> Iterator[Row]:
    """Rows of a parquet file as dicts (only ``columns`` that exist, when given)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(f).names
        cols = None if columns is None else [c for c in columns if c in names]
        table = pq.read_table(f, columns=cols)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read parquet file {f}: {exc}") from exc
    for n, rec in enumerate(table.to_pylist(), start=1):
        yield Row(f, n, rec)
