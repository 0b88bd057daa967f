"""A FinAcumen reproduction config, shrunk, on a real two-node Ray cluster (``ray start``: a head
and a worker, one CPU each, tests/ray_cluster.py) with the CPU model behind one real ``vllm
serve``, against its one-process run (``slow``).

The config is Table 2's protocol on the bundled demo set (Base, Base+FT, Base+FT+FM), with a
bank-size snapshot and a k_max sweep (so the bank build's waves and the sweep's snapshots are
sharded too) and the tau sweep's analytics, small enough for a busy 2-core machine (2 training
items x K = 2, 2 test questions, 2 tool steps). One ``vllm serve`` of SmolLM2-135M answers
everything (one engine at a time on this machine); each node reaches it through its own proxy
(its ``LOCALFIN_ENDPOINTS``), so the test sees which node sent which call. The config itself
names the server directly (the one-process run calls it; the cluster's nodes prefer their own).

One cluster run (``reproduce run CONFIG --ray HEAD``, a CPU model is slow on a busy machine):
both nodes call the model through their own servers; then the worker node is killed (SIGKILL,
every process of its session) while a call of its shards is held at its proxy (a gate). The run
finishes on the head; every call journaled before the kill is in the run folder and none was
sent again; and the folder equals the one-process run's (``reproduce run CONFIG``): every
journal holds the same keys, every ``scores.json`` the same figures (times aside), the bank the
same entries in the same order, and ``reproduction.md`` is the same text (the output folder's
path aside).
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from proxy_server import CountingProxy, Hold, request_digest
from ray_cluster import driver, start_driver, two_nodes

#: a CPU model on a busy 2-core machine: an hour or more for the two runs
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3 * 3600)]
pytest.importorskip("ray")

#: the worker node's proxy request at which the node is killed
KILL_AT = 5
#: per-run figures that are times (they differ between any two runs)
_TIMES = {"run_wall_s", "mean_engine_s", "mean_wall_s", "wall_s", "run_dir"}


def _config(demo: Path, base_url: str) -> str:
    return textwrap.dedent(
        f"""\
        [reproduce]
        name = "finacumen_cluster_cpu"
        paper = "finacumen"
        table = "Table 2 (shrunk)"
        title = "Base / +FT / +FT+FM on the demo set, bank snapshots and k_max, on the CPU model"
        kind = "qa"
        differs = ["the bundled demo set and SmolLM2-135M on the CPU: the cluster path, not the figures"]

        [qa]
        model = "smollm2-135m"
        backend = "openai"
        base_url = "{base_url}"
        max_steps = 2
        tools = ["python", "reparse"]
        tau = 0.65
        taus = [0.5, 0.65]
        bank_k = 2
        bank_temperature = 0.7
        variants = ["base", "ft", "ft_fm"]
        k_max = [1, 3]
        bank_sizes = [1]
        thought_chars = 60
        observation_chars = 600
        gate_rejections = 1
        base_max_tokens = 64
        judge_check_items = 0

        [[qa.bank]]
        label = "demo train"
        dataset = "demo"
        path = "{demo}"
        split = "train"
        limit = 2

        [[qa.sets]]
        label = "demo test"
        dataset = "demo"
        path = "{demo}"
        split = "test"
        limit = 2
        """
    )


def _journals(out: Path) -> dict[str, set[str]]:
    found = {}
    for j in sorted((out / "runs").glob("**/*.sqlite")):
        with sqlite3.connect(j) as db:
            found[str(j.relative_to(out))] = {k for (k,) in db.execute("SELECT key FROM calls")}
    return found


def _scores(out: Path) -> dict[str, dict]:
    return {
        str(p.relative_to(out)): {k: v for k, v in json.loads(p.read_text()).items() if k not in _TIMES}
        for p in sorted((out / "runs").glob("*/scores.json"))
    }


def _bank(out: Path) -> list:
    from bank.store import ExperienceBank

    with ExperienceBank.open(out / "bank") as b:
        return [replace(e, created_at=0.0) for e in b.get(list(range(len(b))))]


def _report(out: Path) -> str:
    return (out / "reproduction.md").read_text().replace(str(out), "OUT")


def _assert_same(one: Path, many: Path) -> None:
    a, b = _journals(one), _journals(many)
    assert list(a) == list(b) and all(a.values())
    for name in a:
        assert a[name] == b[name], name
    assert _scores(one) == _scores(many)
    assert _bank(one) == _bank(many)
    assert _report(one) == _report(many)


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    """SmolLM2-135M behind a real ``vllm serve`` on loopback (the CPU model)."""
    pytest.importorskip("vllm")
    from serving.http.server import start_server
    from serving.models.registry import default_registry
    from serving.open import weights_status

    if weights_status("smollm2-135m").path is None:
        pytest.skip("SmolLM2-135M is not prepared (localfin models prepare smollm2-135m)")
    log = tmp_path_factory.mktemp("smol") / "serve.log"
    handle = start_server(default_registry().get("smollm2-135m"), log_path=log, ready_timeout_s=900)
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def proxies():
    """One proxy per node; they forward to the model server once it is up (``one``)."""
    a, b = CountingProxy(), CountingProxy()
    yield a, b
    a.close()
    b.close()


@pytest.fixture(scope="module")
def cluster(proxies, tmp_path_factory):
    a, b = proxies
    with two_nodes(tmp_path_factory.mktemp("cluster"), a.base_url, b.base_url) as c:
        yield c


@pytest.fixture(scope="module")
def one(cluster, proxies, smol, tmp_path_factory):
    """The config and its one-process run (the cluster is started first, before the model
    server loads, so that its nodes register on a quieter machine)."""
    from agent.qa.data.demo_set import build_demo_set

    for p in proxies:
        p.forward_to(smol.base_url)

    root = tmp_path_factory.mktemp("one")
    demo = build_demo_set(root / "demo", seed=0, n_train=4, n_test=4)
    config = root / "finacumen_cluster_cpu.toml"
    config.write_text(_config(demo, smol.base_url))
    done = driver(
        ["reproduce", "run", config, "--out", root / "out"], cwd=root, log=root / "log", timeout_s=3600
    )
    assert done.returncode == 0, (root / "log").read_text()[-4000:]
    return config, root / "out"


def test_a_shrunk_finacumen_config_on_two_nodes_one_lost_mid_run_equals_its_one_process_run(
    cluster, proxies, one, tmp_path
):
    a, b = proxies
    config, ref = one
    gate = Hold()
    b.holds[b.n + KILL_AT] = gate  # a call of the worker node's shards, mid bank build
    start = len(a.received), len(b.received)
    out = tmp_path / "out"
    proc = start_driver(["reproduce", "run", config, "--out", out, "--ray", cluster.address], cwd=tmp_path,
                        log=tmp_path / "log")  # fmt: skip
    try:
        while not gate.arrived.wait(1.0):  # the gate (the 1 s only re-checks that the driver lives)
            assert proc.poll() is None, (tmp_path / "log").read_text()[-4000:]
        kept = _digests((out / ".ray-tasks").glob("**/journal.sqlite"))
        at_kill = len(a.received) - start[0], len(b.received) - start[1]
        killed = cluster.kill("w1")
        gate.release.set()
        code = proc.wait(timeout=7200)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed > 0 and code == 0, (tmp_path / "log").read_text()[-4000:]
    assert at_kill[0] > 0 and at_kill[1] > 0  # both nodes had called the model through their own server
    sent = Counter(a.received[start[0] :] + b.received[start[1] :])
    # every run folder's journal holds its own calls: a request two runs ask alike (two k_max
    # of a one-entry bank snapshot) is needed once per run
    needed = _digests((out / "runs").glob("**/journal.sqlite"))
    again = {k: n - needed[k] for k, n in sent.items() if n > needed[k]}
    assert kept and set(kept) <= set(needed)  # no journaled call lost
    assert all(sent[k] == needed[k] for k in kept)  # none journaled before the kill sent again
    assert again  # the calls in flight at the kill were sent again
    _assert_same(ref, out)
    rec = json.loads((out / "cluster.json").read_text())
    assert {s["stage"] for s in rec["stages"]} == {"bank", "eval"}
    moved = [v for v in rec["placement"].values() if len(v["attempts"]) > 1]
    assert moved and all(v["ran"] != v["attempts"][0] for v in moved)
    assert len({v["attempts"][0] for v in rec["placement"].values()}) == 2  # shards asked on both nodes
    figures = {
        "journaled_before_kill": sum(kept.values()),
        "resent": sum(again.values()),
        "sent": sum(sent.values()),
        "journal_calls": sum(needed.values()),
        "shards": sum(len(s["shards"]) for s in rec["stages"]),
        "stages": len(rec["stages"]),
        "shards_moved": len(moved),
    }
    (tmp_path / "figures.json").write_text(json.dumps(figures))
    print("cluster run with a node lost:", figures)


def _digests(journals) -> Counter[str]:
    """How many calls of each request the journals hold (one per journal that holds it)."""
    out: Counter[str] = Counter()
    for j in journals:
        with sqlite3.connect(j) as db:
            out.update(request_digest(json.loads(r)) for (r,) in db.execute("SELECT request_json FROM calls"))
    return out
