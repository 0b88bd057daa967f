"""Prefix reuse from journals and the plan's vLLM-aware figures (`localfin reproduce plan`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.reproduce.gpu_plan import MAX_NUM_SEQS, plan_config
from agent.reproduce.prefix_reuse import common_prefix, measure, measure_rehearsal, prompt_text, react_hit
from agent.reproduce.spec import load_repro
from serving.chat.replies import build_result
from serving.chat.types import ChatRequest, Message, Usage
from serving.journal import Journal
from serving.models.registry import default_registry


def _rec(req: ChatRequest, prompt: int = 100, cached: int = 0) -> dict:
    res = build_result(
        req,
        "{}",
        finish_reason="stop",
        usage=Usage(prompt, 5, cached),
        latency_s=0.1,
        backend="x",
        revision="",
    )
    return {"request": req.to_dict(), "result": res.to_dict()}


def _react(q: str, steps: int) -> list[ChatRequest]:
    """One question's ReAct calls: each resends the last and adds a reply and an observation."""
    msgs = (Message("system", "S" * 300), Message("user", q * 200))
    out = [ChatRequest("m", msgs, max_tokens=8, call_type="qa_solve")]
    for k in range(steps - 1):
        msgs = msgs + (Message("assistant", f"code {k}" * 10), Message("user", f"obs {k}" * 10))
        out.append(ChatRequest("m", msgs, max_tokens=8, call_type="qa_solve"))
    return out


def test_common_prefix() -> None:
    assert common_prefix("abcdef", "abcxyz") == 3
    assert common_prefix("abc", "abc") == 3 and common_prefix("", "abc") == 0 and common_prefix("a", "b") == 0


def test_shared_prefixes_and_react_continuations_by_hand() -> None:
    reqs = _react("A", 3) + _react("B", 2)
    reuse = measure([_rec(r, cached=50) for r in reqs])
    s = reuse.shapes["qa_solve"]
    assert (s.calls, s.continued, s.first_calls) == (5, 3, 2)
    texts = [prompt_text(r.to_dict()) for r in reqs]
    # the second question shares the system message and the next role tag with the first
    shared_b = common_prefix(texts[3], texts[0])
    assert texts[3][:shared_b].endswith("S" * 300 + "\x1e\x1euser\x1e") and shared_b < len(texts[3])
    assert s.static == pytest.approx(shared_b / (len(texts[0]) + len(texts[3])))
    # each continuation adds what it appends; it shares the whole earlier prompt
    added = [len(texts[1]) - len(texts[0]), len(texts[2]) - len(texts[1]), len(texts[4]) - len(texts[3])]
    assert s.growth == pytest.approx((sum(added) / 3) / ((len(texts[0]) + len(texts[3])) / 2))
    assert s.shared_chars == shared_b + len(texts[0]) + len(texts[1]) + len(texts[3])
    assert s.engine_cached_share == 0.5 and reuse.plain_hit() == pytest.approx(s.shared_chars / s.chars)


def test_react_hit_by_hand() -> None:
    assert react_hit(1, 0.3, 0.4) == pytest.approx(0.4)  # one call: only the static part
    assert react_hit(2, 0.0, 0.0) == pytest.approx(0.5)  # the same prompt twice: half served
    # 8 calls, each adding 0.5 x the first prompt: sent 8 + 0.5 x 28 = 22, computed 1 + 3.5 = 4.5
    assert react_hit(8, 0.5, 0.0) == pytest.approx(1 - 4.5 / 22)
    with pytest.raises(ValueError):
        react_hit(0, 0.1, 0.1)


def _rehearsal(tmp_path: Path, name: str, reqs: list[ChatRequest]) -> Path:
    root = tmp_path / name
    with Journal(root / "engine" / "runs" / "r" / "journal.sqlite") as j:
        j.put_many(
            [
                (
                    r,
                    build_result(
                        r,
                        "{}",
                        finish_reason="stop",
                        usage=Usage(100, 5),
                        latency_s=0.1,
                        backend="x",
                        revision="",
                    ),
                )
                for r in reqs
            ]
        )
    (root / "rehearsal.json").write_text(json.dumps({"calls_per_step": {}}))
    return root / "rehearsal.json"


