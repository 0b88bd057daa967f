"""The fitting rules of serving/hardware/placement.py on inventories given as values, and the sizes read
from a checkpoint folder (serving/hardware/checkpoint_facts.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from serving.errors import ConfigError
from serving.hardware.checkpoint_facts import checkpoint_facts
from serving.hardware.gpus import Inventory
from serving.hardware.placement import MAX_TOTAL_SHARE, EngineNeed, place_stage, tp_allowed
from serving.hardware.spec_layout import side_by_side
from serving.models.registry import ModelSpec

GIB = 1024**3


def _checkpoint(folder: Path, *, gib: float, layers: int = 36, heads: int = 32, kv: int = 8) -> Path:
    """A checkpoint folder as placement reads it: config.json and a weights file of ``gib`` GiB
    (sparse: no disk is used)."""
    folder.mkdir(parents=True)
    cfg = {"num_attention_heads": heads, "num_key_value_heads": kv, "hidden_size": heads * 128,
           "num_hidden_layers": layers, "torch_dtype": "bfloat16"}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    with open(folder / "model.safetensors", "wb") as fh:
        os.truncate(fh.fileno(), int(gib * GIB))
    return folder


def test_sizes_come_from_the_checkpoint_folder(tmp_path: Path) -> None:
    facts = checkpoint_facts(_checkpoint(tmp_path / "m", gib=16.0))
    assert facts is not None
    assert facts["params_b"] == pytest.approx(16.0 * GIB / 2 / 1e9)
    assert facts["kv_bytes_per_token"] == 2 * 36 * 8 * 128 * 2  # K and V, every layer, bf16
    assert checkpoint_facts(tmp_path / "absent") is None


def test_a_judge_goes_beside_the_solver_with_what_it_needs(tmp_path: Path) -> None:
    """`qa build-bank --judge`: the judge's share holds its weights and an 8 GiB cache; the
    solver takes the rest of the GPU; together no more than 0.90."""
    solver = ModelSpec("s", "s", "local_dir", path=_checkpoint(tmp_path / "s", gib=16.3))
    judge = ModelSpec("j", "j", "local_dir", path=_checkpoint(tmp_path / "j", gib=7.5))
    inv = Inventory.of([("H100", 79.6)])
    main, beside = side_by_side(solver, [judge], inv)
    need = 7.5 + 8.0 + 4.0
    assert beside.share == pytest.approx(-(-need // (0.01 * 79.6)) * 0.01, abs=0.011)
    assert main.share + beside.share <= MAX_TOTAL_SHARE
    with pytest.raises(ConfigError, match="cannot be placed beside the others"):
        side_by_side(solver, [judge], Inventory.of([("T4", 15.0)]))


def test_tensor_groups_follow_the_heads() -> None:
    need = EngineNeed("m", attention_heads=64, kv_heads=8)
    assert [tp for tp in (1, 2, 4, 8, 16) if tp_allowed(need, tp)] == [1, 2, 4, 8, 16]
    odd = EngineNeed("m", attention_heads=6, kv_heads=2)
    assert [tp for tp in (1, 2, 4) if tp_allowed(odd, tp)] == [1, 2]
    assert not tp_allowed(EngineNeed("m"), 2)  # unknown heads: tp 1 only


def test_a_fixed_share_goes_first_and_the_rest_to_the_flexible_engine() -> None:
    big = EngineNeed("big", params_b=8.0, kv_bytes_per_token=131072, attention_heads=32, kv_heads=8)
    small = EngineNeed("small", params_b=4.0, kv_bytes_per_token=131072, attention_heads=32, kv_heads=8,
                       share=0.3, max_replicas=1)  # fmt: skip
    a, b = place_stage([big, small], Inventory.of([("H200", 139.8), ("H200", 139.8)]))
    assert b.layout is not None and [r.share for r in b.layout.replicas] == [0.3]
    assert a.layout is not None and sorted(r.share for r in a.layout.replicas) == [0.6, 0.9]


def test_an_engine_with_no_room_left_says_so() -> None:
    big = EngineNeed("big", params_b=60.0, kv_bytes_per_token=131072, attention_heads=32, kv_heads=8)
    hog = EngineNeed("hog", params_b=30.0, kv_bytes_per_token=131072, attention_heads=32, kv_heads=8,
                     share=0.8, max_replicas=1)  # fmt: skip
    a, h = place_stage([big, hog], Inventory.of([("H200", 139.8)]))
    assert h.fits and not a.fits and any(r.startswith("free GPUs: it fits at tp 1") for r in a.remedies)
