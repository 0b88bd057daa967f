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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from agent.data.aliases import apply_aliases
from agent.data.errors import (
    BadValueError,
    DuplicateRowError,
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
    import report). ``skipped``: rows of the file left out, by reason (``outside_pool``,
    ``repeated``, ``alias_duplicate``); ``renamed``: rows renamed, by alias (``GOOG=GOOGL``).
    """

    kind: str
    path: str
    row_kind: str
    frame: pd.DataFrame
    jumps: tuple[PriceJump, ...] = ()
    skipped: dict[str, int] = field(default_factory=dict)
    renamed: dict[str, int] = field(default_factory=dict)

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


@dataclass(frozen=True, eq=False)
class PoolRows:
    """A file's rows kept by the import's aliases and pool: the table, each kept row's ticker as
    stored (``ticker``) and as read (``read``), rows skipped by reason, rows renamed by alias."""

    raw: RawTable
    ticker: np.ndarray
    read: np.ndarray
    skipped: dict[str, int]
    renamed: dict[str, int]


def pool_rows(raw: RawTable, column: list[str], cfg: ImportConfig, kind: str) -> PoolRows:
    """Read the ticker cells (``column``: the source names), apply the aliases of ``kind``, keep
    the rows of ``cfg.pool`` (all rows without one)."""
    read = parse_tickers(_coalesce(raw, column), raw.where, column[0])
    ticker, renamed = apply_aliases(read, cfg.aliases, kind)
    skipped: dict[str, int] = {}
    if cfg.pool is not None:
        keep = np.isin(ticker, np.asarray(cfg.pool, dtype=object))
        if not keep.all():
            skipped["outside_pool"] = int((~keep).sum())
            log.info(
                "%s: skipped %d %s rows of tickers outside the pool", raw.path, skipped["outside_pool"], kind
            )
            raw = RawTable(raw.path, raw.frame.loc[keep].reset_index(drop=True), raw.rows[keep], raw.row_kind)
            read, ticker = read[keep], ticker[keep]
    return PoolRows(raw, ticker, read, skipped, renamed)


def check_alias_clash(
    frame: pd.DataFrame, read: np.ndarray, keys: list[str], where: Where, what: str
) -> None:
    """No two rows whose tickers were read differently may share a key after renaming (two
    share classes are two series); the error names both rows and the way out."""
    if (frame["ticker"].to_numpy() == read).all():
        return
    first = (
        pd.Series(np.arange(len(frame)))
        .groupby([frame[k] for k in keys], sort=False)
        .transform("first")
        .to_numpy()
    )
    clash = (first != np.arange(len(frame))) & (read[first] != read)
    if not clash.any():
        return
    i = int(np.argmax(clash))
    j = int(first[i])
    tgt = str(frame["ticker"].iloc[i])
    src = str(read[i] if read[i] != tgt else read[j])
    shown = ", ".join(str(frame[k].iloc[i])[:10] for k in keys)
    raise DuplicateRowError(
        f"alias {src}={tgt} puts two rows on {what} ({shown}): {read[j]} on {where.row_kind} "
        f"{where.at(j)} and {read[i]} on {where.row_kind} {where.at(i)}; two share classes are two "
        f"series: drop one from the file, or scope the alias to the files that hold only one "
        f"(e.g. news:{src}={tgt})",
        path=where.path,
        row=where.at(i),
        column="ticker",
        row_kind=where.row_kind,
    )


def load_prices(
    path: str | Path, *, column_map: ColumnMap | None = None, config: ImportConfig | None = None
) -> Loaded:
    """Long daily prices: ``date,ticker,close`` at least; ``open,high,low,adj_close,volume,group``
    optional."""
    cfg = config or ImportConfig()
    raw = read_table(path)
    cols = resolve_columns(raw, PRICE_ALIASES, ("date", "ticker", "close"), column_map)
    kept = pool_rows(raw, cols["ticker"], cfg, "prices")
    raw = kept.raw
    if len(raw.frame) == 0:
        raise EmptyInputError(
            f"no rows for pool tickers {list(cfg.pool or ())}", path=raw.path, column=cols["ticker"][0]
        )
    where = raw.where
    out: dict[str, object] = {
        "date": parse_dates(_coalesce(raw, cols["date"]), where, cols["date"][0]),
        "ticker": kept.ticker,
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
    check_alias_clash(frame, kept.read, ["date", "ticker"], where, "(date, ticker)")
    check_unique(frame[["date", "ticker"]], where, cols["date"][0], "(date, ticker)")
    dates, ticks = frame["date"].to_numpy(dtype="datetime64[D]"), frame["ticker"].to_numpy()
    check_sorted_per_ticker(dates, kept.read, where)  # each ticker as the file names it
    if kept.renamed:  # a renamed ticker's rows join the target's (FB before META): date order
        frame = frame.sort_values(["ticker", "date"], kind="stable").reset_index(drop=True)
        where = Where(where.path, frame["row"].to_numpy(), where.row_kind)
        dates, ticks = frame["date"].to_numpy(dtype="datetime64[D]"), frame["ticker"].to_numpy()
    check_gaps(dates, ticks, where, cfg.max_gap_days)
    jumps = find_jumps(dates, ticks, frame["close"].to_numpy(), where, cfg, cols["close"][0])
    if jumps:
        log.info("%s: %d close moves beyond max_daily_factor=%g", raw.path, len(jumps), cfg.max_daily_factor)
    return Loaded("prices", raw.path, raw.row_kind, frame, tuple(jumps), kept.skipped, kept.renamed)


def load_news(
    path: str | Path, *, column_map: ColumnMap | None = None, config: ImportConfig | None = None
) -> Loaded:
    """News items (``date,ticker,headline`` required; ``summary,source`` optional), renamed by
    the import's aliases and kept to its pool (rows outside it are skipped and counted).

    Exact repeats of (date, ticker, headline) are common in real feeds (one story, several
    publishers, or two share classes after an alias): the first is kept and the rest counted.
    """
    cfg = config or ImportConfig()
    raw = read_table(path)
    cols = resolve_columns(raw, NEWS_ALIASES, ("date", "ticker", "headline"), column_map)
    kept = pool_rows(raw, cols["ticker"], cfg, "news")
    raw = kept.raw
    where = raw.where
    frame = pd.DataFrame(
        {
            "date": parse_dates(_coalesce(raw, cols["date"]), where, cols["date"][0]),
            "ticker": kept.ticker,
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
    skipped = dict(kept.skipped)
    rep = frame.duplicated(["date", "ticker", "headline"]).to_numpy()
    if rep.any():
        skipped["repeated"] = int(rep.sum())
        log.info("%s: dropped %d repeated (date, ticker, headline) news rows", raw.path, int(rep.sum()))
        frame = frame.loc[~rep].reset_index(drop=True)
    return Loaded("news", raw.path, raw.row_kind, frame, (), skipped, kept.renamed)


def load_companies(
    path: str | Path, *, column_map: ColumnMap | None = None, config: ImportConfig | None = None
) -> Loaded:
    """Company context (``ticker,name,sector,description``; names mappable, e.g. S&P constituent
    files with ``symbol,security,gics_sector,...,business_description``). An empty name falls
    back to the ticker; empty sector/description stay empty. Renamed by the import's aliases
    (a renamed row beside the target's own row is skipped) and kept to its pool."""
    cfg = config or ImportConfig()
    raw = read_table(path)
    cols = resolve_columns(raw, COMPANY_ALIASES, ("ticker", "name", "sector", "description"), column_map)
    kept = pool_rows(raw, cols["ticker"], cfg, "companies")
    raw = kept.raw
    where = raw.where
    ticker = kept.ticker
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
    skipped = dict(kept.skipped)
    renamed = ticker != kept.read
    shadowed = renamed & np.isin(ticker, ticker[~renamed])  # the target's own row wins
    if shadowed.any():
        skipped["alias_duplicate"] = int(shadowed.sum())
        frame = frame.loc[~shadowed].reset_index(drop=True)
        kept_read = kept.read[~shadowed]
        where = Where(where.path, where.rows[~shadowed], where.row_kind)
    else:
        kept_read = kept.read
    check_alias_clash(frame, kept_read, ["ticker"], where, "one company")
    check_unique(frame[["ticker"]], where, cols["ticker"][0], "ticker")
    return Loaded("companies", raw.path, raw.row_kind, frame, (), skipped, kept.renamed)
