"""`localfin pairs run` checks everything before it writes anything: a known model without its
weights fails at once, naming the missing file and how to get the weights (never --resume), with
no folder written and no engine started; `--check` lists every check with the verdict last,
`--dry-run` adds the runs it would start; `--seed` and `--limit` change the runs and the test
window (the folder's config.toml says so); a run's progress counts one unit throughout. The model
is the fake OpenAI server of the fault tests (no engine)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "agent" / "pairs"))  # moira_support
sys.path.insert(0, str(HERE.parent / "faults"))  # fake_openai, faults_support

from fake_openai import FakeOpenAI  # noqa: E402
from faults_support import openai_config  # noqa: E402
from moira_support import small_config, small_store  # noqa: E402


@pytest.fixture()
def no_engine(monkeypatch):
    """Any engine or server a run would open: an error saying so (nothing may get that far)."""
    from localfin.errors import LocalfinError

    def refuse(*_a, **_k):
        raise LocalfinError("a backend was opened before the pre-flight failed")

    monkeypatch.setattr("serving.open.open_backend", refuse)


@pytest.fixture()
def vllm_config(tmp_path: Path) -> Path:
    """The small experiment on an in-process engine (its weights are what the pre-flight checks)."""
    _, text = small_config(small_store())
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_a_known_model_without_weights_fails_before_anything_is_written(
    cli, vllm_config, tmp_path, monkeypatch, no_engine
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(models))
    out = tmp_path / "runs" / "mine"
    run = cli("pairs", "run", "--config", vllm_config, "--model", "qwen3-4b", "--out", out)
    assert run.code == 2, run.err
    assert not out.exists() and not out.parent.exists(), "nothing is written"
    err = run.err.strip()
    assert err.count("\n") == 0 and err.startswith("error: model 'qwen3-4b': ")
    assert f"no {models / 'Qwen3-4B' / 'config.json'}" in err  # the missing file
    assert "hf download Qwen/Qwen3-4B --local-dir" in err and "LOCALFIN_MODELS_DIR" in err  # how to get it
    assert "--resume" not in err
    # the pre-flight says the same, check by check, verdict last (exit 1: a check failed)
    check = cli("pairs", "run", "--config", vllm_config, "--model", "qwen3-4b", "--check")
    assert check.code == 1 and not out.exists()
    lines = check.out.splitlines()
    assert lines[-1].endswith("checks, 1 failed: the run would not start")
    assert any(x.startswith("FAILED  weights of qwen3-4b: ") for x in lines)
    assert any(x.startswith("OK      model (backbone): qwen3-4b") for x in lines)
    assert any(x.startswith("OK      test window: ") for x in lines)


def test_check_lists_every_check_and_a_close_only_store_fails_it(cli, tmp_path, no_engine) -> None:
    server = FakeOpenAI(api_key=None)
    try:
        config = openai_config(tmp_path / "cfg", server.base_url)
        ok = cli("pairs", "run", "--config", config, "--check")
        assert ok.code == 0, ok.out + ok.err
        assert ok.out.splitlines()[-1].endswith("checks, all passed: the run can start")
        assert "OK      prices: adj_close in every price row" in ok.out
        assert "held by the openai server" in ok.out and server.n == 0  # the server is not asked
        # the screen reads adj_close (the default): a store without it fails the pre-flight
        closed = _close_only_store(tmp_path / "close.sqlite")
        text = config.read_text()
        assert f'store = "{small_store()}"' in text
        config.write_text(text.replace(f'store = "{small_store()}"', f'store = "{closed}"'))
        bad = cli("pairs", "run", "--config", config, "--check")
        assert bad.code == 1
        assert "FAILED  prices: screen.price_field='adj_close': price rows up to" in bad.out
        run = cli("pairs", "run", "--config", config, "--out", tmp_path / "x")
        assert run.code == 2 and "re-import those prices with adj_close" in run.err
        assert not (tmp_path / "x").exists()
    finally:
        server.close()


def _close_only_store(path: Path) -> Path:
    """A copy of the small store whose prices lack adj_close (as a close-only file imports)."""
    import shutil
    import sqlite3

    shutil.copy(small_store(), path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE prices SET adj_close = NULL")
    return path


def test_dry_run_seed_and_limit(cli, tmp_path, no_engine) -> None:
    server = FakeOpenAI(api_key=None)
    try:
        config = openai_config(tmp_path / "cfg", server.base_url)
        out = tmp_path / "exp"
        dry = cli("pairs", "run", "--config", config, "--out", out, "--dry-run", "--seed", "3", "--seed", "5")
        assert dry.code == 0, dry.err
        assert not out.exists() and server.n == 0
        assert f"experiment t into {out} (a new folder)" in dry.out
        assert "4 agent runs: full-no_beta-s3, full-no_beta-s5, full-beta-s3, full-beta-s5" in dry.out
        assert dry.out.splitlines()[-1].endswith("all passed: the run can start")
        short = cli("pairs", "run", "--config", config, "--out", out, "--dry-run", "--limit", "4")
        assert "test 2015-01-19 .. 2015-01-22" in short.out  # the window's first four sessions
        bad = cli("pairs", "run", "--config", config, "--dry-run", "--limit", "1")
        assert bad.code == 2 and "--limit 1; allowed: at least 2" in bad.err
    finally:
        server.close()


def test_a_limited_run_with_a_seed_runs_what_it_says_and_counts_runs_throughout(cli, tmp_path) -> None:
    import pandas as pd

    server = FakeOpenAI(api_key=None)
    try:
        config = openai_config(tmp_path / "cfg", server.base_url, experiment={"exposures": ["no_beta"]})
        out = tmp_path / "exp"
        run = cli("pairs", "run", "--config", config, "--out", out, "--seed", "4", "--limit", "5")
        assert run.code == 0, run.err
        copy = tomllib.loads((out / "config.toml").read_text())
        assert copy["experiment"]["seeds"] == [4] and copy["windows"]["test_end"] == "2015-01-23"
        steps = pd.read_parquet(out / "runs" / "full-no_beta-s4" / "steps.parquet")
        assert len(steps) == 4  # five sessions: four settled decisions
        # progress in one unit throughout: runs (the agent's), started and done with one total
        started = [x for x in run.err.splitlines() if x.startswith("runs: started")]
        done = [x for x in run.err.splitlines() if x.startswith("runs: done")]
        assert started == ["runs: started (1 to do)"] and done and done[0].startswith("runs: done, 1/1")
    finally:
        server.close()


def test_reproduce_check_of_an_experiment_file_points_to_its_pre_flight(cli, vllm_config) -> None:
    run = cli("reproduce", "check", "--config", vllm_config)
    assert run.code == 2 and "the [reproduce] table is required" in run.err
    assert "localfin pairs run --config FILE --check" in run.err
