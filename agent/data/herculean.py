"""Importer for the Herculean (TheFinAI) layout: ``data/prices.parquet``, ``data/news.parquet``
(one model-written ``highlights`` summary per ticker and calendar day) and ``data/filings.parquet``
(``document_type, mda_content, risk_content``; :func:`load_filings` reads such a file on its own)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from agent.data.errors import FileFormatError
from agent.data.loaders import Loaded, check_alias_clash, load_prices, pool_rows, read_table, resolve_columns
from agent.data.validate import ImportConfig, check_unique, parse_dates, parse_text

__all__ = ["herculean_files", "load_herculean", "load_filings", "HEADLINE_CHARS"]

HEADLINE_CHARS = 160  # a highlights text has no headline: its first sentence, cut to this many characters

_FILINGS_ALIASES = {
    "date": ("date",),
    "ticker": ("symbol", "ticker"),
    "document_type": ("document_type", "form", "type"),
    "mda": ("mda_content", "mda"),
    "risk": ("risk_content", "risk"),
}
_NEWS_ALIASES = {"date": ("date",), "ticker": ("symbol", "ticker"), "highlights": ("highlights", "summary")}


def herculean_files(root: str | Path) -> dict[str, Path]:
    """Locate the layout's files under ``root`` or ``root/data``; prices are required."""
    base = Path(root)
    if (base / "data").is_dir():
        base = base / "data"
    if not base.is_dir():
        raise FileFormatError("Herculean directory not found", path=root)
    found = {k: base / f"{k}.parquet" for k in ("prices", "news", "filings")}
    if not found["prices"].is_file():
        raise FileFormatError(
            "Herculean layout needs prices.parquet (in the directory or its data/)", path=found["prices"]
        )
    return {k: p for k, p in found.items() if p.is_file()}


def _headline(text: str) -> str:
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return first if len(first) <= HEADLINE_CHARS else first[: HEADLINE_CHARS - 3].rstrip() + "..."


def _load_highlights(path: Path, cfg: ImportConfig) -> Loaded:
    raw = read_table(path)
    cols = resolve_columns(raw, _NEWS_ALIASES, ("date", "ticker", "highlights"))
    kept = pool_rows(raw, cols["ticker"], cfg, "news")
    raw = kept.raw
    where = raw.where
    text = parse_text(raw.frame[cols["highlights"][0]], where, cols["highlights"][0], required=True)
    frame = pd.DataFrame(
        {
            "date": parse_dates(raw.frame[cols["date"][0]], where, cols["date"][0]),
            "ticker": kept.ticker,
            "headline": [_headline(t) for t in text],
            "summary": text,
            "source": "herculean highlights",
            "kind": "highlights",
        }
    )
    frame["row"] = raw.rows
    check_alias_clash(frame, kept.read, ["date", "ticker"], where, "one day's highlights")
    check_unique(frame[["date", "ticker"]], where, cols["date"][0], "(date, ticker) highlights")
    return Loaded("news", raw.path, raw.row_kind, frame, (), kept.skipped, kept.renamed)


def load_filings(path: str | Path, *, config: ImportConfig | None = None) -> Loaded:
    """A filings table in Herculean's ``filings.parquet`` layout (``symbol`` or ``ticker``,
    ``date`` = the filing date, ``document_type``, ``mda_content``, ``risk_content``; also
    CSV/JSONL), validated and unwritten; one row per (date, ticker, document_type)."""
    cfg = config or ImportConfig()
    raw = read_table(path)
    cols = resolve_columns(raw, _FILINGS_ALIASES, ("date", "ticker", "document_type"))
    kept = pool_rows(raw, cols["ticker"], cfg, "filings")
    raw = kept.raw
    where = raw.where
    n = len(raw.frame)
    frame = pd.DataFrame(
        {
            "date": parse_dates(raw.frame[cols["date"][0]], where, cols["date"][0]),
            "ticker": kept.ticker,
            "document_type": parse_text(
                raw.frame[cols["document_type"][0]], where, cols["document_type"][0], required=True
            ),
            "mda": parse_text(raw.frame[cols["mda"][0]], where, cols["mda"][0], required=False)
            if "mda" in cols
            else np.full(n, ""),
            "risk": parse_text(raw.frame[cols["risk"][0]], where, cols["risk"][0], required=False)
            if "risk" in cols
            else np.full(n, ""),
        }
    )
    frame["row"] = raw.rows
    keys = ["date", "ticker", "document_type"]
    check_alias_clash(frame, kept.read, keys, where, "(date, ticker, document_type)")
    check_unique(frame[keys], where, cols["date"][0], "(date, ticker, document_type)")
    return Loaded("filings", raw.path, raw.row_kind, frame, (), kept.skipped, kept.renamed)


def load_herculean(root: str | Path, *, config: ImportConfig | None = None) -> list[Loaded]:
    """Validated tables of a Herculean directory (prices; highlights as news; filings), unwritten;
    the config's aliases and pool apply to all three."""
    cfg = config or ImportConfig()
    files = herculean_files(root)
    out = [load_prices(files["prices"], column_map={"ticker": "symbol"}, config=cfg)]
    if "news" in files:
        out.append(_load_highlights(files["news"], cfg))
    if "filings" in files:
        out.append(load_filings(files["filings"], config=cfg))
    return out
