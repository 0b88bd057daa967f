"""Where every engine of a config runs (agent/reproduce/engine_plan.py over serving/hardware/placement.py),
from GPU inventories given as values: 1, 2, 4 and 8 H100s and H200s, several nodes, no GPU."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from agent.reproduce.engine_plan import (
    Placement,
    declared_inventory,
    format_placement,
    place,
    place_experiment,
    place_stand_ins,
)
from agent.reproduce.hardware import gpu_kind
from agent.reproduce.spec import load_repro
from localfin.errors import ConfigError
from serving.hardware.gpus import Inventory
from serving.hardware.placement import MAX_TOTAL_SHARE
from serving.models.registry import default_registry

GIB = 1024**3


def _placed(config: str, kind: str, gpus: int) -> Placement:
    return place(load_repro(config), declared_inventory(kind, gpus), registry=default_registry())


def _check_invariants(p: Placement) -> None:
    """What every placement keeps: per stage no GPU given past the total share; every replica
    of tp x pp GPUs, each tensor group on one node; each placed engine's need within its share;
    replicas no more than its demand."""
    for stage in p.stages():
        used: dict[tuple[str, int], float] = defaultdict(float)
        for e in stage:
            if not e.fits or e.device != "cuda":
                continue
            lay = e.layout
            assert lay is not None and lay.replicas
            if e.need.demand:
                assert len(lay.replicas) <= e.need.demand
            for r in lay.replicas:
                assert len(r.gpus) == lay.tensor_parallel * lay.pipeline_parallel
                for s in range(lay.pipeline_parallel):
                    group = r.gpus[s * lay.tensor_parallel : (s + 1) * lay.tensor_parallel]
                    assert len({g.node for g in group}) == 1
                mem = min(p.inventory.gpu(g).memory_gib for g in r.gpus)
                assert e.need.per_gpu_gib(lay.tensor_parallel) <= r.share * mem + 1e-9
                for g in r.gpus:
                    used[(g.node, g.index)] += r.share
        assert all(v <= MAX_TOTAL_SHARE + 1e-9 for v in used.values()), used


@pytest.mark.parametrize("kind", ["h100", "h200"])
@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
@pytest.mark.parametrize("config", ["moira_table3_main", "finacumen_table1"])
def test_every_placement_keeps_its_invariants(config: str, kind: str, gpus: int) -> None:
    p = _placed(config, kind, gpus)
    _check_invariants(p)
    assert all(
        e.fits or e.remedies for e in p.engines
    )  # an engine that does not fit says what would place it


def test_table3_on_h200s() -> None:
    """Llama-3.1-70B (131.5 GiB of bf16 weights) fits no single H200: tp 2 from two GPUs on, and
    FP8 or more GPUs are offered on one; Qwen3-32B fits one H200; replicas as many as the
    lock-step round has runs (3 seeds x 2 exposures = 6; with FinMem's 6, 12)."""
    one = _placed("moira_table3_main", "h200", 1)
    l70 = one.find("llama-3.1-70b")
    assert not l70.fits and not one.ok
    assert any(r.startswith("more GPUs: tp 2 (2 GPUs of 131 GiB on one node") for r in l70.remedies)
    assert any('FP8 weights: declare quantization = "fp8" in the [[backbones]] entry of llama-3.1-70b' in r
               and "fits at tp 1 here" in r for r in l70.remedies)  # fmt: skip
    q32 = one.find("qwen3-32b")
    assert q32.fits and q32.layout is not None and q32.layout.tensor_parallel == 1
    two = _placed("moira_table3_main", "h200", 2)
    assert two.ok and two.find("llama-3.1-70b").layout.tensor_parallel == 2  # type: ignore[union-attr]
    eight = _placed("moira_table3_main", "h200", 8)
    l8 = eight.find("llama-3.1-8b")
    assert len(l8.layout.replicas) == 8  # type: ignore[union-attr]
    assert l8.need.role == "backbone + FinMem"  # FinMem's model is counted
    # FinMem's context: the KV cache of one 131,072-token sequence is budgeted
    assert l8.need.max_model_len == 131_072 and "131,072-token sequence" in l8.note
    assert len(eight.find("qwen3-32b-nothink").layout.replicas) == 6  # type: ignore[union-attr]
    assert [e.stage for e in eight.engines] == [0, 1, 2, 3, 4, 5]  # one engine at a time, as the matrix runs


def test_table3_on_h100s() -> None:
    """An 80 GB H100 holds Qwen3-32B in bf16 only with tp 2 (61.1 GiB of weights + one 32,768-
    token sequence of 8 GiB + 4 GiB > 0.90 of 74.5 GiB), FP8 at tp 1."""
    one = _placed("moira_table3_main", "h100", 1)
    q32 = one.find("qwen3-32b")
    assert not q32.fits and any(r.startswith("FP8 weights") for r in q32.remedies)
    assert q32.need.per_gpu_gib(1) == pytest.approx(32.8e9 * 2 / GIB + 8.0 + 4.0)
    two = _placed("moira_table3_main", "h100", 2)
    assert two.find("qwen3-32b").layout.tensor_parallel == 2  # type: ignore[union-attr]
    assert not two.find("llama-3.1-70b").fits
    four = _placed("moira_table3_main", "h100", 4)
    assert four.ok and four.find("llama-3.1-70b").layout.tensor_parallel == 4  # type: ignore[union-attr]


@pytest.mark.parametrize(("kind", "gpus"), [("h100", 1), ("h200", 1), ("h200", 4)])
def test_the_finacumen_judge_is_placed_beside_the_solver(kind: str, gpus: int) -> None:
    """The judge takes its configured share (0.25) of one GPU; the solver what is left there and
    0.90 of every other GPU, one replica per GPU."""
    p = _placed("finacumen_table1", kind, gpus)
    solver, judge = p.find("qwen3-vl-8b", "solver"), p.find("qwen3-4b-nothink", "judge")
    assert p.ok and solver.stage == judge.stage == 0
    assert judge.layout is not None and [r.share for r in judge.layout.replicas] == [0.25]
    assert solver.layout is not None and [r.share for r in solver.layout.replicas] == [0.65] + [0.90] * (
        gpus - 1
    )
    assert solver.layout.replicas[0].gpus == judge.layout.replicas[0].gpus


def test_a_fixed_share_too_small_names_the_setting() -> None:
    """The judge's share of a 48 GB card cannot hold Qwen3-4B at tp 1: the remedy names the
    config key to raise."""
    p = _placed("finacumen_table1", "l40s", 1)
    judge = p.find("qwen3-4b-nothink", "judge")
    assert not judge.fits
    assert any(r.startswith("a larger share: qa.judge_gpu_memory = ") for r in judge.remedies)
    assert "qa.judge_gpu_memory" in p.problem()


def test_fp8_declared_in_the_backbone_entry_places_llama_70b_on_one_h200(tmp_path: Path) -> None:
    src = load_repro("moira_table3_main").source.read_text(encoding="utf-8")
    text = src.replace(
        'key = "llama-3.1-70b"\nname = "l70"', 'key = "llama-3.1-70b"\nname = "l70"\nquantization = "fp8"'
    )
    path = tmp_path / "t3_fp8.toml"
    path.write_text(text, encoding="utf-8")
    p = place(load_repro(path), declared_inventory("h200", 1), registry=default_registry())
    l70 = p.find("llama-3.1-70b")
    assert l70.fits and l70.layout is not None
    assert (l70.layout.tensor_parallel, l70.layout.quantization) == (1, "fp8")
    assert l70.weights_gib == pytest.approx(70.6e9 / GIB, abs=0.01)


def test_tensor_groups_never_span_nodes_and_pipeline_stages_are_declared(tmp_path: Path) -> None:
    """Two nodes of 2 H100s: Llama-3.1-70B needs tp 4, which no node has; declaring two
    pipeline stages places it with tp 2 on each node."""
    inv = declared_inventory("h100", nodes=2, gpus_per_node=2)
    p = place(load_repro("moira_table3_main"), inv, registry=default_registry())
    l70 = p.find("llama-3.1-70b")
    assert not l70.fits
    assert any("pipeline_parallel = 2" in r and "tp 2 on each of 2 nodes" in r for r in l70.remedies)
    src = load_repro("moira_table3_main").source.read_text(encoding="utf-8")
    path = tmp_path / "t3_pp.toml"
    path.write_text(src.replace('name = "l70"', 'name = "l70"\npipeline_parallel = 2'), encoding="utf-8")
    p = place(load_repro(path), inv, registry=default_registry())
    lay = p.find("llama-3.1-70b").layout
    assert lay is not None and (lay.tensor_parallel, lay.pipeline_parallel) == (2, 2)
    assert [r.nodes for r in lay.replicas] == [("node0", "node1")]
    _check_invariants(p)


def test_no_gpu_places_cpu_entries_on_the_cpu_build_and_refuses_gpu_entries() -> None:
    p = _placed("moira_table3_main", "h200", 1)
    empty = place(load_repro("moira_table3_main"), Inventory(), registry=default_registry())
    assert not empty.ok and all(e.note == "no GPU visible" for e in empty.engines)
    assert len(p.engines) == len(empty.engines)
    reg = default_registry()
    cpu = place_stand_ins(["tiny-qwen3", "smollm2-135m"], reg, Inventory())
    assert cpu.ok and {e.device for e in cpu.engines} == {"cpu"}


def test_stand_ins_take_small_shares_side_by_side() -> None:
    """The rehearsal's tiny engines all run at once, each with what its weights, a 1 GiB KV
    cache and the small overhead need (a few hundredths of an 80 GB GPU), on one GPU."""
    reg = default_registry()
    p = place_stand_ins(["tiny-qwen3", "tiny-llama", "tiny-qwen3-vl"], reg, declared_inventory("h100", 1))
    assert p.ok
    shares = [e.layout.replicas[0].share for e in p.engines]  # type: ignore[union-attr]
    assert all(0.02 <= s <= 0.1 for s in shares) and sum(shares) <= MAX_TOTAL_SHARE
    _check_invariants(p)


def test_pairs_run_places_finmem_own_model_beside_the_backbone(tmp_path: Path) -> None:
    """`localfin pairs run` with FinMem on its own model starts two engines at once: FinMem's
    (one replica, what its weights and an 8 GiB cache need) and the backbone on the rest."""
    from agent.pairs.experiment.config import load_config

    root = Path(__file__).resolve().parents[3]
    src = (root / "agent/pairs/configs/demo.toml").read_text(encoding="utf-8")
    text = src.replace('backbone = "smollm2-135m"', 'backbone = "qwen3-32b"').replace(
        "[baselines.finmem]\n", '[baselines.finmem]\nmodel = "qwen3-4b-nothink"\n', 1
    )
    cfg_path = tmp_path / "exp.toml"
    cfg_path.write_text(text, encoding="utf-8")
    cfg = load_config(cfg_path)
    assert cfg.baselines.finmem.model == "qwen3-4b-nothink" and cfg.model.backbone == "qwen3-32b"
    p = place_experiment(cfg, declared_inventory("h200", 1), registry=default_registry())
    assert p.ok and [e.need.role for e in p.engines] == ["finmem", "backbone"]
    fm, bb = p.engines
    assert fm.layout is not None and bb.layout is not None
    assert fm.layout.replicas[0].share + bb.layout.replicas[0].share <= MAX_TOTAL_SHARE
    assert fm.layout.replicas[0].share < 0.25  # 7.5 GiB of weights + 8 GiB of KV + 4 GiB of 131 GiB
    _check_invariants(p)


def test_the_table_shows_every_engine_and_what_would_place_the_others() -> None:
    text = format_placement(_placed("moira_table3_main", "h200", 1))
    assert (
        text.splitlines()[0] == "placement of moira_table3_main on 1 x h200 (131.3 GiB) (declared: 1 x h200):"
    )
    assert "llama-3.1-70b      backbone           -        -        0         does not fit" in text
    assert text.splitlines()[-1].startswith("cannot be placed: engine llama-3.1-70b (backbone)")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gpu": "v100", "gpus": 1}, "--gpu 'v100'; allowed: h100, h200"),
        ({"gpu": "h200", "gpus": 0}, "--gpus 0; allowed: a whole number >= 1"),
        ({"gpu": "h200", "gpus": 3, "nodes": 2}, "--gpus 3 over --nodes 2; allowed: a multiple"),
        (
            {"gpu": "h200", "gpus": 8, "nodes": 2, "gpus_per_node": 2},
            "differs from --nodes 2 x --gpus-per-node 2",
        ),
        ({"gpu": "h200"}, "--gpus or --gpus-per-node is missing"),
    ],
)
def test_bad_inventories_name_the_parameter(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        declared_inventory(**kwargs)


def test_declared_memory_is_the_data_sheet_figure() -> None:
    inv = declared_inventory("h200", 2)
    assert inv.count == 2 and inv.nodes[0].gpus[0].memory_gib == pytest.approx(141e9 / GIB)
    assert gpu_kind("h100").memory_gib == pytest.approx(80e9 / GIB)
