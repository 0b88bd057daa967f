"""The Moira reproduction configs carry no limit the paper does not state: no reply-length bound
(the 16,384-token budgets bound a reply), whole business descriptions, every decision of the
round in the reflection payload and nothing else in it, A.3's fixed-direction rule, and the one
news budget on every news path (FinMem's included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.pairs.experiment.matrix_config import parse_matrix
from agent.reproduce.spec import config_names, load_repro

MOIRA = [n for n in config_names() if load_repro(n).kind == "moira"]


@pytest.mark.parametrize("name", MOIRA)
def test_no_unstated_limit_in_the_reproduction_config(name: str) -> None:
    cells = parse_matrix(load_repro(name).document, base_dir=Path(".")).cells()
    assert cells
    for c in cells:
        cfg = c.config
        p = cfg.prompt
        assert (p.reason_max_chars, p.principle_max_chars, p.reflection_max_chars) == (0, 0, 0)
        assert p.reflection_max_records == 0 and p.description_max_chars == 5000
        assert p.news_token_budget == 4096 and p.news_per_leg == 50 and p.news_lookback_sessions == 20
        assert p.memory_records == 3 and p.block_order == "paper" and p.dir == ""
        assert p.description_filter == "financial_results" and cfg.lifecycle.news_window_days == 7
        # the paper's decoding: JSON asked for in the prompt, the final text read
        assert cfg.model.decoding == "prompt"
        for v in cfg.variants:
            assert v.policy.reflection_feedback is False and v.policy.direction_rule == "any_recommendation"
        assert all(
            cfg.model.max_tokens.for_call(k) == 16384 for k in ("direction", "reflection", "break_check")
        )
        fm = cfg.baselines.finmem
        if "finmem" in cfg.baselines.methods:
            assert fm.news_token_budget == 4096 and fm.description_max_chars == 5000
            assert (fm.reason_max_chars, fm.reflection_max_chars) == (0, 0)
            assert fm.max_tokens_decision == fm.max_tokens_reflection == 16384
