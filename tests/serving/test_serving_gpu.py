"""GPU checks (marker `gpu`; skipped without a CUDA GPU): the same engine code path on CUDA."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytestmark = pytest.mark.gpu


def test_tiny_architectures_run_on_cuda(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from serving.models.prepare import build_tiny_model

    for arch in ("qwen3", "llama"):
        path = build_tiny_model(tmp_path / arch, arch=arch)
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).to("cuda")
        ids = tok.apply_chat_template(
            [{"role": "user", "content": "hi"}], add_generation_prompt=True, return_tensors="pt"
        )
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        out = model.generate(ids.to("cuda"), max_new_tokens=8, do_sample=False)
        assert out.shape[1] == ids.shape[1] + 8


def test_vllm_engine_on_cuda_gives_schema_valid_json(tmp_path):
    pytest.importorskip("vllm")
    from serving.chat.types import ChatRequest
    from serving.engines.vllm_engine import VLLMBackend
    from serving.models.prepare import build_tiny_model
    from serving.models.registry import default_registry

    path = build_tiny_model(tmp_path / "tiny", arch="qwen3")
    reg = default_registry()
    spec = replace(reg.get("tiny-qwen3").with_path(path), device="gpu", gpu_memory_utilization=0.3)
    backend = VLLMBackend("tiny-qwen3", registry=reg.with_spec(spec))
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}},
        "required": ["n"],
        "additionalProperties": False,
    }
    out = backend.chat(
        [
            ChatRequest.simple("tiny-qwen3", f"q{i}", max_tokens=16, json_schema=schema, seed=i)
            for i in range(64)
        ]
    )
    backend.close()
    assert sum(not r.is_fallback for r in out) == 64


def test_the_gpu_smoke_passes(tmp_path):
    """`localfin gpu-check` on this GPU machine: every check passes (tensor parallelism 2 is
    skipped only with one GPU visible)."""
    pytest.importorskip("vllm")
    from serving.gpu_smoke import format_report, run_smoke
    from serving.hardware.gpus import visible_inventory

    report = run_smoke(tmp_path / "gpu-check")
    assert not report.failed, format_report(report)
    status = {c.name: c.status for c in report.checks}
    assert status["two engines"] == status["thinking + schema"] == status["serve + image"] == "ok"
    assert status["close, start at once"] == status["two servers, one GPU, in order"] == "ok"
    assert status["tensor parallel 2"] == ("ok" if visible_inventory().most_per_node >= 2 else "skipped")


def test_an_unplaceable_model_is_refused_before_its_engine_starts(tmp_path):
    """A Qwen3-32B-sized need on this GPU's visible memory: the placement and the engine say
    what would place it before vLLM is asked."""
    from serving.hardware.gpus import visible_inventory
    from serving.hardware.placement import EngineNeed, place_stage

    inv = visible_inventory()
    huge = EngineNeed("huge", params_b=4000.0, kv_bytes_per_token=1, attention_heads=64, kv_heads=8)
    (p,) = place_stage([huge], inv)
    assert not p.fits and p.remedies
