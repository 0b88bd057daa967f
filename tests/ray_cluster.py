"""A real Ray cluster on this machine for the cluster tests (not a test): a head and worker nodes
started with ``ray start`` as a user starts them, each its own process tree.

Each node is one ``ray start`` run in a new session (``start_new_session``): every process it
leaves behind (GCS, raylet, agents, the workers the raylet spawns) keeps that session id, so
:meth:`RayCluster.kill` takes a node down the way a lost machine goes (SIGKILL to every process
of its session, nothing else on the machine touched) and :meth:`RayCluster.stop` tears the whole
cluster down (SIGTERM, then SIGKILL) without ``ray stop``, which would stop every Ray instance of
this user. Every listening port is chosen free (two clusters of parallel test runs never meet);
each node has its own temporary folder (short: Ray's socket paths must fit 107 bytes) and its
own environment (``LOCALFIN_ENDPOINTS``: its own model servers). Workers import this tree
(``PYTHONPATH``), as a user's nodes import their installed localfin.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).parent / "ray"
#: object store of each node (bytes): small, the shards exchange kilobytes
OBJECT_STORE = 80 * 1024 * 1024
#: tries of one node's ``ray start``
START_TRIES = 3


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 now."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(int(s.getsockname()[1]))
    for s in socks:
        s.close()
    return ports


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a node or of a driver: this tree importable, offline, no Ray token or
    usage report, plus ``extra``."""
    env = dict(os.environ)
    env.pop("LOCALFIN_ENDPOINTS", None)
    env.pop("RAY_ADDRESS", None)
    env.update(
        PYTHONPATH=str(REPO_ROOT),
        RAY_AUTH_MODE="disabled",
        RAY_USAGE_STATS_ENABLED="0",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        ORT_DISABLE_TELEMETRY="1",
    )
    env.update(extra or {})
    return env


@dataclass
class RayNode:
    """One node: its name, session id (all its processes), temporary folder and log."""

    name: str
    sid: int
    temp_dir: Path
    log: Path
    endpoints: str = ""

    def pids(self) -> list[int]:
        """Live processes of this node's session."""
        out = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                if os.getsid(int(p.name)) == self.sid and not _zombie(int(p.name)):
                    out.append(int(p.name))
            except (ProcessLookupError, PermissionError):
                continue
        return out


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


@dataclass
class RayCluster:
    """The cluster: its head's address (``127.0.0.1:PORT``) and nodes (module doc)."""

    root: Path
    address: str = ""
    nodes: list[RayNode] = field(default_factory=list)

    def _start(self, name: str, args: list[str], endpoints: str, cpus: int, resources: str) -> RayNode:
        """``ray start`` for one node; tried again (up to :data:`START_TRIES` times, every
        process of the failed try killed first) when the node did not come up, as a user
        reruns it: on a busy machine a raylet can miss Ray's fixed 30 s to register."""
        for attempt in range(1, START_TRIES + 1):
            node, code = self._try_start(name, args, endpoints, cpus, resources)
            if code == 0:
                self.nodes.append(node)
                return node
            _signal_all(node, signal.SIGKILL)
            shutil.rmtree(node.temp_dir, ignore_errors=True)
            if attempt == START_TRIES:
                raise RuntimeError(f"ray start ({name}) failed with {code}: {node.log.read_text()[-2000:]}")
        raise AssertionError("unreachable")

    def _try_start(
        self, name: str, args: list[str], endpoints: str, cpus: int, resources: str
    ) -> tuple[RayNode, int]:
        temp = Path(tempfile.mkdtemp(prefix=f"lf{name}-", dir="/tmp"))
        log = self.root / f"{name}.log"
        ports = free_ports(6)
        cmd = [
            str(RAY),
            "start",
            *args,
            f"--num-cpus={cpus}",
            f"--resources={resources}",
            f"--object-store-memory={OBJECT_STORE}",
            f"--temp-dir={temp}",
            f"--node-manager-port={ports[0]}",
            f"--object-manager-port={ports[1]}",
            f"--dashboard-agent-listen-port={ports[2]}",
            f"--dashboard-agent-grpc-port={ports[3]}",
            f"--runtime-env-agent-port={ports[4]}",
            f"--metrics-export-port={ports[5]}",
            "--disable-usage-stats",
        ]
        env = base_env({"LOCALFIN_ENDPOINTS": endpoints} if endpoints else None)
        with open(log, "a") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            code = proc.wait(timeout=300)
        return RayNode(name, proc.pid, temp, log, endpoints), code

    def start_head(self, *, cpus: int = 1, endpoints: str = "") -> RayNode:
        port, client, dash = free_ports(3)
        self.address = f"127.0.0.1:{port}"
        args = [
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            f"--ray-client-server-port={client}",
            f"--dashboard-port={dash}",
            "--include-dashboard=false",
        ]
        return self._start("head", args, endpoints, cpus, '{"head": 1}')

    def add_worker(self, name: str, *, cpus: int = 1, endpoints: str = "") -> RayNode:
        args = [f"--address={self.address}", "--node-ip-address=127.0.0.1"]
        return self._start(name, args, endpoints, cpus, f'{{"{name}": 1}}')

    def node(self, name: str) -> RayNode:
        return next(n for n in self.nodes if n.name == name)

    def kill(self, name: str) -> int:
        """SIGKILL every process of node ``name`` (a lost machine); returns how many."""
        return _signal_all(self.node(name), signal.SIGKILL)

    def stop(self) -> None:
        """Tear every node down (workers first): SIGTERM, then SIGKILL what is left."""
        for node in reversed(self.nodes):
            _signal_all(node, signal.SIGTERM, grace_s=10.0)
            _signal_all(node, signal.SIGKILL)
            shutil.rmtree(node.temp_dir, ignore_errors=True)


def _signal_all(node: RayNode, sig: int, grace_s: float = 5.0) -> int:
    """Send ``sig`` to every process of ``node`` until none is left or ``grace_s`` has passed
    (a raylet may spawn a worker while it is being stopped); returns the processes signalled."""
    hit: set[int] = set()
    end = time.monotonic() + grace_s
    while True:
        pids = node.pids()
        if not pids or time.monotonic() > end:
            return len(hit)
        for pid in pids:
            try:
                os.kill(pid, sig)
                hit.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def start_driver(args: list[object], *, cwd: Path, log: Path) -> subprocess.Popen:
    """``localfin ARGS`` started as a child process with a node's environment (the driver of a
    run); its output goes to ``log``."""
    cmd = [sys.executable, "-m", "localfin_cli.main", *(str(a) for a in args)]
    with open(log, "w") as fh:
        return subprocess.Popen(cmd, cwd=cwd, env=base_env(), stdout=fh, stderr=subprocess.STDOUT)


def driver(
    args: list[object], *, cwd: Path, log: Path, timeout_s: float = 900
) -> subprocess.CompletedProcess[str]:
    """``localfin ARGS`` run to its end as a child process (:func:`start_driver`)."""
    proc = start_driver(args, cwd=cwd, log=log)
    try:
        code = proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, code)


@contextmanager
def two_nodes(folder: Path, head_endpoints: str, worker_endpoints: str) -> Iterator[RayCluster]:
    """A head (1 CPU) and worker ``w1`` (1 CPU) on this machine, each calling its own model
    server; stopped on exit."""
    c = RayCluster(folder)
    try:
        c.start_head(cpus=1, endpoints=head_endpoints)
        c.add_worker("w1", cpus=1, endpoints=worker_endpoints)
        yield c
    finally:
        c.stop()
