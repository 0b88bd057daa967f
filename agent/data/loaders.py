"""Readers of long price, news and company files (CSV, CSV.GZ, JSONL, JSON, Parquet).

Each ``load_*`` function reads one file, maps its columns onto the canonical names, validates
every cell (see :mod:`agent.data.validate`) and returns a :class:`Loaded` table; nothing is
written anywhere. Row numbers in errors are file line numbers for CSV/JSONL (header = line 1)
and 1-based data rows for Parquet/JSON arrays.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from agent.data.errors import (
    BadValueError,
    EmptyInputError,
    FileFormatError,
    MissingColumnError,
)
from agent.data.jumps import PriceJump, find_jumps
from agent.data.validate import (
    ImportConfig,
    Where,
    check_gaps,
    check_ohlc,
    check_sorted_per_ticker,
    check_unique,
    parse_dates,
    parse_numbers,
    parse_text,
    parse_tickers,
    plain,
)

__all__ = [
    "RawTable",
    "Loaded",
    "ColumnMap",
    "PRICE_ALIASES",
    "NEWS_ALIASES",
    "COMPANY_ALIASES",
    "read_table",
    "resolve_columns",
    "load_prices",
    "load_news",
    "load_companies",
]

log = logging.getLogger(__name__)

ColumnMap = Mapping[str, "str | Sequence[str]"]

# canonical name -> accepted source names, in order of preference (case-insensitive); when
# several are present, each row takes the first non-empty one (e.g. `security`, then `long_name`).
PRICE_ALIASES: dict[str, tuple[str, ...]] = {
    "date": ("date",),
    "ticker": ("ticker", "symbol"),
    "open": ("open",),
    "high": ("high",),
    "low": ("low",),
    "close": ("close",),
    "adj_close": ("adj_close", "adj close", "adjclose"),
    "volume": ("volume",),
    "group": ("group", "sector"),
}
NEWS_ALIASES: dict[str, tuple[str, ...]] = {
    "date": ("date",),
    "ticker": ("ticker", "symbol"),
    "headline": ("headline", "title"),
    "summary": ("summary", "highlights", "body", "text"),
    "source": ("source", "url", "publisher"),
}
COMPANY_ALIASES: dict[str, tuple[str, ...]] = {
    "ticker": ("ticker", "symbol"),
    "name": ("name", "security", "long_name", "company"),
    "sector": ("sector", "gics_sector", "yahoo_sector", "group"),
    "description": ("description", "business_description", "long_business_summary"),
}
_PRICE_COLS = ("open", "high", "low", "close", "adj_close")


@dataclass(frozen=True, eq=False)
class RawTable:
    """A file's cells as read (text for CSV, native types for JSON/Parquet) and their row numbers."""

    path: str
    frame: pd.DataFrame
    rows: np.ndarray
    row_kind: str

    @property
    def where(self) -> Where:
        return Where(self.path, self.rows, self.row_kind)


@dataclass(frozen=True, eq=False)
class Loaded:
    """A validated table in canonical columns, plus a ``row`` column pointing back into the file.

    ``jumps``: close moves beyond the import's ``max_daily_factor`` (prices only; listed in the
    import report).
    """

    kind: str
    path: str
    row_kind: str
    frame: pd.DataFrame
    jumps: tuple[PriceJump, ...] = ()

    def __len__(self) -> int:
        return len(self.frame)


def _read_csv(path: Path) -> RawTable:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:  # type: ignore[operator]
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise EmptyInputError("file is empty (no header line)", path=path)
            header = [h.strip() for h in header]
            if len(set(h.lower() for h in header)) != len(header):
                raise FileFormatError(f"repeated column name in header {header}", path=path, row=1)
            rows: list[list[str]] = []
            lines: list[int] = []
            for rec in reader:
                if not rec or (len(rec) == 1 and not rec[0].strip()):
                    continue
                if len(rec) != len(header):
                    raise FileFormatError(
                        f"{len(rec)} fields, but the header has {len(header)}", path=path, row=reader.line_num
                    )
                rows.append(rec)
                lines.append(reader.line_num)
    except (UnicodeDecodeError, csv.Error, OSError, EOFError) as exc:
        raise FileFormatError(f"cannot read as CSV: {exc}", path=path) from exc
    frame = pd.DataFrame(rows, columns=header, dtype=object)
    return RawTable(str(path), frame, np.asarray(lines, dtype=np.int64), "line")


def _read_jsonl(path: Path) -> RawTable:
    records: list[dict] = []
    lines: list[int] = []
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (UnicodeDecodeError, OSError) as exc:
        raise FileFormatError(f"cannot read as JSON lines: {exc}", path=path) from exc
    for n, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FileFormatError(f"invalid JSON: {exc.msg}", path=path, row=n) from exc
        if not isinstance(obj, dict):
            raise FileFormatError(f"expected a JSON object, got {type(obj).__name__}", path=path, row=n)
        records.append(obj)
        lines.append(n)
    return RawTable(str(path), pd.DataFrame.from_records(records), np.asarray(lines, dtype=np.int64), "line")


