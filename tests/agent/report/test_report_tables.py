"""The report's table numbers against hand computations on tiny run folders: metrics recomputed
from the steps, the median-return run and the spread across seeds, settings and sections, tokens
by call type, fallbacks with their steps."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
import report_support as rs

from agent.pairs.market.records import read_json, write_json
from agent.report.load import load_input, load_run
from agent.report.tables import (
    build_sections,
    build_settings,
    median_index,
    metric_mismatches,
    results_row,
    run_results,
    step_metrics,
)
from agent.report.usage import (
    engine_token_rows,
    fallback_rows,
    finmem_tokens_per_cycle,
    token_rows,
    tokens_per_cycle,
)

SQ = math.sqrt(252)


@pytest.fixture(scope="module")
def exp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rs.experiment(tmp_path_factory.mktemp("exp"))


def test_step_metrics_match_a_hand_computation(exp: Path) -> None:
    run = load_run(exp / "runs" / "full-no_beta-s1", exp)
    m = step_metrics(run)
    r = [-0.01, 0.02, 0.0, 0.0, 0.015, 0.0]  # SL, SL, FLAT, FLAT, LS, FLAT on LS = LS_RETURNS
    mean, sd = sum(r) / 6, statistics.stdev(r)
    assert m.n_transitions == 6
    assert m.cumulative_return == pytest.approx(0.99 * 1.02 * 1.015 - 1, abs=1e-15)
    assert m.sharpe == pytest.approx(SQ * mean / sd, rel=1e-12)
    assert m.sharpe_se == pytest.approx(SQ * math.sqrt((1 + 0.5 * (mean / sd) ** 2) / 6), rel=1e-12)
    assert m.max_drawdown == pytest.approx(-0.01, abs=1e-15)  # the start counts as the peak
    assert m.annual_volatility == pytest.approx(SQ * sd, rel=1e-12)
    assert m.sortino == pytest.approx(SQ * mean / math.sqrt(0.01**2 / 6), rel=1e-12)
    assert m.win_rate == pytest.approx(2 / 3)  # positions: -0.01, +0.02, +0.015
    assert m.action_accuracy == pytest.approx(3 / 6)  # steps 2, 4, 5 matched the best action
    assert m.action_counts == {"LONG_SHORT": 1, "SHORT_LONG": 2, "FLAT": 3}
    assert m.pair_switches == 1


def test_pool_rows_and_runs_without_a_pair_have_no_action_accuracy(exp: Path, tmp_path: Path) -> None:
    ew = step_metrics(load_run(exp / "runs" / "equal_weight-no_beta-seed0", exp))
    assert math.isnan(ew.action_accuracy)
    assert ew.action_counts == {"LONG_SHORT": 0, "SHORT_LONG": 0, "FLAT": 0}
    assert ew.win_rate == pytest.approx(4 / 6)  # every transition counts: 4 of 6 positive
    flat = rs.pair_steps([0.0] * 6, ["FLAT"] * 6, [""] * 6)
    d = rs.write_run(tmp_path, "eg_z-no_beta-seed0", flat, method="eg_z", extra={"no_candidate": True})
    m = step_metrics(load_run(d, tmp_path))
    assert math.isnan(m.action_accuracy) and math.isnan(m.win_rate) and m.cumulative_return == 0.0


def test_metrics_json_that_disagrees_with_the_steps_is_flagged(exp: Path, tmp_path: Path) -> None:
    run = load_run(exp / "runs" / "eg_z-beta-seed0", exp)
    assert metric_mismatches(step_metrics(run), run.doc) == ()
    d = rs.write_run(tmp_path, "ls", rs.pair_steps(rs.LS, ["LONG_SHORT"] * 6, rs.PAIR), method="long_short")
    doc = read_json(d / "metrics.json")
    doc["metrics"]["sharpe"] += 1e-3
    doc["metrics"]["action_accuracy"] = None  # null where the steps define it
    write_json(d / "metrics.json", doc)
    run = load_run(d, tmp_path)
    assert metric_mismatches(step_metrics(run), run.doc) == ("sharpe", "action_accuracy")


def test_median_index_takes_the_middle_or_the_lower_middle() -> None:
    assert median_index([0.1]) == 0
    assert median_index([-0.2, 0.0, 0.3]) == 1
    assert median_index([-0.2, 0.3]) == 0
    assert median_index([-0.2, 0.0, 0.1, 0.3]) == 1
    with pytest.raises(ValueError):
        median_index([])


def test_settings_group_seeds_and_pick_the_median_return_run(exp: Path) -> None:
    inp = load_input(exp)
    assert len(inp.runs) == 16 and not inp.skipped
    sections = build_sections(build_settings(run_results(inp.runs)))
    assert [(s.exposure, s.window) for s in sections] == [
        ("no_beta", (rs.DATES[0], rs.DATES[-1])),
        ("beta", (rs.DATES[0], rs.DATES[-1])),
    ]
    labels = [s.label for s in sections[0].settings]
    assert labels == ["Moira · tiny-qwen3", "Long-Short", "Short-Long", "Equal-Weight", "EG+Z", "EG-DDQN"]
    moira = sections[0].settings[0]
    assert moira.n == 3 and [r.run.seed for r in moira.results] == [2, 1, 0]  # sorted by return
    assert moira.representative.run.run_id == "full-no_beta-s1"
    row = results_row(moira)
    best = 1.01 * 1.02 * 1.03 * 1.015 * 1.005 - 1
    worst = 0.99 * 0.98 * 0.97 * 0.995 - 1
    assert row["cumulative_return"] == pytest.approx(0.99 * 1.02 * 1.015 - 1)
    assert (row["return_min"], row["return_max"]) == (pytest.approx(worst), pytest.approx(best))
    assert row["accepted_updates"] == 1  # seed 1's extra.accepted_policy_updates
    assert row["n_runs"] == 3 and row["seeds"] == (2, 1, 0)
    ls = results_row(sections[0].settings[1])
    assert ls["accepted_updates"] is None and ls["n_runs"] == 1
    assert math.isnan(results_row(sections[0].settings[3])["action_accuracy"])


def test_labels_name_variant_and_folder_when_settings_would_collide(tmp_path: Path) -> None:
    steps = rs.pair_steps(rs.LS, ["LONG_SHORT"] * 6, rs.PAIR)
    for folder in ("a", "b"):
        rs.write_run(
            tmp_path / folder, "ls", steps, method="long_short", extra={"pool": [folder.upper(), "X"]}
        )
    rs.write_run(
        tmp_path / "a",
        "m",
        steps,
        kind="moira",
        method="moira",
        extra={"variant": "A3", "tokens_by_call_type": {}},
    )
    later = rs.pair_steps(rs.LS, ["LONG_SHORT"] * 6, rs.PAIR, dates=[f"2022-01-0{i}" for i in range(3, 9)])
    rs.write_run(tmp_path / "c", "ls", later, method="long_short")
    settings = build_settings(run_results(load_input(tmp_path).runs))
    assert [s.label for s in settings] == ["Moira [A3]", "Long-Short (a)", "Long-Short (b)", "Long-Short"]
    assert len(build_sections(settings)) == 2  # two test windows


def test_token_rows_of_moira_and_finmem_shapes(exp: Path, tmp_path: Path) -> None:
    run = load_run(exp / "runs" / "full-beta-s0", exp)
    rows = token_rows(run, 6)
    assert [r.call_type for r in rows] == ["direction", "pair_selection", "reflection", "total"]
    d, ps, rf, tot = rows
    assert (d.calls, d.prompt_tokens, d.completion_tokens) == (11, 1100, 110)  # 5 train + 6 test
    assert d.test_tokens_per_step == pytest.approx((600 + 60) / 6)
    assert ps.test_tokens_per_step == pytest.approx(320 / 6)
    assert rf.test_tokens_per_step == 0.0 and d.cached_tokens is None
    assert (tot.calls, tot.prompt_tokens, tot.completion_tokens) == (14, 1100 + 300 + 200, 110 + 20 + 40)
    assert tot.test_tokens_per_step == pytest.approx((660 + 320) / 6) and tot.cached_tokens is None
    # one call's tokens from the trace: training 100 + 12, test steps 1..6: 90 + 2 step, 8 + step
    assert (d.prompt_per_call, d.completion_per_call) == ((92, 102), (9, 14))
    # Table 9's total: each range on its own (training 112, test 98 + 3 step: 101 .. 116)
    assert d.total_per_call == (101, 116) and tot.total_per_call is None
    assert (ps.prompt_per_call, ps.completion_per_call) == ((150, 150), (10, 10))
    assert rf.prompt_per_call is None and tot.prompt_per_call is None  # no traced reflection call
    assert tokens_per_cycle(rows) == pytest.approx((660 + 320) / 6 * 23)
    assert tokens_per_cycle(rows, period=5) == pytest.approx((660 + 320) / 6 * 5)
    assert token_rows(load_run(exp / "runs" / "eg_z-beta-seed0", exp), 6) == []
    counter = {
        "calls": 4,
        "prompt_tokens": 400,
        "completion_tokens": 40,
        "cached_tokens": 100,
        "fallbacks": 1,
        "replayed": 0,
    }
    extra = {
        "tokens_by_call_type": {"finmem_decision": counter},
        "tokens_by_phase": {
            "test": {"finmem_decision": counter | {"calls": 3, "prompt_tokens": 300, "completion_tokens": 30}}
        },
    }
    f = rs.write_run(
        tmp_path,
        "finmem-no_beta-seed0",
        rs.pair_steps(rs.LS, ["FLAT"] * 6, rs.PAIR),
        method="finmem",
        extra=extra,
    )
    assert load_run(f, tmp_path, backbone="from-manifest").backbone == "from-manifest"
    extra["config"] = {"model": "smollm2-135m"}
    f = rs.write_run(
        tmp_path,
        "finmem-no_beta-seed0",
        rs.pair_steps(rs.LS, ["FLAT"] * 6, rs.PAIR),
        method="finmem",
        extra=extra,
    )
    assert load_run(f, tmp_path, backbone="from-manifest").backbone == "smollm2-135m"
    fm = token_rows(load_run(f, tmp_path), 6)
    assert fm[0].cached_tokens == 100 and fm[0].test_tokens_per_step == pytest.approx(330 / 6)
    assert fm[-1].call_type == "total" and fm[-1].cached_tokens == 100


def test_engine_token_rows_sum_the_journal_totals(exp: Path) -> None:
    rows = engine_token_rows(load_input(exp).experiments["."])
    assert [r["call_type"] for r in rows] == ["direction", "pair_selection", "total"]
    assert rows[-1] | {"latency_s": 0} == {
        "call_type": "total",
        "calls": 44,
        "prompt_tokens": 4600,
        "completion_tokens": 440,
        "cached_tokens": 1200,
        "fallbacks": 3,
        "latency_s": 0,
    }
    assert rows[-1]["latency_s"] == pytest.approx(3.0)


def test_fallbacks_come_with_their_steps(exp: Path, tmp_path: Path) -> None:
    rows = fallback_rows(load_run(exp / "runs" / "full-no_beta-s0", exp))
    assert [(f.phase, f.call_type, f.count, f.steps) for f in rows] == [
        ("test", "direction", 2, ("2", "5")),
        ("train", "direction", 1, ("r1:3",)),
    ]
    assert rows[0].reasons == (("invalid reply: invalid JSON", 2),)
    # without a trace: steps flagged in steps.parquet, counts from extra for the rest
    d = rs.write_run(
        tmp_path,
        "m",
        rs.pair_steps(rs.LS, ["FLAT"] * 6, rs.PAIR, fallback=[False, True, False, False, True, True]),
        kind="moira",
        method="moira",
        extra=rs.moira_extra(6, accepted=0),
    )
    rows = fallback_rows(load_run(d, tmp_path))
    assert [(f.phase, f.call_type, f.count, f.steps) for f in rows] == [
        ("test", "direction", 3, ("2", "5", "6")),
        ("train", "direction", 1, ()),
    ]


def test_finmems_cycle_is_the_mean_of_its_first_complete_cycles() -> None:
    # the paper's 303-step test: 13 complete 23-step cycles, the last four steps left out
    by_step = [100] * (13 * 23) + [10_000] * 4 + [5]  # the last session's reflection call
    value, n = finmem_tokens_per_cycle({"test_tokens_by_step": by_step}, 303)
    assert n == 13 and value == pytest.approx(23 * 100)
    # a growing memory: later cycles cost more, and the mean is over the cycles, not the steps
    grow = [c * 10 for c in range(13) for _ in range(23)]
    assert finmem_tokens_per_cycle({"test_tokens_by_step": grow}, 303)[0] == pytest.approx(23 * 60)
    # Moira's formula on the same steps would count the last four: not FinMem's
    assert finmem_tokens_per_cycle({"test_tokens_by_step": by_step}, 22) == (None, 0)
    assert finmem_tokens_per_cycle({}, 303) == (None, 0)
