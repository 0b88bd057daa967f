"""Ablation A4 from one start (paper §4.3.4): the full agent and its no-reselection variant share
ONE training phase (its calls journaled once) and start the test window from the identical pair,
principles and pair-quality memory; only the test window's boundary replacement differs.

The training window holds the small market's planted restatement (session 580) and a validation
boundary after it, so the full agent's training replaces the broken pair: a variant trained with
reselection off would have held it, and with it different records, memory and principles. The
engine version of this test (tiny random Qwen3) is in test_pairs_a4_engine.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from moira_support import pick_first, scripted, small_config, small_store

from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json
from serving.journal import Journal

#: training: sessions 570-600 (the restatement at 580 = step 011; boundaries every 8 held
#: sessions: steps 009, 017, 025); test: sessions 601-640
A4_WINDOWS = {
    "train_start": "2015-03-23",
    "train_end": "2015-05-04",
    "test_start": "2015-05-05",
    "test_end": "2015-06-29",
}
VARIANTS = [{"name": "full"}, {"name": "a4-no-reselection", "reselection": False}]


def hold_the_breaking_pair(req):
    """Pick the candidate with the restating leg when there is one, else the first."""
    labels = req.json_schema["properties"]["selected_pair"]["enum"]
    pick = next((x for x in labels if "LMNS" in x), None)
    if pick is None:
        return pick_first(req)
    return json.dumps({"selected_pair": pick, "pair_selection_reason": "scripted"})


def a4_run(tmp_path, backend, name="a4", **extra):
    cfg, text = small_config(
        small_store(),
        windows=A4_WINDOWS,
        policy={"max_cycles": 1},
        lifecycle={"validation_period": 8},
        variants=VARIANTS,
        **extra,
    )
    out = tmp_path / name
    res = run_experiment(cfg, out, config_text=text, backend=backend)
    return res, out


def _trace(out, run_id: str) -> pd.DataFrame:
    return pd.read_parquet(out / "runs" / run_id / "trace.parquet")


@pytest.fixture(scope="module")
def a4(tmp_path_factory):
    backend = scripted(select=hold_the_breaking_pair)
    res, out = a4_run(tmp_path_factory.mktemp("a4"), backend)
    return res, out, backend


def test_the_training_replaces_the_broken_pair_so_a_separate_training_would_differ(a4) -> None:
    _, out, _ = a4
    train = _trace(out, "full-no_beta-s0")
    train = train[(train.phase == "train") & (train["round"] == 0)]
    first = train[train.kind == "select"].iloc[0]
    assert first.state_after == "CIRQ/LMNS"
    replaced = train[(train.kind == "boundary") & train.decision.str.contains('"keep": false')]
    assert list(replaced.step) == [17]  # after the restatement at step 011


def test_both_variants_share_one_training_phase(a4) -> None:
    res, out, backend = a4
    full, a4v = (
        read_json(out / "runs" / r / "training.json")
        for r in ("full-no_beta-s0", "a4-no-reselection-no_beta-s0")
    )
    assert full["cycles"] == a4v["cycles"] and full["principles"] == a4v["principles"]
    t_full, t_a4 = _trace(out, "full-no_beta-s0"), _trace(out, "a4-no-reselection-no_beta-s0")
    cols = [c for c in t_full.columns if c != "run_id"]
    tr_full = t_full[t_full.phase == "train"][cols].reset_index(drop=True)
    tr_a4 = t_a4[t_a4.phase == "train"][cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(tr_full, tr_a4)
    # journaled once: the engine saw each training request once, whatever the number of runs
    with Journal(out / "journal.sqlite") as j:
        recs = j.records()
    keys = [r["request"] for r in recs]
    train_keys = set(tr_full.request_key[tr_full.request_key != ""])
    assert train_keys and train_keys <= {r["result"]["request_key"] for r in recs}
    assert sum(r["request"]["call_type"] == "reflection" for r in recs) == len(
        tr_full[tr_full.kind == "reflection"]
    )
    assert len(keys) == len({r["result"]["request_key"] for r in recs})
    assert sum(c.call_type == "reflection" for c in backend.calls) == len(
        tr_full[tr_full.kind == "reflection"]
    )
    for r in res.runs:
        assert r["extra"]["training_shared_with"] == ["full-no_beta-s0", "a4-no-reselection-no_beta-s0"]


def test_both_variants_start_the_test_from_the_identical_pair_principles_and_memory(a4) -> None:
    res, out, _ = a4
    t_full, t_a4 = _trace(out, "full-no_beta-s0"), _trace(out, "a4-no-reselection-no_beta-s0")
    firsts = []
    for t in (t_full, t_a4):
        test = t[t.phase == "test"]
        sel = test[test.kind == "select"].iloc[0]
        direction = test[(test.kind == "direction") & (test.request_key != "")].iloc[0]
        firsts.append((sel.request_key, sel.state_after, direction.request_key))
    # the same first selection request (same principles, memory, screen) and the same first
    # direction request (same pair, principles and pair-quality memory in the system prompt)
    assert firsts[0] == firsts[1]
    assert {r["extra"]["initial_pair"] for r in res.runs} == {firsts[0][1]}
    assert {tuple(r["extra"]["principles"]) for r in res.runs} == {tuple(res.runs[0]["extra"]["principles"])}
    # the pair-quality memory both start from is the shared training's: the broken pair is in it
    with Journal(out / "journal.sqlite") as j:
        system = next(
            r["request"]["messages"][0]["content"]
            for r in j.records()
            if r["result"]["request_key"] == firsts[0][2]
        )
    assert "PAIR QUALITY MEMORY" in system and "CIRQ/LMNS: broken" in system


def test_only_the_test_windows_boundary_replacement_differs(tmp_path) -> None:
    # a test window with the restatement in it: the full agent replaces the pair, A4 keeps it
    windows = {
        "train_start": "2014-12-26",
        "train_end": "2015-01-16",
        "test_start": "2015-01-19",
        "test_end": "2015-05-15",
    }
    cfg, text = small_config(small_store(), windows=windows, policy={"max_cycles": 0}, variants=VARIANTS)
    res = run_experiment(cfg, tmp_path / "x", config_text=text, backend=scripted())
    by = {r["run_id"]: r["extra"] for r in res.runs}
    full, a4v = by["full-no_beta-s0"], by["a4-no-reselection-no_beta-s0"]
    assert full["initial_pair"] == a4v["initial_pair"] == "CIRQ/LMNS"
    assert full["test"]["boundary_breaks"] == a4v["test"]["boundary_breaks"] == 1
    assert full["test"]["replacements"] == 1 and a4v["test"]["replacements"] == 0
    assert a4v["pairs_held"] == ["CIRQ/LMNS"] and len(full["pairs_held"]) == 2
