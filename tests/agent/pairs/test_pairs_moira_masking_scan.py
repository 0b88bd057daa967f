"""The demo config on the demo's own market (its planted breaks, the bundled synthetic news), on
the scripted model, FinMem's runs included. Masking: every prompt is free of calendar dates,
weekdays and month names; dates inside news became step labels. Sizes: the short demo windows
still hold every lifecycle event the demo shows (the break at test step 004 reaches the keyword
path, the boundary at step 007 replaces the pair, decisions follow on the new one), in about 30
lockstep rounds (the CPU demo's time goal)."""

from __future__ import annotations

import json
import re
import tomllib

import pandas as pd
import pytest
from moira_support import scripted, with_finmem

from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.demo import demo_config_text, synthetic_store
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.masking import contains_calendar_leak
from bank.embedder import HashingEmbedder


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo-scan")
    text = demo_config_text()
    store = synthetic_store(tmp / "market")  # the demo's market, with its planted breaks
    cfg = parse_config(tomllib.loads(text), base_dir=store.parent)
    backend = with_finmem(scripted())
    res = run_experiment(
        cfg, tmp / "demo", config_text=text, backend=backend, embedder=HashingEmbedder(dim=64)
    )
    return res, backend, tmp / "demo"


def test_every_prompt_of_a_demo_shaped_run_is_masked(demo_run):
    res, backend, _ = demo_run
    assert len(res.runs) == 2  # the demo's seed 0 x two exposures
    kinds = {r.call_type for r in backend.calls}
    assert {"pair_selection", "direction", "reflection", "break_check", "news_verify"} <= kinds
    assert {"finmem_decision", "finmem_reflection"} <= kinds
    leaks = {}
    for req in backend.calls:
        for m in req.messages:
            found = contains_calendar_leak(m.content)
            if found or re.search(r"\b20[12]\d-\d\d-\d\d\b", m.content):
                leaks[req.key()] = found
    assert leaks == {}
    texts = [m.content for r in backend.calls for m in r.messages]
    # routine news of the synthetic market name a date ("... on {day}"): it reached prompts masked
    assert any(
        re.search(r"(conference|results release|effective) (on|for) step (\d{3}|XXX)", t) for t in texts
    )


def test_the_short_demo_windows_hold_the_break_the_replacement_and_steps_after_it(demo_run):
    res, _, out = demo_run
    # 5 training sessions x 3 passes + 2 reflections, 9 test sessions and their extra calls
    assert res.rounds <= 32, res.rounds
    for r in res.runs:
        tr = pd.read_parquet(out / "runs" / r["run_id"] / "trace.parquet")
        test = tr[tr.phase == "test"]
        assert test.step.max() == 9
        verify = test[test.kind == "news_verify"]
        assert 4 in set(verify.step)  # the planted restatement reaches the keyword path
        lc = test[test.kind == "lifecycle"]
        assert "BREAK" in set(lc[lc.step == 4].state_after)
        (b,) = test[(test.kind == "boundary")].itertuples()
        assert b.step == 7 and json.loads(b.decision)["keep"] is False
        (sel,) = test[(test.kind == "select") & (test.step == 7)].itertuples()
        new = sel.state_after
        assert new and new != b.pair
        held = test[(test.kind == "direction") & (test.pair == new)]
        assert sorted(held.step) == [7, 8]  # two decisions on the new pair
