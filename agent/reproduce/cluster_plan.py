"""The servers each node of a cluster starts for a config, read off its placement.

``localfin reproduce plan CONFIG --nodes N --gpus-per-node G`` places the config's engines on N
nodes of G GPUs (:func:`agent.reproduce.engine_plan.place`, the one placement function) and then
says, per node, which ``localfin serve`` to start and the ``LOCALFIN_ENDPOINTS`` its ``ray
start`` declares (docs/cluster.md): every data-parallel replica the placement puts on a node
is served there by one server per engine (its replicas on that node as vLLM's data
parallelism, at the smallest memory share the placement gives them there: vLLM takes one
share for all of a server's GPUs), on a port of its own (8000 for the config's first engine
key, 8010 for the next, ...). A replica whose
pipeline stages span nodes is one server for the whole cluster, started on its first node and
named to the run with ``--endpoint``; so is an engine the placement puts on some nodes only
(FinAcumen's judge beside the solver on one GPU): the other nodes call it there. Nothing is
decided here that the placement did not decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BASE_PORT", "NodeServer", "node_servers", "format_node_servers"]

#: the port of the config's first engine key; the next keys take ports PORT_STEP apart
BASE_PORT = 8000
PORT_STEP = 10


@dataclass(frozen=True)
class NodeServer:
    """One server: its node, stage, engine key, port, replicas there, their GPUs and share,
    tensor x pipeline parallelism, and whether it spans nodes (pipeline stages over Ray)."""

    node: str
    stage: int
    key: str
    port: int
    replicas: int
    gpus: tuple[int, ...]
    share: float
    tp: int
    pp: int
    spans: tuple[str, ...] = ()

    def command(self) -> str:
        devices = ",".join(str(g) for g in self.gpus)
        if self.spans:
            return (
                f"vllm serve <{self.key} weights> --served-model-name {self.key} --port {self.port} "
                f"--tensor-parallel-size {self.tp} --pipeline-parallel-size {self.pp} "
                f"--distributed-executor-backend ray --gpu-memory-utilization {self.share:g}"
            )
        return (
            f"CUDA_VISIBLE_DEVICES={devices} localfin serve {self.key} --port {self.port} "
            f"--replicas {self.replicas} --gpu-share {self.share:g}"
        )


def node_servers(placement: Any) -> list[NodeServer]:
    """Every server the placement implies, by stage, node and engine (module doc)."""
    ports: dict[str, int] = {}
    out: list[NodeServer] = []
    for e in placement.engines:
        if not e.fits or e.device != "cuda" or e.layout is None:
            continue
        port = ports.setdefault(e.key, BASE_PORT + PORT_STEP * len(ports))
        lay = e.layout
        local: dict[str, list[Any]] = {}
        for r in lay.replicas:
            nodes = tuple(dict.fromkeys(g.node for g in r.gpus))
            if len(nodes) > 1:
                gpus = tuple(g.index for g in r.gpus if g.node == nodes[0])
                out.append(
                    NodeServer(nodes[0], e.stage, e.key, port, 1, gpus, r.share, lay.tensor_parallel,
                               lay.pipeline_parallel, nodes)
                )  # fmt: skip
            else:
                local.setdefault(nodes[0], []).append(r)
        for node, reps in local.items():
            gpus = tuple(sorted({g.index for r in reps for g in r.gpus}))
            share = min(r.share for r in reps)  # one server: vLLM takes one share for all its GPUs
            out.append(
                NodeServer(node, e.stage, e.key, port, len(reps), gpus, share, lay.tensor_parallel,
                           lay.pipeline_parallel)
            )  # fmt: skip
    return sorted(out, key=lambda s: (s.stage, s.node, s.port))


def format_node_servers(placement: Any, config: str) -> str:
    """Per stage and node: the servers to start and the node's ``LOCALFIN_ENDPOINTS``."""
    servers = node_servers(placement)
    lines = [f"on the cluster (`localfin reproduce run {config} --ray auto`, docs/cluster.md):"]
    if not servers:
        return "\n".join([*lines, "  no GPU engine placed: nothing to serve"])
    stages = sorted({s.stage for s in servers})
    for stage in stages:
        if len(stages) > 1:
            lines.append(f"  stage {stage}:")
        for node in dict.fromkeys(s.node for s in servers if s.stage == stage):
            mine = [s for s in servers if s.stage == stage and s.node == node]
            lines.append(f"    {node}:")
            lines += [f"      {s.command()}" for s in mine]
            own = [s for s in mine if not s.spans]
            if own:
                pairs = ",".join(f"{s.key}=http://127.0.0.1:{s.port}/v1" for s in own)
                lines.append(f"      LOCALFIN_ENDPOINTS={pairs} ray start ...")
            for s in mine:
                if s.spans:
                    lines.append(
                        f"      (one server over {', '.join(s.spans)}: run with --endpoint "
                        f"{s.key}=http://<{node} address>:{s.port}/v1)"
                    )
    for stage in stages:
        here = [s for s in servers if s.stage == stage]
        nodes = {s.node for s in here}
        for key in dict.fromkeys(s.key for s in here if not s.spans):
            on = [s for s in here if s.key == key]
            if {s.node for s in on} != nodes:  # nodes without it call another node's server
                first = on[0]
                lines.append(
                    f"  {key} is not on every node: name it to the run, --endpoint "
                    f"{key}=http://<{first.node} address>:{first.port}/v1 (the other nodes call it there)"
                )
    if len(stages) > 1:
        lines.append(
            "  the stages are the one-process order (one engine group after another on these GPUs); a "
            "cluster run sends every stage's tasks at once, so serve the engines of several stages "
            "together only where their GPUs differ, else run the stages as separate runs"
        )
    return "\n".join(lines)
