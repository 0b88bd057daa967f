"""The Python API on a small real experiment (the scripted test model answers), and the example
script under examples/ run as a user runs it: it loads runs.csv and the runs' parquet files and
writes an equity-curve PNG."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent import api
from localfin.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "agent" / "pairs"))


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    from moira_support import WINDOWS, scripted, small_store

    out = tmp_path_factory.mktemp("api") / "exp"
    doc = {
        "experiment": {
            "name": "api-example",
            "store": str(small_store()),
            "seeds": [0],
            "exposures": ["no_beta"],
        },
        # 15 training sessions, 30 test sessions
        "windows": {**WINDOWS, "test_end": "2015-03-02"},
        "model": {"backbone": "smollm2-135m", "temperature": 0.0},
        "policy": {"max_cycles": 1},
        "screen": {"lookback": 500, "min_sessions": 252},
        "baselines": {"methods": ["equal_weight"]},
    }
    be = scripted()
    res = api.run_experiment(doc, out, backend=be)
    assert res.out_dir == out and be.calls  # the scripted model answered real requests
    return out


def test_the_api_loads_a_finished_runs_tables(experiment):
    runs = api.load_runs(experiment)
    assert set(runs["run_id"]) == {"full-no_beta-s0", "equal_weight-no_beta"}
    agent_row = runs[runs["kind"] == "moira"].iloc[0]
    run = api.load_run(experiment / "runs" / agent_row.run_id)
    assert len(run.steps) == agent_row.n_transitions == 30
    assert run.steps["equity"].iloc[-1] == pytest.approx(1 + agent_row.cumulative_return)
    assert {"steps", "decisions", "trace", "equity_curve", "trades"} <= set(run.tables)
    assert run.metrics["run_id"] == agent_row.run_id
    assert run.metrics["metrics"]["cumulative_return"] == pytest.approx(agent_row.cumulative_return)
    with pytest.raises(AttributeError, match="has no table 'nope'"):
        run.nope  # noqa: B018
    with pytest.raises(InputError, match=r"runs\.csv does not exist"):
        api.load_runs(experiment / "runs")
    with pytest.raises(InputError, match=r"no metrics\.json"):
        api.load_run(experiment)


def test_best_run_never_picks_a_run_without_a_sharpe(experiment):
    import math

    import pandas as pd

    runs = api.load_runs(experiment)
    # a run that never traded (a FinMem run holding FLAT throughout) has no Sharpe ratio
    flat = runs.iloc[[0]].assign(
        run_id="finmem-no_beta-s0", kind="baseline", method="finmem", sharpe=math.nan
    )
    runs = pd.concat([runs, flat], ignore_index=True)
    assert runs.sort_values("sharpe").iloc[-1].run_id == "finmem-no_beta-s0"  # the trap: NaN sorts last
    best = api.best_run(runs, "sharpe")
    assert math.isfinite(best.sharpe) and best.sharpe == runs["sharpe"].max()
    assert api.best_run(runs, "sharpe", kind="moira").run_id == "full-no_beta-s0"
    lowest = api.best_run(runs, "annual_volatility", smallest=True)
    assert lowest.annual_volatility == runs["annual_volatility"].min()
    # the row names its folder: <folder>/<group>/runs/<run_id>, as the Python API page loads it
    assert api.load_run(experiment / best.group / "runs" / best.run_id).metrics["run_id"] == best.run_id
    with pytest.raises(InputError, match=r"metric='sharp' is not a column of runs\.csv; allowed: .*sharpe"):
        api.best_run(runs, "sharp")
    with pytest.raises(InputError, match="kind='agent'; allowed: baseline, moira"):
        api.best_run(runs, kind="agent")
    with pytest.raises(InputError, match="no run of kind 'baseline' has a number for 'sharpe'"):
        api.best_run(runs[runs["run_id"] != "equal_weight-no_beta"], kind="baseline")
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert "api.best_run(runs" in page and '.sort_values("sharpe").iloc[-1]\nrun' not in page


def test_load_runs_on_a_folder_above_the_experiment_names_it(experiment):
    with pytest.raises(InputError) as err:
        api.load_runs(experiment.parent)  # the demo's layout: the experiment in a folder below
    msg = str(err.value)
    assert f"{experiment.parent} holds no runs.csv" in msg and f"load_runs({str(experiment)!r})" in msg


def test_the_example_script_plots_the_equity_curves(experiment, tmp_path):
    out = tmp_path / "plots" / "equity.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "equity_curve.py"), str(experiment), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    import matplotlib.image as mpimg

    img = mpimg.imread(out)
    assert img.shape[0] > 300 and img.shape[1] > 600
    # a filter that leaves nothing is an error, not an empty picture
    bad = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "equity_curve.py"), str(experiment), "--exposure", "beta"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert bad.returncode != 0 and "no runs" in bad.stderr
