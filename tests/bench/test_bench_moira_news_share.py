"""The news-share measurement replays a finished experiment call by call at other prompt settings:
the same decisions (every journaled reply used once, in order), the prompts of the settings given,
and the news in them counted per call type."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent" / "pairs"))
from moira_support import scripted, small_config, small_store, with_finmem

from agent.pairs.experiment.run import run_experiment
from bank.embedder import HashingEmbedder
from bench.tokens.news_share import measure, news_texts


def test_news_texts_of_each_payload() -> None:
    assert news_texts(
        "direction", {"active_candidate": {"news_a": [{"text": "a"}], "news_b": [{"text": "b"}]}}
    ) == [
        "a",
        "b",
    ]
    assert news_texts("break_check", {"past_week_news_summary": "no news"}) == []
    mem = {"memory": {"short": [{"text": "AAA: x"}, {"text": "step 002 close: ..."}]}}
    assert news_texts("finmem_decision", mem, ("AAA", "BBB")) == ["AAA: x"]


def test_replay_at_other_settings_takes_the_same_decisions(tmp_path: Path) -> None:
    tables = {
        "windows": {"test_end": "2015-02-06"},
        "policy": {"max_cycles": 1},
        "lifecycle": {"validation_period": 8},
        "baselines": {"methods": ["finmem"]},
    }
    cfg, text = small_config(small_store(), **tables)
    out = tmp_path / "exp"
    run_experiment(
        cfg, out, config_text=text, backend=with_finmem(scripted()), embedder=HashingEmbedder(dim=64)
    )
    settings = tmp_path / "gpu.toml"
    settings.write_text(
        "[model.max_tokens]\npair_selection = 4096\ndirection = 4096\nreflection = 4096\n"
        "break_check = 4096\nnews_verify = 4096\n[prompt]\nnews_token_budget = 4096\nnews_per_leg = 50\n"
        "news_lookback_sessions = 20\nreason_max_chars = 0\nprinciple_max_chars = 0\n"
        "reflection_max_chars = 0\ndescription_max_chars = 5000\n",
        encoding="utf-8",
    )
    rows = {r["call_type"]: r for r in measure(out, settings, embedder=HashingEmbedder(dim=64))}
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    engine = {t["call_type"]: t["calls"] for t in summary["tokens_by_call_type_engine"]}
    runs = {t: v["calls"] for t, v in summary["tokens_by_call_type_runs"].items()}
    # every call of every run again (the journal answered identical requests once: the runs' own
    # counts are the reference), in the same positions
    assert {k: v["calls"] for k, v in rows.items()} == runs and set(engine) == set(runs)
    assert rows["direction"]["calls_with_news"] > 0 and 0 < rows["direction"]["news_share"] < 1
    assert rows["direction"]["news_tokens_max"] <= 4096
