"""A torn or foreign file in a finished run folder: a truncated ``journal.sqlite``, a truncated
Parquet file (an agent run's and a rule baseline's), a ``manifest.json`` of another config.
Each is a clear error naming the file (exit code 6), never a silent wrong result; ``localfin
audit`` lists it; and once the file is restored or moved away, ``--resume`` ends with the
result of the uninterrupted run without sending a call again (the journal replays)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from faults_support import assert_same_results, openai_config

from localfin_cli.main import main

#: the rule baselines beside the agent, so that a baseline's torn file is covered too
BASELINES = {"methods": ["equal_weight", "eg_z"]}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeOpenAI, Path, Path]]:
    """One finished experiment (server, config, folder) the tests copy and damage."""
    srv = FakeOpenAI(api_key=None)
    root = tmp_path_factory.mktemp("finished")
    config = openai_config(root, srv.base_url, baselines=BASELINES)
    assert main(["pairs", "run", "--config", str(config), "--out", str(root / "exp")]) == 0
    yield srv, config, root / "exp"
    srv.close()


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _truncate(path: Path) -> bytes:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return data


def _resume(cli, srv: FakeOpenAI, config: Path, out: Path) -> None:
    sent = srv.n
    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 0, run.err
    assert srv.n == sent  # every call replayed from the journal: none re-sent


def test_a_truncated_journal_is_refused_untouched_and_the_restored_one_resumes(finished, tmp_path, cli):
    srv, config, ref = finished
    out = _copy(ref, tmp_path / "exp")
    whole = _truncate(out / "journal.sqlite")
    torn = (out / "journal.sqlite").read_bytes()
    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 6, run.err
    assert f"journal {out / 'journal.sqlite'} is damaged: cut short:" in run.err
    assert "restore it from a copy" in run.err
    assert (out / "journal.sqlite").read_bytes() == torn  # refused, never written over
    audit = cli("audit", out)
    assert audit.code == 6
    assert "DAMAGED journal.sqlite: cut short" in audit.out
    (out / "journal.sqlite").write_bytes(whole)  # the copy restored
    _resume(cli, srv, config, out)
    assert_same_results(ref, out)


@pytest.mark.parametrize("run_id", ["full-beta-s0", "eg_z-beta"])
def test_a_truncated_parquet_is_named_and_resume_writes_it_again(finished, tmp_path, cli, run_id):
    srv, config, ref = finished
    out = _copy(ref, tmp_path / "exp")
    _truncate(out / "runs" / run_id / "steps.parquet")
    audit = cli("audit", out)
    assert audit.code == 6
    assert f"DAMAGED runs/{run_id}/steps.parquet: not a readable Parquet file" in audit.out
    assert f"runs/{run_id}/steps.parquet" in audit.err
    export = cli("export", out, "--out", tmp_path / "tables")
    assert (
        export.code == 6
        and f"{out / 'runs' / run_id / 'steps.parquet'} is not a readable Parquet" in export.err
    )
    _resume(cli, srv, config, out)  # the agent's runs are written again; a torn baseline run is redone
    assert cli("audit", out).code == 0
    assert_same_results(ref, out)  # every run of the folder, the repaired one included


def test_a_manifest_of_another_config_is_refused_and_resume_writes_the_right_one(finished, tmp_path, cli):
    srv, config, ref = finished
    out = _copy(ref, tmp_path / "exp")
    doc = json.loads((out / "manifest.json").read_text())
    doc["config"]["cost_bps"] = 5.0  # written by an experiment with fees
    (out / "manifest.json").write_text(json.dumps(doc))
    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 6, run.err
    assert f"{out / 'manifest.json'} records another configuration than {out / 'config.toml'}" in run.err
    assert "config.cost_bps: 5.0 there, 0.0 here" in run.err
    audit = cli("audit", out)
    assert audit.code == 6 and "DAMAGED manifest.json: records another configuration" in audit.out
    (out / "manifest.json").rename(tmp_path / "foreign-manifest.json")  # moved away
    _resume(cli, srv, config, out)
    assert json.loads((out / "manifest.json").read_text())["config"]["cost_bps"] == 0.0
    assert_same_results(ref, out)
