from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def real_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A market store built from the shared staples/energy prices and companies (2003-2023)."""
    from agent.data.importer import import_files
    from agent.data.store import MarketStore

    prices = shared_data / "prices" / "staples_energy_daily_2003_2023.csv"
    if not prices.is_file():
        pytest.skip(f"{prices} absent")
    path = tmp_path_factory.mktemp("repro_store") / "real.sqlite"
    with MarketStore(path) as s:
        import_files(s, prices=[prices], companies=[shared_data / "companies.csv"])
    return path


@pytest.fixture(scope="module")
def released_root(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data root whose ``benchmarks/`` holds the benchmarks released on this machine (links to
    ``../shared/data/qa/released``: TAT-QA dev and FinMMR easy validation, as released)."""
    rel = shared_data / "qa" / "released"
    if not (rel / "finmmr").is_dir() or not (rel / "tatqa").is_dir():
        pytest.skip(f"{rel} absent")
    root = tmp_path_factory.mktemp("data_root")
    (root / "benchmarks").mkdir()
    for name in ("finmmr", "tatqa"):
        (root / "benchmarks" / name).symlink_to(rel / name)
    return root
