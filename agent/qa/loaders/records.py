"""The base every loader stands on: raw records of a file, the records a load had to skip, and
the rule that a file of which nothing loads is an error.

A loader turns each record of a benchmark file into a :class:`~agent.qa.core.items.QAItem` or, when
it cannot, a :class:`SkippedItem` naming the file, the record's position and the reason; an
item that loads with a part missing (an image file not in this copy) is followed by an
:class:`IncompleteItem` saying what. :func:`each_record` runs that loop for a loader and
:func:`whole_file` turns "every record of this file was skipped" into an
:class:`~localfin.errors.InputError` naming the commonest reason and its count: a file that
loads nothing is a wrong file or a wrong layout, never an empty benchmark.

This module imports nothing of :mod:`agent.qa.data.datasets` (which dispatches to the loaders), so
the loaders and the entry point do not import each other.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.qa.core.items import QAItem
from localfin.errors import ConfigError, InputError

__all__ = [
    "Row",
    "BadLine",
    "SkippedItem",
    "IncompleteItem",
    "Produced",
    "BadRecord",
    "skip_of",
    "read_text",
    "iter_json_rows",
    "parquet_rows",
    "each_record",
    "whole_file",
    "reason_kind",
]


@dataclass(frozen=True)
class Row:
    """One raw record of a benchmark file, with where it came from (1-based ``line``: the line
    of a JSONL file, the position in a JSON array or a parquet table)."""

    path: Path
    line: int
    data: Any


@dataclass(frozen=True)
class BadLine:
    """A JSONL line that is not JSON: listed as skipped, never raised."""

    path: Path
    line: int
    reason: str


@dataclass(frozen=True)
class SkippedItem:
    """A record that could not become an item.

    Attributes:
        path: the file it is in.
        line: 1-based line (JSONL) or 1-based position (JSON array, parquet table); for a
            TAT-QA ``dataset_raw`` file the position of the question's document.
        item_id: its id when one could be read, else "".
        reason: what was wrong, in words.
    """

    path: str
    line: int
    item_id: str
    reason: str


@dataclass(frozen=True)
class IncompleteItem:
    """An item that loaded with a part missing (e.g. an image file absent from this copy).

    Attributes: as :class:`SkippedItem`; ``reason`` says what is missing.
    """

    path: str
    line: int
    item_id: str
    reason: str


#: What a loader yields: items, skipped records, and notes on items loaded incomplete.
Produced = QAItem | SkippedItem | IncompleteItem


class BadRecord(ValueError):
    """A record that cannot become an item; the message is the reason listed in the report."""


def skip_of(row: Row | BadLine, item_id: str = "", reason: str = "") -> SkippedItem:
    """The :class:`SkippedItem` of a row (or of an unparsable line from ``iter_json_rows``)."""
    if isinstance(row, BadLine):
        return SkippedItem(str(row.path), row.line, "", row.reason)
    return SkippedItem(str(row.path), row.line, item_id, reason)


def read_text(path: Path) -> str:
    """The UTF-8 text of a benchmark file; a missing or unreadable file raises InputError."""
    if not path.exists():
        raise InputError(f"benchmark file not found: {path}")
    if not path.is_file():
        raise InputError(f"benchmark path {path} is not a file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read benchmark file {path}: {exc}") from exc


def iter_json_rows(path: Path, *, list_keys: Sequence[str] = ("data",)) -> Iterator[Row | BadLine]:
    """Records of a JSONL file (one per non-blank line) or of a JSON file holding an array (or
    an object whose value under one of ``list_keys`` is one). A JSONL line that is not valid
    JSON comes out as a :class:`BadLine`; a JSON file that is not valid JSON raises."""
    text = read_text(path)
    if path.suffix.lower() == ".jsonl":
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield Row(path, n, json.loads(line))
            except json.JSONDecodeError as exc:
                yield BadLine(path, n, f"invalid JSON: {exc.msg} at column {exc.colno}")
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"benchmark file {path} is not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    if isinstance(data, dict):
        data = next((data[k] for k in list_keys if isinstance(data.get(k), list)), data)
    if not isinstance(data, list):
        raise InputError(
            f"benchmark file {path} holds a JSON {type(data).__name__}; expected an array of items"
        )
    for n, rec in enumerate(data, start=1):
        yield Row(path, n, rec)


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


def each_record(
    rows: Iterable[Row | BadLine],
    make: Callable[[Row, dict[str, Any]], Iterable[Produced]],
    id_of: Callable[[dict[str, Any]], str],
) -> Iterator[Produced]:
    """Run ``make`` on every record that is a JSON object; bad lines, non-objects and records
    ``make`` rejects (BadRecord, ConfigError) come out as :class:`SkippedItem` (with
    ``id_of(record)`` as the item id)."""
    for row in rows:
        if isinstance(row, BadLine):
            yield skip_of(row)
            continue
        rec = row.data
        if not isinstance(rec, dict):
            yield skip_of(row, "", f"record is a JSON {type(rec).__name__}, expected an object")
            continue
        try:
            yield from list(make(row, rec))
        except (BadRecord, ConfigError) as exc:
            yield skip_of(row, id_of(rec), str(exc))


def reason_kind(reason: str) -> str:
    """A reason without its particulars (the text before the first ': '), to count reasons
    that differ only in the file or value they name."""
    return reason.split(": ", 1)[0].strip()


def whole_file(path: Path, produced: Iterable[Produced]) -> Iterator[Produced]:
    """Pass ``produced`` (the output for one file) through; once it is exhausted, raise
    InputError if it skipped at least one record and loaded none."""
    loaded = 0
    skipped: list[SkippedItem] = []
    for obj in produced:
        if isinstance(obj, QAItem):
            loaded += 1
        elif isinstance(obj, SkippedItem):
            skipped.append(obj)
        yield obj
    if loaded == 0 and skipped:
        kinds = Counter(reason_kind(s.reason) for s in skipped)
        kind, count = kinds.most_common(1)[0]
        example = next(s for s in skipped if reason_kind(s.reason) == kind)
        raise InputError(
            f"no item of {path} could be loaded: all {len(skipped)} records were skipped; commonest "
            f"reason ({count} of {len(skipped)}): {example.reason}"
            + (f" (item {example.item_id})" if example.item_id else "")
        )
