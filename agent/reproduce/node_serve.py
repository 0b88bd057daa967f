"""``localfin reproduce serve CONFIG [--nodes N --gpus-per-node G --gpu KIND] --node NODE``:
start one node's servers exactly as ``reproduce plan`` prints them.

The config is placed on the declared cluster (or, with no declaration, on this machine's
GPUs, or on the CPU build where it has none) by the one placement function; the node's
servers are :func:`agent.reproduce.cluster_plan.node_starts` of that placement, so their
flags are the in-process engines' arguments. They start one after another, each answering
``/health`` before the next starts (:func:`serving.http.server.start_in_order`: engines sharing a
GPU, FinAcumen's solver and judge, must not profile at the same time); then the
``LOCALFIN_ENDPOINTS`` the node's ``ray start`` declares is printed, and the servers run until
Ctrl-C (or SIGTERM), or until one of them exits, when all are stopped.
"""

from __future__ import annotations

import logging
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.reproduce.cluster_plan import LOCAL_NODE, NodeStart
from localfin.errors import ConfigError

if TYPE_CHECKING:
    from serving.http.server import Launcher

__all__ = ["pick", "server_plan", "server_plans", "endpoints_line", "check_machine", "serve_node"]

log = logging.getLogger(__name__)


def pick(starts: Sequence[NodeStart], node: str | None, stage: int | None) -> list[NodeStart]:
    """The servers of ``node`` (None: the only node) in ``stage`` (None: the only stage),
    refusing a node or stage the placement does not have, naming those it has."""
    nodes = list(dict.fromkeys(s.server.node for s in starts))
    if not nodes:
        raise ConfigError(
            "the placement starts no server (no engine on a GPU or the CPU build); nothing to serve"
        )
    if node is None:
        if len(nodes) > 1:
            raise ConfigError(f"--node is missing; allowed: {', '.join(nodes)}")
        node = nodes[0]
    if node not in nodes:
        raise ConfigError(
            f"--node {node!r}: no server of this placement runs there; allowed: {', '.join(nodes)}"
        )
    mine = [s for s in starts if s.server.node == node]
    stages = sorted({s.server.stage for s in mine})
    if stage is None:
        if len(stages) > 1:
            raise ConfigError(
                f"--stage is missing: the stages run one after another on these GPUs; allowed: "
                f"{', '.join(map(str, stages))}"
            )
        stage = stages[0]
    if stage not in stages:
        raise ConfigError(f"--stage {stage}: not a stage of {node}; allowed: {', '.join(map(str, stages))}")
    return [s for s in mine if s.server.stage == stage]


def server_plan(start: NodeStart, inventory: Any) -> Any:
    """The :class:`serving.http.server.ServerPlan` that runs ``start`` on this machine: the printed
    flags after the weights folder, the process environment with its variables."""
    from serving.http.server import ServerPlan, server_env

    if start.server.device == "cuda":
        head = (
            ["vllm", "serve"]
            if shutil.which("vllm")
            else [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve"]
        )
        cmd = [*head, start.path, *start.args]
    else:
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", start.path, *start.args]
    platform = start.server.device
    run_env = server_env(
        start.entry, options=start.options, layout=start.layout, inventory=inventory, platform=platform
    )
    return ServerPlan(tuple(cmd), run_env)


def server_plans(starts: Sequence[NodeStart], inventory: Any, logs: Path) -> list[tuple[Any, ...]]:
    """What :func:`serving.http.server.start_in_order` takes for ``starts``: (engine key, plan,
    host, port, log file ``logs/KEY-PORT.log``) each, in their order."""
    return [
        (s.server.key, server_plan(s, inventory), "127.0.0.1", s.server.port,
         logs / f"{s.server.key}-{s.server.port}.log")
        for s in starts
    ]  # fmt: skip


def endpoints_line(starts: Sequence[NodeStart]) -> str:
    """``LOCALFIN_ENDPOINTS=KEY=URL,...`` of the servers that serve this node alone."""
    own = [s for s in starts if not s.server.spans]
    return "LOCALFIN_ENDPOINTS=" + ",".join(f"{s.server.key}={s.url}" for s in own)


def check_machine(starts: Sequence[NodeStart]) -> None:
    """Refuse GPU servers on a machine without the GPU build or without their GPUs."""
    from serving.hardware.gpus import engine_platform, visible_inventory

    need = max((g + 1 for s in starts for g in s.server.gpus), default=0)
    if not need:
        return
    if engine_platform() != "cuda":
        raise ConfigError(
            "this node's servers run on GPUs and this machine has vLLM's CPU build; allowed: a GPU "
            "machine with the GPU build (make install-gpu), or --dry-run to print them"
        )
    seen = visible_inventory().most_per_node
    if seen < need:
        raise ConfigError(
            f"this node's servers use GPUs 0..{need - 1} and this machine shows {seen}; allowed: the node "
            "the plan declares (--gpus-per-node), or CUDA_VISIBLE_DEVICES showing them"
        )


def serve_node(
    starts: Sequence[NodeStart],
    inventory: Any,
    *,
    logs: Path,
    say: Callable[[str], None],
    show: Callable[[str], None],
    ready_timeout_s: float = 900.0,
    wait: bool = True,
    launcher: Launcher | None = None,
) -> int:
    """Start ``starts`` in order, each healthy before the next; ``show`` the endpoints line;
    with ``wait``, keep them until Ctrl-C/SIGTERM (0) or until one exits (its code), then
    stop them all. Without ``wait`` (tests), stop them at once. ``launcher``: how the processes
    run and are asked for their health (None: the real :data:`serving.http.server.LAUNCHER`)."""
    from serving.http.server import LAUNCHER, start_in_order

    check_machine(starts)
    if starts and starts[0].server.node == LOCAL_NODE and starts[0].server.device == "cpu":
        say("no GPU in this placement: the servers run on this machine's CPU build")
    plans = server_plans(starts, inventory, logs)
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _interrupt)
    handles = []
    try:
        handles = start_in_order(
            plans, ready_timeout_s=ready_timeout_s, say=say, launcher=launcher or LAUNCHER
        )
        show(endpoints_line(starts))
        code = 0
        while wait:
            done = [h for h in handles if h.process.poll() is not None]
            if done:
                code = done[0].process.returncode or 1
                say(f"the server at {done[0].base_url} exited with code {code}; stopping the others")
                break
            time.sleep(1.0)
        return code
    except KeyboardInterrupt:
        say("stopping the servers")
        return 0
    finally:
        for h in reversed(handles):
            h.stop()
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
