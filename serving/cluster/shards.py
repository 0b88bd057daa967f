"""Shards of a run as Ray tasks: where each goes, how a lost one comes back, what it returns.

A :class:`Shard` is a key (its folder under the keeper's root, unique in the run), an index
(its place in its stage) and a body: a picklable callable that gets a :class:`ShardContext`
and returns a small value. The body does its work in ``ctx.folder`` (a scratch folder on the
node that runs it, removed afterwards), first copies the journal the keeper holds for it
(``ctx.restore``) and wraps its model backend in ``ctx.relay`` so each answered call reaches the
keeper (:mod:`serving.cluster.keeper`); it finds its servers with ``ctx.endpoint``.

**Placement** (:class:`RayRunner`). The nodes alive when a stage starts that have at least
``cpus`` CPUs, ordered by address then node id, take the shards in turn: shard ``i`` is asked
for on node ``i mod n`` (Ray's node affinity, *soft*: a node that is gone or cannot take it
leaves the shard to any other). Each shard holds ``cpus`` CPUs while it runs. The outcome never
depends on where a shard ran: its requests depend only on its items and the answers, and the
driver writes the results from the journals alone. Which node ran each attempt is recorded
(:meth:`RayRunner.placement`).

**A lost node.** Ray runs a shard whose worker or node died again, up to ``retries`` times
(system failures only: an error of ours is not retried and stops the run, its exit code kept).
The new attempt replays the keeper's journal (no journaled call is sent twice) and calls its own
node's server. A shard that failed for good stops the run; rerunning with ``--resume``
continues from the keeper's journals.

:class:`LocalRunner` runs the same bodies one after another in this process with a plain
keeper (no Ray): the default test suite checks sharding and merging with it.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from localfin.errors import LocalfinError
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.cluster.connect import Cluster, alive_nodes
from serving.cluster.endpoints import Endpoints, node_endpoints
from serving.cluster.keeper import JournalKeeper, Relay, check_key, start_keeper, write_snapshot
from serving.errors import ConfigError

__all__ = [
    "TASK_RETRIES",
    "Shard",
    "ShardContext",
    "ShardOutcome",
    "ShardRunner",
    "RayRunner",
    "LocalRunner",
]

log = logging.getLogger(__name__)

#: times Ray runs a shard again after its worker or node died (docs/faults.md)
TASK_RETRIES = 3


@dataclass(frozen=True)
class Shard:
    """One unit of a stage (module doc)."""

    key: str
    index: int
    body: Callable[[ShardContext], Any]

    def __post_init__(self) -> None:
        check_key(self.key)
        if self.index < 0:
            raise ConfigError(f"Shard.index={self.index}; allowed: >= 0")


@dataclass
class ShardContext:
    """What a shard's body gets on the node that runs it."""

    key: str
    index: int
    attempt: int
    node: str  # Ray node id ("" in this process)
    where: str  # the node's address, for messages
    folder: Path  # scratch folder (removed when the body returns)
    _snapshot: Callable[[], bytes | None] = field(repr=False)
    _keep: Callable[[list[Any]], None] = field(repr=False)
    own: Mapping[str, tuple[str, ...]] = field(default_factory=node_endpoints)

    def restore(self, path: Path) -> int:
        """Write the keeper's journal of this shard at ``path``; returns the calls it holds."""
        return write_snapshot(self._snapshot(), Path(path))

    def relay(self, backend: Backend) -> Relay:
        """``backend`` with every answered call sent to the keeper first."""
        return Relay(backend, self._keep)

    def endpoint(self, endpoints: Endpoints, model: str) -> str:
        """The server this shard calls for ``model`` (:mod:`serving.cluster.endpoints`)."""
        url, source = endpoints.choose(model, self.index, self.own, where=self.where)
        whose = "this node's" if source == "node" else "named"
        log.info("shard %s: %s at %s (%s)", self.key, model, url, whose)
        return url


@dataclass(frozen=True)
class ShardOutcome:
    """A finished shard: its body's value, the node of its last attempt and its attempts."""

    key: str
    index: int
    value: Any
    node: str
    attempts: int
    wall_s: float


class ShardRunner(Protocol):
    """Runs a stage's shards and returns their outcomes in shard order."""

    root: Path

    def run(
        self, shards: Sequence[Shard], what: str, progress: Progress = NULL_PROGRESS
    ) -> list[ShardOutcome]: ...

    def placement(self) -> dict[str, Any]: ...


def _in_scratch(body: Callable[[ShardContext], Any], ctx: ShardContext) -> Any:
    tmp = Path(tempfile.mkdtemp(prefix="localfin-shard-"))
    ctx.folder = tmp
    try:
        return body(ctx)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _attempt(shard: Shard, keeper: Any) -> dict[str, Any]:
    """One attempt of a shard on a Ray worker (the task's body)."""
    import ray

    t0 = time.perf_counter()
    node = str(ray.get_runtime_context().get_node_id())
    where = f"{ray.util.get_node_ip_address()} ({node[:8]})"
    attempt = int(ray.get(keeper.begin.remote(shard.key, node)))
    if attempt > 1:
        log.warning("shard %s: attempt %d, on node %s", shard.key, attempt, where)
    ctx = ShardContext(
        shard.key,
        shard.index,
        attempt,
        node,
        where,
        Path("."),
        lambda: ray.get(keeper.snapshot.remote(shard.key)),
        lambda pairs: ray.get(keeper.put.remote(shard.key, pairs)),
    )
    value = _in_scratch(shard.body, ctx)
    return {"value": value, "node": node, "attempt": attempt, "wall_s": time.perf_counter() - t0}