def _read_json(path: Path) -> RawTable:
    try:
        obj = json.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, OSError, json.JSONDecodeError) as exc:
        raise FileFormatError(f"cannot read as JSON: {exc}", path=path) from exc
    if not isinstance(obj, list) or not all(isinstance(o, dict) for o in obj):
        raise FileFormatError("expected a JSON array of objects", path=path)
    return RawTable(str(path), pd.DataFrame.from_records(obj), np.arange(1, len(obj) + 1), "record")


def _read_parquet(path: Path) -> RawTable:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        frame = pq.read_table(path).to_pandas()
    except (pa.ArrowException, OSError) as exc:
        raise FileFormatError(f"cannot read as Parquet: {exc}", path=path) from exc
    return RawTable(str(path), frame.reset_index(drop=True), np.arange(1, len(frame) + 1), "row")


_READERS = {
    ".csv": _read_csv,
    ".gz": _read_csv,
    ".jsonl": _read_jsonl,
    ".ndjson": _read_jsonl,
    ".json": _read_json,
    ".parquet": _read_parquet,
    ".pq": _read_parquet,
}


def read_table(path: str | Path) -> RawTable:
    """Read a CSV (optionally .gz), JSONL, JSON array or Parquet file, chosen by extension."""
    p = Path(path)
    if not p.is_file():
        raise FileFormatError("file not found", path=p)
    suffix = p.suffix.lower()
    if suffix == ".gz" and not p.name.lower().endswith(".csv.gz"):
        raise FileFormatError("only .csv.gz is supported among compressed files", path=p)
    reader = _READERS.get(suffix)
    if reader is None:
        raise FileFormatError(f"unknown file type {suffix!r}; allowed: {sorted(set(_READERS))}", path=p)
    raw = reader(p)
    if len(raw.frame) == 0:
        raise EmptyInputError("no data rows", path=p)
    return raw


def resolve_columns(
    raw: RawTable,
    aliases: Mapping[str, Sequence[str]],
    required: Sequence[str],
    column_map: ColumnMap | None = None,
) -> dict[str, list[str]]:
    """Map canonical names to the file's column names (explicit ``column_map`` first, then aliases)."""
    by_lower = {str(c).strip().lower(): c for c in raw.frame.columns}
    out: dict[str, list[str]] = {}
    column_map = dict(column_map or {})
    unknown = set(column_map) - set(aliases)
    if unknown:
        raise MissingColumnError(
            f"column_map names unknown canonical columns {sorted(unknown)}; allowed: {list(aliases)}",
            path=raw.path,
        )
    for canon, names in aliases.items():
        if canon in column_map:
            wanted = column_map[canon]
            wanted_list = [wanted] if isinstance(wanted, str) else list(wanted)
            found = []
            for w in wanted_list:
                if w.strip().lower() not in by_lower:
                    raise MissingColumnError(
                        f"column_map maps {canon!r} to {w!r}, which is not in the header "
                        f"{list(raw.frame.columns)}",
                        path=raw.path,
                        column=w,
                    )
                found.append(by_lower[w.strip().lower()])
            out[canon] = found
            continue
        present = [by_lower[n] for n in names if n in by_lower]
        if present:
            out[canon] = present
    missing = [c for c in required if c not in out]
    if missing:
        raise MissingColumnError(
            f"required column(s) {missing} not found in header {list(raw.frame.columns)}; accepted names: "
            + "; ".join(f"{c}: {list(aliases[c])}" for c in missing)
            + " (or pass a column map)",
            path=raw.path,
            column=missing[0],
        )
    return out


def _coalesce(raw: RawTable, names: list[str]) -> pd.Series:
    """First non-empty value across ``names`` per row (a single column is returned as is)."""
    ser = raw.frame[names[0]]
    for extra in names[1:]:
        empty = ser.map(
            lambda v: (
                v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and not v.strip())
            )
        )
        ser = ser.where(~empty, raw.frame[extra])
    return ser


