"""FinMem's mid and long memory hold the pair's filings as FinMem's code fills them: 10-Q text in
mid, 10-K text in long, each from the first session after its filing date. On a store with
filings, every test decision prompt shows only excerpts filed before its session (none filed on
or after it), and one shows a 10-Q in mid and a 10-K in long: on the synthetic market (always)
and on the real filing text of ``../shared/data`` with the real big-tech prices (where present).
A prompt longer than the served context fails before the call, naming the setting."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig
from agent.pairs.baselines.finmem.calls import DECISION_CALL, ID_FIELDS, REFLECTION_CALL
from agent.pairs.baselines.finmem.context import ContextError, PromptBudget, byte_bound
from agent.pairs.baselines.finmem.run import FinMemConfig, finmem_program, prepare_finmem
from agent.pairs.baselines.finmem.texts import filing_text
from agent.pairs.baselines.runner import RunSettings
from agent.pairs.screen.causal import ScreenConfig
from bank.embedder import HashingEmbedder
from serving.chat.lockstep import run_lockstep
from serving.chat.scripted import Rule, ScriptedBackend

EMB = HashingEmbedder(dim=64)
POOL = ["GRNF", "HRBK", "KSTR", "MLWD", "NRGX", "OKSN", "PTRV", "SLTN"]


def _scripted() -> ScriptedBackend:
    none = {f: [] for f in ID_FIELDS.values()}
    return ScriptedBackend(
        [
            Rule(DECISION_CALL, lambda req: json.dumps({"action": "FLAT", "reason": "flat", **none})),
            Rule(REFLECTION_CALL, lambda req: json.dumps({"reflection": "nothing", **none})),
        ]
    )


def _decisions(market, cfg: FinMemConfig, budget: PromptBudget | None = None) -> list:
    be = _scripted()
    run_lockstep([finmem_program(market, cfg, exposure="no_beta", seed=0, embedder=EMB, budget=budget)], be)
    return [c for c in be.calls if c.call_type == DECISION_CALL]


def _check_filed_before(market, cfg: FinMemConfig, store: MarketStore) -> tuple[int, int]:
    """Every filing excerpt a test decision shows was filed before that decision's session;
    returns (test decisions showing a 10-Q in mid and a 10-K in long, excerpts checked)."""
    s = market.series
    texts: dict[str, dt.date] = {}
    for t in (s.ticker_a, s.ticker_b):
        for f in store.filings(t):
            texts[filing_text(f, market.calendar, cfg.filing_section, cfg.filing_max_chars)] = f.date
    label_day = {market.label(g): s.dates[g].item() for g in market.train_idx + market.test_idx}
    both = checked = 0
    for req in _decisions(market, cfg):
        p = json.loads(req.messages[1].content)
        day = label_day[p["current_step"]]
        forms: dict[str, set[str]] = {}
        for layer in ("mid", "long"):
            for item in p["memory"][layer]:
                if item["text"] not in texts:
                    continue  # a news item that rose from short
                filed = texts[item["text"]]
                assert filed < day, f"{item['text'][:60]} filed {filed}, shown at {day}"
                forms.setdefault(layer, set()).add(item["text"].split()[1])
                checked += 1
        if day >= s.dates[market.test_idx[0]].item():
            both += int("10-Q" in forms.get("mid", ()) and "10-K" in forms.get("long", ()))
    return both, checked


def test_synthetic_store_prompts_hold_filings_filed_before_the_session(synthetic_store_path: Path) -> None:
    # news_per_leg 0: mid and long hold the filings alone (no news rises from short)
    cfg = FinMemConfig(news_per_leg=0, filing_max_chars=0, max_model_len=1_000_000)
    with MarketStore(synthetic_store_path, create=False) as store:
        market = prepare_finmem(
            store, pool=POOL, train=("2021-11-01", "2021-12-31"), test=("2022-01-03", "2022-04-29")
        )
        entered = {g: fs for g, fs in market.filings.items()}
        assert entered, "the window holds filings of the pair"
        for g, fs in entered.items():  # each enters on the first session after its filing date
            day, prev = market.series.dates[g].item(), market.series.dates[g - 1].item()
            assert all(prev <= f.date < day for f in fs)
        both, checked = _check_filed_before(market, cfg, store)
    assert checked > 0 and both > 0
    # whole excerpts: tens of thousands of characters each
    assert min(len(f.mda) for fs in entered.values() for f in fs) > 8_000


def test_real_filings_enter_mid_and_long_before_the_session(shared_data: Path, tmp_path: Path) -> None:
    prices = shared_data / "prices" / "bigtech_adjclose_2015_2025.csv"
    filings = shared_data / "filings" / "herculean_layout" / "data" / "filings.parquet"
    absent = [str(f) for f in (prices, filings) if not f.is_file()]
    if absent:
        pytest.skip(f"absent: {absent}")
    pool = ("AAPL", "NVDA", "TSLA")  # each has a 10-K before June 2025 and a 10-Q from May to August
    with MarketStore(tmp_path / "real.sqlite") as store:
        import_files(store, prices=[prices], filings=[filings], config=ImportConfig(pool=pool))
        settings = RunSettings(screen=ScreenConfig(price_field="close"))
        market = prepare_finmem(
            store,
            pool=pool,
            train=("2025-06-02", "2025-06-30"),
            test=("2025-07-01", "2025-09-30"),
            settings=settings,
            prior_filings="latest",
        )
        assert market.series is not None
        cfg = FinMemConfig(
            news_per_leg=0, filing_max_chars=0, prior_filings="latest", max_model_len=1_000_000
        )
        both, checked = _check_filed_before(market, cfg, store)
        # the real text: MD&A of the filings as filed
        shown = [f for fs in market.filings.values() for f in fs]
        assert {f.document_type for f in shown} == {"10-K", "10-Q"}
        assert all(f.date < dt.date(2025, 9, 30) for f in shown)
    assert checked > 0 and both > 0


def test_a_prompt_past_the_served_context_fails_before_the_call(synthetic_store_path: Path) -> None:
    cfg = FinMemConfig(filing_max_chars=0, prior_filings="latest")
    with MarketStore(synthetic_store_path, create=False) as store:
        market = prepare_finmem(
            store,
            pool=POOL,
            train=("2021-11-01", "2021-11-30"),
            test=("2021-12-01", "2021-12-31"),
            prior_filings="latest",
        )
    budget = PromptBudget(8_192, byte_bound, "one token per UTF-8 byte")  # the CPU model's context
    be = _scripted()
    prog = finmem_program(market, cfg, exposure="no_beta", seed=0, embedder=EMB, budget=budget)
    with pytest.raises(ContextError, match=r"baselines\.finmem\.max_model_len") as err:
        run_lockstep([prog], be)
    assert be.calls == []  # refused before the first call: nothing was sent
    assert "8,192-token context" in str(err.value) and "filing_max_chars" in str(err.value)
    # cut to fit, the same run goes through
    small = FinMemConfig(filing_max_chars=200, news_per_leg=1, news_max_chars=80, prior_filings="latest")
    assert _decisions(market, small, budget)
