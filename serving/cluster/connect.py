"""Joining a Ray cluster as the driver of a cluster run, and what its nodes are.

Addresses (``--ray ADDRESS``), one of:

- ``local``: a Ray instance started on this machine for this run only (one machine; tests);
- ``auto``: the cluster this machine joined with ``ray start`` (Ray finds its address in
  ``RAY_ADDRESS`` or in its temporary folder);
- ``HOST:PORT``: the head started with ``ray start --head --port=PORT`` (run the command on a
  node of the cluster: the journal keeper, :mod:`serving.cluster.keeper`, lives on the
  driver's node and writes into the run folder).

``ray://`` addresses (Ray Client, a driver outside the cluster) are refused: the keeper would
then live on another machine than the run folder. Before Ray is asked to join, the head's port
is tried with one TCP connection (Ray's own client retries for minutes): a head that does not
answer is a :class:`~serving.errors.ClusterUnavailableError` (exit code 4) naming the address.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from serving.errors import ClusterUnavailableError, ConfigError

__all__ = [
    "ADDRESS_FORMS",
    "Node",
    "Cluster",
    "check_address",
    "probe_head",
    "preflight",
    "joined",
    "alive_nodes",
]

log = logging.getLogger(__name__)

ADDRESS_FORMS = (
    "local (a Ray instance on this machine), auto (the cluster this machine joined with `ray start`) "
    "or HOST:PORT of the head (`ray start --head --port=PORT`)"
)
#: seconds the head's port may take to accept a connection
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Node:
    """One node of the cluster as the driver saw it at the start."""

    node_id: str
    ip: str
    cpus: float
    is_head: bool
    resources: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Cluster:
    """The cluster a run joined: its address, the driver's node and the nodes alive then."""

    address: str
    driver_node: str
    nodes: tuple[Node, ...]


def check_address(address: str) -> str:
    """``address`` stripped, or a ConfigError naming it and the forms allowed."""
    a = (address or "").strip()
    if not a:
        raise ConfigError(f"--ray is empty; allowed: {ADDRESS_FORMS}")
    if a.startswith("ray://"):
        raise ConfigError(
            f"--ray {a}: Ray Client addresses are not supported (the driver keeps every shard's "
            f"journal on its own node); run the command on a node of the cluster; allowed: {ADDRESS_FORMS}"
        )
    if a in ("local", "auto"):
        return a
    host, _, port = a.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--ray {a!r}; allowed: {ADDRESS_FORMS}")
    return a


def probe_head(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Open one TCP connection to the head's port (``HOST:PORT``); ClusterUnavailableError
    naming the address when nothing answers there."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ClusterUnavailableError(
            f"the Ray cluster's head at {address} did not answer ({reason}); nothing was run: start "
            f"it (`ray start --head --port={port}` on {host}) or give the address `ray start` printed, "
            f"then rerun (with --resume to continue a run)"
        ) from exc


def preflight(address: str) -> str:
    """Before a run writes anything: ``address`` checked, and a ``HOST:PORT`` head tried
    (:func:`probe_head`); returns the address stripped."""
    a = check_address(address)
    if a not in ("local", "auto"):
        probe_head(a)
    return a


def _resolve_auto() -> str:
    from ray._private.services import canonicalize_bootstrap_address

    found = canonicalize_bootstrap_address("auto")
    if not found:
        raise ClusterUnavailableError(
            "--ray auto: this machine has joined no Ray cluster (no RAY_ADDRESS, no address left by "
            "`ray start`); start one (`ray start --head --port=PORT`) or give HOST:PORT of its head"
        )
    return str(found)


def alive_nodes(ray: Any) -> tuple[Node, ...]:
    """The cluster's alive nodes (sorted by address, then id: the order shards are placed in)."""
    out = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        res = {str(k): float(v) for k, v in (n.get("Resources") or {}).items()}
        out.append(
            Node(
                node_id=str(n["NodeID"]),
                ip=str(n.get("NodeManagerAddress", "")),
                cpus=res.get("CPU", 0.0),
                is_head="node:__internal_head__" in res,
                resources=res,
            )
        )
    return tuple(sorted(out, key=lambda n: (n.ip, n.node_id)))


@contextlib.contextmanager
def joined(address: str, *, local_cpus: int | None = None) -> Iterator[Cluster]:
    """Join the cluster at ``address`` for the body of the ``with`` and leave it afterwards.

    When Ray is already initialised in this process it is used as it is (and left running).
    ``local_cpus``: CPUs of a ``local`` instance (None: Ray's count of this machine's)."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--ray needs the ray package: pip install 'localfin[ray]'") from exc
    started = not ray.is_initialized()
    a = check_address(address) if started else address
    if started:
        if a == "local":
            # always a new instance (never one found on this machine)
            ray.init(address="local", num_cpus=local_cpus, include_dashboard=False, log_to_driver=False)
        else:
            target = _resolve_auto() if a == "auto" else a
            probe_head(target)
            try:
                ray.init(address=target, log_to_driver=False)
            except (ConnectionError, RuntimeError, TimeoutError) as exc:
                raise ClusterUnavailableError(
                    f"could not join the Ray cluster at {target}: {exc}; check the address `ray start "
                    "--head` printed and that this machine's ray version is the head's"
                ) from exc
    try:
        ctx = ray.get_runtime_context()
        cluster = Cluster(a, str(ctx.get_node_id()), alive_nodes(ray))
        log.info(
            "joined the Ray cluster at %s: %d node(s), %g CPU(s)",
            a,
            len(cluster.nodes),
            sum(n.cpus for n in cluster.nodes),
        )
        yield cluster
    finally:
        if started:
            ray.shutdown()