def load_prices(
    path: str | Path, *, column_map: ColumnMap | None = None, config: ImportConfig | None = None
) -> Loaded:
    """Long daily prices: ``date,ticker,close`` at least; ``open,high,low,adj_close,volume,group``
    optional."""
    cfg = config or ImportConfig()
    raw = read_table(path)
    cols = resolve_columns(raw, PRICE_ALIASES, ("date", "ticker", "close"), column_map)
    if cfg.pool is not None:
        tick_all = parse_tickers(_coalesce(raw, cols["ticker"]), raw.where, cols["ticker"][0])
        keep = np.isin(tick_all, np.asarray(cfg.pool, dtype=object))
        skipped = int((~keep).sum())
        if skipped:
            log.info("%s: skipped %d price rows of tickers outside the pool", raw.path, skipped)
        raw = RawTable(raw.path, raw.frame.loc[keep].reset_index(drop=True), raw.rows[keep], raw.row_kind)
        if len(raw.frame) == 0:
            raise EmptyInputError(
                f"no rows for pool tickers {list(cfg.pool)}", path=raw.path, column=cols["ticker"][0]
            )
    where = raw.where
    out: dict[str, object] = {
        "date": parse_dates(_coalesce(raw, cols["date"]), where, cols["date"][0]),
        "ticker": parse_tickers(_coalesce(raw, cols["ticker"]), where, cols["ticker"][0]),
    }
    for name in _PRICE_COLS:
        if name in cols:
            out[name] = parse_numbers(
                _coalesce(raw, cols[name]), where, cols[name][0], required=True, positive=True
            )
        else:
            out[name] = np.full(len(raw.frame), np.nan)
    if "volume" in cols:
        out["volume"] = parse_numbers(
            _coalesce(raw, cols["volume"]), where, cols["volume"][0], required=False, positive=False
        )
    else:
        out["volume"] = np.full(len(raw.frame), np.nan)
    out["group"] = (
        parse_text(_coalesce(raw, cols["group"]), where, cols["group"][0], required=False)
        if "group" in cols
        else np.full(len(raw.frame), "", dtype=object)
    )
    hi, lo = out["high"], out["low"]
    inverted = hi < lo  # NaN compares False: absent columns pass
    if np.any(inverted):
        i = int(np.argmax(inverted))
        raise BadValueError(
            f"high {plain(hi[i])} is below low {plain(lo[i])}",
            path=raw.path,
            row=where.at(i),
            column=cols["high"][0],
            row_kind=raw.row_kind,
        )
    names = {c: cols[c][0] for c in ("open", "high", "low", "close") if c in cols}
    check_ohlc(out, names, where, cfg.ohlc_tolerance)  # type: ignore[arg-type]
    frame = pd.DataFrame(out)
    frame["row"] = raw.rows
    check_unique(frame[["date", "ticker"]], where, cols["date"][0], "(date, ticker)")
    dates, ticks = frame["date"].to_numpy(dtype="datetime64[D]"), frame["ticker"].to_numpy()
    check_sorted_per_ticker(dates, ticks, where)
    check_gaps(dates, ticks, where, cfg.max_gap_days)
    jumps = find_jumps(dates, ticks, frame["close"].to_numpy(), where, cfg, cols["close"][0])
    if jumps:
        log.info("%s: %d close moves beyond max_daily_factor=%g", raw.path, len(jumps), cfg.max_daily_factor)
    return Loaded("prices", raw.path, raw.row_kind, frame, tuple(jumps))


def load_news(path: str | Path, *, column_map: ColumnMap | None = None) -> Loaded:
    """News items (``date,ticker,headline`` required; ``summary,source`` optional).

    Exact repeats of (date, ticker, headline) are common in real feeds (one story, several
    publishers): the first is kept and the count is logged.
    """
    raw = read_table(path)
    cols = resolve_columns(raw, NEWS_ALIASES, ("date", "ticker", "headline"), column_map)
    where = raw.where
    frame = pd.DataFrame(
        {
            "date": parse_dates(_coalesce(raw, cols["date"]), where, cols["date"][0]),
            "ticker": parse_tickers(_coalesce(raw, cols["ticker"]), where, cols["ticker"][0]),
            "headline": parse_text(
                _coalesce(raw, cols["headline"]), where, cols["headline"][0], required=True
            ),
            "summary": parse_text(_coalesce(raw, cols["summary"]), where, cols["summary"][0], required=False)
            if "summary" in cols
            else "",
            "source": parse_text(_coalesce(raw, cols["source"]), where, cols["source"][0], required=False)
            if "source" in cols
            else "",
            "kind": "news",
        }
    )
    frame["row"] = raw.rows
    rep = frame.duplicated(["date", "ticker", "headline"]).to_numpy()
    if rep.any():
        log.info("%s: dropped %d repeated (date, ticker, headline) news rows", raw.path, int(rep.sum()))
        frame = frame.loc[~rep].reset_index(drop=True)
    return Loaded("news", raw.path, raw.row_kind, frame)


def load_companies(path: str | Path, *, column_map: ColumnMap | None = None) -> Loaded:
    """Company context (``ticker,name,sector,description``; names mappable, e.g. S&P constituent
    files with ``symbol,security,gics_sector,...,business_description``). An empty name falls
    back to the ticker; empty sector/description stay empty."""
    raw = read_table(path)
    cols = resolve_columns(raw, COMPANY_ALIASES, ("ticker", "name", "sector", "description"), column_map)
    where = raw.where
    ticker = parse_tickers(_coalesce(raw, cols["ticker"]), where, cols["ticker"][0])
    name = parse_text(_coalesce(raw, cols["name"]), where, cols["name"][0], required=False)
    name = np.where(name == "", ticker, name)
    frame = pd.DataFrame(
        {
            "ticker": ticker,
            "name": name,
            "sector": parse_text(_coalesce(raw, cols["sector"]), where, cols["sector"][0], required=False),
            "description": parse_text(
                _coalesce(raw, cols["description"]), where, cols["description"][0], required=False
            ),
        }
    )
    frame["row"] = raw.rows
    check_unique(frame[["ticker"]], where, cols["ticker"][0], "ticker")
    return Loaded("companies", raw.path, raw.row_kind, frame)
