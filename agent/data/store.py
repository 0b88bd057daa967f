"""The local market store: one SQLite file with prices, news, company context and filings.

SQLite because it is in the standard library (no new dependency), a single portable file, and
transactional: an import validates every file first and then writes everything inside one
``BEGIN IMMEDIATE ... COMMIT``, so a bad file (or a crash) rolls back and never leaves a
half-written store. WAL journaling lets readers (agents, the QA lookup tool) read while an
import runs. The call journal of :mod:`serving` uses the same engine.

Dates are stored as ISO text ``YYYY-MM-DD``. Nothing is forward-filled in the store; readers
get NaN for sessions a ticker lacks and fill explicitly (:meth:`PriceHistory.ffill`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from agent.data.errors import (
    DuplicateRowError,
    MissingStoreError,
    StoreError,
    UnknownTickerError,
)
from agent.data.jumps import PriceJump, seam_jumps
from agent.data.loaders import Loaded
from agent.data.schema import (
    Company,
    Filing,
    NewsItem,
    PriceBar,
    PriceHistory,
    StoreInfo,
    TickerInfo,
    to_date,
)
from agent.data.validate import ImportConfig, check_calendar_coverage

__all__ = ["MarketStore", "ImportReport", "PRICE_FIELDS"]

log = logging.getLogger(__name__)

PRICE_FIELDS = ("open", "high", "low", "close", "adj_close", "volume")
_SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS prices (
    ticker TEXT NOT NULL, date TEXT NOT NULL,
    open REAL, high REAL, low REAL, close REAL NOT NULL CHECK (close > 0), adj_close REAL, volume REAL,
    PRIMARY KEY (ticker, date)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS prices_date ON prices (date);
CREATE TABLE IF NOT EXISTS news (
    id INTEGER PRIMARY KEY, ticker TEXT NOT NULL, date TEXT NOT NULL, headline TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '', source TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT 'news',
    UNIQUE (ticker, date, headline, kind)
);
CREATE TABLE IF NOT EXISTS companies (
    ticker TEXT PRIMARY KEY, name TEXT NOT NULL, sector TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS filings (
    id INTEGER PRIMARY KEY, ticker TEXT NOT NULL, date TEXT NOT NULL, document_type TEXT NOT NULL,
    mda TEXT NOT NULL DEFAULT '', risk TEXT NOT NULL DEFAULT '',
    UNIQUE (ticker, date, document_type)
);
CREATE TABLE IF NOT EXISTS imports (
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, path TEXT NOT NULL, rows INTEGER NOT NULL
);
"""
_TABLES = ("prices", "news", "companies", "filings")


@dataclass(frozen=True)
class ImportReport:
    """What one import wrote: rows per kind, rows skipped (and why), missing sessions per ticker,
    and close moves beyond ``max_daily_factor`` (imported, but worth a look: see
    :class:`~agent.data.validate.ImportConfig`).

    skipped: totals by ``<kind>_<reason>``; skipped_by_file: file -> reason -> rows, reasons
    ``outside_pool`` (a ticker outside ``--pool``, or for company rows one without prices),
    ``repeated`` (news repeats), ``already_stored`` (news), ``alias_duplicate`` (a renamed
    company row beside the target's own); renamed_by_file: file -> alias -> rows renamed.
    """

    written: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    missing_sessions: dict[str, int] = field(default_factory=dict)
    jumps: list[PriceJump] = field(default_factory=list)
    skipped_by_file: dict[str, dict[str, int]] = field(default_factory=dict)
    renamed_by_file: dict[str, dict[str, int]] = field(default_factory=dict)

    def skip(self, kind: str, path: str, reason: str, n: int) -> None:
        """Count ``n`` rows of ``path`` (a file of ``kind``) skipped for ``reason``."""
        if n <= 0:
            return
        key = f"{kind}_{reason}"
        self.skipped[key] = self.skipped.get(key, 0) + n
        per = self.skipped_by_file.setdefault(path, {})
        per[reason] = per.get(reason, 0) + n


def _iso(d: np.ndarray) -> list[str]:
    return np.datetime_as_string(np.asarray(d, dtype="datetime64[D]"), unit="D").tolist()


def _none_if_nan(a: np.ndarray) -> list[float | None]:
    return [None if np.isnan(v) else float(v) for v in a]


def _date_range(
    sql: str, args: list[str], start: str | dt.date | None, end: str | dt.date | None
) -> tuple[str, list[str]]:
    """``sql`` (ending in a WHERE clause) and its ``args`` narrowed to dates in [start, end];
    either bound is optional."""
    args = list(args)
    if start is not None:
        sql += " AND date >= ?"
        args.append(to_date(start).isoformat())
    if end is not None:
        sql += " AND date <= ?"
        args.append(to_date(end).isoformat())
    return sql, args


