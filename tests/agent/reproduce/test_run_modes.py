"""How a Moira table runs on a cluster (agent/reproduce/run_modes.py): all its backbones at once
where the cluster has room (one placement, by the one placement function, that the plan prints,
`reproduce serve` starts and the run calls), else its stages one after another; the plan says
which, with the time of each stage and of the whole table (GPU inventories declared: no GPU)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from test_node_serve import _compare, _fp8_table3

from agent.reproduce import engine_plan as placing
from agent.reproduce.cluster_plan import node_starts
from agent.reproduce.run_modes import STAGES, TOGETHER, _fit, run_layout
from agent.reproduce.spec import load_repro
from serving.hardware.placement import MAX_TOTAL_SHARE
from serving.models.registry import default_registry

TWO_BY_EIGHT = ["--nodes", "2", "--gpus-per-node", "8", "--gpu", "h200"]


def _layout(cfg, kind: str, nodes: int, per: int):
    inv = placing.declared_inventory(kind, nodes=nodes, gpus_per_node=per)
    return run_layout(cfg, inv, registry=default_registry())


@pytest.mark.parametrize("fp8", [False, True])
def test_table3_on_two_nodes_of_eight_h200_places_every_backbone_at_once(fp8: bool, tmp_path: Path):
    cfg = load_repro(_fp8_table3(tmp_path) if fp8 else "moira_table3_main")
    lay = _layout(cfg, "h200", 2, 8)
    assert lay.mode == TOGETHER and lay.placement.ok
    staged = {e.key: e for e in lay.staged.engines}
    placed = {e.key: e for e in lay.placement.engines}
    assert set(placed) == set(staged) == {
        "llama-3.1-8b", "llama-3.1-70b", "qwen3-4b", "qwen3-4b-nothink", "qwen3-32b", "qwen3-32b-nothink",
    }  # fmt: skip
    assert {e.stage for e in placed.values()} == {0}  # one stage: every server at once
    used: dict[tuple[str, int], float] = {}
    for key, e in placed.items():
        # each backbone keeps its stage's layout, with at most its stage's replicas
        mine, theirs = e.layout, staged[key].layout
        assert (mine.tensor_parallel, mine.pipeline_parallel, mine.quantization) == (
            theirs.tensor_parallel, theirs.pipeline_parallel, theirs.quantization,
        )  # fmt: skip
        assert 1 <= len(mine.replicas) <= len(theirs.replicas)
        for r in mine.replicas:
            for g in r.gpus:
                used[g.node, g.index] = used.get((g.node, g.index), 0.0) + r.share
    assert max(used.values()) <= MAX_TOTAL_SHARE + 1e-9  # no GPU over-committed
    owners = [(r.gpus, e.key) for e in placed.values() for r in e.layout.replicas]
    gpus = [g for gs, _ in owners for g in gs]
    assert len(gpus) == len(set(gpus))  # disjoint: no GPU serves two backbones
    if fp8:
        assert placed["llama-3.1-70b"].layout.quantization == "fp8"
    # the whole table: the slowest backbone, against the stages one after another
    times = {t.key: t for t in lay.together_times}
    assert lay.together_hours == max(t.hours for t in times.values()) < lay.staged_hours
    assert lay.staged_hours == pytest.approx(sum(t.hours for t in lay.stage_times))
    assert {k: t.replicas for k, t in times.items()} == {k: len(e.layout.replicas) for k, e in placed.items()}
    # the slowest backbone got every replica it can use, or one more does not fit beside the others
    slow = max(times.values(), key=lambda t: t.hours).key
    counts = {k: t.replicas for k, t in times.items()}
    more = {**counts, slow: counts[slow] + 1}
    assert (
        counts[slow] == len(staged[slow].layout.replicas)
        or _fit(lay.staged.engines, more, lay.staged.inventory) is None
    )
    # every server's flags are the in-process engines' arguments, field by field
    assert _compare(cfg, lay.placement) == sum(len(e.layout.replicas) for e in placed.values())


@pytest.mark.parametrize("kind", ["h200", "h100"])
def test_one_more_replica_never_makes_a_backbone_slower(kind: str):
    """The hand-out of replicas relies on it: 6 runs on 5 replicas are 6 sequences in flight (the
    batch rounded up to 2 a replica adds none), so a sixth replica shortens the time."""
    from agent.reproduce.gpu_plan import engine_works
    from agent.reproduce.run_modes import _hours, _kind

    reg = default_registry()
    cfg = load_repro("moira_table3_main")
    inv = placing.declared_inventory(kind, nodes=2, gpus_per_node=8)
    staged = placing.place(cfg, inv, registry=reg)
    works, _ = engine_works(cfg, reg, by_engine=True)
    gpu, known = _kind(inv)
    assert known and gpu.name == kind
    for e in staged.engines:
        hours = [_hours(e, works, gpu, reg, n) for n in range(1, len(e.layout.replicas) + 1)]
        assert len(hours) > 1 and all(b <= a for a, b in zip(hours, hours[1:])), (e.key, hours)


def test_the_plan_prints_each_nodes_one_command_as_serve_dry_run_starts_it(cli):
    cfg = load_repro("moira_table3_main")
    lay = _layout(cfg, "h200", 2, 8)
    plan = cli("reproduce", "plan", "moira_table3_main", *TWO_BY_EIGHT, "--base-port", "9100")
    assert plan.code == 0, plan.err
    out = plan.out
    assert (
        f"how the table runs: all backbones at once, each on GPUs of its own: the whole table "
        f"{lay.together_hours:.2f} h"
    ) in out
    assert f"against {lay.staged_hours:.2f} h with its 6 stages one after another" in out
    for t in lay.stage_times:  # each stage's time, one after another and at once
        (at,) = [a for a in lay.together_times if a.key == t.key]
        row = [ln.split() for ln in out.splitlines() if ln.split()[:2] == [str(t.stage), t.key]]
        assert [str(t.replicas), "replica(s),", f"{t.hours:.2f}", "h", str(at.replicas)] in [
            r[2:7] for r in row
        ]
    starts = node_starts(cfg, lay.placement, default_registry(), base_port=9100)
    assert min(s.server.port for s in starts) == 9100
    for node in ("node0", "node1"):
        cmd = [
            "reproduce",
            "serve",
            "moira_table3_main",
            *TWO_BY_EIGHT,
            "--node",
            node,
            "--base-port",
            "9100",
        ]
        assert f"    {node}: localfin {shlex.join(cmd)}" in out.splitlines()  # ONE command, no --stage
        run = cli(*cmd, "--dry-run")
        assert run.code == 0, run.err
        mine = [s.shown() for s in starts if s.server.node == node]
        assert run.out.splitlines()[:-1] == mine  # the servers the command starts ...
        assert all(f"      {line}" in out.splitlines() for line in mine)  # ... are the plan's lines
        assert run.out.splitlines()[-1] in out  # LOCALFIN_ENDPOINTS=...
    # the run: every backbone that some node lacks named to it
    (line,) = [
        ln for ln in out.splitlines() if ln.startswith("    localfin reproduce run moira_table3_main --ray")
    ]
    named = {
        s.server.key
        for s in starts
        if {x.server.node for x in starts if x.server.key == s.server.key} != {"node0", "node1"}
    }
    assert (
        {w.split("=")[0] for w in shlex.split(line) if "=http" in w}
        == named
        == {s.server.key for s in starts}
    )


def test_where_all_at_once_does_not_fit_the_plan_says_stages_started_and_stopped_by_the_run(cli):
    cfg = load_repro("moira_table3_main")
    lay = _layout(cfg, "h200", 1, 4)  # one replica of each backbone needs 7 GPUs
    assert lay.mode == STAGES and lay.placement is lay.staged and not lay.together_times
    plan = cli("reproduce", "plan", "moira_table3_main", "--gpus", "4", "--gpu", "h200")
    assert plan.code == 0, plan.err
    assert (
        f"how the table runs: stages one after another, started and stopped by the run: "
        f"{lay.staged_hours:.2f} h for its 6 stages (`localfin reproduce run moira_table3_main` on one "
        "machine starts each stage's servers"
    ) in plan.out
    assert (
        "all backbones at once: not chosen: one replica of each backbone needs 7 GPUs of their own"
        in plan.out
    )
    for t in lay.stage_times:
        assert any(
            ln.split()[:6] == [str(t.stage), t.key, str(t.replicas), "replica(s),", f"{t.hours:.2f}", "h"]
            for ln in plan.out.splitlines()
            if ln.strip()
        )
    # on several nodes without room for all at once: each node serves one stage at a time
    two = cli(
        "reproduce", "plan", "moira_table3_main", "--nodes", "2", "--gpus-per-node", "2", "--gpu", "h200"
    )
    assert two.code == 0, two.err
    assert "on several nodes, serve one stage at a time on every node" in two.out
    assert "--node node1 --stage 5" in two.out


def test_a_base_port_that_leaves_no_room_is_refused_naming_the_option(cli):
    run = cli(
        "reproduce",
        "serve",
        "moira_table3_main",
        *TWO_BY_EIGHT,
        "--node",
        "node0",
        "--base-port",
        "65500",
        "--dry-run",
    )
    assert (
        run.code == 2
        and "--base-port 65500" in run.err
        and "allowed: a whole number from 1 to 65485" in run.err
    )


def test_on_one_machine_with_room_for_all_at_once_the_plan_says_how_and_what_the_run_alone_does(cli):
    """Eight H200 hold one replica of each backbone: the plan prints the machine's one command
    and says that `reproduce run` without --ray runs the stages one after another."""
    lay = _layout(load_repro("moira_table3_main"), "h200", 1, 8)
    assert lay.mode == TOGETHER
    plan = cli("reproduce", "plan", "moira_table3_main", "--gpus", "8", "--gpu", "h200")
    assert plan.code == 0, plan.err
    assert (
        "  all at once on this machine: its one command below, `ray start` with its LOCALFIN_ENDPOINTS, "
        "then `localfin reproduce run moira_table3_main --ray auto`; `localfin reproduce run "
        "moira_table3_main` alone runs the stages one after another"
    ) in plan.out.splitlines()
    cmd = "localfin reproduce serve moira_table3_main --nodes 1 --gpus-per-node 8 --gpu h200 --node node0"
    assert f"    node0: {cmd}" in plan.out.splitlines()
    run = cli(*cmd.split()[1:], "--dry-run")
    assert run.code == 0 and run.out.splitlines()[-1].startswith("LOCALFIN_ENDPOINTS=llama-3.1-8b=")
