"""Experiments: lockstep and sequential give identical results, identical requests of different
runs reach the model once, a rerun replays the journal, the folder refuses a silent restart,
and the manifest names what produced the numbers."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from moira_support import scripted, small_config, small_store

from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json
from localfin.errors import ConfigError

SHAPE = {
    "experiment": {"seeds": [0, 1], "exposures": ["no_beta", "beta"]},
    "windows": {"test_end": "2015-02-27"},
    "policy": {"max_cycles": 1},
}


@pytest.fixture(scope="module")
def lockstep(tmp_path_factory):
    cfg, text = small_config(small_store(), **SHAPE)
    out = tmp_path_factory.mktemp("lock") / "exp"
    backend = scripted()
    return cfg, text, run_experiment(cfg, out, config_text=text, backend=backend), backend


def _files(out):
    docs = {p.parent.name: read_json(p) for p in sorted((out / "runs").glob("*/metrics.json"))}
    traces = {p.parent.name: pd.read_parquet(p) for p in sorted((out / "runs").glob("*/trace.parquet"))}
    training = {p.parent.name: read_json(p) for p in sorted((out / "runs").glob("*/training.json"))}
    return docs, traces, training


def test_lockstep_and_sequential_give_identical_results(lockstep, tmp_path):
    cfg, text, res, _backend = lockstep
    seq = run_experiment(cfg, tmp_path / "seq", config_text=text, backend=scripted(), sequential=True)
    a, b = _files(res.out_dir), _files(seq.out_dir)
    assert list(a[0]) == ["full-beta-s0", "full-beta-s1", "full-no_beta-s0", "full-no_beta-s1"]
    assert a[0] == b[0] and a[2] == b[2]
    for run_id in a[1]:
        pd.testing.assert_frame_equal(a[1][run_id], b[1][run_id])
    # lockstep batched: far fewer backend rounds than calls
    assert res.rounds < seq.rounds and res.mode == "lockstep" and seq.mode == "sequential"


def test_identical_requests_of_different_runs_reach_the_model_once(lockstep):
    _, _, res, backend = lockstep
    keys = [r.key() for r in backend.calls]
    assert len(keys) == len(set(keys))  # nothing asked twice
    received = sum(r["extra"]["train"]["calls"] + r["extra"]["test"]["calls"] for r in res.runs)
    assert res.model_calls == len(keys) < received  # training is No-Beta in both exposures: shared


def test_rerun_replays_everything_and_refuses_a_silent_restart(lockstep):
    cfg, text, res, _ = lockstep
    with pytest.raises(ConfigError, match="--resume"):
        run_experiment(cfg, res.out_dir, config_text=text, backend=scripted())
    with pytest.raises(ConfigError, match="differs"):
        run_experiment(cfg, res.out_dir, config_text=text + "\n# edited\n", backend=scripted(), resume=True)
    fresh = scripted()
    again = run_experiment(cfg, res.out_dir, config_text=text, backend=fresh, resume=True)
    assert fresh.calls == [] and again.model_calls == 0
    assert [r["metrics"] for r in again.runs] == [r["metrics"] for r in res.runs]


def test_folder_holds_summary_manifest_and_token_tables(lockstep):
    _cfg, _, res, _ = lockstep
    out = res.out_dir
    for name in ("config.toml", "journal.sqlite", "summary.json", "summary.md", "manifest.json"):
        assert (out / name).is_file(), name
    man = json.loads((out / "manifest.json").read_text())
    assert man["model"]["key"] == "smollm2-135m" and man["seeds"] == [0, 1]
    assert len(man["store_digest"]) == 64 and man["config"]["name"] == "t"
    assert {"pairs_select", "pairs_direction", "pairs_reflect"} <= set(man["prompts"])
    assert man["model"]["seen_in_journal"][0]["revision"] == "scripted"
    assert "numpy" in man["packages"] and man["mode"] == "lockstep"
    doc = res.runs[0]
    assert doc["kind"] == "moira" and doc["method"] == "moira"
    tokens = doc["extra"]["tokens_by_call_type"]
    assert {"pair_selection", "direction", "reflection"} <= set(tokens)
    assert all(v["prompt_tokens"] > 0 for v in tokens.values())
    md = (out / "summary.md").read_text()
    assert "| full-no_beta-s0 |" in md and "| direction |" in md
