"""The GPU plan's arithmetic (`localfin reproduce plan`): memory from the architecture, the
tensor-parallel choice, the time model, and bad GPU kinds."""

from __future__ import annotations

import pytest

from agent.reproduce.engine_plan import declared_inventory, place
from agent.reproduce.gpu_plan import (
    DECODE_EFFICIENCY,
    PREFILL_EFFICIENCY,
    Work,
    _time,
    engine_memory,
    plan_config,
)
from agent.reproduce.hardware import GPU_KINDS, gpu_kind
from agent.reproduce.spec import load_repro
from localfin.errors import ConfigError
from serving.models.registry import default_registry

GIB = 1024**3


def test_memory_of_llama_8b_by_hand() -> None:
    # weights: 8.03e9 parameters x 2 bytes; KV: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes
    # = 131,072 bytes a token, so one 32,768-token sequence holds exactly 4 GiB
    w, kv = engine_memory("llama-3.1-8b", 1, 1, 32_768)
    assert w == pytest.approx(8.03e9 * 2 / GIB) and w == pytest.approx(14.957, abs=1e-3)
    assert kv == 4.0
    w2, kv2 = engine_memory("llama-3.1-8b", 2, 6, 32_768)  # tp 2 halves both per GPU
    assert (w2, kv2) == (pytest.approx(w / 2), 12.0)


def test_tensor_parallel_is_the_smallest_that_holds_the_weights_and_one_sequence() -> None:
    def tp(config: str, key: str, gpus: int, kind: str) -> int | None:
        e = place(load_repro(config), declared_inventory(kind, gpus), registry=default_registry()).find(key)
        return e.layout.tensor_parallel if e.fits and e.layout else None

    assert tp("moira_table3_main", "llama-3.1-70b", 1, "h200") is None  # 131.5 GiB of weights > 0.9 x 141 GB
    assert tp("moira_table3_main", "llama-3.1-70b", 4, "h200") == 2
    assert tp("moira_table6_a3", "qwen3-32b", 1, "h200") == 1
    # 61 GiB of weights cannot sit on one 48 GB card
    assert tp("moira_table6_a3", "qwen3-32b", 4, "l40s") == 2


def test_time_model_by_hand() -> None:
    gpu = gpu_kind("h200")
    work = Work(
        calls=1, prompt_tokens=1_000_000, completion_tokens=10_000, concurrency=1, mean_context=0, basis=""
    )
    pre_h, dec_h = _time("llama-3.1-8b", 1, 1, 1, work, gpu)
    assert pre_h * 3600 == pytest.approx(1e6 * 2 * 8.03e9 / (989e12 * PREFILL_EFFICIENCY))
    # context 0: each of the 10,000 decode steps reads the 16.06 GB of weights once
    assert dec_h * 3600 == pytest.approx(10_000 * 8.03e9 * 2 / (4.8e12 * DECODE_EFFICIENCY))


def test_a_plan_of_table3_names_every_checkpoint_once() -> None:
    engines = plan_config(load_repro("moira_table3_main"), 4, "h200", registry=default_registry())
    assert [e.key for e in engines] == ["llama-3.1-8b", "llama-3.1-70b", "qwen3-4b", "qwen3-32b"]
    assert all(e.fits and e.dp * e.tp <= 4 for e in engines)
    one = {
        e.key: e for e in plan_config(load_repro("moira_table3_main"), 1, "h200", registry=default_registry())
    }
    assert not one["llama-3.1-70b"].fits and "does not fit" in one["llama-3.1-70b"].note


@pytest.mark.parametrize("bad", ["v100", "H20", ""])
def test_an_unknown_gpu_kind_names_the_allowed_ones(bad: str) -> None:
    with pytest.raises(ConfigError, match="allowed: " + ", ".join(GPU_KINDS)):
        plan_config(load_repro("moira_table3_main"), 1, bad, registry=default_registry())
    assert {"h100", "h200", "a100-80g", "l40s"} <= set(GPU_KINDS)


def test_a_gpu_kind_is_read_in_any_case() -> None:
    reg = default_registry()
    upper = plan_config(load_repro("moira_table3_main"), 1, "H200", registry=reg)
    assert upper == plan_config(load_repro("moira_table3_main"), 1, "h200", registry=reg)


def test_zero_gpus_is_an_error() -> None:
    with pytest.raises(ConfigError, match="--gpus 0; allowed"):
        plan_config(load_repro("moira_table3_main"), 0, "h200", registry=default_registry())


def test_the_cli_prints_the_plan_with_its_basis(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LOCALFIN_RUNS_DIR", str(tmp_path))  # no rehearsal there: config counts
    r = cli("reproduce", "plan", "moira_table3_main", "--gpus", "4", "--gpu", "h200")
    assert r.code == 0, r.err
    assert "on 4 x NVIDIA H200" in r.out and "basis: bf16 weights" in r.out
    assert "engine llama-3.1-70b: tp 2 x dp 2 (replicas)" in r.out
    assert "placement of moira_table3_main on 4 x h200" in r.out
    assert (
        "config counts; no rehearsal: a lower bound" in r.out and "total (engines one after another)" in r.out
    )


def test_the_plan_counts_what_the_a3_and_a4_configs_run() -> None:
    from agent.reproduce.moira.workload import moira_work

    for name in ("moira_table6_a3", "moira_table7_a4"):
        cfg = load_repro(name)
        by = moira_work(cfg.document, cfg.baselines, lambda cell: (27, 75))
        assert set(by) == {"q32-think", "q32-nothink"}
        for w in by.values():
            # the table's two conditions, 3 seeds, one exposure each, no baseline; one training
            # phase per seed (A3: one shared warmup, the full condition's 8 replays at most; A4:
            # one shared training)
            assert (w.runs, w.trainings, w.finmem_runs) == (6, 3, 0)
            assert (w.train_passes, w.train_steps, w.test_steps) == (27, 27 * 27, 6 * 75)
    [engine] = plan_config(load_repro("moira_table6_a3"), 1, "h200", registry=default_registry())
    assert engine.work.calls == 2 * (27 * 27 + 6 * 75)  # one call a step without a rehearsal
    assert "6 agent runs (3 training phases" in engine.work.basis


def test_the_plan_counts_finmem_where_it_runs_and_each_independent_training() -> None:
    from agent.reproduce.moira.workload import moira_work

    cfg = load_repro("moira_table3_main")
    by = moira_work(cfg.document, cfg.baselines, lambda cell: (27, 75))
    # FinMem's single row runs on its fixed model only: 3 seeds x 2 exposures, training + test
    assert by["l8"].finmem_runs == 6 and by["l8"].finmem_steps == 6 * (27 + 75)
    assert all(w.finmem_runs == 0 for k, w in by.items() if k != "l8")
    assert by["q32-think"].trainings == 3  # paired: a seed's two exposures train once
    doc = {**cfg.document, "experiment": {**cfg.document["experiment"], "pairing": "independent"}}
    ind = moira_work(doc, cfg.baselines, lambda cell: (27, 75))
    assert ind["q32-think"].trainings == 6
    assert ind["q32-think"].train_steps == 2 * by["q32-think"].train_steps
