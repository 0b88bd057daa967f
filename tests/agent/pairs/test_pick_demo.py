"""The pick demo (`localfin demo`) on the real engine with the tiny model: a report, every valid
pick inside the candidate table, and a rerun that replays the journal."""

from __future__ import annotations

import json

import pytest

from agent.pairs.pick_demo import run_pick_demo
from localfin.errors import ConfigError


def test_demo_pipeline_on_the_real_engine(vllm_backend, tiny_registry, tmp_path):
    out = tmp_path / "demo"
    report = run_pick_demo(
        model="tiny-qwen3", out_dir=out, registry=tiny_registry, n_requests=4, engine=vllm_backend
    )
    summary = json.loads(report.json.read_text())
    assert report.summary == summary and report.markdown == out / "report.md"
    assert summary["requests"] == 4 and summary["model_calls"] == 4
    assert len(summary["candidates"]) == 5
    # The reply schema only admits candidate labels, so every valid pick is in the table.
    assert summary["picks_in_candidate_table"] == summary["valid_json"]
    assert "valid JSON" in report.markdown.read_text()
    assert f"{summary['valid_json']}/4 valid JSON replies" in report.headline()[0]
    again = run_pick_demo(
        model="tiny-qwen3", out_dir=out, registry=tiny_registry, n_requests=4, engine=vllm_backend
    )
    assert again.summary["replayed_from_journal"] == 4 and again.summary["model_calls"] == 0
    assert again.markdown == report.markdown


def test_demo_rejects_a_bad_batch_size_before_any_work(tiny_registry, tmp_path):
    with pytest.raises(ConfigError, match=r"n_requests=0; allowed: 1\.\.256"):
        run_pick_demo(model="tiny-qwen3", out_dir=tmp_path / "d", registry=tiny_registry, n_requests=0)
    assert not (tmp_path / "d").exists()
