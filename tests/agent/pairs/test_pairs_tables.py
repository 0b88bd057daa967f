"""Run tables and execution settings on a whole experiment (scripted model, the small synthetic
market, both exposures, every baseline): each run's tape re-settles to its steps under its own
settings; equity_curve.csv, trades.csv and llm_usage.csv read back into the run's metrics and
the journal; runs.csv has one row per run with its with-frictions metrics; an experiment
executed at the next open with costs settles every run through the same function; a
rule baseline executed with frictions equals its paper run's decisions re-settled with them;
``localfin export`` rebuilds the tables of a folder written before tapes existed."""

from __future__ import annotations

import math
import shutil
import sqlite3
import tomllib

import pandas as pd
import pytest
from moira_support import scripted, small_config, small_store, toml_text, with_finmem

from agent.pairs.baselines.config import BASELINE_METHODS
from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.execution import FRICTIONS, ExecutionSettings, resettle
from agent.pairs.market.folders import find_runs, load_tape
from agent.pairs.market.records import read_json, read_steps
from agent.pairs.market.tables import check_tape, fill_metrics, run_execution
from bank.embedder import HashingEmbedder
from localfin.errors import ConfigError
from localfin_cli.main import main

EMB = HashingEmbedder(dim=64)
SHAPE = {
    "experiment": {"seeds": [0], "exposures": ["no_beta", "beta"]},
    "windows": {"test_end": "2015-02-27"},
    "policy": {"max_cycles": 1},
}
BASELINES = {
    "baselines": {"methods": list(BASELINE_METHODS)},
    "baselines.eg_ddqn": {"episodes": 2, "min_replay": 32, "history_sessions": 120},
    "baselines.finmem": {"momentum_sessions": 2, "news_per_leg": 1},
}
#: what the tape files add to a run folder (an old-style folder lacks them)
NEW_FILES = ("decisions.parquet", "prices.parquet", "equity_curve.csv", "trades.csv", "llm_usage.csv")


def _text(**experiment: object) -> str:
    shape = {**SHAPE, "experiment": {**SHAPE["experiment"], **experiment}}
    _, text = small_config(small_store(), **shape)
    return text.replace("[baselines]\nmethods = []\n", "") + toml_text(BASELINES)


def _run(tmp_path_factory, name: str, **experiment: object):
    text = _text(**experiment)
    out = tmp_path_factory.mktemp(name) / "exp"
    res = run_experiment(
        parse_config(tomllib.loads(text)),
        out,
        config_text=text,
        backend=with_finmem(scripted()),
        embedder=EMB,
    )
    return out, res


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    return _run(tmp_path_factory, "paper")


@pytest.fixture(scope="module")
def frictions(tmp_path_factory):
    f = FRICTIONS
    return _run(
        tmp_path_factory,
        "frictions",
        execution=f.execution,
        cost_bps=f.cost_bps,
        slippage_bps=f.slippage_bps,
        borrow_bps_per_year=f.borrow_bps_per_year,
    )


def _runs(out):
    return {d.name: d for d in find_runs(out)}


def test_every_run_has_a_tape_that_resettles_to_its_steps(paper, frictions):
    for out, _ in (paper, frictions):
        runs = _runs(out)
        methods = {read_json(d / "metrics.json")["method"] for d in runs.values()}
        assert methods == {"moira", *BASELINE_METHODS}
        assert {read_json(d / "metrics.json")["exposure"] for d in runs.values()} == {"no_beta", "beta"}
        for d in runs.values():
            doc = read_json(d / "metrics.json")
            decisions, prices = load_tape(d)
            fills = check_tape(d, read_steps(d / "steps.parquet"), decisions, prices, run_execution(doc))
            assert len(fills) == doc["metrics"]["n_transitions"]


def test_the_runs_record_their_execution_settings(paper, frictions):
    for (out, _), want in ((paper, ExecutionSettings()), (frictions, FRICTIONS)):
        manifest = read_json(out / "manifest.json")
        assert manifest["execution"]["execution"] == want.execution
        assert manifest["config"]["execution"] == want.execution
        assert manifest["config"]["slippage_bps"] == want.slippage_bps
        assert manifest["frictions_row"]["borrow_bps_per_year"] == FRICTIONS.borrow_bps_per_year
        for d in _runs(out).values():
            assert run_execution(read_json(d / "metrics.json")) == want


