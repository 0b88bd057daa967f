"""Memorization control (``[experiment] anonymize = true``): no prompt of an anonymized run names
a ticker or company of the pool (every prompt in the journal scanned, case-insensitive on word
boundaries; one-letter tickers in exact case), Moira's and FinMem's alike; the replies, which
name aliases, are mapped back (a name-agnostic script decides exactly as in the named run); on
the real shared files every company description and news item of the big-tech pool comes out
of the rewrite without a pool name; the audit still passes (provenance keys are the keys of the
requests the model saw)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from moira_support import scripted, small_config, small_store, with_finmem

from agent.data.aliases import parse_alias
from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.synthetic import DEFAULT_TICKERS
from agent.data.validate import ImportConfig
from agent.pairs.experiment.audit import audit_runs
from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.anonymize import Aliases, name_forms
from bank.embedder import HashingEmbedder
from serving.journal import Journal

SHAPE = {
    "policy": {"max_cycles": 1},
    "baselines": {"methods": ["finmem"]},
    "lifecycle": {"validation_period": 10},
    "prompt": {"description_max_chars": 400, "news_per_leg": 2},
}
#: the synthetic market's names, written out by hand (not derived by the code under test)
SYNTHETIC_NAMES = [t.name for t in DEFAULT_TICKERS] + [t.name.split()[0] for t in DEFAULT_TICKERS]
BIGTECH = ("AAPL", "ADBE", "AMD", "AMZN", "GOOGL", "META", "MSFT", "NFLX", "NVDA", "TSLA")
BIGTECH_NAMES = [
    "Apple",
    "Adobe",
    "Advanced Micro Devices",
    "Amazon",
    "Amazon.com",
    "Alphabet",
    "Meta",
    "Meta Platforms",
    "Microsoft",
    "Netflix",
    "NVIDIA",
    "Tesla",
]


def leaks(text: str, tickers: list[str], names: list[str]) -> list[str]:
    found = []
    for t in tickers:
        if re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", text, 0 if len(t) == 1 else re.IGNORECASE):
            found.append(t)
    for n in names:
        if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text, re.IGNORECASE):
            found.append(n)
    return found


def prompts(journal: Path) -> list[tuple[str, str]]:
    with Journal(journal) as j:
        recs = j.records()
    out = []
    for r in recs:
        req = r["request"]
        out += [(req["call_type"], m["content"]) for m in req["messages"]]
        out.append((req["call_type"], json.dumps(req["json_schema"])))
    return out


def test_name_forms_and_the_rewrite():
    assert name_forms("Coca-Cola Company (The)")[:4] == [
        "Coca-Cola Company (The)",
        "The Coca-Cola Company",
        "Coca-Cola Company",
        "Coca-Cola",
    ]
    companies = {
        "KO": type("C", (), {"name": "Coca-Cola Company (The)"}),
        "PEP": type("C", (), {"name": "PepsiCo, Inc."}),
        "K": type("C", (), {"name": "Kellanova"}),
    }
    a = Aliases.for_pool(["PEP", "KO", "K"], companies)
    assert a.tickers == {"K": "STOCK_A", "KO": "STOCK_B", "PEP": "STOCK_C"}
    text = "The Coca-Cola Company (NYSE: KO) said Coca-Cola's rival Pepsi ($PEP) and ko; Kellanova (K) ok."
    out = a.text(text)
    assert out == (
        "Company B (NYSE: STOCK_B) said Company B's rival Company C (STOCK_C) and STOCK_B; "
        "Company A (STOCK_A) ok."
    )
    assert leaks(out, list(companies), ["Coca-Cola", "Pepsi", "PepsiCo", "Kellanova"]) == []
    assert a.back("STOCK_B/STOCK_C") == "KO/PEP"
    assert Aliases.for_pool(["A", "B", "C"]).tickers == {"A": "STOCK_D", "B": "STOCK_E", "C": "STOCK_F"}


def _run(tmp: Path, anonymize: bool, store: Path | None = None, **shape):
    cfg, text = small_config(store or small_store(), **{**SHAPE, **shape})
    if anonymize:
        text = text.replace("[experiment]\n", "[experiment]\nanonymize = true\n")
        import tomllib

        cfg = parse_config(tomllib.loads(text))
        assert cfg.anonymize
    out = tmp / ("anon" if anonymize else "named")
    run_experiment(
        cfg, out, config_text=text, backend=with_finmem(scripted()), embedder=HashingEmbedder(dim=64)
    )
    return out


def test_no_prompt_of_an_anonymized_run_names_the_pool(tmp_path):
    anon = _run(tmp_path, True)
    tickers = [t.ticker for t in DEFAULT_TICKERS]
    texts = prompts(anon / "journal.sqlite")
    kinds = {k for k, _ in texts}
    assert {"pair_selection", "direction", "reflection", "break_check", "news_verify"} <= kinds
    assert {"finmem_decision", "finmem_reflection"} <= kinds
    bad = {
        (k, tuple(leaks(t, tickers, SYNTHETIC_NAMES))) for k, t in texts if leaks(t, tickers, SYNTHETIC_NAMES)
    }
    assert bad == set()
    joined = "\n".join(t for _, t in texts)
    assert "STOCK_" in joined and "Company " in joined  # aliases are there, descriptions included
    # replies name aliases and are mapped back: the name-agnostic script decides as in the named run
    named = _run(tmp_path, False)
    for run in ("full-no_beta-s0", "finmem-no_beta-s0"):
        a = pd.read_parquet(anon / "runs" / run / "steps.parquet")
        b = pd.read_parquet(named / "runs" / run / "steps.parquet")
        pd.testing.assert_frame_equal(a, b)
        assert set(a["pair"]) - {""} <= {f"{x}/{y}" for x in tickers for y in tickers}
    assert all(not x.violations for x in audit_runs(anon))
    manifest = json.loads((anon / "manifest.json").read_text())
    assert manifest["config"]["anonymize"] is True
    assert manifest["aliases"]["CIRQ"] == {"ticker": "STOCK_A", "name": "Company A"}  # sorted pool


@pytest.fixture(scope="module")
def bigtech_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    prices = shared_data / "prices" / "tech_daily_2003_2023.csv"
    news = shared_data / "news" / "tradingview_bigtech_2025-04_05.csv"
    companies = shared_data / "companies.csv"
    absent = [str(f) for f in (prices, news, companies) if not f.is_file()]
    if absent:
        pytest.skip(f"absent: {absent}")
    path = tmp_path_factory.mktemp("bigtech") / "tech.sqlite"
    with MarketStore(path) as s:
        import_files(
            s,
            prices=[prices],
            news=[news],
            companies=[companies],
            config=ImportConfig(pool=BIGTECH, aliases=(parse_alias("news:GOOG=GOOGL"),)),
        )
    return path


def test_real_descriptions_and_news_lose_every_pool_name(bigtech_store):
    with MarketStore(bigtech_store, create=False) as s:
        companies = s.companies(BIGTECH)
        items = [
            n
            for t in BIGTECH
            for n in s.news_window(t, pd.Timestamp("2025-01-01").date(), pd.Timestamp("2025-12-31").date())
        ]
    a = Aliases.for_pool(BIGTECH, companies)
    texts = [c.description for c in companies.values()] + [f"{n.headline} -- {n.summary}" for n in items]
    assert len(items) > 1000 and sum(bool(leaks(t, list(BIGTECH), BIGTECH_NAMES)) for t in texts) > 500
    left = [(t[:80], leaks(a.text(t), list(BIGTECH), BIGTECH_NAMES)) for t in texts]
    assert [x for x in left if x[1]] == []


def test_an_anonymized_run_on_real_prices_and_descriptions(bigtech_store, tmp_path):
    windows = {
        "train_start": "2023-01-03",
        "train_end": "2023-01-24",
        "test_start": "2023-01-25",
        "test_end": "2023-03-10",
    }
    anon = _run(
        tmp_path,
        True,
        bigtech_store,
        windows=windows,
        experiment={"pool": list(BIGTECH)},
        baselines={"methods": []},
    )
    texts = prompts(anon / "journal.sqlite")
    assert {"pair_selection", "direction", "reflection"} <= {k for k, _ in texts}
    assert [
        (k, leaks(t, list(BIGTECH), BIGTECH_NAMES))
        for k, t in texts
        if leaks(t, list(BIGTECH), BIGTECH_NAMES)
    ] == []
    assert "Company " in "\n".join(t for _, t in texts)