class MarketStore:
    """A SQLite market store at ``path`` (created with its schema if absent and ``create``)."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise MissingStoreError(
                f"no market store at {self.path}; create one with `localfin data synth --import` or "
                "`localfin data import`"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.executescript(_SCHEMA)
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (_SCHEMA_VERSION,))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open market store {self.path}: {exc}") from exc

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> MarketStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- import ------------------------------------------------------------------------------
    def import_loaded(self, tables: Sequence[Loaded], config: ImportConfig | None = None) -> ImportReport:
        """Write validated tables in one transaction; any error rolls everything back.

        Prices go first (they define the pool); news and filings must name pool tickers (rows
        outside ``config.pool`` were skipped as the files were read); company rows outside the
        pool are skipped or rejected per ``config``.
        """
        cfg = config or ImportConfig()
        order = {"prices": 0, "companies": 1, "news": 2, "filings": 3}
        tables = sorted(tables, key=lambda t: order[t.kind])
        report = ImportReport()
        for t in tables:
            for reason, n in t.skipped.items():
                report.skip(t.kind, t.path, reason, n)
            if t.renamed:
                report.renamed_by_file.setdefault(t.path, {}).update(t.renamed)
        cur = self._conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            touched: dict[str, Loaded] = {}
            for t in tables:
                if t.kind == "prices":
                    self._write_prices(cur, t, cfg, report)
                    for tick in pd.unique(t.frame["ticker"]):
                        touched[str(tick)] = t
            pool = {r[0] for r in cur.execute("SELECT DISTINCT ticker FROM prices")}
            if touched:
                self._check_coverage(cur, touched, cfg, report)
            if cfg.pool is not None:
                absent = [p for p in cfg.pool if p not in pool]
                if absent:
                    src = next((t.path for t in tables if t.kind == "prices"), None)
                    raise UnknownTickerError(
                        f"pool ticker(s) {absent} have no price rows in the file or the store",
                        path=src,
                        column="ticker",
                    )
            for t in tables:
                if t.kind == "companies":
                    self._write_companies(cur, t, cfg, pool, report)
                elif t.kind in ("news", "filings"):
                    self._check_pool(t, pool)
                    if t.kind == "news":
                        self._write_news(cur, t, report)
                    else:
                        self._write_filings(cur, t, report)
            now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            for t in tables:
                cur.execute(
                    "INSERT INTO imports (at, kind, path, rows) VALUES (?, ?, ?, ?)",
                    (now, t.kind, t.path, len(t)),
                )
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        log.info("imported into %s: %s (skipped %s)", self.path, report.written, report.skipped)
        return report

    def _write_prices(self, cur: sqlite3.Cursor, t: Loaded, cfg: ImportConfig, report: ImportReport) -> None:
        f = t.frame
        dates = _iso(f["date"].to_numpy(dtype="datetime64[D]"))
        ticks = f["ticker"].astype(str).tolist()
        if cfg.on_conflict == "error":
            for tick in pd.unique(f["ticker"]):
                have = {r[0] for r in cur.execute("SELECT date FROM prices WHERE ticker = ?", (str(tick),))}
                if not have:
                    continue
                for i in np.flatnonzero((f["ticker"] == tick).to_numpy()):
                    if dates[i] in have:
                        raise DuplicateRowError(
                            f"price row ({dates[i]}, {tick}) already exists in the store {self.path} "
                            "(import with on_conflict='replace' / --replace to overwrite)",
                            path=t.path,
                            row=int(f["row"].iloc[i]),
                            column="date",
                            row_kind=t.row_kind,
                        )
        cols = [
            _none_if_nan(f[c].to_numpy(dtype=np.float64))
            for c in ("open", "high", "low", "close", "adj_close", "volume")
        ]
        report.jumps.extend(t.jumps)
        self._check_seams(cur, t, cfg, report)
        rows = list(zip(ticks, dates, *cols))
        cur.executemany("INSERT OR REPLACE INTO prices VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        report.written["prices"] = report.written.get("prices", 0) + len(rows)
        # the file's `group` column is a sector hint for tickers without company context yet
        groups = f.loc[f["group"] != "", ["ticker", "group"]].drop_duplicates("ticker")
        cur.executemany(
            "INSERT OR IGNORE INTO companies (ticker, name, sector, description) VALUES (?, ?, ?, '')",
            [(str(a), str(a), str(b)) for a, b in groups.itertuples(index=False)],
        )

    def _check_seams(self, cur: sqlite3.Cursor, t: Loaded, cfg: ImportConfig, report: ImportReport) -> None:
        def previous_close(tick: str, day: dt.date) -> tuple[dt.date, float] | None:
            row = cur.execute(
                "SELECT date, close FROM prices WHERE ticker = ? AND date < ? ORDER BY date DESC LIMIT 1",
                (tick, day.isoformat()),
            ).fetchone()
            return None if row is None else (dt.date.fromisoformat(row[0]), float(row[1]))

        firsts = t.frame.drop_duplicates("ticker", keep="first")
        rows = [
            (str(tick), to_date(day), float(close), int(row))
            for tick, day, close, row in firsts[["ticker", "date", "close", "row"]].itertuples(index=False)
        ]
        report.jumps.extend(seam_jumps(rows, previous_close, t.path, t.row_kind, cfg))

    def _check_coverage(
        self, cur: sqlite3.Cursor, touched: dict[str, Loaded], cfg: ImportConfig, report: ImportReport
    ) -> None:
        rows = cur.execute("SELECT ticker, date FROM prices ORDER BY ticker, date").fetchall()
        frame = pd.DataFrame(rows, columns=["ticker", "date"])
        pool_dates = {
            str(k): g["date"].to_numpy().astype("datetime64[D]")
            for k, g in frame.groupby("ticker", sort=True)
        }

        def row_of(tick: str, day: dt.date) -> tuple[int, str] | None:
            t = touched[tick]
            hit = t.frame.index[(t.frame["ticker"] == tick) & (t.frame["date"] == pd.Timestamp(day))]
            return (int(t.frame.loc[hit[0], "row"]), t.row_kind) if len(hit) else None

        paths = sorted({t.path for t in touched.values()})
        report.missing_sessions.update(
            check_calendar_coverage(
                pool_dates, sorted(touched), cfg.max_missing_frac, ", ".join(paths), row_of
            )
        )

    @staticmethod
    def _check_pool(t: Loaded, pool: set[str]) -> None:
        outside = ~t.frame["ticker"].isin(pool).to_numpy()
        if outside.any():
            i = int(np.argmax(outside))
            raise UnknownTickerError(
                f"ticker {t.frame['ticker'].iloc[i]!r} has no prices in the store (pool: {sorted(pool)}); "
                "import its prices first or drop its rows",
                path=t.path,
                row=int(t.frame["row"].iloc[i]),
                column="ticker",
                row_kind=t.row_kind,
            )

    def _write_companies(
        self, cur: sqlite3.Cursor, t: Loaded, cfg: ImportConfig, pool: set[str], report: ImportReport
    ) -> None:
        f = t.frame
        inside = f["ticker"].isin(pool).to_numpy()
        if not inside.all():
            if cfg.companies_outside_pool == "error":
                self._check_pool(t, pool)
            report.skip("companies", t.path, "outside_pool", int((~inside).sum()))
        rows = [(r.ticker, r.name, r.sector, r.description) for r in f.loc[inside].itertuples(index=False)]
        cur.executemany(
            "INSERT OR REPLACE INTO companies (ticker, name, sector, description) VALUES (?, ?, ?, ?)", rows
        )
        report.written["companies"] = report.written.get("companies", 0) + len(rows)

    def _write_news(self, cur: sqlite3.Cursor, t: Loaded, report: ImportReport) -> None:
        f = t.frame
        before = self._conn.total_changes
        cur.executemany(
            "INSERT OR IGNORE INTO news (ticker, date, headline, summary, source, kind) VALUES (?, ?, ?, ?, "
            "?, ?)",
            list(
                zip(
                    f["ticker"],
                    _iso(f["date"].to_numpy(dtype="datetime64[D]")),
                    f["headline"],
                    f["summary"],
                    f["source"],
                    f["kind"],
                )
            ),
        )
        n = self._conn.total_changes - before
        report.written["news"] = report.written.get("news", 0) + n
        report.skip("news", t.path, "already_stored", len(f) - n)

    def _write_filings(self, cur: sqlite3.Cursor, t: Loaded, report: ImportReport) -> None:
        f = t.frame
        cur.executemany(
            "INSERT OR REPLACE INTO filings (ticker, date, document_type, mda, risk) VALUES (?, ?, ?, ?, ?)",
            list(
                zip(
                    f["ticker"],
                    _iso(f["date"].to_numpy(dtype="datetime64[D]")),
                    f["document_type"],
                    f["mda"],
                    f["risk"],
                )
            ),
        )
        report.written["filings"] = report.written.get("filings", 0) + len(f)

    # -- reads -------------------------------------------------------------------------------
    def tickers(self, until: str | dt.date | None = None) -> tuple[str, ...]:
        """Tickers with prices, sorted; with ``until``, only those with a row on or before it
        (so a ticker listed later cannot leak into an earlier decision)."""
        if until is None:
            return tuple(
                r[0] for r in self._conn.execute("SELECT DISTINCT ticker FROM prices ORDER BY ticker")
            )
        rows = self._conn.execute(
            "SELECT DISTINCT ticker FROM prices WHERE date <= ? ORDER BY ticker",
            (to_date(until).isoformat(),),
        )
        return tuple(r[0] for r in rows)

    def _require(self, tickers: Sequence[str]) -> None:
        known = set(self.tickers())
        absent = [t for t in tickers if t not in known]
        if absent:
            raise UnknownTickerError(
                f"ticker(s) {absent} not in the store {self.path} (known: {sorted(known)})", column="ticker"
            )

    def span(self, tickers: Sequence[str] | None = None) -> tuple[dt.date, dt.date] | None:
        """The first and last dates with a price of any of ``tickers`` (all if None); None when
        there are none. Unknown tickers are an :class:`UnknownTickerError` naming them."""
        sql, args = "SELECT MIN(date), MAX(date) FROM prices", []
        if tickers is not None:
            self._require(tickers)
            sql += f" WHERE ticker IN ({','.join('?' * len(tickers))})"
            args += list(tickers)
        first, last = self._conn.execute(sql, args).fetchone()
        return None if first is None else (dt.date.fromisoformat(first), dt.date.fromisoformat(last))

    def calendar(
        self,
        start: str | dt.date | None = None,
        end: str | dt.date | None = None,
        tickers: Sequence[str] | None = None,
    ) -> np.ndarray:
        """Trading sessions (datetime64[D]) in [start, end]: days on which any of ``tickers``
        (all tickers if None) has a close."""
        sql, args = "SELECT DISTINCT date FROM prices WHERE 1=1", []
        if tickers is not None:
            self._require(tickers)
            sql += f" AND ticker IN ({','.join('?' * len(tickers))})"
            args += list(tickers)
        sql, args = _date_range(sql, args, start, end)
        rows = self._conn.execute(sql + " ORDER BY date", args).fetchall()
        return np.array([r[0] for r in rows], dtype="datetime64[D]")

    def prices(
        self,
        tickers: Sequence[str],
        start: str | dt.date | None = None,
        end: str | dt.date | None = None,
        *,
        field: str = "close",
    ) -> PriceHistory:
        """Prices of ``tickers`` on the union calendar of those tickers in [start, end] (inclusive).

        Sessions a ticker lacks are NaN (no filling). ``field`` is one of :data:`PRICE_FIELDS`.
        """
        if field not in PRICE_FIELDS:
            raise StoreError(f"field={field!r}; allowed: {list(PRICE_FIELDS)}")
        tickers = tuple(tickers)
        if not tickers:
            raise StoreError("tickers must name at least one ticker")
        self._require(tickers)
        dates = self.calendar(start, end, tickers)
        values = np.full((len(dates), len(tickers)), np.nan)
        sql, args_tail = _date_range(f"SELECT date, {field} FROM prices WHERE ticker = ?", [], start, end)
        for k, tick in enumerate(tickers):
            rows = self._conn.execute(sql, [tick, *args_tail]).fetchall()
            if not rows:
                continue
            d = np.array([r[0] for r in rows], dtype="datetime64[D]")
            v = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=np.float64)
            values[np.searchsorted(dates, d), k] = v
        return PriceHistory(dates, tickers, values, field)

    def field_coverage(
        self, tickers: Sequence[str], field: str, *, end: str | dt.date | None = None
    ) -> dict[str, tuple[int, int]]:
        """(price rows, rows with a value of ``field``) per ticker, up to ``end`` if given."""
        if field not in PRICE_FIELDS:
            raise StoreError(f"field={field!r}; allowed: {list(PRICE_FIELDS)}")
        tickers = tuple(tickers)
        self._require(tickers)
        sql, args = _date_range(
            f"SELECT ticker, COUNT(*), COUNT({field}) FROM prices WHERE ticker IN "
            f"({','.join('?' * len(tickers))})",
            list(tickers),
            None,
            end,
        )
        got = {r[0]: (int(r[1]), int(r[2])) for r in self._conn.execute(sql + " GROUP BY ticker", args)}
        return {t: got.get(t, (0, 0)) for t in tickers}

    def bars(
        self, ticker: str, start: str | dt.date | None = None, end: str | dt.date | None = None
    ) -> list[PriceBar]:
        """Daily rows of one ticker in [start, end]."""
        self._require([ticker])
        sql, args = _date_range(
            "SELECT date, ticker, open, high, low, close, adj_close, volume FROM prices WHERE ticker = ?",
            [ticker],
            start,
            end,
        )
        return [
            PriceBar(dt.date.fromisoformat(r[0]), *r[1:])
            for r in self._conn.execute(sql + " ORDER BY date", args)
        ]

    def news(self, ticker: str, day: str | dt.date) -> list[NewsItem]:
        """News items of ``ticker`` dated ``day``."""
        return self.news_window(ticker, day, day)

    def news_window(self, ticker: str, start: str | dt.date, end: str | dt.date) -> list[NewsItem]:
        """News items of ``ticker`` dated in [start, end] (inclusive), oldest first."""
        rows = self._conn.execute(
            "SELECT date, ticker, headline, summary, source, kind FROM news WHERE ticker = ? AND date >= ? "
            "AND date <= ? "
            "ORDER BY date, id",
            (ticker, to_date(start).isoformat(), to_date(end).isoformat()),
        ).fetchall()
        return [NewsItem(dt.date.fromisoformat(r[0]), *r[1:]) for r in rows]

    def company(self, ticker: str) -> Company:
        """Company context of ``ticker`` (name, sector, business description)."""
        row = self._conn.execute(
            "SELECT ticker, name, sector, description FROM companies WHERE ticker = ?", (ticker,)
        ).fetchone()
        if row is None:
            raise UnknownTickerError(
                f"no company context for ticker {ticker!r} in {self.path}", column="ticker"
            )
        return Company(*row)

    def companies(self, tickers: Sequence[str] | None = None) -> dict[str, Company]:
        """Company context by ticker (tickers without a row are absent from the dict)."""
        rows = self._conn.execute(
            "SELECT ticker, name, sector, description FROM companies ORDER BY ticker"
        ).fetchall()
        out = {r[0]: Company(*r) for r in rows}
        return out if tickers is None else {t: out[t] for t in tickers if t in out}

    def filings(
        self, ticker: str, start: str | dt.date | None = None, end: str | dt.date | None = None
    ) -> list[Filing]:
        """Filings of ``ticker`` dated in [start, end]."""
        sql, args = _date_range(
            "SELECT date, ticker, document_type, mda, risk FROM filings WHERE ticker = ?",
            [ticker],
            start,
            end,
        )
        return [
            Filing(dt.date.fromisoformat(r[0]), *r[1:])
            for r in self._conn.execute(sql + " ORDER BY date", args)
        ]

    def info(self) -> StoreInfo:
        """Counts, calendar span and per-ticker coverage (missing = union sessions lacking inside
        its span)."""
        cal = self.calendar()
        infos = []
        for tick, first, last, n in self._conn.execute(
            "SELECT ticker, MIN(date), MAX(date), COUNT(*) FROM prices GROUP BY ticker ORDER BY ticker"
        ):
            span = int(
                np.searchsorted(cal, np.datetime64(last), side="right")
                - np.searchsorted(cal, np.datetime64(first))
            )
            infos.append(
                TickerInfo(tick, dt.date.fromisoformat(first), dt.date.fromisoformat(last), n, span - n)
            )
        count = {t: self._conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in _TABLES}
        return StoreInfo(
            path=str(self.path),
            n_price_rows=count["prices"],
            n_sessions=len(cal),
            calendar_start=cal[0].item() if len(cal) else None,
            calendar_end=cal[-1].item() if len(cal) else None,
            tickers=tuple(infos),
            n_news=count["news"],
            n_companies=count["companies"],
            n_filings=count["filings"],
        )

    def digest(self) -> str:
        """SHA-256 over every row of the data tables in key order (to prove a store unchanged)."""
        h = hashlib.sha256()
        keys = {
            "prices": "ticker, date",
            "news": "ticker, date, kind, headline",
            "companies": "ticker",
            "filings": "ticker, date, document_type",
        }
        for table in _TABLES:
            cols = (
                "*"
                if table in ("prices", "companies")
                else "ticker, date, headline, summary, source, kind"
                if table == "news"
                else "ticker, date, document_type, mda, risk"
            )
            for row in self._conn.execute(f"SELECT {cols} FROM {table} ORDER BY {keys[table]}"):
                h.update(repr(row).encode())
            h.update(table.encode())
        return h.hexdigest()
