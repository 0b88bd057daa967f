"""Layouts of registry entries placed without a reproduction config: one model alone on the
visible GPUs (:func:`default_layout`, for an engine or a server opened without a layout) and a
model with others beside it (:func:`side_by_side`). Each entry's need comes from its checkpoint
(:func:`serving.hardware.checkpoint_facts.spec_need`);
:func:`serving.hardware.placement.place_stage` places them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from serving.errors import ConfigError
from serving.hardware.checkpoint_facts import spec_need
from serving.hardware.gpus import EngineLayout, Inventory
from serving.hardware.placement import place_stage

__all__ = ["default_layout", "BESIDE_KV_GIB", "side_by_side"]


def default_layout(spec: Any, options: Any, inventory: Inventory, *, replicas: int = 1) -> EngineLayout:
    """The layout of an engine opened without a placement on the CUDA build: ``spec`` alone on
    ``inventory`` (``replicas`` replicas at most, 0: one per group of GPUs that holds it; a CPU
    entry or a tiny model with the share its ``options.kv_cache_gib`` needs). A ConfigError when
    it does not fit, with the remedies."""
    need = spec_need(
        spec,
        kv_cache_gib=getattr(options, "kv_cache_gib", None),
        quantization=getattr(options, "quantization", None),
        pipeline_parallel=getattr(options, "pipeline_parallel", 1),
        replicas=replicas,
    )
    (placed,) = place_stage([need], inventory)
    if placed.layout is None or placed.device != "cuda":
        fix = "; or ".join(placed.remedies) or "more GPU memory"
        raise ConfigError(
            f"model {spec.key!r} cannot be placed on {inventory.describe()}: {placed.note}; what would "
            f"place it: {fix}"
        )
    return placed.layout


#: KV cache (GiB) an engine opened beside the main one gets when nothing else says (a judge,
#: FinMem's own model: short calls, few at once).
BESIDE_KV_GIB = 8.0


def side_by_side(main: Any, beside: Sequence[Any], inventory: Inventory) -> list[EngineLayout]:
    """Layouts of engines that run at the same time outside a reproduction config (``localfin
    qa build-bank --judge``): each of ``beside`` (registry entries) with the share its weights
    and :data:`BESIDE_KV_GIB` of KV cache need, then ``main`` on what is left, one replica each;
    in the order ``[main, *beside]``. A ConfigError with the remedies when one does not fit."""
    needs = [replace(spec_need(main), role="main")]
    needs += [replace(spec_need(s, kv_cache_gib=BESIDE_KV_GIB), role="beside") for s in beside]
    placed = place_stage(needs, inventory)
    bad = [p for p in placed if p.layout is None or p.device != "cuda"]
    if bad:
        raise ConfigError(
            "; ".join(
                f"model {p.key!r} cannot be placed beside the others on {inventory.describe()}: "
                f"{p.note} ({'; or '.join(p.remedies)})"
                for p in bad
            )
        )
    return [p.layout for p in placed if p.layout is not None]
