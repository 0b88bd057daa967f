"""``reproduce plan --nodes N --gpus-per-node G``: the placement on a cluster (the placement
function's, agent/reproduce/engine_plan.py), the time, and the servers each node starts, read
off that placement."""

from __future__ import annotations

from agent.reproduce import engine_plan as placing
from agent.reproduce.cluster_plan import format_node_servers, node_servers
from agent.reproduce.spec import load_repro
from serving.models.registry import default_registry


def test_each_node_serves_the_replicas_the_placement_puts_there():
    cfg = load_repro("finacumen_table1")
    inv = placing.declared_inventory("h200", nodes=2, gpus_per_node=8)
    p = placing.place(cfg, inv, registry=default_registry())
    servers = node_servers(p)
    solver = p.find("qwen3-vl-8b", "solver").layout
    assert sum(s.replicas for s in servers if s.key == "qwen3-vl-8b") == len(solver.replicas)
    by = {(s.node, s.key): s for s in servers}
    assert set(by) == {("node0", "qwen3-vl-8b"), ("node0", "qwen3-4b-nothink"), ("node1", "qwen3-vl-8b")}
    assert by["node0", "qwen3-vl-8b"].port == by["node1", "qwen3-vl-8b"].port == 8000
    assert by["node0", "qwen3-4b-nothink"].port == 8010 and by["node0", "qwen3-4b-nothink"].gpus == (0,)
    # one server takes one memory share: the smallest the placement gives its GPUs there
    assert by["node0", "qwen3-vl-8b"].share == min(
        r.share for r in solver.replicas if r.gpus[0].node == "node0"
    )
    # the judge (a fixed share) starts first, then the solver takes what is left of GPU 0
    assert [s.key for s in servers if s.node == "node0"] == ["qwen3-4b-nothink", "qwen3-vl-8b"]
    text = format_node_servers(p, cfg.name)
    assert (
        "LOCALFIN_ENDPOINTS=qwen3-4b-nothink=http://127.0.0.1:8010/v1,qwen3-vl-8b=http://127.0.0.1:8000/v1"
        in text
    )
    assert "--endpoint qwen3-4b-nothink=http://<node0 address>:8010/v1" in text  # node1 calls node0's judge


def test_plan_on_two_nodes_prints_the_placement_the_time_and_each_nodes_servers(cli):
    run = cli(
        "reproduce", "plan", "finacumen_table2", "--nodes", "2", "--gpus-per-node", "4", "--gpu", "h100"
    )
    assert run.code == 0, run.err
    out = run.out
    assert "on node0: 4 x h100" in out and "node1: 4 x h100" in out
    assert "total (engines one after another)" in out
    assert "on the cluster (`localfin reproduce run finacumen_table2 --ray auto`" in out
    assert (
        "    node1: localfin reproduce serve finacumen_table2 --nodes 2 --gpus-per-node 4 --gpu h100 "
        "--node node1\n"
        "      CUDA_VISIBLE_DEVICES=0,1,2,3 VLLM_WORKER_MULTIPROC_METHOD=spawn vllm serve "
    ) in out
    bad = cli("reproduce", "plan", "finacumen_table2", "--nodes", "2", "--gpus", "3", "--gpu", "h100")
    assert bad.code == 2 and "--gpus 3 over --nodes 2" in bad.err
