"""Ablation A3 as the paper states it (§4.3.3, D.1): both conditions share ONE single-round warmup
and its reflection (journaled once) and start from its reflection memory; the full condition then
consolidates with rollback that never goes below that memory, the control keeps it as it is.

The scripted model's direction follows the principles in its system prompt: an "oracle" principle
trades the best side of every training step (the prices say which), a "contrarian" one the worst,
none at all stays FLAT (training return 0)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from moira_support import payload, principles_reply, scripted, small_config, small_store, training_oracle

from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json
from serving.journal import Journal

GOOD = "When the spread signal is clear, follow the oracle rule and trade toward reversion."
BAD = "When the spread signal is clear, take the contrarian view against reversion."
WORSE = "Take the contrarian view again whenever the spread looks stretched at all."
VARIANTS = [{"name": "full"}, {"name": "a3-no-consolidation", "consolidation": False}]
FULL, CONTROL = "full-no_beta-s0", "a3-no-consolidation-no_beta-s0"


@pytest.fixture(scope="module")
def oracle() -> dict[str, str]:
    """Best action of CIRQ/LMNS (No-Beta) at each training step label, from the prices."""
    return training_oracle()


def _direction(oracle: dict[str, str]):
    flip = {"LONG_SHORT": "SHORT_LONG", "SHORT_LONG": "LONG_SHORT"}

    def reply(req):
        system = req.messages[0].content
        best = oracle.get(payload(req)["current_step"], "FLAT")
        if "oracle" in system:
            action = best
        elif "contrarian" in system and best != "FLAT":
            action = flip[best]
        else:
            action = "FLAT"
        return json.dumps({"action": action, "direction_reason": "scripted"})

    return reply


def _a3(tmp_path, oracle, reflections, variants=VARIANTS, **policy):
    cfg, text = small_config(
        small_store(),
        windows={"test_end": "2015-02-06"},
        policy={"max_cycles": 8, **policy},
        variants=variants,
    )
    backend = scripted(direction=_direction(oracle), reflection=principles_reply(*reflections))
    out = tmp_path / "a3"
    res = run_experiment(cfg, out, config_text=text, backend=backend)
    training = {r["run_id"]: read_json(out / "runs" / r["run_id"] / "training.json") for r in res.runs}
    return res, out, training, backend


def _trace(out, run_id: str) -> pd.DataFrame:
    return pd.read_parquet(out / "runs" / run_id / "trace.parquet")


def test_one_warmup_journaled_once_and_the_first_test_request_identical(tmp_path, oracle) -> None:
    # the warmup reflects [BAD]; the full condition then adds [GOOD], which beats it: the two
    # conditions end with different principles from one shared start
    res, out, training, backend = _a3(tmp_path, oracle, [[BAD], [GOOD]])
    full, control = training[FULL], training[CONTROL]
    assert control["principles"] == [BAD] and full["principles"] == [BAD, GOOD]
    # the control keeps the warmup reflection memory as it is; the full condition starts from it
    assert control["cycles"][0] == full["cycles"][0]
    assert control["cycles"][1]["proposed_principles"] == full["cycles"][1]["proposed_principles"] == [BAD]
    assert full["cycles"][1]["candidate_principles"] == [BAD] and full["cycles"][1]["accepted"]
    assert full["cycles"][2]["candidate_principles"] == [BAD, GOOD] and full["cycles"][2]["accepted"]
    by = {r["run_id"]: r["extra"] for r in res.runs}
    for e in by.values():
        assert e["warmup_shared_with"] == [FULL, CONTROL] and e["warmup_principles"] == [BAD]
    assert by[FULL]["training_shared_with"] == [FULL] and by[CONTROL]["training_shared_with"] == [CONTROL]
    # one warmup: its rows (the round and its reflection) are the same in both traces ...
    t_full, t_ctrl = _trace(out, FULL), _trace(out, CONTROL)
    for t in (t_full, t_ctrl):  # warmup, consolidation and test rows numbered in one sequence
        assert list(t["seq"]) == list(range(len(t)))
    cols = [c for c in t_full.columns if c != "run_id"]

    def warm(t: pd.DataFrame) -> pd.DataFrame:
        rows = t[(t.phase == "train") & ((t["round"] == 0) | (t.kind == "reflection") & (t["round"] == 1))]
        return rows[cols].reset_index(drop=True)

    pd.testing.assert_frame_equal(warm(t_full), warm(t_ctrl))
    # ... and the engine saw each of its requests once: one warmup reflection, one warmup round
    warm_reflection = warm(t_full).query("kind == 'reflection'").request_key.tolist()
    assert len(warm_reflection) == 1
    asked = [json.loads(r.messages[-1].content) for r in backend.calls if r.call_type == "reflection"]
    warm_payload = asked[0]
    assert sum(a == warm_payload for a in asked) == 1
    with Journal(out / "journal.sqlite") as j:
        keys = [r["result"]["request_key"] for r in j.records()]
    assert len(keys) == len(set(keys)) and set(warm(t_full).request_key) - {""} <= set(keys)
    warm_directions = warm(t_full).query("kind == 'direction' and request_key != ''")
    assert len(warm_directions) > 0
    assert (
        sum(
            r.call_type == "direction"
            and BAD not in r.messages[0].content
            and GOOD not in r.messages[0].content
            and payload(r)["current_step"] == "step 001"
            for r in backend.calls
        )
        == 1
    )
    # both test phases start from the warmup's memory: the first test request is the same
    firsts = []
    for t in (t_full, t_ctrl):
        test = t[(t.phase == "test") & (t.request_key != "")]
        firsts.append(test.iloc[0])
    assert firsts[0].kind == firsts[1].kind == "select"
    assert firsts[0].request_key == firsts[1].request_key
    assert by[FULL]["initial_pair"] == by[CONTROL]["initial_pair"]


def test_a_rejected_candidate_rolls_back_to_the_warmup_memory_not_to_none(tmp_path, oracle) -> None:
    # the warmup reflects the contrarian [BAD] (a loss against the warmup round's FLAT 0); the
    # next candidate adds [WORSE], no better: rolled back to [BAD], the warmup memory
    _, _, training, _ = _a3(tmp_path, oracle, [[BAD], [WORSE]])
    full, control = training[FULL], training[CONTROL]
    c0, c1, c2 = full["cycles"][:3]
    assert c1["candidate_principles"] == [BAD] and c1["accepted"] and c1["floor"] and "floor" in c1["reason"]
    assert c1["training_return"] < c0["training_return"] == 0.0
    assert c2["candidate_principles"] == [BAD, WORSE] and not c2["accepted"]
    assert "rolled back" in c2["reason"] and c2["best_return_after"] == c1["training_return"]
    assert full["principles"] == [BAD] == control["principles"]
    assert full["stop_reason"] == "2 rejections in a row"


def test_without_the_floor_the_same_script_rolls_back_to_none(tmp_path, oracle) -> None:
    # warmup_floor = false: the warmup memory is only the first candidate, gated against the
    # warmup round's return, so the full condition ends with no principle while the control
    # keeps [BAD] (what the paper's A3 rules out)
    _, _, training, _ = _a3(tmp_path, oracle, [[BAD], [WORSE]], warmup_floor=False)
    full, control = training[FULL], training[CONTROL]
    assert not full["cycles"][1]["accepted"] and not full["cycles"][1]["floor"] and full["principles"] == []
    assert control["principles"] == [BAD]
