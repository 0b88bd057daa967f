"""Closing an in-process engine until it is really gone: its processes have exited and, on a
GPU, the driver no longer counts memory for any of them.

vLLM's own shutdown (0.32) sends SIGTERM to the engine-core processes, waits a grace period
and then SIGKILLs the process tree, and returns without waiting for the processes to be reaped
or for the GPU memory to be released. The next engine started at once (the next backbone of a
matrix, a larger tensor-parallel group) then runs its memory profiling beside memory that is
still held and fails. :func:`close_engine` therefore:

1. notes the engine's processes before shutting it down (the engine-core processes vLLM keeps,
   :func:`engine_processes`, and their descendants: the tensor-parallel workers); the
   engine-core processes are ``multiprocessing`` children of this process and are joined
   through it (so ``multiprocessing`` reaps them and knows they ended), the others watched;
2. calls vLLM's shutdown with ``grace_s``;
3. waits, at most ``timeout_s`` in all, until every one of those processes has exited
   (:func:`wait_gone`) and, where ``nvidia-smi`` answers, until none of them holds GPU memory
   (:func:`wait_memory_back`); past the bound it raises a :class:`~serving.errors.BackendError`
   naming the processes and what they still hold, so a run stops before the next engine fails
   obscurely.

psutil (a dependency of vLLM) is imported when a close happens.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from serving.errors import BackendError
from serving.hardware.gpus import nvidia_smi

__all__ = [
    "CLOSE_TIMEOUT_S",
    "engine_processes",
    "process_tree",
    "wait_gone",
    "gpu_memory_holders",
    "wait_memory_back",
    "close_engine",
]

log = logging.getLogger(__name__)

#: The longest a close waits for the engine's processes and memory (seconds): a tensor-parallel
#: engine's workers release tens of GiB each; minutes mean something is stuck.
CLOSE_TIMEOUT_S = 120.0
_POLL_S = 0.2


def engine_processes(llm: Any) -> list[Any]:
    """A ``vllm.LLM``'s engine-core processes (vLLM 0.32: its client's background resources hold
    the process manager; ``multiprocessing`` processes, children of this one); [] where the
    engine runs in process or the layout differs."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    manager = getattr(getattr(core, "resources", None), "engine_manager", None)
    procs = getattr(manager, "processes", None) or []
    return [p for p in procs if getattr(p, "pid", None)]


def process_tree(pids: Iterable[int]) -> list[Any]:
    """``psutil.Process`` of each pid still running and of all its descendants."""
    import psutil

    out: dict[int, Any] = {}
    for pid in pids:
        try:
            p = psutil.Process(pid)
            kids = p.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for q in (p, *kids):
            out.setdefault(q.pid, q)
    return list(out.values())


def wait_gone(procs: list[Any], *, timeout_s: float, what: str) -> None:
    """Wait until every process of ``procs`` (``psutil.Process``) has exited (reaped where it
    is our child); past ``timeout_s`` a BackendError names those still running."""
    import psutil

    if not procs:
        return
    _gone, alive = psutil.wait_procs(procs, timeout=max(0.0, timeout_s))
    alive = [p for p in alive if _running(p)]
    if alive:
        names = ", ".join(f"pid {p.pid} ({_name(p)})" for p in alive)
        raise BackendError(
            f"{what}: {len(alive)} engine process(es) still running {timeout_s:.0f} s after the "
            f"engine was shut down: {names}; they may hold GPU memory the next engine needs: end them "
            "(kill PID) and rerun with --resume (journaled calls are kept)"
        )


def _running(p: Any) -> bool:
    import psutil

    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _name(p: Any) -> str:
    try:
        return str(p.name())
    except Exception:  # noqa: BLE001 - gone while we looked: any name will do
        return "?"


