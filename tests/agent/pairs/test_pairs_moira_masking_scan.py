"""Masking: every prompt of a demo-shaped run (the packaged demo config on the bundled synthetic
market, whose news mention dates and whose test window holds a planted break), the FinMem
baseline's included, is free of calendar dates, weekdays and month names; dates inside news
became step labels."""

from __future__ import annotations

import re
import tomllib

from moira_support import scripted, with_finmem

from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.demo import demo_config_text, synthetic_store
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.masking import contains_calendar_leak
from bank.embedder import HashingEmbedder


def test_every_prompt_of_a_demo_shaped_run_is_masked(tmp_path):
    text = demo_config_text()
    store = synthetic_store(tmp_path / "market")  # the demo's market, with its planted breaks
    cfg = parse_config(tomllib.loads(text), base_dir=store.parent)
    backend = with_finmem(scripted())
    res = run_experiment(
        cfg, tmp_path / "demo", config_text=text, backend=backend, embedder=HashingEmbedder(dim=64)
    )
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
