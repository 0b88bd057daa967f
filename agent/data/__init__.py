"""Market data layer: one SQLite store of prices, news and company context, its loaders and
validation, a Herculean-layout importer and a seeded synthetic market.

Names are re-exported lazily so that ``import agent.data`` stays cheap (no pandas until used).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "MarketStore",
    "ImportReport",
    "ImportConfig",
    "import_files",
    "load_prices",
    "load_news",
    "load_companies",
    "load_herculean",
    "PriceHistory",
    "PriceBar",
    "NewsItem",
    "Company",
    "Filing",
    "StoreInfo",
    "TickerInfo",
    "SyntheticConfig",
    "SyntheticMarket",
    "generate_market",
    "write_market",
]

_WHERE = {
    "MarketStore": "store",
    "ImportReport": "store",
    "ImportConfig": "validate",
    "import_files": "importer",
    "load_prices": "loaders",
    "load_news": "loaders",
    "load_companies": "loaders",
    "load_herculean": "herculean",
    "PriceHistory": "schema",
    "PriceBar": "schema",
    "NewsItem": "schema",
    "Company": "schema",
    "Filing": "schema",
    "StoreInfo": "schema",
    "TickerInfo": "schema",
    "SyntheticConfig": "synthetic",
    "SyntheticMarket": "synthetic",
    "generate_market": "synthetic",
    "write_market": "synthetic",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"agent.data.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'agent.data' has no attribute {name!r}")
