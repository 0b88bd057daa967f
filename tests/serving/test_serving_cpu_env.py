"""The CPU engine default (serving.engines.engine_args.cpu_engine_env): what it sets, that the user's own
values win, that the engine's environment is restored after start-up, and that a real server
started through serving.http.server runs its worker with it (read from the server's own log)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from localfin.errors import ConfigError
from serving.engines import engine_args
from serving.engines.engine_args import cpu_engine_env
from serving.engines.vllm_engine import _scoped_environ

_KEYS = ("VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_OMP_THREADS_BIND", "LOCALFIN_CPU_IOMP", "LD_PRELOAD")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for k in _KEYS:
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def test_default_reserves_no_core_binds_auto_and_preloads_iomp(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    iomp = tmp_path / "lib" / "libiomp5.so"
    iomp.parent.mkdir()
    iomp.write_bytes(b"")
    clean_env.setattr(sys, "prefix", str(tmp_path))
    assert cpu_engine_env() == {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "VLLM_CPU_OMP_THREADS_BIND": "auto",
        "LD_PRELOAD": str(iomp),
    }


def test_no_iomp_in_the_venv_leaves_vllm_its_own_runtime(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clean_env.setattr(sys, "prefix", str(tmp_path))
    assert "LD_PRELOAD" not in cpu_engine_env()


def test_user_values_win(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    clean_env.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    clean_env.setenv("LD_PRELOAD", "/opt/libgomp.so.1")
    got = cpu_engine_env()
    assert got["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "1" and got["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"
    assert "LD_PRELOAD" not in got  # an OpenMP runtime is preloaded already: not ours to change
    clean_env.setenv("LD_PRELOAD", "/opt/libjemalloc.so")
    clean_env.setenv("LOCALFIN_CPU_IOMP", "0")
    assert "LD_PRELOAD" not in cpu_engine_env()


def test_iomp_is_prepended_to_another_preload(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libiomp5.so").write_bytes(b"")
    clean_env.setattr(sys, "prefix", str(tmp_path))
    clean_env.setenv("LD_PRELOAD", "/opt/libjemalloc.so")
    assert cpu_engine_env()["LD_PRELOAD"] == f"{tmp_path}/lib/libiomp5.so:/opt/libjemalloc.so"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("VLLM_CPU_NUM_OF_RESERVED_CPU", "-1", "VLLM_CPU_NUM_OF_RESERVED_CPU=-1; allowed"),
        ("VLLM_CPU_NUM_OF_RESERVED_CPU", "one", "VLLM_CPU_NUM_OF_RESERVED_CPU='one'; allowed"),
        ("LOCALFIN_CPU_IOMP", "maybe", "LOCALFIN_CPU_IOMP='maybe'; allowed: 0 or 1"),
        ("VLLM_CPU_OMP_THREADS_BIND", " ", "VLLM_CPU_OMP_THREADS_BIND is empty"),
    ],
)
def test_bad_settings_name_the_variable(
    clean_env: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    clean_env.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        cpu_engine_env()


def test_engine_environment_is_restored_after_start(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LD_PRELOAD", "/opt/keep.so")
    with _scoped_environ({"VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "LD_PRELOAD": "/x/libiomp5.so:/opt/keep.so"}):
        assert os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
        os.environ["LD_PRELOAD"] += ":/vllm/adds/this.so"  # vLLM edits it while it starts
    assert "VLLM_CPU_NUM_OF_RESERVED_CPU" not in os.environ and os.environ["LD_PRELOAD"] == "/opt/keep.so"


def test_server_worker_runs_with_the_default(openai_server) -> None:
    """The worker of a server started through serving.http.server logs its binding: no reserved core
    (both cores compute) and, where the venv ships libiomp5, no 'libiomp is not found' warning."""
    log = Path(openai_server.log_path).read_text(errors="replace")
    if "OpenMP thread binding info" not in log:
        pytest.skip("this server was started without vLLM's INFO logging")
    assert "reserve_cpu_num=0" in log
    if engine_args._libiomp5() is not None and not os.environ.get("LD_PRELOAD"):
        assert "libiomp is not found in LD_PRELOAD" not in log
