"""Kill -9 at three random (seeded) points of a small experiment, resume each time: the final
metrics, steps, training records and traces equal those of an uninterrupted run, and no call
that reached the journal is sent to the model again. The kill is gated by a marker file (the
worker blocks inside its N-th backend call after writing it), never by timing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from moira_support import kill_at_gate, small_config, small_store

from agent.pairs.market.records import read_json

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_moira_kill_worker.py"


def _worker(config: Path, out: Path, gate: int, marker: Path, log: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(config), str(out), str(gate), str(marker), str(log)],
        env=env,
        start_new_session=True,  # its own process group: the kill takes every child with it
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _results(out: Path) -> dict:
    runs = sorted((out / "runs").iterdir())
    return {
        r.name: (
            read_json(r / "metrics.json"),
            read_json(r / "training.json"),
            pd.read_parquet(r / "steps.parquet"),
            pd.read_parquet(r / "trace.parquet"),
        )
        for r in runs
    }


def test_kill_nine_three_times_then_resume_to_the_identical_result(tmp_path):
    shape = {
        "experiment": {"exposures": ["no_beta", "beta"]},
        "windows": {"test_end": "2015-02-27"},
        "policy": {"max_cycles": 1},
    }
    _, text = small_config(small_store(), **shape)
    config = tmp_path / "c.toml"
    config.write_text(text)
    marker = tmp_path / "marker"

    ref_log = tmp_path / "ref.log"
    import _moira_kill_worker

    _moira_kill_worker.main(str(config), str(tmp_path / "ref"), 0, str(marker), str(ref_log))  # in-process
    n_calls = len(ref_log.read_text().splitlines())  # engine calls of the uninterrupted run

    # three commit points in the reference's sequence of engine calls (seeded)
    k1, k2, k3 = sorted(np.random.default_rng(9).choice(np.arange(1, n_calls - 1), 3, replace=False))
    gates = [k1 + 1, k2 - k1 + 1, k3 - k2 + 1]
    log = tmp_path / "sent.log"
    for gate in gates:
        kill_at_gate(_worker(config, tmp_path / "exp", int(gate), marker, log), marker)
    proc = _worker(config, tmp_path / "exp", 0, marker, log)
    assert proc.wait() == 0, proc.stderr.read().decode()[-2000:]

    sent = log.read_text().split()
    assert len(sent) == len(set(sent))  # nothing journaled was asked again
    assert set(sent) == set(ref_log.read_text().split())
    ref, got = _results(tmp_path / "ref"), _results(tmp_path / "exp")
    assert list(ref) == list(got) == ["full-beta-s0", "full-no_beta-s0"]
    for run_id, (m, t, steps, trace) in ref.items():
        gm, gt, gsteps, gtrace = got[run_id]
        assert m == gm and t == gt
        pd.testing.assert_frame_equal(steps, gsteps)
        pd.testing.assert_frame_equal(trace, gtrace)
