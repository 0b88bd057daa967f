"""Fixtures of the market data layer and the pair screen: the default synthetic market,
written to files and imported into a store once per session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.synthetic import SyntheticConfig, generate_market, write_market


@pytest.fixture(scope="session")
def synthetic_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """prices.csv, news.jsonl, companies.csv, filings.parquet and truth.json of the default
    synthetic market."""
    out = tmp_path_factory.mktemp("synthetic")
    return write_market(generate_market(SyntheticConfig()), out)


@pytest.fixture(scope="session")
def synthetic_truth(synthetic_files: dict[str, Path]) -> dict:
    return json.loads(synthetic_files["truth"].read_text())


@pytest.fixture(scope="session")
def synthetic_store_path(synthetic_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the whole synthetic market (do not modify; copy it first)."""
    path = tmp_path_factory.mktemp("store") / "market.sqlite"
    with MarketStore(path) as store:
        import_files(
            store,
            prices=[synthetic_files["prices"]],
            news=[synthetic_files["news"]],
            companies=[synthetic_files["companies"]],
            filings=[synthetic_files["filings"]],
        )
    return path
