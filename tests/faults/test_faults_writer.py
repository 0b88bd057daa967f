"""A second writer on one run folder. While `localfin pairs run` (a child process) holds request
N at the fake server (a gate), a second `pairs run` into the same folder, and a `qa eval` into a
folder another process holds, are refused at once (exit code 3) with the holder's pid and start
time, before any model call. The holder then dies by kill -9: its lock file stays, but the
kernel has released the lock, so ``--resume`` starts at once and ends with the uninterrupted
run's result."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fake_openai import Hold
from faults_support import REPO_ROOT, assert_same_results, journal_keys, openai_config, start_cli

from localfin import runlock
from localfin.errors import FolderInUseError

HELD = 30


def test_a_second_writer_is_refused_and_a_dead_holder_does_not_block_the_resume(
    tmp_path, reference, server, cli
):
    hold = Hold()
    server.gates[HELD] = hold
    config = openai_config(tmp_path, server.base_url)
    out = tmp_path / "exp"
    child = start_cli(["pairs", "run", "--config", str(config), "--out", str(out)], tmp_path / "err.log")
    try:
        assert hold.arrived.wait(600), child.stderr()
        for extra in ([], ["--resume"]):
            second = cli("pairs", "run", "--config", config, "--out", out, *extra)
            assert second.code == 3, second.err
            assert f"run folder {out} is in use by pid {child.proc.pid}" in second.err
            assert ", started 20" in second.err and f"(localfin pairs run --config {config})" in second.err
        assert server.n == HELD  # the second writer sent nothing
        child.kill()  # kill -9 while it holds the lock and request HELD is in flight
    finally:
        hold.release.set()
        child.kill()
    assert json.loads((out / runlock.LOCK_FILE).read_text())["pid"] == child.proc.pid  # left behind
    journaled = journal_keys(out / "journal.sqlite")

    sent = server.n
    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 0, run.err  # the dead holder's lock did not block
    assert server.n - sent == reference.requests - len(journaled)
    assert_same_results(reference.out, out)


def test_qa_eval_into_a_folder_in_use_is_refused_before_any_call(tmp_path, cli, monkeypatch):
    from localfin_cli import qa_cmd
    from serving.chat.scripted import ScriptedBackend
    from serving.models.registry import default_registry

    data = tmp_path / "fintmm"
    data.mkdir()
    (data / "QA.json").write_text(
        json.dumps([{"uuid": "t1", "question": "q?", "answers": [{"answer": "a"}]}])
    )
    backend = ScriptedBackend(default='{"reasoning": "r", "answer": "a"}')
    monkeypatch.setattr(qa_cmd, "_backend", lambda *a: (backend, default_registry()))
    run_dir = tmp_path / "run"
    script = (
        f"from localfin import runlock\nwith runlock.hold({str(run_dir)!r}, 'qa eval'):\n"
        "    print('held', flush=True)\n    input()"
    )
    holder = subprocess.Popen(  # another process holds the folder until its stdin closes
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])),
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"  # the gate: it holds the lock
        args = [
            "qa",
            "eval",
            "--variant",
            "base",
            "--dataset",
            "fintmmbench",
            "--data",
            data,
            "--out",
            run_dir,
        ]
        res = cli(*args)
        assert res.code == 3, res.err
        assert f"is in use by pid {holder.pid}" in res.err and "(qa eval)" in res.err
        assert backend.calls == []
        try:
            with runlock.hold(run_dir):
                raise AssertionError("the lock was taken twice")
        except FolderInUseError:
            pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert cli(*args).code == 0  # the holder has ended: the folder is free
    assert len(backend.calls) >= 1
