"""The QA part of the demo, end to end on the real engine with the tiny model (slow): demo set,
bank from its train split, three variants on its test split, report section."""

from __future__ import annotations

import json

import pytest

from agent.qa.evaluation.demo import QADemoConfig, run_qa_demo
from bank.embedder import HashingEmbedder


@pytest.mark.slow
def test_qa_demo_runs_end_to_end(vllm_backend, tiny_registry, tmp_path):
    cfg = QADemoConfig(n_train=2, n_test=3, k=2, max_steps=1)
    res = run_qa_demo(
        tmp_path,
        backend=vllm_backend,
        model="tiny-qwen3",
        registry=tiny_registry,
        embedder=HashingEmbedder(dim=256),
        config=cfg,
    )
    text = res.report.read_text()
    for label in ("| Base |", "| Base+FT |", "| Base+FT+FM |", "memory hit rate", "QA part wall time"):
        assert label in text
    assert set(res.summaries) == {"base", "ft", "ft_fm"} and all(s.n == 3 for s in res.summaries.values())
    assert res.bank.items == 2 and res.summaries["ft_fm"].memory_hit_rate is not None
    data = json.loads((tmp_path / "qa_report.json").read_text())
    assert data["config"]["k"] == 2 and data["wall_s"]["total"] > 0
    for v in ("bank_build", "base", "ft", "ft_fm"):
        assert (tmp_path / "runs" / v / "manifest.json").exists()
    # a rerun replays every call from the journals
    again = run_qa_demo(
        tmp_path,
        backend=vllm_backend,
        model="tiny-qwen3",
        registry=tiny_registry,
        embedder=HashingEmbedder(dim=256),
        config=cfg,
    )
    # (calls that failed, e.g. a prompt past the tiny model's 2,048-token window, are never
    # journaled, so only they are made again)
    for v, s in again.summaries.items():
        rows = [json.loads(x) for x in (tmp_path / "runs" / v / "trace.jsonl").read_text().splitlines()]
        errors = sum(st["finish_reason"] == "error" for r in rows for st in r["steps"])
        assert s.model_calls == errors and s.replayed > 0
    # items already in the bank are skipped; the others replay to the same (empty) summaries
    assert again.bank.skipped_in_bank == res.bank.entries_added and again.bank.entries_added == 0


def test_qa_demo_sizes_are_checked_and_name_the_bad_field():
    from localfin.errors import ConfigError

    cfg = QADemoConfig()
    assert (cfg.k, cfg.max_steps, cfg.n_train, cfg.n_test) == (1, 1, 3, 6)
    for field, bad in (
        ("arg_chars", 5),
        ("plan_chars", 0),
        ("observation_chars", 50),
        ("thought_chars", True),
    ):
        with pytest.raises(ConfigError, match=f"QADemoConfig.{field}="):
            QADemoConfig(**{field: bad})
