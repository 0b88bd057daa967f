"""What pair selection and daily direction are shown (paper §4.1, A.1, A.6): every candidate leg's
recent news in the selection request (masked, within the lookback, nothing after the session),
the lifecycle state of the candidates the agent knows, the A.6 order of the appended blocks,
and the news token budget of paper-scale prompts."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from moira_support import payload, scripted, small_config, small_store

from agent.data.schema import NewsItem
from agent.data.store import MarketStore
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.masking import StepCalendar, contains_calendar_leak, mask_text
from agent.pairs.market.view import MarketView
from agent.pairs.moira import calls, payloads
from agent.pairs.moira.config import MaxTokens, PromptConfig
from agent.pairs.moira.memory import PairMemory
from agent.pairs.screen.causal import ScreenConfig
from localfin.errors import ConfigError
from serving.chat.types import Sampling


@pytest.fixture(scope="module")
def selection_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sel")
    backend = scripted()
    cfg, text = small_config(small_store(), policy={"max_cycles": 0})
    res = run_experiment(cfg, tmp / "exp", config_text=text, backend=backend)
    selections = [r for r in backend.calls if r.call_type == "pair_selection"]
    return cfg, res, tmp / "exp", selections


def _view(cfg) -> MarketView:
    with MarketStore(small_store(), create=False) as store:
        return MarketView(store, (), ScreenConfig(lookback=500, min_sessions=252), end=cfg.windows.test_end)


def test_selection_request_carries_both_legs_news_masked_and_causal(selection_run):
    cfg, _res, _out, selections = selection_run
    view = _view(cfg)
    test_days = view.sessions(cfg.windows.test_start, cfg.windows.test_end)
    # the training window's selection, then the test window's (step 001 each, no replay cycle)
    req = selections[1]
    p = payload(req)
    assert p["current_step"] == "step 001"
    legs = [t for c in p["top5_candidates"] for t in c["pair"].split("/")]
    assert list(p["recent_news_by_ticker"]) == list(dict.fromkeys(legs))  # each leg once, both legs
    g = view.index(test_days[0])
    first = view.dates[g - PromptConfig().news_lookback_sessions + 1]
    cal = StepCalendar.from_sessions(test_days)
    shown = 0
    for t, items in p["recent_news_by_ticker"].items():
        expected = view.news_until(t, first, g)[::-1][: PromptConfig().news_per_leg]
        assert len(items) == len(expected)
        shown += len(items)
        for item, n in zip(items, expected):
            assert n.date <= test_days[0]  # nothing after the selection session
            assert item["step"] == cal.label(n.date)
            assert item["text"][:30] == mask_text(n.headline or n.summary, cal)[:30]
    assert shown > 0  # the synthetic market has news around the session: the check can fail
    for m in req.messages:
        assert not contains_calendar_leak(m.content)


def test_selection_shows_the_lifecycle_state_the_agent_has(selection_run):
    _cfg, _res, out, selections = selection_run
    train_req, test_req = selections[0], selections[1]
    # the training window starts with an empty memory: no candidate has a state
    assert all("lifecycle_state" not in c for c in payload(train_req)["top5_candidates"])
    # the test window carries the training round's pair memory: the pair held there shows the
    # last level its monitor had; the others show none
    trace = pd.read_parquet(out / "runs" / "full-no_beta-s0" / "trace.parquet")
    train_life = trace[(trace.phase == "train") & (trace.kind == "lifecycle")]
    held = train_life.pair.iloc[-1]
    last_level = train_life.state_after.iloc[-1]
    states = {c["pair"]: c.get("lifecycle_state") for c in payload(test_req)["top5_candidates"]}
    assert held in states and states[held] == last_level
    assert all(v is None for k, v in states.items() if k != held)


def test_a_broken_pair_in_memory_shows_break():
    mem = PairMemory()
    mem.observe("AAA/BBB", True)
    mem.set_state("AAA/BBB", "WARNING")
    mem.observe("CCC/DDD", False)
    mem.mark_break("CCC/DDD")
    assert mem.states() == {"AAA/BBB": "WARNING", "CCC/DDD": "BREAK"}
    assert mem.lines()[0].startswith("AAA/BBB: new")  # the memory lines do not change


# -- A.6 block order -------------------------------------------------------------------------------


def _settings(**prompt) -> calls.CallSettings:
    sampling = Sampling(temperature=0.0, seed=0)
    return calls.CallSettings("smollm2-135m", sampling, MaxTokens(), PromptConfig(**prompt))


def _direction_system(block_order: str) -> str:
    req = calls.direction_request(
        _settings(),
        {"current_step": "step 002"},
        ["AAA -- Alpha Corp: makes widgets"],
        ["AAA/BBB: new (held 1 steps, spread moved toward its mean on 1)"],
        ["Trade toward the mean when the spread is stretched."],
        block_order=block_order,
    )
    return req.messages[0].content


def test_direction_blocks_follow_a6_by_default():
    text = _direction_system("paper")
    company = text.index("COMPANY CONTEXT")
    memory = text.index("PAIR QUALITY MEMORY")
    principles = text.index("Learned Decision Principles")
    assert company < memory < principles  # A.6: company context, pair memory, principles
    assert text.index("- AAA -- Alpha Corp") < memory < text.index("- AAA/BBB: new") < principles


def test_memory_last_is_the_named_alternative():
    text = _direction_system("memory_last")
    assert text.index("COMPANY CONTEXT") < text.index("Learned Decision") < text.index("PAIR QUALITY MEMORY")
    # same blocks, only moved
    assert sorted(text.splitlines()) == sorted(_direction_system("paper").splitlines())
    with pytest.raises(ConfigError, match="block_order"):
        _direction_system("other")
    with pytest.raises(ConfigError, match=r"prompt.block_order='x'; allowed: paper, memory_last"):
        PromptConfig(block_order="x")


def test_selection_blocks_company_then_memory():
    req = calls.selection_request(
        _settings(),
        {"current_step": "step 001", "top5_candidates": []},
        ["AAA/BBB"],
        ["AAA -- Alpha Corp"],
        ["AAA/BBB: broken (held 9 steps, spread moved toward its mean on 2, ended in a lifecycle BREAK)"],
    )
    text = req.messages[0].content
    assert text.index("COMPANY CONTEXT") < text.index("PAIR QUALITY MEMORY")


# -- the news token budget ------------------------------------------------------------------------


def _items(ticker: str, n: int, chars: int, day0: dt.date) -> list[NewsItem]:
    return [
        NewsItem(day0 + dt.timedelta(days=k), ticker, f"{ticker} headline {k}.", f"{ticker} " + "x" * chars)
        for k in range(n)
    ]


def test_news_headline_cut_without_a_budget():
    day0 = dt.date(2025, 1, 6)
    cal = StepCalendar.from_sessions([day0 + dt.timedelta(days=k) for k in range(5)])
    out = payloads.news_payloads([_items("AAA", 5, 500, day0)], PromptConfig(news_per_leg=2), cal)[0]
    assert [x["text"] for x in out] == ["AAA headline 4.", "AAA headline 3."]  # newest first
    assert [x["step"] for x in out] == ["step 005", "step 004"]


def test_news_budget_shows_full_texts_up_to_the_budget_for_both_legs():
    day0 = dt.date(2025, 1, 6)
    cal = StepCalendar.from_sessions([day0 + dt.timedelta(days=k) for k in range(5)])
    groups = [_items("AAA", 5, 290, day0), _items("BBB", 5, 290, day0)]
    cfg = PromptConfig(news_per_leg=5, news_token_budget=400)
    pick = payloads.pick_news(groups, cfg, cal)
    a, b = pick.groups
    texts = [x["text"] for x in a + b]
    assert sum(payloads.estimate_tokens(t) for t in texts) <= 400
    # whole texts (headline and summary), newest first, legs in turn: 3 whole items fit (~105
    # tokens each); the fourth does not, so it and everything older is left out, never cut
    assert len(a) == 2 and len(b) == 1
    assert a[0]["text"].startswith("AAA headline 4. -- AAA xxx") and len(a[0]["text"]) > 250
    assert all(x["text"].endswith("x") for x in a + b)
    assert [x["step"] for x in a] == ["step 005", "step 004"] and b[0]["step"] == "step 005"
    # the budget's account: 7 of the 10 items left out, reported
    assert pick.budget.cut and pick.budget.omitted == 7 and pick.budget.shown == 3
    # a budget larger than everything shows every item whole
    big = payloads.news_payloads(groups, PromptConfig(news_per_leg=5, news_token_budget=100_000), cal)
    assert [len(g) for g in big] == [5, 5] and not any(x["text"].endswith("...") for g in big for x in g)
