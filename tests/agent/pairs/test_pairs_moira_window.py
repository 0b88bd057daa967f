"""The window runner with a scripted model: settlement at t+1 for both exposures, the planted
break replaced at the next validation boundary and not before, the A4 switch, the rule for
screens with no candidate, and invalid replies falling back to FLAT and being counted."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math

import numpy as np
import pandas as pd
import pytest
from moira_support import BREAK_DATE, payload, scripted, small_config, small_store

from agent.data.store import MarketStore
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json, read_steps
from agent.pairs.market.settlement import FLAT, causal_betas, leg_weights, no_beta_weights
from agent.pairs.market.view import MarketView
from agent.pairs.screen.causal import ScreenConfig


def _run(tmp_path, backend, name="exp", **overrides):
    cfg, text = small_config(small_store(), **overrides)
    res = run_experiment(cfg, tmp_path / name, config_text=text, backend=backend)
    return cfg, res, tmp_path / name


def _view(cfg) -> MarketView:
    with MarketStore(small_store(), create=False) as store:
        return MarketView(store, (), ScreenConfig(lookback=500, min_sessions=252), end=cfg.windows.test_end)


@pytest.fixture(scope="module")
def both_exposures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("both")
    return _run(tmp, scripted(), experiment={"exposures": ["no_beta", "beta"]}, policy={"max_cycles": 1})


def test_settlement_at_t_plus_1_under_both_exposures(both_exposures):
    cfg, _res, out = both_exposures
    view = _view(cfg)
    days = view.sessions(cfg.windows.test_start, cfg.windows.test_end)
    for exposure in ("no_beta", "beta"):
        steps = read_steps(out / "runs" / f"full-{exposure}-s0" / "steps.parquet")
        assert len(steps) == len(days) - 1  # N sessions, N-1 settled transitions
        equity = 1.0
        for k, s in enumerate(steps):
            assert s.step == k + 1 and s.date == days[k].isoformat()
            a, b = s.pair.split("/")
            g = view.index(days[k])
            r_a = view.price(a, g + 1) / view.price(a, g) - 1
            r_b = view.price(b, g + 1) / view.price(b, g) - 1
            if exposure == "no_beta":  # the default reading: one share of each leg (§4.1)
                w = no_beta_weights("equal_shares", view.price(a, g), view.price(b, g))
            else:
                w = leg_weights("beta", float(causal_betas(view.log_prices(a, g), view.log_prices(b, g))[-1]))
            ls = w.w_a * r_a - w.w_b * r_b
            assert s.ret_long_short == pytest.approx(ls, abs=1e-12)
            assert s.ret_short_long == pytest.approx(-ls, abs=1e-12)
            assert s.realized == pytest.approx(
                {"LONG_SHORT": ls, "SHORT_LONG": -ls, FLAT: 0.0}[s.action], abs=1e-12
            )
            equity *= 1 + s.realized
            assert s.equity == pytest.approx(equity)
        doc = read_json(out / "runs" / f"full-{exposure}-s0" / "metrics.json")
        assert doc["metrics"]["cumulative_return"] == pytest.approx(equity - 1)
        assert doc["metrics"]["n_transitions"] == len(days) - 1


def test_equal_share_legs_size_no_beta_and_the_training_too(tmp_path):
    cfg, _res, out = _run(
        tmp_path, scripted(), experiment={"no_beta_legs": "equal_shares"}, policy={"max_cycles": 0}
    )
    view = _view(cfg)
    days = view.sessions(cfg.windows.test_start, cfg.windows.test_end)
    steps = read_steps(out / "runs" / "full-no_beta-s0" / "steps.parquet")
    for k, s in enumerate(steps[:30]):
        a, b = s.pair.split("/")
        g = view.index(days[k])
        pa, pb = view.price(a, g), view.price(b, g)
        ls = (view.price(a, g + 1) - pa - (view.price(b, g + 1) - pb)) / (pa + pb)  # one share each
        assert s.ret_long_short == pytest.approx(ls, abs=1e-12)
    trace = pd.read_parquet(out / "runs" / "full-no_beta-s0" / "trace.parquet")
    rows = trace[(trace.phase == "train") & (trace.kind == "direction") & (trace.pair != "")]
    w = json.loads(rows.decision.iloc[0])
    assert w["w_a"] != 0.5 and w["w_a"] + w["w_b"] == pytest.approx(1.0)


def test_planted_break_is_replaced_at_the_next_boundary_and_not_before(both_exposures):
    _, res, out = both_exposures
    trace = pd.read_parquet(out / "runs" / "full-no_beta-s0" / "trace.parquet")
    test = trace[trace.phase == "test"]
    news = test[(test.kind == "news_verify") & test.decision.str.contains('"severity": "CRITICAL"')]
    first_critical = int(news.step.min())
    assert test[test.step == first_critical].date.iloc[0] == BREAK_DATE  # the planted restatement
    bounds = test[test.kind == "boundary"]
    assert list(bounds.step) == [24, 47, 70]
    kept = bounds[bounds.decision.str.contains('"keep": true')]
    assert list(kept.step) == [24, 47]  # before the event: kept
    replace_step = int(bounds[bounds.decision.str.contains('"keep": false')].step.iloc[0])
    assert replace_step == 70 and replace_step > first_critical
    steps = read_steps(out / "runs" / "full-no_beta-s0" / "steps.parquet")
    held = {s.step: s.pair for s in steps}
    assert {held[k] for k in range(1, 70)} == {"CIRQ/LMNS"}
    assert held[70] != "CIRQ/LMNS" and "LMNS" not in held[70]  # re-screened without the broken pair
    extra = res.runs[0]["extra"]["test"]
    assert extra["boundary_breaks"] == 1 and extra["replacements"] == 1
    # Table 7's figures: boundaries, re-screens, replacements, the share of steps per state
    life = res.runs[0]["extra"]["lifecycle"]
    assert (life["boundaries"], life["boundary_breaks"], life["rescreens"], life["replacements"]) == (
        3,
        1,
        1,
        1,
    )
    shares = life["state_shares"]
    assert shares == pytest.approx(
        {k: sum((s.lifecycle or "none") == k for s in steps) / len(steps) for k in shares}
    )
    assert shares["BREAK"] > 0 and shares["none"] == 0 and sum(shares.values()) == pytest.approx(1)
    # the lifecycle state was context: the direction prompts after the event said BREAK
    states = {s.step: s.lifecycle for s in steps}
    assert states[first_critical + 1] == "BREAK" and states[first_critical - 1] in ("HEALTHY", "WARNING")


def test_reselection_off_keeps_the_broken_pair(tmp_path):
    _, res, out = _run(tmp_path, scripted(), selection={"reselection": False}, policy={"max_cycles": 0})
    steps = read_steps(out / "runs" / "full-no_beta-s0" / "steps.parquet")
    assert {s.pair for s in steps} == {"CIRQ/LMNS"}
    extra = res.runs[0]["extra"]["test"]
    assert extra["boundary_breaks"] == 1 and extra["replacements"] == 0


def test_fixed_initial_pair_skips_the_first_selection_call(tmp_path):
    backend = scripted()
    _, _res, out = _run(tmp_path, backend, selection={"fixed_pair": "OKSN/MLWD"}, policy={"max_cycles": 0})
    steps = read_steps(out / "runs" / "full-no_beta-s0" / "steps.parquet")
    assert steps[0].pair == "MLWD/OKSN"  # screen orientation (alphabetical)
    test_starts = [r for r in backend.calls if r.call_type == "pair_selection"]
    assert len(test_starts) == 1  # the training window selected; the test window did not call


class _EmptyUntil(MarketView):
    """The screen finds no candidate before ``until`` (a real 10-year pool can)."""

    until = None

    def screen(self, day, exclude=()):
        res = super().screen(day, exclude)
        return dataclasses.replace(res, candidates=()) if day < self.until else res


def test_no_candidate_means_flat_until_a_boundary_retry_finds_one(tmp_path, monkeypatch):
    import agent.pairs.experiment.run as experiment

    cfg, _ = small_config(small_store())
    _EmptyUntil.until = _view(cfg).sessions(cfg.windows.test_start, cfg.windows.test_end)[40]
    monkeypatch.setattr(experiment, "MarketView", _EmptyUntil)
    backend = scripted()
    _, res, out = _run(tmp_path, backend, policy={"max_cycles": 0})
    steps = read_steps(out / "runs" / "full-no_beta-s0" / "steps.parquet")
    # nothing held and FLAT without a call up to the retry at step 47 (the boundary after 41)
    assert all(s.pair == "" and s.action == FLAT and s.realized == 0.0 for s in steps[:46])
    assert steps[46].pair == "CIRQ/LMNS"
    assert not any(
        r.call_type == "direction" for r in backend.calls if payload(r)["current_step"] < "step 047"
    )
    extra = res.runs[0]["extra"]
    # train: 1 empty screen; test: steps 1 and 24 empty, 47 found one, 70 replaced the break
    assert extra["test"]["screens"] == 4 and extra["test"]["screens_empty"] == 2
    assert extra["train"]["screens_empty"] == 1
    assert extra["screens_empty"] == 3 and extra["test"]["no_pair_steps"] == 46
    assert len(extra["test"]["empty_screen_dates"]) == 2
    # re-screens: the retries at 24 and 47 (no pair held) and the replacement at 70
    assert (extra["lifecycle"]["rescreens"], extra["lifecycle"]["replacements"]) == (3, 1)
    assert extra["lifecycle"]["state_shares"]["none"] == pytest.approx(46 / len(steps))
    # the counterfactual accuracy counts the held transitions only
    held = [s for s in steps if s.pair]
    assert res.runs[0]["metrics"]["action_accuracy"] == pytest.approx(
        sum(s.matched for s in held) / len(held)
    )


def test_a_run_that_never_holds_a_pair_has_no_accuracy(tmp_path, monkeypatch):
    import agent.pairs.experiment.run as experiment

    cfg, _ = small_config(small_store())
    _EmptyUntil.until = cfg.windows.test_end + dt.timedelta(days=1)
    monkeypatch.setattr(experiment, "MarketView", _EmptyUntil)
    _, res, out = _run(tmp_path, scripted(), policy={"max_cycles": 0})
    m = res.runs[0]["metrics"]
    assert m["action_counts"]["FLAT"] == m["n_transitions"]
    assert m["action_accuracy"] is None or math.isnan(m["action_accuracy"])
    summary = (out / "summary.md").read_text()
    row = next(line for line in summary.splitlines() if line.startswith("| full-no_beta-s0"))
    cells = [c.strip() for c in row.split("|")]
    assert cells[7] == "n/a"  # CF accuracy column, not 1.00
    assert cells[13] == "0%/0%/0%/100%"  # every step without a pair


def test_invalid_replies_fall_back_to_flat_and_are_counted(tmp_path):
    bad = {"step 003": "not json at all", "step 005": json.dumps({"action": "BUY", "direction_reason": "x"})}

    def direction(req):
        step = payload(req)["current_step"]
        if step in bad:
            return bad[step]
        if step == "step 007":  # longer than max_tokens: cut, finish_reason=length
            return " ".join(["word"] * (req.max_tokens + 5))
        return json.dumps({"action": "LONG_SHORT", "direction_reason": "always"})

    _, res, out = _run(tmp_path, scripted(direction=direction), policy={"max_cycles": 0})
    steps = read_steps(out / "runs" / "full-no_beta-s0" / "steps.parquet")
    fb = {s.step: s for s in steps if s.fallback}
    assert sorted(fb) == [3, 5, 7]
    assert all(s.action == FLAT and s.realized == 0.0 for s in fb.values())
    assert all(s.action == "LONG_SHORT" for s in steps if not s.fallback and s.pair)
    extra = res.runs[0]["extra"]
    assert extra["test"]["fallbacks_by_call_type"] == {"direction": 3}
    assert extra["train"]["fallbacks_by_call_type"] == {"direction": 3}  # the same steps in training
    assert extra["fallbacks_total"] == 6
    trace = pd.read_parquet(out / "runs" / "full-no_beta-s0" / "trace.parquet")
    rows = trace[(trace.phase == "test") & (trace.kind == "direction") & (trace.fallback != "")]
    assert list(rows.step) == [3, 5, 7]
    assert "cut at max_tokens" in rows[rows.step == 7].fallback.iloc[0]
    assert rows[rows.step == 7].finish_reason.iloc[0] == "length"
    assert np.all(rows.request_key.str.len() == 64)