def gpu_memory_holders() -> dict[int, float] | None:
    """pid -> GiB of GPU memory the driver counts for it (``nvidia-smi``); None where there is
    no ``nvidia-smi`` or it does not answer."""
    out = nvidia_smi("query-compute-apps=pid,used_memory")
    if out is None:
        return None
    held: dict[int, float] = {}
    for line in out.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            try:
                held[int(parts[0])] = held.get(int(parts[0]), 0.0) + float(parts[1]) / 1024
            except ValueError:
                continue
    return held


def wait_memory_back(
    pids: Iterable[int],
    *,
    timeout_s: float,
    what: str,
    holders: Callable[[], dict[int, float] | None] = gpu_memory_holders,
    poll_s: float = _POLL_S,
) -> bool:
    """Wait until none of ``pids`` holds GPU memory (``holders``: pid -> GiB, None: unknown);
    False when it cannot be known, True when it is back; past ``timeout_s`` a BackendError."""
    ours = set(pids)
    deadline = time.monotonic() + max(0.0, timeout_s)
    while True:
        held = holders()
        if held is None:
            return False
        still = {p: g for p, g in held.items() if p in ours}
        if not still:
            return True
        if time.monotonic() >= deadline:
            gib = ", ".join(f"pid {p}: {g:.1f} GiB" for p, g in sorted(still.items()))
            raise BackendError(
                f"{what}: the GPU still counts memory for the closed engine's processes after "
                f"{timeout_s:.0f} s ({gib}); the next engine would not find it free: check "
                "`nvidia-smi`, end them, and rerun with --resume (journaled calls are kept)"
            )
        time.sleep(poll_s)


def _raise_left(left: list[Any], timeout_s: float, what: str) -> None:
    names = ", ".join(f"pid {p.pid}" for p in left)
    raise BackendError(
        f"{what}: {len(left)} engine process(es) still running {timeout_s:.0f} s after the engine was "
        f"shut down: {names}; they may hold GPU memory the next engine needs: end them (kill PID) and "
        "rerun with --resume (journaled calls are kept)"
    )


def close_engine(
    llm: Any,
    *,
    grace_s: float,
    timeout_s: float = CLOSE_TIMEOUT_S,
    what: str = "engine",
    on_gpu: bool = True,
) -> None:
    """Shut ``llm`` (a ``vllm.LLM``) down and wait until its processes are gone and (``on_gpu``)
    their GPU memory is back (module docstring). The engine-core processes are joined through
    ``multiprocessing`` (which reaps them), their descendants (tensor-parallel workers) watched
    with psutil."""
    procs = engine_processes(llm)
    pids = {int(p.pid) for p in procs}
    watched = [q for q in process_tree(pids) if q.pid not in pids]
    joinable = [p for p in procs if callable(getattr(p, "join", None))]
    watched += [q for q in process_tree(p.pid for p in procs if p not in joinable)]
    t0 = time.monotonic()
    engine = getattr(llm, "llm_engine", None)
    shutdown = getattr(engine, "shutdown", None) or getattr(
        getattr(engine, "engine_core", None), "shutdown", None
    )
    if callable(shutdown):
        try:
            try:
                shutdown(timeout=grace_s)
            except TypeError:  # a client without the timeout parameter
                shutdown()
        except Exception as exc:  # noqa: BLE001 - shutdown is best effort; the wait below decides
            log.debug("engine shutdown raised %s", exc)
    for p in joinable:
        p.join(max(0.0, timeout_s - (time.monotonic() - t0)))
    left = [p for p in joinable if p.is_alive()]
    if left:
        _raise_left(left, timeout_s, what)
    wait_gone(watched, timeout_s=max(0.0, timeout_s - (time.monotonic() - t0)), what=what)
    if on_gpu and pids:
        every = pids | {q.pid for q in watched}
        left_s = timeout_s - (time.monotonic() - t0)
        back = wait_memory_back(every, timeout_s=max(left_s, 1.0), what=what)
        log.info("%s closed in %.1f s (GPU memory %s)", what, time.monotonic() - t0,
                 "released" if back else "not checked: no nvidia-smi")  # fmt: skip
