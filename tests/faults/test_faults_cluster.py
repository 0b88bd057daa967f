"""The Moira matrix on a real Ray cluster of two nodes started with ``ray start`` (a head and a
worker, one CPU each, each its own process tree, tests/ray_cluster.py), driven by ``localfin
pairs matrix --ray HOST:PORT`` as a child process, as a user runs it.

Each node has its own model server (a fake OpenAI server in this process, named in the node's
``LOCALFIN_ENDPOINTS``); the matrix file names the head's as the backbone's ``base_url``. The
matrix is one experiment with two seeds: two Ray tasks.

- placement: task i goes to node i mod 2, so each node runs one task and calls its own server;
  the matrix folder equals the single-node run's (no --ray, every call to the named server);
- a lost node: the worker node is killed with SIGKILL (every process of its session) while its
  task's 12th request is held at its server (a gate); Ray runs the task again on the head, from
  the keeper's journal: no call journaled before the kill is sent again or lost, and the folder
  equals the single-node run's;
- the head unreachable at start (default suite, no cluster): exit 4, the message names the
  address, nothing written.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Hold
from faults_support import RETRIES
from matrix_support import SHORT
from moira_support import small_store, toml_text
from ray_cluster import driver, free_ports, start_driver, two_nodes

from agent.pairs.market.records import read_json

pytest.importorskip("ray")

#: the request of the worker node's server at which the node is killed
KILL_AT = 12
EXP = "smol/main"


def _matrix(store: Path, base_url: str) -> str:
    head = (
        '[matrix]\nname = "mc"\nseeds = [0, 1]\nexposures = ["no_beta", "beta"]\n\n'
        '[[backbones]]\nkey = "smollm2-135m"\nname = "smol"\n\n'
    )
    wins = '[[windows]]\nname = "main"\n' + "".join(f'{k} = "{v}"\n' for k, v in SHORT.items()) + "\n"
    tables = {
        "experiment": {"store": str(store)},
        "model": {"temperature": 0.0, "backend": "openai", "base_url": base_url, **RETRIES},
        "policy": {"max_cycles": 1},
        "screen": {"lookback": 500, "min_sessions": 252},
        "baselines": {"methods": []},
    }
    return head + wins + toml_text(tables)


def _keys(journal: Path) -> set[str]:
    if not journal.is_file():
        return set()
    with sqlite3.connect(journal) as db:
        return {k for (k,) in db.execute("SELECT key FROM calls")}


def _assert_same(a: Path, b: Path) -> None:
    """Runs (metrics, steps), summary rows and journal keys of two matrix folders are equal."""
    import pandas as pd

    runs_a = sorted(p.relative_to(a) for p in a.glob("*/*/runs/*/metrics.json"))
    assert runs_a and runs_a == sorted(p.relative_to(b) for p in b.glob("*/*/runs/*/metrics.json"))
    for m in runs_a:
        assert read_json(a / m) == read_json(b / m), m
        steps = m.parent / "steps.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(a / steps), pd.read_parquet(b / steps))
    assert read_json(a / "summary.json")["settings"] == read_json(b / "summary.json")["settings"]
    assert _keys(a / EXP / "journal.sqlite") == _keys(b / EXP / "journal.sqlite")


@pytest.fixture(scope="module")
def servers():
    a, b = FakeOpenAI(api_key=None), FakeOpenAI(api_key=None)
    yield a, b
    a.close()
    b.close()


@pytest.fixture(scope="module")
def cluster(servers, tmp_path_factory):
    """Head (1 CPU, server A) + worker ``w1`` (1 CPU, server B) on this machine."""
    a, b = servers
    with two_nodes(tmp_path_factory.mktemp("cluster"), a.base_url, b.base_url) as c:
        yield c


@pytest.fixture(scope="module")
def single(servers, tmp_path_factory):
    """The matrix file and its single-node run (no Ray; every call to server A)."""
    a, _ = servers
    root = tmp_path_factory.mktemp("single")
    config = root / "m.toml"
    config.write_text(_matrix(small_store(), a.base_url))
    done = driver(["pairs", "matrix", "--config", config, "--out", root / "out"], cwd=root, log=root / "log")
    assert done.returncode == 0, (root / "log").read_text()[-3000:]
    return config, root / "out"


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_matrix_runs_on_both_nodes_and_equals_the_single_node_run(cluster, servers, single, tmp_path):
    a, b = servers
    config, ref = single
    before = len(a.received), len(b.received)
    out = tmp_path / "out"
    done = driver(
        ["pairs", "matrix", "--config", config, "--out", out, "--ray", cluster.address],
        cwd=tmp_path,
        log=tmp_path / "log",
    )
    assert done.returncode == 0, (tmp_path / "log").read_text()[-3000:]
    placed = read_json(out / "cluster.json")
    nodes = {n["node_id"] for n in placed["nodes"]}
    assert len(nodes) == 2
    ran = {k: v["ran"] for k, v in placed["placement"].items()}
    assert sorted(ran) == [f"{EXP}/s0", f"{EXP}/s1"]
    assert set(ran.values()) == nodes  # one task on each node
    assert all(v["attempts"] == [v["asked"]] for v in placed["placement"].values())
    # each node called its own server (LOCALFIN_ENDPOINTS), not the file's base_url only
    assert len(a.received) > before[0] and len(b.received) > before[1]
    _assert_same(ref, out)
    assert read_json(out / "manifest.json")["mode"] == "ray"


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_node_killed_mid_matrix_loses_no_call_and_the_matrix_equals_the_single_node_run(
    cluster, servers, single, tmp_path
):
    a, b = servers
    config, ref = single
    gate = Hold()
    b.gates[b.n + KILL_AT] = gate  # the worker node's task, at its 12th request
    start = len(a.received), len(b.received)
    out = tmp_path / "out"
    proc = start_driver(
        ["pairs", "matrix", "--config", config, "--out", out, "--ray", cluster.address],
        cwd=tmp_path,
        log=tmp_path / "log",
    )
    try:
        while not gate.arrived.wait(1.0):  # the gate (the 1 s only re-checks that the driver lives)
            assert proc.poll() is None, (tmp_path / "log").read_text()[-3000:]
        kept = set().union(*(_keys(j) for j in (out / ".ray-tasks").glob("**/journal.sqlite")))
        killed = cluster.kill("w1")
        gate.release.set()
        code = proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed > 0 and code == 0, (tmp_path / "log").read_text()[-3000:]

    sent = Counter(a.received[start[0] :] + b.received[start[1] :])
    final = _keys(out / EXP / "journal.sqlite")
    twice = {k for k, n in sent.items() if n > 1}
    assert kept and kept <= final  # no journaled call lost
    assert not kept & twice  # none journaled before the kill sent again
    assert twice  # the calls in flight at the kill (never journaled) were sent again
    assert set(sent) == final
    placed = read_json(out / "cluster.json")["placement"]
    worker = next(n["node_id"] for n in read_json(out / "cluster.json")["nodes"] if not n["is_head"])
    moved = [v for v in placed.values() if v["attempts"][0] == worker]
    assert len(moved) == 1 and len(moved[0]["attempts"]) == 2 and moved[0]["ran"] != worker
    _assert_same(ref, out)
    figures = {"journaled_before_kill": len(kept), "resent": len(twice), "sent": sum(sent.values())}
    (tmp_path / "figures.json").write_text(str(figures))
    print("node kill:", figures)


def test_an_unreachable_head_is_exit_4_naming_the_address(cli, tmp_path):
    config = tmp_path / "m.toml"
    config.write_text(_matrix(small_store(), "http://127.0.0.1:9/v1"))
    (port,) = free_ports(1)  # nothing listens there
    out = tmp_path / "out"
    run = cli("pairs", "matrix", "--config", config, "--out", out, "--ray", f"127.0.0.1:{port}")
    assert run.code == 4
    assert f"the Ray cluster's head at 127.0.0.1:{port} did not answer" in run.err
    assert f"ray start --head --port={port}" in run.err
    assert not (out / "matrix.toml").exists()  # nothing written: a rerun needs no --resume


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "run", "finacumen_table2"],
        ["qa", "eval", "--variant", "base", "--dataset", "demo", "--data", "absent"],
        ["qa", "build-bank", "--dataset", "demo", "--data", "absent"],
    ],
    ids=["reproduce run", "qa eval", "qa build-bank"],
)
def test_every_ray_command_stops_at_once_when_the_head_does_not_answer(cli, tmp_path, argv):
    (port,) = free_ports(1)
    run = cli(*argv, "--out", tmp_path / "out", "--ray", f"127.0.0.1:{port}")
    assert run.code == 4 and f"head at 127.0.0.1:{port} did not answer" in run.err
    assert not (tmp_path / "out").exists()
