"""Policy memory with a scripted model whose direction depends on the principles in its prompt:
a principle is accepted only when the replayed training return improves, a worse one is rolled
back, training stops after two rejections in a row, rejected principles carry their rule, and
the A3 switch keeps the warmup reflection without replay."""

from __future__ import annotations

import json

import pytest
from moira_support import payload, principles_reply, scripted, small_config, small_store, training_oracle

from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json

GOOD = "When the spread signal is clear, follow the oracle rule and trade toward reversion."
BAD = "When the spread signal is clear, take the contrarian view against reversion."
WORSE = "Take the contrarian view again whenever the spread looks stretched at all."


@pytest.fixture(scope="module")
def oracle() -> dict[str, str]:
    """Best action of CIRQ/LMNS (No-Beta) at each training step label, from the prices."""
    return training_oracle()


def _direction(oracle: dict[str, str]):
    flip = {"LONG_SHORT": "SHORT_LONG", "SHORT_LONG": "LONG_SHORT"}

    def reply(req):
        system = req.messages[0].content
        best = oracle.get(payload(req)["current_step"], "FLAT")
        if "contrarian" in system and best != "FLAT":
            action = flip[best]
        elif "oracle" in system:
            action = best
        else:
            action = "FLAT"
        return json.dumps({"action": action, "direction_reason": "scripted"})

    return reply


def _window_starts(backend) -> int:
    return sum(
        r.call_type == "pair_selection" and payload(r)["current_step"] == "step 001" for r in backend.calls
    )


def _run(tmp_path, oracle, reflections, **cfg_overrides):
    cfg, text = small_config(small_store(), windows={"test_end": "2015-02-06"}, **cfg_overrides)
    backend = scripted(direction=_direction(oracle), reflection=principles_reply(*reflections))
    res = run_experiment(cfg, tmp_path / "exp", config_text=text, backend=backend)
    run_dir = tmp_path / "exp" / "runs" / res.runs[0]["run_id"]
    return res, read_json(run_dir / "training.json"), backend


def test_accept_only_on_improvement_rollback_and_early_stop(tmp_path, oracle):
    res, training, backend = _run(
        tmp_path,
        oracle,
        [[GOOD], [BAD], [WORSE, "Trade CIRQ first in every case."]],
        policy={"max_cycles": 8},
    )
    cycles = training["cycles"]
    # warmup (FLAT everywhere: 0), +oracle (accepted), +contrarian (rolled back), again (rolled back), stop
    assert [c["cycle"] for c in cycles] == [0, 1, 2, 3]
    assert cycles[0]["training_return"] == 0.0
    assert cycles[1]["accepted"] and cycles[1]["training_return"] > 0.0
    assert cycles[1]["candidate_principles"] == [GOOD]
    assert not cycles[2]["accepted"] and cycles[2]["candidate_principles"] == [GOOD, BAD]
    assert cycles[2]["training_return"] < cycles[1]["training_return"]
    assert "rolled back" in cycles[2]["reason"]
    assert not cycles[3]["accepted"] and cycles[3]["best_return_after"] == cycles[1]["training_return"]
    assert cycles[3]["rejected_principles"] == [{"text": "Trade CIRQ first in every case.", "rule": "ticker"}]
    assert training["principles"] == [GOOD]
    assert training["stop_reason"] == "2 rejections in a row"
    # 3 reflections, never an 8th cycle; the frozen principles reach the test prompts
    assert sum(r.call_type == "reflection" for r in backend.calls) == 3
    test_prompts = [r.messages[0].content for r in backend.calls if r.call_type == "direction"][-5:]
    assert all(GOOD in p and BAD not in p for p in test_prompts)
    # the warmup's own principle is the floor of rollback (kept, not a gated update)
    assert "floor" in cycles[1]["reason"]
    extra = res.runs[0]["extra"]
    assert extra["accepted_policy_updates"] == 0 and extra["principles"] == [GOOD]
    assert extra["warmup_principles"] == [GOOD]


def test_rejected_rule_is_recorded_and_no_replay_without_a_valid_principle(tmp_path, oracle):
    _, training, backend = _run(
        tmp_path,
        oracle,
        [
            ["Sell CIRQ whenever the spread is wide and rising fast."],
            ["Always prefer SHORT_LONG over the other side."],
        ],
        policy={"max_cycles": 8, "reflection_feedback": True},
    )
    c1, c2 = training["cycles"][1:]
    assert c1["rejected_principles"][0]["rule"] == "ticker" and c1["training_return"] is None
    assert c2["rejected_principles"][0]["rule"] == "direction" and not c2["accepted"]
    assert training["principles"] == [] and training["stop_reason"] == "2 rejections in a row"
    # the second reflection was told why the first proposal was dropped
    second = [payload(r) for r in backend.calls if r.call_type == "reflection"][1]
    assert second["previous_proposals"][0]["outcome"] == "rejected: names a ticker"
    # no replay ran: one training window pass (warmup) only
    assert _window_starts(backend) == 2  # warmup + test


def test_the_papers_reflection_payload_repeats_a_reflection_that_gave_no_valid_principle(tmp_path, oracle):
    # reflection_feedback off (A.6's payload: decisions, win rate, mean PnL, counterfactual
    # counts): a cycle without a valid principle replays nothing, so the next reflection is the
    # identical request, answered once (the journal holds the first call's reply)
    res, training, backend = _run(
        tmp_path,
        oracle,
        [["Sell CIRQ whenever the spread is wide and rising fast."], [GOOD]],
        policy={"max_cycles": 8},
    )
    asked = [payload(r) for r in backend.calls if r.call_type == "reflection"]
    assert len(asked) == 1  # the second, identical request came from the journal
    assert set(asked[0]) == {"current_step", "decisions", "win_rate", "avg_pnl", "counterfactual_summary"}
    assert {"pnl_long_short_pct", "pnl_short_long_pct", "pnl_flat_pct"} <= set(asked[0]["decisions"][0])
    c1, c2 = training["cycles"][1:]
    assert c1["rejected_principles"] == c2["rejected_principles"]
    assert c1["rejected_principles"][0]["rule"] == "ticker"
    assert training["stop_reason"] == "2 rejections in a row" and training["principles"] == []
    assert res.repeated >= 1 and res.replayed == 0  # a first run: nothing from an earlier run


def test_max_cycles_bounds_training(tmp_path, oracle):
    # every cycle proposes a new principle (the later ones change nothing: rejected)
    sets = [[GOOD]] + [[f"When news is neutral keep following rule number {k} quietly."] for k in range(1, 9)]
    _, training, _ = _run(tmp_path, oracle, sets, policy={"max_cycles": 3, "stop_after_rejections": 5})
    assert len(training["cycles"]) == 1 + 3 and training["stop_reason"] == "max_cycles=3 reached"


def test_consolidation_off_keeps_the_warmup_reflection(tmp_path, oracle):
    _, training, backend = _run(tmp_path, oracle, [[BAD]], policy={"consolidation": False})
    assert training["principles"] == [BAD]
    assert len(training["cycles"]) == 2 and training["cycles"][1]["training_return"] is None
    assert sum(r.call_type == "reflection" for r in backend.calls) == 1
    assert _window_starts(backend) == 2  # warmup + test: no replay
