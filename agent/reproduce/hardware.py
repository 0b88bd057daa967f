"""Published figures the GPU plan (``localfin reproduce plan``) computes with: GPU kinds and
the backbones' architectures. Figures only; nothing here is measured by us.

GPU kinds (vendor data sheets, dense bf16 tensor throughput without sparsity, SXM where both
exist): memory (GB = 1e9 bytes), memory bandwidth (TB/s), bf16 peak (TFLOP/s).

Backbones (their checkpoints' ``config.json``: layers, KV heads, head dim; the parameter count
from the model card): what a plan needs for weights and the KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from localfin.errors import ConfigError

__all__ = ["GpuKind", "GPU_KINDS", "Arch", "ARCH_FACTS", "gpu_kind", "arch_facts"]


@dataclass(frozen=True)
class GpuKind:
    name: str
    label: str
    memory_gb: float
    bandwidth_tbs: float
    bf16_tflops: float

    @property
    def memory_gib(self) -> float:
        """The data sheet's memory in GiB (GB x 1e9 / 2^30; the driver reports a little more on
        some kinds, so a placement on a declared kind errs on the safe side)."""
        return self.memory_gb * 1e9 / 1024**3


GPU_KINDS = {
    g.name: g
    for g in (
        GpuKind("h100", "NVIDIA H100 SXM 80 GB", 80.0, 3.35, 989.0),
        GpuKind("h200", "NVIDIA H200 SXM 141 GB", 141.0, 4.8, 989.0),
        GpuKind("a100-80g", "NVIDIA A100 SXM 80 GB", 80.0, 2.039, 312.0),
        GpuKind("l40s", "NVIDIA L40S 48 GB", 48.0, 0.864, 362.0),
    )
}


@dataclass(frozen=True)
class Arch:
    """A checkpoint's size facts (parameters in billions; attention heads for TP divisibility)."""

    params_b: float
    layers: int
    kv_heads: int
    head_dim: int
    attn_heads: int
    source: str

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """K and V of every layer for one token (bytes)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


#: by registry key (thinking on/off entries share a checkpoint)
ARCH_FACTS = {
    "llama-3.1-8b": Arch(8.03, 32, 8, 128, 32, "meta-llama/Llama-3.1-8B-Instruct config.json"),
    "llama-3.1-70b": Arch(70.6, 80, 8, 128, 64, "meta-llama/Llama-3.1-70B-Instruct config.json"),
    "qwen3-4b": Arch(4.02, 36, 8, 128, 32, "Qwen/Qwen3-4B config.json"),
    "qwen3-32b": Arch(32.8, 64, 8, 128, 64, "Qwen/Qwen3-32B config.json"),
    "qwen3-vl-8b": Arch(
        8.77, 36, 8, 128, 32, "Qwen/Qwen3-VL-8B-Instruct config.json (text 36 layers + vision tower)"
    ),
}
ARCH_FACTS["qwen3-4b-nothink"] = ARCH_FACTS["qwen3-4b"]
ARCH_FACTS["qwen3-32b-nothink"] = ARCH_FACTS["qwen3-32b"]


def gpu_kind(name: str) -> GpuKind:
    """The GPU kind named ``name``, in any case (``H100`` is ``h100``)."""
    try:
        return GPU_KINDS[name.strip().lower()]
    except KeyError:
        raise ConfigError(f"--gpu {name!r}; allowed: {', '.join(GPU_KINDS)}") from None


def arch_facts(key: str) -> Arch:
    try:
        return ARCH_FACTS[key]
    except KeyError:
        raise ConfigError(
            f"no architecture facts for model {key!r}; allowed: {', '.join(ARCH_FACTS)}"
        ) from None
