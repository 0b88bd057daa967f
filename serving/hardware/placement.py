"""Fitting engines onto GPUs: from what each engine needs (:class:`EngineNeed`) and an
:class:`~serving.hardware.gpus.Inventory`, where each runs (:class:`EnginePlacement`: its
:class:`~serving.hardware.gpus.EngineLayout`, or why it cannot run there and what would let it).

Engines are placed in **stages**: the engines of one stage run at the same time (a FinAcumen
solver and its judge; a backbone and FinMem's own model; a rehearsal's stand-ins) and share the
GPUs; stages run one after another (Moira's backbones), each on every GPU.

**Memory one GPU of an engine needs** (GiB): weights / (tp x pp) + one full-context sequence's
KV cache / (tp x pp) + ``overhead_gib`` (activations of the profile run, CUDA graphs, the
sampler). Weights are parameters x bytes a parameter (bf16: 2; declared FP8: 1); the KV cache
is bf16 whatever the weights. An engine whose per-GPU need fits in its share of one GPU's
memory is placed; vLLM then gives the rest of its share to the KV cache.

**Shares.** The engines of a stage together take at most :data:`MAX_TOTAL_SHARE` of any GPU
(vLLM's own default for one engine is 0.92; the rest holds each engine process's CUDA context
and NCCL buffers outside vLLM's count). An engine with a fixed ``share`` (the config's judge
share) is placed first, then one that asks only for a bounded KV cache (``kv_cache_gib``: a
stand-in, FinMem's own model; its share is what its weights, overhead and that cache need),
each on as many replicas as it allows (``max_replicas``), on the GPUs with the most free
memory; then the engine without either takes what is left of each GPU, up to its
``max_share`` (the registry's ``gpu_memory_utilization``).

**Tensor parallelism** is the smallest power of two, at least ``min_tp``, that divides the
attention heads (and the KV heads, or is a multiple of them: vLLM replicates KV heads then) and
whose per-GPU need fits; a tensor-parallel group never spans nodes (groups are aligned runs of
``tp`` GPUs of one node). **Pipeline parallelism** is never chosen here, only taken when
declared (``pipeline_parallel``): a replica is then ``pp`` tensor groups, which may sit on
different nodes (vLLM needs a Ray cluster for that). **Replicas** (data-parallel copies, each
its own engine process or server): one per group that fits, as many as ``demand`` (the
sequences the work offers at once: a replica beyond that would idle), groups with the most free
memory first.

**What would place it.** An engine that does not fit gets remedies: the GPUs it needs (the
smallest tensor-parallel group of this inventory's largest GPU), FP8 weights where they are
bf16 and FP8 would fit here, pipeline stages across nodes where the inventory has several, a
larger share for a fixed-share engine.

With no GPU (an empty inventory), engines meant for the CPU build run there (no layout) and GPU
engines cannot be placed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from serving.errors import ConfigError
from serving.hardware.gpus import GIB, EngineLayout, GpuRef, Inventory, ReplicaSlot

__all__ = [
    "MAX_TOTAL_SHARE",
    "DEFAULT_OVERHEAD_GIB",
    "SMALL_OVERHEAD_GIB",
    "EngineNeed",
    "EnginePlacement",
    "place_stage",
    "tp_allowed",
]

#: The most the engines of one stage take together of any GPU (module docstring).
MAX_TOTAL_SHARE = 0.90
#: Per GPU, besides weights and KV: activations of vLLM's profile run, CUDA graphs, sampler.
DEFAULT_OVERHEAD_GIB = 4.0
#: The same for tiny models (stand-ins, test models): their activations are megabytes.
SMALL_OVERHEAD_GIB = 1.0
_MAX_TP = 8
#: The GPU a remedy names when there is no GPU to measure (an 80 GB-class card).
_REFERENCE_GIB = 80.0


@dataclass(frozen=True)
class EngineNeed:
    """What one engine needs of the GPUs (sizes from published facts or the checkpoint).

    Attributes:
        key: the engine's name (the registry key of the model it serves).
        role: what it does in the run (``backbone``, ``solver``, ``judge``, ``finmem``,
            ``stand-in``, ...), shown in tables.
        params_b: parameters in billions (0: tiny, weights negligible).
        bytes_per_param: the checkpoint's bytes a parameter (2: bf16; 4: float32).
        kv_bytes_per_token: K and V of every layer for one token, bf16 (bytes).
        max_model_len: tokens of one sequence; the engine must hold at least one.
        attention_heads, kv_heads: for tensor-parallel divisibility (0: unknown; tp 1 only
            unless ``min_tp`` says more).
        overhead_gib: per GPU, besides weights and KV.
        min_tp: the least tensor parallelism (the registry's ``tensor_parallel_size``).
        pipeline_parallel: declared pipeline stages (1: none).
        quantization: declared weight quantization (``fp8``) or None.
        share: a fixed memory share per GPU (None: what is free, up to ``max_share``).
        max_share: the most of one GPU it takes.
        kv_cache_gib: take only the share that holds the weights, the overhead and this much KV
            cache (GiB; at least one full sequence); 0: what is free, up to ``max_share``.
        demand: sequences its work offers at once (0: unknown, one replica per group).
        max_replicas: the most replicas (0: no cap).
        gpu_only: a GPU entry (no GPU: it cannot run); False: a CPU entry, which runs on the CPU
            build when there is no GPU.
        declare: where a user declares FP8 or pipeline stages for it (for remedies), e.g.
            ``quantization = "fp8" in the [[backbones]] entry of llama-3.1-70b``; "" = nowhere.
        share_setting: the setting that fixes ``share`` (for remedies), e.g. ``qa.judge_gpu_memory``.
        sized: whether the sizes are known (False: placed with ``min_tp`` and ``max_share`` as
            given, and said so).
    """

    key: str
    role: str = "model"
    params_b: float = 0.0
    bytes_per_param: float = 2.0
    kv_bytes_per_token: int = 0
    max_model_len: int = 32_768
    attention_heads: int = 0
    kv_heads: int = 0
    overhead_gib: float = DEFAULT_OVERHEAD_GIB
    min_tp: int = 1
    pipeline_parallel: int = 1
    quantization: str | None = None
    share: float | None = None
    max_share: float = MAX_TOTAL_SHARE
    kv_cache_gib: float = 0.0
    demand: int = 0
    max_replicas: int = 0
    gpu_only: bool = True
    declare: str = ""
    share_setting: str = ""
    sized: bool = True

    def __post_init__(self) -> None:
        if self.share is not None and not 0.01 <= self.share <= MAX_TOTAL_SHARE:
            raise ConfigError(f"EngineNeed.share={self.share}; allowed: 0.01..{MAX_TOTAL_SHARE} or None")
        if not 0.01 <= self.max_share <= 0.99:
            raise ConfigError(f"EngineNeed.max_share={self.max_share}; allowed: 0.01..0.99")
        if self.min_tp < 1 or self.pipeline_parallel < 1:
            raise ConfigError(f"{self.key}: min_tp and pipeline_parallel must be >= 1")

    def weights_gib(self, quantization: str | None = None) -> float:
        """Weights in GiB (``fp8``: one byte a parameter)."""
        per = 1.0 if (quantization or self.quantization) == "fp8" else self.bytes_per_param
        return self.params_b * 1e9 * per / GIB

    def kv_sequence_gib(self) -> float:
        """One full-context sequence's KV cache (GiB)."""
        return self.kv_bytes_per_token * self.max_model_len / GIB

    def per_gpu_gib(self, tp: int, pp: int | None = None, quantization: str | None = None) -> float:
        """What one GPU of a replica needs at ``tp`` x ``pp`` (module docstring)."""
        split = tp * (pp or self.pipeline_parallel)
        return (self.weights_gib(quantization) + self.kv_sequence_gib()) / split + self.overhead_gib

    def modest_gib(self, tp: int) -> float:
        """What one GPU of a replica takes when ``kv_cache_gib`` bounds its KV cache."""
        split = tp * self.pipeline_parallel
        kv = max(self.kv_cache_gib, self.kv_sequence_gib())
        return (self.weights_gib() + kv) / split + self.overhead_gib


@dataclass(frozen=True)
class EnginePlacement:
    """Where one engine runs (``layout``), or why it cannot (``layout`` None, ``remedies``).

    ``device``: ``cuda``, ``cpu`` (the CPU build, no layout) or ``""`` (not placed);
    ``stage``: its stage's number; ``weights_gib`` / ``kv_room_gib``: per GPU of its first
    replica (KV room: what its share leaves after weights and overhead); ``full_sequences``:
    full-context sequences that room holds per replica; ``note``: how it was decided."""

    need: EngineNeed
    stage: int
    device: str
    layout: EngineLayout | None
    weights_gib: float = 0.0
    kv_room_gib: float = 0.0
    full_sequences: int = 0
    note: str = ""
    remedies: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return self.device != ""

    @property
    def key(self) -> str:
        return self.need.key


def tp_allowed(need: EngineNeed, tp: int) -> bool:
    """Whether vLLM can shard ``need`` over ``tp`` GPUs (heads divisible; unknown heads: only
    ``min_tp`` or 1)."""
    if need.attention_heads <= 0:
        return tp in (1, need.min_tp)
    if need.attention_heads % tp:
        return False
    kv = need.kv_heads or need.attention_heads
    return kv % tp == 0 or tp % kv == 0


def _tps(need: EngineNeed, most: int) -> list[int]:
    out, tp = [], 1
    while tp <= min(most, _MAX_TP):
        if tp >= need.min_tp and tp_allowed(need, tp):
            out.append(tp)
        tp *= 2
    if need.min_tp > 1 and need.min_tp not in out and need.min_tp <= most and not _is_pow2(need.min_tp):
        out.insert(0, need.min_tp)
    return out


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _floor2(x: float) -> float:
    return math.floor(round(x * 100, 6)) / 100


def _ceil2(x: float) -> float:
    return math.ceil(round(x * 100, 6)) / 100


def _groups(inv: Inventory, tp: int, pp: int) -> list[tuple[GpuRef, ...]]:
    """Every replica shape: ``pp`` aligned tensor groups of ``tp`` GPUs (each on one node),
    stages taken in node order (several stages may share a node)."""
    tensor: list[tuple[GpuRef, ...]] = []
    for node in inv.nodes:
        ix = [g.index for g in node.gpus]
        for start in range(0, len(ix) - tp + 1, tp):
            tensor.append(tuple(GpuRef(node.name, i) for i in ix[start : start + tp]))
    if pp == 1:
        return tensor
    return [sum(tensor[k : k + pp], ()) for k in range(0, len(tensor) - pp + 1, pp)]


def _mem(inv: Inventory, group: Sequence[GpuRef]) -> float:
    return min(inv.gpu(g).memory_gib for g in group)


class _Usage:
    """The share of each GPU already given to the stage's engines."""

    def __init__(self, inv: Inventory) -> None:
        self.inv = inv
        self.used = {GpuRef(n.name, g.index): 0.0 for n in inv.nodes for g in n.gpus}

    def free(self, group: Sequence[GpuRef]) -> float:
        return _floor2(min(MAX_TOTAL_SHARE - self.used[g] for g in group))

    def take(self, group: Sequence[GpuRef], share: float) -> None:
        for g in group:
            self.used[g] = round(self.used[g] + share, 6)


def _largest(inv: Inventory) -> float:
    return max(g.memory_gib for n in inv.nodes for g in n.gpus)


def _needed_tp(need: EngineNeed, mem: float, share: float, quantization: str | None = None) -> int | None:
    """The smallest allowed tp at which ``need`` fits in ``share`` of GPUs of ``mem`` GiB."""
    for tp in _tps(need, _MAX_TP):
        if need.per_gpu_gib(tp, quantization=quantization) <= share * mem:
            return tp
    return None


def _remedies(need: EngineNeed, inv: Inventory) -> tuple[str, ...]:
    out = []
    mem = _largest(inv) if not inv.empty else 0.0
    if inv.empty:
        tp = _needed_tp(need, _REFERENCE_GIB, need.share or need.max_share)
        one = need.per_gpu_gib(1) / (need.share or need.max_share)
        out.append(
            f"a GPU machine: {need.per_gpu_gib(1):.1f} GiB at tp 1 (a GPU of at least {one:.0f} GiB)"
            + (
                f", or tp {tp} over {tp} GPUs of {_REFERENCE_GIB:.0f} GiB on one node"
                if tp and tp > 1
                else ""
            )
        )
        return tuple(out)
    cap = need.share or need.max_share
    tp = _needed_tp(need, mem, cap)
    per_node = inv.most_per_node
    if tp is not None and tp > per_node:
        out.append(
            f"more GPUs: tp {tp} ({tp} GPUs of {mem:.0f} GiB on one node; this inventory has at most "
            f"{per_node} per node)"
        )
    elif tp is not None and need.share is None:
        out.append(
            f"free GPUs: it fits at tp {tp} on {tp} GPUs of {mem:.0f} GiB that the engines beside it "
            "leave free; give them fewer GPUs or smaller shares"
        )
    if need.share is not None:
        at = _needed_tp(need, mem, need.share)
        room = need.per_gpu_gib(1) / mem
        what = need.share_setting or "its share"
        if room <= MAX_TOTAL_SHARE:
            out.append(f"a larger share: {what} = {_ceil2(room):.2f} or more (now {need.share:.2f}) at tp 1")
        elif at is None:
            out.append(f"larger GPUs: {need.per_gpu_gib(1):.1f} GiB at tp 1 exceed {what} of one GPU")
    fp8 = need.quantization is None and need.bytes_per_param >= 2 and need.params_b > 0
    if fp8 and need.declare:
        tp8 = _needed_tp(need, mem, cap, "fp8")
        if tp8 is not None and tp8 <= per_node:
            out.append(
                f"FP8 weights: declare {need.declare} (vLLM --quantization fp8, "
                f"{need.weights_gib('fp8'):.1f} GiB of weights): fits at tp {tp8} here; it changes "
                "the weights the paper ran"
            )
    if need.pipeline_parallel == 1 and len(inv.nodes) > 1 and need.declare:
        for pp in range(2, len(inv.nodes) + 1):
            tpn = next((t for t in _tps(need, per_node) if need.per_gpu_gib(t, pp) <= cap * mem), None)
            if tpn is not None:
                out.append(
                    f"pipeline stages across nodes: declare pipeline_parallel = {pp} "
                    f"({need.declare.split(' in ', 1)[-1] if ' in ' in need.declare else 'its entry'}) "
                    f"with tp {tpn} on each of {pp} nodes (needs a Ray cluster)"
                )
                break
    return tuple(out) or (f"GPUs with more than {need.per_gpu_gib(_MAX_TP):.1f} GiB each at tp {_MAX_TP}",)


def _too_big(need: EngineNeed, inv: Inventory) -> str:
    """Why ``need`` fits nowhere on ``inv`` (at tp 1; its share of the largest GPU)."""
    cap = need.share or need.max_share
    mem = _largest(inv)
    what = "fp8 weights" if need.quantization == "fp8" else "weights"
    return (
        f"does not fit: {need.per_gpu_gib(1):.1f} GiB a GPU at tp 1 ({need.weights_gib():.1f} {what} + "
        f"{need.kv_sequence_gib():.1f} for one {need.max_model_len:,}-token sequence + "
        f"{need.overhead_gib:.1f} overhead), {cap:.2f} of a {mem:.1f} GiB GPU holds {cap * mem:.1f}; no "
        f"tensor-parallel group of up to {inv.most_per_node} GPU(s) on one node holds it"
    )


def _cpu(need: EngineNeed, stage: int) -> EnginePlacement:
    if need.gpu_only:
        return EnginePlacement(
            need, stage, "", None, note="no GPU visible", remedies=_remedies(need, Inventory())
        )
    return EnginePlacement(need, stage, "cpu", EngineLayout(), note="the CPU build (no GPU)")


def _place_one(need: EngineNeed, stage: int, inv: Inventory, usage: _Usage) -> EnginePlacement:
    pp = need.pipeline_parallel
    if not need.sized:
        return _place_unsized(need, stage, inv, usage)
    for tp in _tps(need, inv.most_per_node):
        per = need.per_gpu_gib(tp)
        fitting: list[tuple[float, int, tuple[GpuRef, ...]]] = []
        for pos, group in enumerate(_groups(inv, tp, pp)):
            free = usage.free(group)
            mem = _mem(inv, group)
            if need.share is not None:
                share = need.share
            elif need.kv_cache_gib > 0:
                share = max(0.02, _ceil2(need.modest_gib(tp) / mem))
            else:
                share = min(_floor2(need.max_share), free)
            if share > free + 1e-9 or share * mem < per:
                continue
            fitting.append((share, pos, group))
        if not fitting:
            continue
        fitting.sort(key=lambda f: (-usage.free(f[2]), f[1]))
        cap = need.max_replicas or len(fitting)
        if need.demand:
            cap = min(cap, need.demand)
        chosen = sorted(fitting[:cap], key=lambda f: f[1])
        slots = []
        for share, _pos, group in chosen:
            usage.take(group, share)
            slots.append(ReplicaSlot(group, share))
        layout = EngineLayout(tp, pp, need.quantization, tuple(slots))
        first = chosen[0]
        room = first[0] * _mem(inv, first[2]) - need.weights_gib() / (tp * pp) - need.overhead_gib
        per_seq = need.kv_sequence_gib() / (tp * pp)
        seqs = int(room // per_seq) if per_seq > 0 else 0
        idle = len(fitting) - len(chosen)
        note = f"smallest tp that holds the weights and one {need.max_model_len:,}-token sequence"
        if idle and need.demand and len(chosen) == need.demand:
            note += f"; {len(chosen)} replica(s) for {need.demand} sequence(s) in flight"
        return EnginePlacement(
            need, stage, "cuda", layout, round(need.weights_gib() / (tp * pp), 2), round(room, 2), seqs, note
        )
    return EnginePlacement(
        need,
        stage,
        "",
        None,
        round(need.weights_gib(), 2),
        note=_too_big(need, inv),
        remedies=_remedies(need, inv),
    )


def _place_unsized(need: EngineNeed, stage: int, inv: Inventory, usage: _Usage) -> EnginePlacement:
    """An engine of unknown size: ``min_tp`` GPUs at its share, on one group, as given."""
    tp, pp = need.min_tp, need.pipeline_parallel
    for group in _groups(inv, tp, pp):
        free = usage.free(group)
        share = need.share if need.share is not None else min(_floor2(need.max_share), free)
        if 0.01 <= share <= free + 1e-9:
            usage.take(group, share)
            layout = EngineLayout(tp, pp, need.quantization, (ReplicaSlot(group, share),))
            return EnginePlacement(need, stage, "cuda", layout, note="size unknown: placed as its entry says")
    return EnginePlacement(
        need, stage, "", None, note=f"no {tp * pp} GPU(s) with a free share left", remedies=("more GPUs",)
    )


def place_stage(needs: Sequence[EngineNeed], inventory: Inventory, stage: int = 0) -> list[EnginePlacement]:
    """Place the engines of one stage (they run at the same time) on ``inventory``; in the
    order given (module docstring: fixed shares first)."""
    keys = [n.key for n in needs]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"stage {stage}: engines {keys} repeat; allowed: one need per engine")
    if inventory.empty:
        return [_cpu(n, stage) for n in needs]
    usage = _Usage(inventory)
    order = sorted(range(len(needs)), key=lambda i: (needs[i].share is None, needs[i].kv_cache_gib <= 0, i))
    out: dict[int, EnginePlacement] = {}
    for i in order:
        out[i] = _place_one(needs[i], stage, inventory, usage)
    return [out[i] for i in range(len(needs))]