def test_frictions_cost_something_in_the_frictions_run(frictions):
    out, _ = frictions
    runs = pd.read_csv(out / "runs.csv")
    held = runs[(runs["n_long_short"] + runs["n_short_long"]) > 0]
    assert len(held) > 0 and (held["costs_paid"] > 0).all()
    # executed with the frictions, re-settled with the frictions: the same numbers
    assert (held["cumulative_return"] - held["frictions_cumulative_return"]).abs().max() < 1e-12


def test_a_rule_baseline_run_with_frictions_equals_its_paper_decisions_resettled(paper, frictions):
    # Long-Short, Short-Long and EG+Z decide without looking at returns: executing them with the
    # frictions and re-settling their paper decisions with the frictions must give one answer.
    a, b = pd.read_csv(paper[0] / "runs.csv"), pd.read_csv(frictions[0] / "runs.csv")
    rules = ("long_short", "short_long", "eg_z", "equal_weight")
    a = a[a["method"].isin(rules)].set_index("run_id")
    b = b[b["method"].isin(rules)].set_index("run_id")
    assert len(a) == 8 and list(a.index) == list(b.index)
    for col in ("cumulative_return", "sharpe", "max_drawdown"):
        diff = (a[f"frictions_{col}"] - b[col]).abs().max()
        assert diff < 1e-12, col
    assert (a["cumulative_return"] != a["frictions_cumulative_return"]).any()


def test_equity_curve_trades_and_usage_read_back_into_the_metrics(paper):
    out, _ = paper
    journal = sqlite3.connect(out / "journal.sqlite")
    keyed = {
        k: (p, c, ca)
        for k, p, c, ca in journal.execute(
            "SELECT key, prompt_tokens, completion_tokens, cached_tokens FROM calls"
        )
    }
    used_models = 0
    for name, d in _runs(out).items():
        doc = read_json(d / "metrics.json")
        m = doc["metrics"]
        eq = pd.read_csv(d / "equity_curve.csv")
        assert len(eq) == m["n_transitions"]
        assert eq["equity"].iloc[-1] - 1.0 == pytest.approx(m["cumulative_return"], abs=1e-12)
        assert eq["drawdown"].min() == pytest.approx(m["max_drawdown"], abs=1e-12)
        steps = pd.read_parquet(d / "steps.parquet")
        assert list(eq["decision_date"]) == list(steps["date"])
        tr = pd.read_csv(d / "trades.csv")
        assert math.prod(1.0 + tr["net_return"]) - 1.0 == pytest.approx(m["cumulative_return"], abs=1e-12)
        if doc["method"] != "equal_weight":
            held = sum(m["action_counts"][a] for a in ("LONG_SHORT", "SHORT_LONG"))
            in_trades = tr["transitions"].sum() - (~tr["open_at_end"]).sum()  # less the exits to FLAT
            assert in_trades <= held <= tr["transitions"].sum()
        usage = pd.read_csv(d / "llm_usage.csv")
        if doc["method"] in ("moira", "finmem"):
            used_models += 1
            assert (usage["source"] == "journal").all()
            total = usage[usage["call_type"] == "total"].iloc[0]
            tokens = doc["extra"]["tokens_by_call_type"]
            assert total["calls"] == sum(v["calls"] for v in tokens.values())
            assert total["prompt_tokens"] == sum(v["prompt_tokens"] for v in tokens.values())
            assert total["completion_tokens"] == sum(v["completion_tokens"] for v in tokens.values())
            if doc["method"] == "moira":
                trace = pd.read_parquet(d / "trace.parquet")
                keys = [k for k in trace["request_key"] if k]
            else:
                keys = [c["request_key"] for c in read_json(d / "memory_trace.json")["calls"]]
            assert total["cached_tokens"] == sum(keyed[k][2] for k in keys)
            assert total["engine_s"] >= 0
        else:
            assert usage.empty, name
    assert used_models == 4
    runs = pd.read_csv(out / "runs.csv")
    assert sorted(runs["run_id"]) == sorted(_runs(out))
    by_id = runs.set_index("run_id")
    for name, d in _runs(out).items():
        m = read_json(d / "metrics.json")["metrics"]
        assert by_id.loc[name, "cumulative_return"] == pytest.approx(m["cumulative_return"], abs=1e-15)
        assert by_id.loc[name, "frictions"] == FRICTIONS.label()
        decisions, prices = load_tape(d)
        fr = fill_metrics(decisions, resettle(decisions, prices, FRICTIONS))
        assert by_id.loc[name, "frictions_cumulative_return"] == pytest.approx(
            fr.cumulative_return, abs=1e-15
        )


