"""Closing an engine waits until its processes are gone and its GPU memory is back
(serving/engines/engine_close.py), with a bounded wait and an error naming what is left: real child
processes that hold on until a gate file appears, never a timer."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from serving.engines.engine_close import close_engine, wait_memory_back
from serving.errors import BackendError

#: A stand-in engine process: on SIGTERM it writes ``term`` and exits only once ``gate`` exists
#: (an engine releasing its memory slowly); ``ignore`` makes it survive SIGTERM altogether.
_CHILD = r"""
import os, signal, sys, time
marker, gate, mode = sys.argv[1], sys.argv[2], sys.argv[3]
def on_term(*_):
    open(marker, "w").close()
    if mode == "ignore":
        return
    while not os.path.exists(gate):
        time.sleep(0.01)
    os._exit(0)
signal.signal(signal.SIGTERM, on_term)
open(marker + ".up", "w").close()
while True:
    time.sleep(0.05)
"""


def _child(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    marker, gate = tmp_path / f"term-{mode}", tmp_path / f"gate-{mode}"
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(marker), str(gate), mode])
    _wait_for(Path(str(marker) + ".up"))
    return proc, marker, gate


def _wait_for(path: Path, limit_s: float = 60.0) -> None:
    """Wait for a marker file (a gate the child opens), failing the test past ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


class _Joinable:
    """A child as ``multiprocessing`` holds vLLM's engine-core process: pid, join, is_alive."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.pid = proc, proc.pid

    def join(self, timeout: float | None = None) -> None:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass

    def is_alive(self) -> bool:
        return self.proc.poll() is None


def _llm(proc: subprocess.Popen[bytes], joinable: bool = False) -> Any:
    """What close_engine reads of a vllm.LLM (0.32): the engine-core processes and a shutdown
    that, as vLLM's after its grace, returns without waiting for them to exit."""
    handle = _Joinable(proc) if joinable else SimpleNamespace(pid=proc.pid)
    manager = SimpleNamespace(processes=[handle])
    core = SimpleNamespace(
        resources=SimpleNamespace(engine_manager=manager), shutdown=lambda timeout=None: proc.terminate()
    )
    return SimpleNamespace(llm_engine=SimpleNamespace(engine_core=core))


@pytest.mark.parametrize("joinable", [True, False], ids=["engine core (joined)", "worker (watched)"])
def test_close_returns_only_once_the_engine_process_is_gone(tmp_path: Path, joinable: bool) -> None:
    proc, marker, gate = _child(tmp_path, "gate")
    done: list[BaseException | None] = []

    def close() -> None:
        try:
            close_engine(_llm(proc, joinable), grace_s=0.0, timeout_s=120, what="test engine", on_gpu=False)
            done.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            done.append(exc)

    t = threading.Thread(target=close)
    t.start()
    _wait_for(marker)  # the engine got SIGTERM and now holds on until the gate opens
    assert t.is_alive() and done == [] and proc.poll() is None
    gate.touch()
    t.join(timeout=120)
    assert not t.is_alive() and done == [None]
    assert proc.poll() is not None or _gone(proc.pid)


def _gone(pid: int) -> bool:
    import psutil

    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_process_that_never_exits_is_a_clear_error_after_the_bound(tmp_path: Path) -> None:
    proc, marker, _ = _child(tmp_path, "ignore")
    try:
        with pytest.raises(BackendError) as info:
            close_engine(
                _llm(proc, joinable=True), grace_s=0.0, timeout_s=0.3, what="closing the vLLM engine for 'x'",
                on_gpu=False,
            )  # fmt: skip
        msg = str(info.value)
        assert msg.startswith("closing the vLLM engine for 'x': 1 engine process(es) still running 0 s after")
        assert f"pid {proc.pid}" in msg and "rerun with --resume" in msg
        assert marker.exists()  # it was asked to stop
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_gpu_memory_is_waited_for_until_the_driver_releases_it() -> None:
    """The driver's count of a closed engine's memory (nvidia-smi's compute apps) goes to zero
    a few polls later; the wait returns then, and an unknown count (no nvidia-smi) says so."""
    seen = iter([{41: 30.0, 7: 2.0}, {41: 12.5}, {7: 2.0}])
    assert wait_memory_back([41], timeout_s=60, what="w", holders=lambda: next(seen), poll_s=0.0) is True
    assert wait_memory_back([41], timeout_s=60, what="w", holders=lambda: None) is False
    with pytest.raises(BackendError, match=r"still counts memory .* \(pid 41: 30.0 GiB\)"):
        wait_memory_back([41], timeout_s=0.0, what="w", holders=lambda: {41: 30.0}, poll_s=0.0)


def test_a_stopped_server_leaves_no_process_of_its_group(tmp_path: Path) -> None:
    """`ServerHandle.stop`: the server's workers (its children, which outlive it by a gate here)
    are waited for too."""
    from serving.http.server import ServerHandle

    worker = tmp_path / "worker.py"
    worker.write_text(_CHILD, encoding="utf-8")
    marker, gate = tmp_path / "w-term", tmp_path / "w-gate"
    server = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(worker)!r}, {str(marker)!r}, {str(gate)!r}, 'gate'])\n"
        "while True:\n    time.sleep(0.05)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", server], start_new_session=True)
    _wait_for(Path(str(marker) + ".up"))
    handle = ServerHandle(proc, "http://127.0.0.1:1/v1", tmp_path / "log")
    t = threading.Thread(target=handle.stop)
    t.start()
    _wait_for(marker)  # the worker got SIGTERM and holds on until the gate opens
    assert t.is_alive()
    gate.touch()
    t.join(timeout=120)
    assert not t.is_alive() and proc.poll() is not None
