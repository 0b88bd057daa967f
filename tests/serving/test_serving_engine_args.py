"""The arguments an engine starts with on the GPUs, computed without a GPU (serving/engines/engine_args.py):
the pinned vLLM defaults, the layout's share and devices, the modality limits; every argument is
one vLLM 0.32 knows (its EngineArgs fields, read from the installed source)."""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest

from serving.engines import vllm_engine
from serving.engines.engine_args import engine_arguments, serve_flags
from serving.errors import ConfigError
from serving.hardware.gpus import EngineLayout, Gpu, GpuRef, Inventory, Node, ReplicaSlot
from serving.http.server import serve_args
from serving.models.registry import default_registry

Opts = vllm_engine.EngineOptions  # built here, never started


def _engine_args_fields() -> set[str]:
    """The field names of vLLM's EngineArgs in the installed vllm (0.32), from its source."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("vllm is not installed")
    src = Path(next(iter(spec.submodule_search_locations))) / "engine" / "arg_utils.py"
    tree = ast.parse(src.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EngineArgs"]
    return {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def _layout(share: float, *indices: int, node: str = "local") -> EngineLayout:
    return EngineLayout(len(indices), 1, None, (ReplicaSlot(tuple(GpuRef(node, i) for i in indices), share),))


def test_a_gpu_run_passes_the_pins_its_share_its_gpus_and_no_video() -> None:
    spec = default_registry().get("qwen3-vl-8b")
    inv = Inventory((Node("local", (Gpu(0, "H200", 139.8, "2"), Gpu(1, "H200", 139.8, "5"))),))
    args = engine_arguments(spec, Opts(), platform="cuda", layout=_layout(0.65, 1), inventory=inv, path="/m")
    kw = args.kwargs
    assert kw["async_scheduling"] is False and kw["enforce_eager"] is False
    assert (kw["tensor_parallel_size"], kw["gpu_memory_utilization"]) == (1, 0.65)
    assert kw["limit_mm_per_prompt"] == {"image": 4, "video": 0, "audio": 0}
    assert "quantization" not in kw and "enable_chunked_prefill" not in kw
    # GPU 1 of this process is the parent's device "5" (CUDA_VISIBLE_DEVICES=2,5)
    assert args.env == {"VLLM_WORKER_MULTIPROC_METHOD": "spawn", "CUDA_VISIBLE_DEVICES": "5"}


def test_switches_reach_the_engine() -> None:
    spec = default_registry().get("llama-3.1-70b")
    opts = Opts(batch_invariant=True, async_scheduling=True, worker_start_method="fork")
    lay = replace(_layout(0.9, 0, 1), quantization="fp8")
    args = engine_arguments(spec, opts, platform="cuda", layout=lay, path="/m")
    assert args.kwargs["quantization"] == "fp8" and args.kwargs["tensor_parallel_size"] == 2
    assert args.kwargs["async_scheduling"] is True
    assert args.env["VLLM_BATCH_INVARIANT"] == "1" and args.env["VLLM_WORKER_MULTIPROC_METHOD"] == "fork"
    assert args.env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_pipeline_stages_across_nodes_run_on_ray_without_pinned_devices() -> None:
    spec = default_registry().get("llama-3.1-70b")
    slot = ReplicaSlot((GpuRef("node0", 0), GpuRef("node0", 1), GpuRef("node1", 0), GpuRef("node1", 1)), 0.9)
    args = engine_arguments(
        spec, Opts(), platform="cuda", layout=EngineLayout(2, 2, None, (slot,)), path="/m"
    )
    assert args.kwargs["pipeline_parallel_size"] == 2 and args.kwargs["distributed_executor_backend"] == "ray"
    assert "CUDA_VISIBLE_DEVICES" not in args.env


def test_a_cpu_entry_on_the_cuda_build_gets_a_share_not_vllms_default() -> None:
    """Tiny test models and stand-ins on a GPU machine: several at once, each its own share."""
    spec = default_registry().get("tiny-qwen3")
    args = engine_arguments(spec, Opts(), platform="cuda", layout=_layout(0.05, 0), path="/m")
    assert args.kwargs["gpu_memory_utilization"] == 0.05 and "VLLM_CPU_KVCACHE_SPACE" not in args.env
    cpu = engine_arguments(spec, Opts(kv_cache_gib=3), platform="cpu", path="/m")
    assert "gpu_memory_utilization" not in cpu.kwargs and cpu.kwargs["enable_chunked_prefill"] is False
    assert cpu.env["VLLM_CPU_KVCACHE_SPACE"] == "3" and cpu.env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert cpu.kwargs["async_scheduling"] is False and cpu.kwargs["enforce_eager"] is True


def test_one_engine_takes_one_replica() -> None:
    spec = default_registry().get("qwen3-4b")
    two = EngineLayout(1, 1, None, (ReplicaSlot((GpuRef("n", 0),), 0.9), ReplicaSlot((GpuRef("n", 1),), 0.9)))
    with pytest.raises(ConfigError, match="a layout of 2 replicas reached one engine"):
        engine_arguments(spec, Opts(), platform="cuda", layout=two, path="/m")
    flags = serve_flags(spec, Opts(), platform="cuda", layout=two)
    assert flags[flags.index("--data-parallel-size") + 1] == "2"  # a server runs them as vLLM's DP ranks


@pytest.mark.parametrize("key", ["qwen3-vl-8b", "qwen3-32b", "llama-3.1-70b", "tiny-qwen3"])
def test_every_argument_is_one_vllm_knows(key: str) -> None:
    fields = _engine_args_fields()
    spec = default_registry().get(key)
    lay = replace(_layout(0.5, 0, 1), quantization="fp8", pipeline_parallel=1)
    for platform in ("cuda", "cpu"):
        kwargs = engine_arguments(spec, Opts(block_size=32), platform=platform, layout=lay, path="/m").kwargs
        assert set(kwargs) <= fields, set(kwargs) - fields
    frontend = {"served_model_name", "host", "port", "api_key", "enable_auto_tool_choice", "tool_call_parser",
                "chat_template", "enable_prompt_tokens_details"}  # fmt: skip
    for platform in ("cuda", "cpu"):
        args = serve_args(spec, options=Opts(), layout=lay, platform=platform)
        names = {a[2:].replace("-", "_").removeprefix("no_") for a in args if a.startswith("--")}
        assert names <= fields | frontend, names - fields - frontend


def test_bad_engine_settings_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"engine\.worker_start_method='forkserver'; allowed: spawn, fork"):
        Opts(worker_start_method="forkserver")
    with pytest.raises(ConfigError, match=r"engine\.quantization='int4'; allowed: '' .* or fp8"):
        Opts(quantization="int4")
    with pytest.raises(ConfigError, match="close_timeout_s=0"):
        Opts(close_timeout_s=0)


def test_the_manifest_records_the_pins_and_batch_invariance() -> None:
    """A run's manifest holds the backend's settings (serving.open.backend_settings): the pinned
    defaults and the batch-invariant switch are there before the engine starts."""
    from serving.open import BackendSpec, backend_settings, open_backend

    be = open_backend(
        BackendSpec("vllm", "tiny-qwen3", engine=Opts(batch_invariant=True)), default_registry()
    )
    try:
        engine = backend_settings(be)["engine"]
        assert engine == {"async_scheduling": False, "worker_start_method": "spawn", "batch_invariant": True}
    finally:
        be.close()


def test_config_tables_carry_the_engine_switches(tmp_path: Path) -> None:
    from agent.pairs.experiment.config import config_to_dict, load_config

    root = Path(__file__).resolve().parents[2]
    text = (root / "agent/pairs/configs/demo.toml").read_text(encoding="utf-8")
    text = text.replace('backbone = "smollm2-135m"', 'backbone = "smollm2-135m"\nbatch_invariant = true')
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    cfg = load_config(path)
    opts = cfg.model.backend_spec().engine
    assert (opts.batch_invariant, opts.async_scheduling, opts.worker_start_method) == (True, False, "spawn")
    assert config_to_dict(cfg)["model"]["batch_invariant"] is True  # the manifest's resolved config
    bad = text.replace("batch_invariant = true", 'quantization = "int8"')
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"model\.quantization='int8'; allowed: '' \(the checkpoint's weights\) or fp8"
    ):
        load_config(path)


def test_one_batching_setting_reaches_the_in_process_engine_and_the_server() -> None:
    """vLLM's own defaults differ (16,384 tokens a step in process, 8,192 for a server on
    H100/H200); both paths take the config's value, 8,192 when it says 0."""
    from agent.pairs.experiment.config import ModelConfig
    from serving.engines.engine_args import GPU_BATCHED_TOKENS, flags_kwargs

    spec = default_registry().get("qwen3-4b")
    for table, want in (
        (ModelConfig(), GPU_BATCHED_TOKENS),
        (ModelConfig(max_num_batched_tokens=16384), 16384),
    ):
        opts = table.backend_spec().engine
        kw = engine_arguments(spec, opts, platform="cuda", path="/m").kwargs
        flags = flags_kwargs(serve_args(spec, options=opts, platform="cuda"))
        assert kw["max_num_batched_tokens"] == flags["max_num_batched_tokens"] == want
    cpu = engine_arguments(default_registry().get("tiny-qwen3"), Opts(), platform="cpu", path="/m").kwargs
    assert cpu["max_num_batched_tokens"] == 4096  # the CPU build: the context at least (no chunked prefill)
    with pytest.raises(
        ConfigError, match=r"model\.max_num_batched_tokens=100; allowed: 0 .* or 256\.\.1048576"
    ):
        ModelConfig(max_num_batched_tokens=100)