def _old_style(src, dst):
    """A copy of an experiment folder as main wrote it before tapes: the new files deleted."""
    shutil.copytree(src, dst)
    (dst / "runs.csv").unlink()
    for d in find_runs(dst):
        for name in NEW_FILES:
            (d / name).unlink()
    return dst


def _norm(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns with empty strings for missing (CSV reads an empty field back as NaN)."""
    out = frame.reset_index(drop=True).copy()
    for c in out.columns:
        if out[c].dtype == object or str(out[c].dtype).startswith("str"):
            out[c] = out[c].fillna("").astype(str)
    return out


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_rebuilds_the_tables_of_an_old_folder(paper, tmp_path, fmt):
    out, _ = paper
    old = _old_style(out, tmp_path / "old")
    assert not (old / "runs" / "full-no_beta-s0" / "decisions.parquet").exists()
    assert main(["export", str(old), "--format", fmt, "--out", str(tmp_path / "x")]) == 0
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    for d in find_runs(out):
        rel = d.relative_to(out)
        for name in ("equity_curve", "trades", "llm_usage"):
            got = read(tmp_path / "x" / rel / f"{name}.{fmt}")
            want = pd.read_csv(d / f"{name}.csv")
            pd.testing.assert_frame_equal(
                _norm(got), _norm(want), check_dtype=False, check_exact=False, rtol=0, atol=1e-12
            )
    got = read(tmp_path / "x" / f"runs.{fmt}")
    want = pd.read_csv(out / "runs.csv")
    pd.testing.assert_frame_equal(_norm(got), _norm(want), check_dtype=False, rtol=0, atol=1e-12)


def test_export_refuses_a_store_that_no_longer_matches(paper, tmp_path):
    out, _ = paper
    old = _old_style(out, tmp_path / "old")
    steps = old / "runs" / "long_short-no_beta" / "steps.parquet"
    frame = pd.read_parquet(steps)
    frame.loc[3, "realized"] += 0.01  # as if the prices had changed since the run
    frame.to_parquet(steps, index=False)
    assert main(["export", str(old / "runs" / "long_short-no_beta"), "--out", str(tmp_path / "y")]) == 2


def test_next_open_without_opens_is_an_error_naming_the_setting(tmp_path):
    store = tmp_path / "m.sqlite"
    shutil.copy(small_store(), store)
    con = sqlite3.connect(store)
    con.execute("UPDATE prices SET open = NULL WHERE date >= '2015-01-20'")
    con.commit()
    con.close()
    _, text = small_config(store, experiment={"execution": "next_open"})
    with pytest.raises(ConfigError, match=r"experiment.execution='next_open' needs open prices"):
        run_experiment(
            parse_config(tomllib.loads(text)), tmp_path / "e", config_text=text, backend=scripted()
        )


def test_export_rebuilds_equal_share_legs_of_an_old_folder(tmp_path_factory, tmp_path):
    """No-Beta baselines sized one share a leg (``no_beta_legs = "equal_shares"``): the rebuilt
    tape sizes them so too, and reproduces the runs' steps and tables."""
    out, _ = _run(tmp_path_factory, "eq", no_beta_legs="equal_shares")
    old = _old_style(out, tmp_path / "old")
    assert main(["export", str(old), "--out", str(tmp_path / "x")]) == 0
    for name in ("long_short-no_beta", "eg_z-no_beta", "equal_weight-no_beta"):
        got = pd.read_csv(tmp_path / "x" / "runs" / name / "equity_curve.csv")
        want = pd.read_csv(out / "runs" / name / "equity_curve.csv")
        pd.testing.assert_frame_equal(
            _norm(got), _norm(want), check_dtype=False, check_exact=False, rtol=0, atol=1e-12
        )