class RayRunner:
    """Shards as Ray tasks on the joined ``cluster`` (module doc); the keeper's journals under
    ``root`` (a folder of the driver's)."""

    def __init__(
        self, cluster: Cluster, root: Path, *, cpus: float = 1.0, retries: int = TASK_RETRIES
    ) -> None:
        import ray

        if cpus <= 0:
            raise ConfigError(f"CPUs per shard = {cpus}; allowed: > 0")
        self.ray, self.cluster, self.root = ray, cluster, Path(root)
        self.cpus, self.retries = cpus, retries
        self.root.mkdir(parents=True, exist_ok=True)
        self.keeper = start_keeper(ray, self.root.resolve(), cluster.driver_node)
        self._asked: dict[str, str] = {}
        self._ran: dict[str, str] = {}

    def nodes(self) -> list[Any]:
        """The nodes shards are placed on now (alive, with ``cpus`` CPUs), in placement order."""
        eligible = [n for n in alive_nodes(self.ray) if n.cpus >= self.cpus]
        if not eligible:
            raise ConfigError(
                f"no node of the Ray cluster at {self.cluster.address} has {self.cpus:g} CPU(s) for a shard; "
                "start nodes with --num-cpus >= 1"
            )
        return eligible

    def run(
        self, shards: Sequence[Shard], what: str, progress: Progress = NULL_PROGRESS
    ) -> list[ShardOutcome]:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self.ray
        task = ray.remote(num_cpus=self.cpus, max_retries=self.retries, retry_exceptions=False)(_attempt)
        nodes = self.nodes()
        refs: dict[Any, Shard] = {}
        for s in shards:
            node = nodes[s.index % len(nodes)]
            self._asked[s.key] = node.node_id
            strategy = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=True)
            refs[task.options(scheduling_strategy=strategy).remote(s, self.keeper)] = s
        log.info("%s: %d shard(s) over %d node(s)", what, len(shards), len(nodes))
        done: dict[str, dict[str, Any]] = {}
        pending = list(refs)
        with progress.task(f"{what}: {len(shards)} shards", total=len(shards)) as bar:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    got = self._get(ref, refs[ref], what)
                    done[refs[ref].key] = got
                    self._ran[refs[ref].key] = got["node"]
                    bar.advance()
        attempts = ray.get(self.keeper.attempts.remote())
        return [
            ShardOutcome(
                s.key,
                s.index,
                done[s.key]["value"],
                done[s.key]["node"],
                len(attempts.get(s.key, ())),
                round(done[s.key]["wall_s"], 3),
            )
            for s in shards
        ]

    def _get(self, ref: Any, shard: Shard, what: str) -> dict[str, Any]:
        ray = self.ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, LocalfinError):  # ours, from the body: its own message and exit code
                raise cause from exc
            raise LocalfinError(f"{what}: shard {shard.key} failed: {exc}") from exc
        except ray.exceptions.RayError as exc:
            raise LocalfinError(
                f"{what}: shard {shard.key} was lost {self.retries + 1} time(s) (its worker or node died); "
                f"rerun with --resume to continue from the journaled calls: {exc}"
            ) from exc

    def placement(self) -> dict[str, Any]:
        """Per shard key: the node asked for, the node of the last attempt, every attempt's node."""
        attempts = self.ray.get(self.keeper.attempts.remote())
        return {
            k: {"asked": self._asked.get(k, ""), "ran": self._ran.get(k, ""), "attempts": attempts.get(k, [])}
            for k in self._asked
        }

    def close(self) -> None:
        try:
            self.ray.get(self.keeper.close.remote())
            self.ray.kill(self.keeper)
        except Exception as exc:  # noqa: BLE001 - the cluster may be gone; the journals are on disk
            log.warning("closing the journal keeper: %s", exc)


class LocalRunner:
    """The same shards one after another in this process, with a plain keeper (tests)."""

    def __init__(self, root: Path, own: Mapping[str, tuple[str, ...]] | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.keeper = JournalKeeper(str(self.root.resolve()))
        self.own = own

    def run(
        self, shards: Sequence[Shard], what: str, progress: Progress = NULL_PROGRESS
    ) -> list[ShardOutcome]:
        out = []
        with progress.task(f"{what}: {len(shards)} shards", total=len(shards)) as bar:
            for s in shards:
                t0 = time.perf_counter()
                attempt = self.keeper.begin(s.key, "here")
                ctx = ShardContext(
                    s.key,
                    s.index,
                    attempt,
                    "here",
                    "this process",
                    Path("."),
                    lambda s=s: self.keeper.snapshot(s.key),
                    lambda pairs, s=s: self.keeper.put(s.key, pairs),
                    own=node_endpoints() if self.own is None else self.own,
                )
                value = _in_scratch(s.body, ctx)
                wall = round(time.perf_counter() - t0, 3)
                out.append(ShardOutcome(s.key, s.index, value, "here", attempt, wall))
                bar.advance()
        return out

    def placement(self) -> dict[str, Any]:
        return {k: {"asked": "here", "ran": "here", "attempts": v} for k, v in self.keeper.attempts().items()}

    def close(self) -> None:
        self.keeper.close()
