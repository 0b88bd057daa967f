"""Errors of the market data layer.

Every validation error names the file, the row (1-based line number for text files, 1-based
data row for Parquet) and the column at fault, so a user can open the file and fix it.
"""

from __future__ import annotations

from pathlib import Path

from localfin.errors import ConfigError, InputError, LocalfinError

__all__ = [
    "DataError",
    "DataValidationError",
    "FileFormatError",
    "MissingColumnError",
    "EmptyInputError",
    "DateParseError",
    "BadValueError",
    "DuplicateRowError",
    "UnsortedInputError",
    "UnknownTickerError",
    "TickerSpellingError",
    "CalendarGapError",
    "CalendarMismatchError",
    "StoreError",
    "MissingStoreError",
    "DataConfigError",
]


class DataError(LocalfinError):
    """Base of the market data layer's errors."""


class DataConfigError(DataError, ConfigError):
    """A data-layer parameter is out of range; the message names it and the allowed values."""


class DataValidationError(DataError, ValueError):
    """An input file failed validation. Carries ``path``, ``row`` and ``column`` (any may be None).

    ``row`` is the 1-based line number in a CSV/JSONL file (the header is line 1) or the 1-based
    data row of a Parquet file; ``row_kind`` says which.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        row: int | None = None,
        column: str | None = None,
        row_kind: str = "line",
    ) -> None:
        self.path = None if path is None else str(path)
        self.row = row
        self.column = column
        self.row_kind = row_kind
        where = []
        if self.path is not None:
            where.append(f"file {self.path}")
        if row is not None:
            where.append(f"{row_kind} {row}")
        if column is not None:
            where.append(f"column {column!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.detail = message


class FileFormatError(DataValidationError):
    """The file is missing, of an unknown type, or cannot be parsed at all (bad CSV/JSON/Parquet)."""


class MissingColumnError(DataValidationError):
    """A required column is absent (after column mapping)."""


class EmptyInputError(DataValidationError):
    """The file has no data rows."""


class DateParseError(DataValidationError):
    """A date cell is empty or not an ISO date (YYYY-MM-DD)."""


class BadValueError(DataValidationError):
    """A cell holds a NaN, non-numeric, non-positive or otherwise impossible value."""


class DuplicateRowError(DataValidationError):
    """A key, e.g. (date, ticker), occurs twice in the file or already exists in the store."""


class UnsortedInputError(DataValidationError):
    """Within one ticker, dates do not strictly increase in file order."""


class UnknownTickerError(DataValidationError, KeyError):
    """A ticker is not in the price pool (the store's tickers plus those being imported)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return ValueError.__str__(self)


class TickerSpellingError(DataValidationError):
    """One file spells a ticker two ways (``aaa`` and ``AAA``); the message names both lines."""


class CalendarGapError(DataValidationError):
    """Two consecutive sessions of one ticker are further apart than the allowed calendar gap."""


class CalendarMismatchError(DataValidationError):
    """A ticker misses more pool sessions inside its own history than the allowed fraction."""


class StoreError(DataError, RuntimeError):
    """The SQLite market store cannot be opened, read or written, or lacks requested data."""


class MissingStoreError(StoreError, InputError):
    """No market store at the given path (a reader never creates one): bad input, exit code 2."""

    exit_code = 2