def test_the_plan_shows_both_figures_and_uses_the_rehearsals_reuse(tmp_path: Path) -> None:
    cfg, reg = load_repro("finacumen_table1"), default_registry()
    (plain,) = plan_config(cfg, 1, "h200", registry=reg)
    # without journals: the plain figures (the solver holds 0.65 of the GPU beside the judge's
    # engine, so its cache holds 14 contexts at once), and paged KV lets the engine's 64 run at once
    assert round(plain.hours, 1) == 28.6 and round(plain.prefill_h, 1) == 10.3 and plain.batch == 14
    assert plain.batch_vllm == MAX_NUM_SEQS and plain.prefill_vllm_h == plain.prefill_h
    assert plain.decode_vllm_h < plain.decode_h and plain.hit_vllm == 0.0
    # four replicas: a round holds a whole set's questions, so each runs max_num_seqs at once
    (four,) = plan_config(cfg, 4, "h200", registry=reg)
    assert (four.dp, four.batch, four.batch_vllm) == (4, 14, MAX_NUM_SEQS)
    assert four.hours == pytest.approx(7.15, abs=0.01) and four.decode_vllm_h < four.decode_h
    path = _rehearsal(tmp_path, cfg.name, _react("A", 3) + _react("B", 3))
    (e,) = plan_config(cfg, 1, "h200", registry=reg, rehearsal=path)
    reuse = measure_rehearsal(path.parent)
    s = reuse.shapes["qa_solve"]
    want = react_hit(8, s.growth, s.static)
    assert e.hours == plain.hours  # the plain figure does not depend on the journals
    assert 0.7 < want < 1
    # the solver's 0.65 of an H200 cannot hold 64 contexts at their final length: the measured
    # reuse is cut in proportion, and the note says from what
    assert 0.7 < e.hit_vllm < want and f"cut from {want:.0%}" in e.note_vllm
    assert e.prefill_vllm_h == pytest.approx(e.prefill_h * (1 - e.hit_vllm))
    assert "ReAct: each step adds" in e.note_vllm


def test_moira_reuse_is_the_shared_share_of_its_prompts(tmp_path: Path, cli, monkeypatch) -> None:
    cfg, reg = load_repro("moira_table5_a2"), default_registry()
    sys_msg = Message("system", "You decide a pair's direction. " * 20)
    reqs = [
        ChatRequest("m", (sys_msg, Message("user", f"step {i} " * 30)), max_tokens=8, call_type="direction")
        for i in range(6)
    ]
    path = _rehearsal(tmp_path, cfg.name, reqs)
    (e,) = plan_config(cfg, 1, "h200", registry=reg, rehearsal=path)
    assert e.hit_vllm == pytest.approx(measure_rehearsal(path.parent).plain_hit()) and e.hit_vllm > 0.3
    assert e.prefill_vllm_h == pytest.approx(e.prefill_h * (1 - e.hit_vllm))
    # one lock-step stream of A2's no-thinking cell: 6 agent runs and 6 FinMem runs; its demand,
    # not memory, sets vLLM's batch, while the plain figure holds what fits at full context
    assert e.work.concurrency == 12 and e.batch_vllm == 12 and e.batch == 6  # 6 fit at 32,768 tokens
    monkeypatch.setenv("LOCALFIN_RUNS_DIR", str(tmp_path / "none"))
    r = cli("reproduce", "plan", cfg.name, "--gpus", "1", "--gpu", "h200", "--out", str(tmp_path))
    assert r.code == 0, r.err
    assert "time, plain:" in r.out and "time, vLLM:" in r.out and "budget:" in r.out
    assert "shared with an earlier prompt" in r.out
