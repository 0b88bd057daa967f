"""Registry facts the GPU rehearsal relies on: every backbone names its architecture, the tiny
test entries serve like the real ones, and a CPU stand-in keeps every serving fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.engines.engine_args import flags_kwargs
from serving.errors import ConfigError
from serving.http.server import serve_args
from serving.models.registry import ARCHS, MAX_IMAGES, TINY_KEYS, ModelSpec, cpu_stand_in, default_registry

#: What decides how a model is served (its sizes, weights and device aside).
SERVING_FACTS = (
    "arch",
    "reasoning_parser",
    "tool_call_parser",
    "chat_template",
    "accepts_images",
    "thinking_default",
    "extra_serve_args",
)
GPU_ONLY_FLAGS = ("--tensor-parallel-size", "--gpu-memory-utilization")


def facts(spec: ModelSpec) -> dict[str, object]:
    return {name: getattr(spec, name) for name in SERVING_FACTS}


@pytest.mark.parametrize(("tiny", "real"), [("tiny-llama", "llama-3.1-8b"), ("tiny-qwen3-vl", "qwen3-vl-8b")])
def test_tiny_entries_serve_like_the_real_ones(tiny: str, real: str) -> None:
    reg = default_registry()
    assert facts(reg.get(tiny)) == facts(reg.get(real))
    assert reg.get(tiny).device == "cpu" and reg.get(tiny).source == "built"


def test_the_tiny_qwen3_keeps_the_reasoning_parser_but_no_tool_parser() -> None:
    reg = default_registry()
    tiny, real = reg.get("tiny-qwen3"), reg.get("qwen3-4b-nothink")
    assert (tiny.arch, tiny.reasoning_parser, tiny.thinking_default) == (
        real.arch,
        real.reasoning_parser,
        real.thinking_default,
    )
    assert tiny.tool_call_parser is None and real.tool_call_parser == "hermes"


def test_every_backbone_names_an_architecture_with_a_tiny_entry() -> None:
    reg = default_registry()
    for spec in reg.specs():
        assert spec.arch in ARCHS, spec.key
        assert reg.get(TINY_KEYS[spec.arch]).arch == spec.arch
    with pytest.raises(ConfigError, match=r"ModelSpec.arch='mamba'; allowed: qwen3, llama, qwen3-vl"):
        ModelSpec("x", "x", "built", arch="mamba")


@pytest.mark.parametrize(
    "key", ["llama-3.1-8b", "llama-3.1-70b", "qwen3-4b", "qwen3-32b-nothink", "qwen3-vl-8b"]
)
def test_a_cpu_stand_in_keeps_every_serving_fact(key: str, tmp_path: Path) -> None:
    real = default_registry().get(key)
    twin = cpu_stand_in(real, tmp_path / "tiny")
    assert twin.key == real.key and facts(twin) == facts(real)
    for name in ("max_model_len", "default_max_tokens", "timeout_s", "repetition_penalty"):
        assert getattr(twin, name) == getattr(real, name), name
    assert (twin.device, twin.tensor_parallel_size, twin.source, twin.path) == (
        "cpu",
        1,
        "built",
        tmp_path / "tiny",
    )
    real_args, twin_args = serve_args(real, port=9), serve_args(twin, port=9)
    for flag in GPU_ONLY_FLAGS:
        i = real_args.index(flag)
        del real_args[i : i + 2]
    # the same flags but the device's: eager, no chunked prefill, a prompt's batch at once
    cpu = {"enforce_eager": True, "enable_chunked_prefill": False}
    cpu["max_num_batched_tokens"] = max(real.max_model_len, 4096)
    assert flags_kwargs(twin_args) == {**flags_kwargs(real_args), **cpu}


def test_a_stand_in_needs_an_architecture(tmp_path: Path) -> None:
    spec = ModelSpec("x", "x", "local_dir", dirname="x")
    with pytest.raises(ConfigError, match="model 'x' has no arch"):
        cpu_stand_in(spec, tmp_path)


def test_image_models_are_served_with_the_image_limit_and_no_other_modality() -> None:
    """vLLM's default for a modality the limits do not name is 999 (its start-up profiling then
    budgets videos): every modality but images is 0."""
    args = serve_args(default_registry().get("qwen3-vl-8b"))
    limits = f'{{"image": {MAX_IMAGES}, "video": 0, "audio": 0}}'
    assert args[args.index("--limit-mm-per-prompt") + 1] == limits
    assert "--limit-mm-per-prompt" not in serve_args(default_registry().get("qwen3-4b"))
