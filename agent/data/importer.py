"""One-call import of price/news/company files and Herculean directories into a store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent.data.herculean import load_filings, load_herculean
from agent.data.loaders import ColumnMap, Loaded, load_companies, load_news, load_prices
from agent.data.store import ImportReport, MarketStore
from agent.data.validate import ImportConfig
from localfin.progress import NULL_PROGRESS, Progress

__all__ = ["import_files"]


def import_files(
    store: MarketStore,
    *,
    prices: Sequence[str | Path] = (),
    news: Sequence[str | Path] = (),
    companies: Sequence[str | Path] = (),
    filings: Sequence[str | Path] = (),
    herculean: str | Path | None = None,
    column_maps: dict[str, ColumnMap] | None = None,
    config: ImportConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> ImportReport:
    """Load and validate every file first, then write them all in one transaction.

    ``filings``: filing tables in Herculean's ``filings.parquet`` layout
    (:func:`agent.data.herculean.load_filings`). ``column_maps`` maps a kind (``prices``,
    ``news``, ``companies``) to a column map (canonical name -> file column name). Any error
    leaves the store exactly as it was.
    ``progress`` sees one step per file read and validated, then the write.
    """
    cfg = config or ImportConfig()
    maps = column_maps or {}
    steps = [("prices", p) for p in prices]
    steps += [("herculean", herculean)] if herculean is not None else []
    steps += [("companies", p) for p in companies] + [("news", p) for p in news]
    steps += [("filings", p) for p in filings]
    tables: list[Loaded] = []
    with progress.task("reading and validating files", total=len(steps)) as task:
        for kind, path in steps:
            task.update(info=Path(path).name)
            if kind == "prices":
                tables.append(load_prices(path, column_map=maps.get("prices"), config=cfg))
            elif kind == "herculean":
                tables.extend(load_herculean(path, config=cfg))
            elif kind == "filings":
                tables.append(load_filings(path, config=cfg))
            elif kind == "companies":
                tables.append(load_companies(path, column_map=maps.get("companies"), config=cfg))
            else:
                tables.append(load_news(path, column_map=maps.get("news"), config=cfg))
            task.advance()
    with progress.task(f"writing {sum(len(t) for t in tables)} rows to {store.path.name}"):
        return store.import_loaded(tables, cfg)
