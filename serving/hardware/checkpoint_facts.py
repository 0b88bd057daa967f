"""Sizes of a model an engine serves, for :mod:`serving.hardware.placement`: read from its checkpoint
folder (``config.json`` and the weight files on disk: :func:`checkpoint_facts`), or assumed for a
small model whose folder is not there yet (a tiny test model built at run time, SmolLM2-135M
before ``localfin models prepare``), and the :class:`~serving.hardware.placement.EngineNeed` of one
registry entry served alone (:func:`spec_need`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from serving.hardware.placement import (
    DEFAULT_OVERHEAD_GIB,
    MAX_TOTAL_SHARE,
    SMALL_OVERHEAD_GIB,
    EngineNeed,
)

__all__ = ["SMALL_PARAMS_B", "checkpoint_facts", "with_facts", "spec_need"]


def checkpoint_facts(path: str | Path | None) -> dict[str, float] | None:
    """Sizes read from a checkpoint folder (``config.json`` and the weight files on disk):
    ``params_b`` (weight bytes / bytes a parameter, in billions), ``bytes_per_param``,
    ``kv_bytes_per_token`` (bf16 KV of every layer), ``attention_heads``, ``kv_heads``; None
    when the folder or its config is absent."""
    if path is None:
        return None
    folder = Path(path)
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    text = cfg.get("text_config") or cfg
    heads = int(text.get("num_attention_heads") or 0)
    kv = int(text.get("num_key_value_heads") or heads)
    hidden = int(text.get("hidden_size") or 0)
    head_dim = int(text.get("head_dim") or (hidden // heads if heads else 0))
    layers = int(text.get("num_hidden_layers") or 0)
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or text.get("torch_dtype") or "bfloat16")
    per = 4.0 if "32" in dtype else 2.0
    files = [p for p in folder.glob("*") if p.suffix in (".safetensors", ".bin", ".pt")]
    weight_bytes = sum(p.stat().st_size for p in files)
    return {
        "params_b": weight_bytes / per / 1e9,
        "bytes_per_param": per,
        "kv_bytes_per_token": 2 * layers * kv * head_dim * 2,
        "attention_heads": heads,
        "kv_heads": kv,
    }


#: Parameters (billions, bf16) assumed for a small model whose folder is not there yet (a tiny
#: test model built at run time, SmolLM2-135M before ``models prepare``): under 1 GiB.
SMALL_PARAMS_B = 0.5


def with_facts(need: EngineNeed, facts: dict[str, float] | None, *, small: bool = False) -> EngineNeed:
    """``need`` with the sizes of ``facts`` (:func:`checkpoint_facts`); without them, unsized,
    or for a ``small`` model (a CPU entry, a tiny model) :data:`SMALL_PARAMS_B` parameters and
    a KV cache of ``kv_cache_gib``."""
    if not facts:
        if small:
            return replace(need, params_b=SMALL_PARAMS_B, sized=True)
        return replace(need, sized=False)
    return replace(
        need,
        params_b=float(facts["params_b"]),
        bytes_per_param=float(facts["bytes_per_param"]),
        kv_bytes_per_token=int(facts["kv_bytes_per_token"]),
        attention_heads=int(facts["attention_heads"]),
        kv_heads=int(facts["kv_heads"]),
        sized=True,
    )


def spec_need(spec: Any, *, kv_cache_gib: float | None = None, quantization: str | None = None,
              pipeline_parallel: int = 1, replicas: int = 1) -> EngineNeed:  # fmt: skip
    """The need of one engine serving registry entry ``spec`` alone, sized from its checkpoint
    folder (a CPU entry or a tiny model: small overhead and ``kv_cache_gib`` of KV cache,
    default 2 GiB; a GPU entry: what is free up to its share, one replica)."""
    small = spec.device == "cpu" or spec.source == "built"
    need = EngineNeed(
        key=spec.key,
        role="model",
        max_model_len=spec.max_model_len,
        min_tp=spec.tensor_parallel_size,
        pipeline_parallel=pipeline_parallel,
        quantization=quantization,
        max_share=min(spec.gpu_memory_utilization, MAX_TOTAL_SHARE),
        max_replicas=replicas,
        gpu_only=False,
        overhead_gib=SMALL_OVERHEAD_GIB if small else DEFAULT_OVERHEAD_GIB,
        kv_cache_gib=float(kv_cache_gib or 2) if small else float(kv_cache_gib or 0),
    )
    try:
        path = spec.resolve_path()
    except Exception:  # noqa: BLE001 - weights absent: the need is unsized
        path = None
    return with_facts(need, checkpoint_facts(path), small=small)
