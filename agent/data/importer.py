"""One-call import of price/news/company files and Herculean directories into a store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent.data.herculean import load_herculean
from agent.data.loaders import ColumnMap, Loaded, load_companies, load_news, load_prices
from agent.data.store import ImportReport, MarketStore
from agent.data.validate import ImportConfig

__all__ = ["import_files"]


def import_files(
    store: MarketStore,
    *,
    prices: Sequence[str | Path] = (),
    news: Sequence[str | Path] = (),
    companies: Sequence[str | Path] = (),
    herculean: str | Path | None = None,
    column_maps: dict[str, ColumnMap] | None = None,
    config: ImportConfig | None = None,
) -> ImportReport:
    """Load and validate every file first, then write them all in one transaction.

    ``column_maps`` maps a kind (``prices``, ``news``, ``companies``) to a column map
    (canonical name -> file column name). Any error leaves the store exactly as it was.
    """
    cfg = config or ImportConfig()
    maps = column_maps or {}
    tables: list[Loaded] = []
    for p in prices:
        tables.append(load_prices(p, column_map=maps.get("prices"), config=cfg))
    if herculean is not None:
        tables.extend(load_herculean(herculean, config=cfg))
    for p in companies:
        tables.append(load_companies(p, column_map=maps.get("companies")))
    for p in news:
        tables.append(load_news(p, column_map=maps.get("news")))
    return store.import_loaded(tables, cfg)
