"""A Ray worker lost mid-matrix: the worker process running a task is killed (SIGKILL) while
the task's N-th model call is in flight (a gate: the call writes a marker with the worker's pid
and blocks). Ray runs the task again; the new attempt resumes from the task's journal, so the
matrix finishes with the same runs, summary rows and journal as the local path, no journaled
call sent twice and every run written once (by the gathering)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from faults_support import journal_keys
from matrix_support import SHORT, scripted_factory
from moira_support import scripted, small_store, toml_text

from agent.pairs.experiment.matrix import run_matrix
from agent.pairs.experiment.matrix_config import load_matrix
from agent.pairs.market.records import read_json

ray = pytest.importorskip("ray")

#: the model call of the task at which its worker is killed
KILL_AT = 12


def _matrix(store: Path) -> str:
    """One experiment (SmolLM2's key, the short window), one seed, both exposures: one Ray task."""
    head = (
        '[matrix]\nname = "mr"\nseeds = [0]\nexposures = ["no_beta", "beta"]\n'
        'backbones = ["smollm2-135m"]\n\n'
    )
    wins = '[[windows]]\nname = "main"\n' + "".join(f'{k} = "{v}"\n' for k, v in SHORT.items()) + "\n"
    tables = {
        "experiment": {"store": str(store)},
        # Ray workers call a server; the test's factory gives them the scripted model instead
        "model": {"temperature": 0.0, "backend": "openai", "base_url": "http://127.0.0.1:9/v1"},
        "policy": {"max_cycles": 1},
        "screen": {"lookback": 500, "min_sessions": 252},
        "baselines": {"methods": []},
    }
    return head + wins + toml_text(tables)


class KillOnce:
    """A picklable factory of scripted backends for Ray workers: the ``at``-th call of a
    worker writes its pid to ``marker`` and blocks (the test kills the worker there) unless
    ``spent`` exists; every request key sent is appended to ``log``."""

    def __init__(self, at: int, marker: Path, spent: Path, log: Path) -> None:
        self.at, self.marker, self.spent, self.log = at, marker, spent, log

    def __call__(self, cell: Any, registry: Any) -> Any:
        return _KillOnce(self)


class _KillOnce:
    name = "kill-once"

    def __init__(self, owner: KillOnce) -> None:
        self.owner, self.inner, self.calls = owner, scripted(), 0

    def chat(self, requests):
        o = self.owner
        self.calls += 1
        if self.calls == o.at and not o.spent.exists():
            o.marker.write_text(str(os.getpid()))
            while True:  # the test kills this worker here
                time.sleep(3600)
        with open(o.log, "a", encoding="utf-8") as f:
            f.write("\n".join(r.key() for r in requests) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return self.inner.chat(requests)

    def close(self) -> None:
        return None


@pytest.fixture()
def local_ray(monkeypatch):
    import faults_support
    import matrix_support
    import moira_support

    mods = (matrix_support, moira_support, faults_support, __import__(__name__))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    for mod in mods:
        ray.cloudpickle.register_pickle_by_value(mod)
    ray.init(
        address="local",
        num_cpus=1,
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )
    yield
    ray.shutdown()
    for mod in mods:
        ray.cloudpickle.unregister_pickle_by_value(mod)


def _killer(marker: Path, spent: Path, done: threading.Event) -> None:
    """Wait for the gate's marker (never a timer), kill -9 the worker it names, once."""
    while not marker.exists() and not done.is_set():
        time.sleep(0.05)
    if marker.exists():
        spent.write_text("killed")  # the next attempt runs through
        os.kill(int(marker.read_text()), signal.SIGKILL)


def test_a_killed_ray_worker_is_retried_and_the_matrix_equals_the_local_one(tmp_path, local_ray):
    config = tmp_path / "m.toml"
    config.write_text(_matrix(small_store()))
    cfg, text = load_matrix(config), config.read_text()
    local = run_matrix(cfg, tmp_path / "local", config_text=text, backend_factory=scripted_factory)

    marker, spent, log = tmp_path / "marker", tmp_path / "spent", tmp_path / "sent.log"
    done = threading.Event()
    killer = threading.Thread(target=_killer, args=(marker, spent, done), daemon=True)
    killer.start()
    try:
        res = run_matrix(
            cfg,
            tmp_path / "ray",
            config_text=text,
            backend_factory=KillOnce(KILL_AT, marker, spent, log),
            ray_address="local",
        )
    finally:
        done.set()
        killer.join()
    assert spent.exists()  # the worker was killed mid-task, and the matrix still finished
    assert res.mode == "ray" and [c.status for c in res.cells] == ["ran on ray"]

    sent = log.read_text().split()
    assert len(sent) == len(set(sent))  # nothing journaled before the kill was sent again
    exp = res.cells[0].folder
    a, b = tmp_path / "local" / exp, tmp_path / "ray" / exp
    assert set(sent) == journal_keys(a / "journal.sqlite") == journal_keys(b / "journal.sqlite")
    runs_a = sorted(p.name for p in (a / "runs").iterdir())
    assert runs_a == sorted(p.name for p in (b / "runs").iterdir()) == ["full-beta-s0", "full-no_beta-s0"]
    for run in runs_a:
        assert read_json(a / "runs" / run / "metrics.json") == read_json(b / "runs" / run / "metrics.json")
    rows = [r["run_id"] for r in read_json(b / "summary.json")["runs"]]
    assert sorted(rows) == runs_a  # each run once
    assert local.cells[0].journal_calls == res.cells[0].journal_calls
