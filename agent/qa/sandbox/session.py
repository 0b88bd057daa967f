"""One long-lived sandboxed Python worker: start, run code, restart after a kill, close.

A :class:`SandboxSession` belongs to one question. Its worker keeps the variables of earlier
calls. A call that breaks a limit either stops inside the worker (CPU time, memory, output:
the namespace survives) or kills the worker (wall time, a crash, a garbled reply); the next call
then starts a fresh worker and its result says that the earlier state was lost.

Replies are matched to calls, whatever the model's code writes into the reply pipe (it can: the
pipe's number is in the worker's ``sys.argv``). Each request carries a fresh random nonce that
its reply must return, and after each reply the host sends a sync token, which the worker's
loop answers only after the call's real reply. A reply that is forged (a wrong nonce), extra
(the real reply arrives where the sync answer was due) or left over from an earlier call (a
wrong nonce again) ends the worker, and the call returns a ``crashed`` error saying so: a
forged reply can never be taken for a later call's reply.

The worker's report at start-up (uid, capabilities, no_new_privs, network interfaces, writable
``/``, visible host paths, environment) is checked before any code is sent; a sandbox that fails
the check is closed and :class:`SandboxUnavailable` is raised. Nothing here ever runs model code
outside bubblewrap.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import select
import signal
import struct
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from agent.qa.sandbox.config import SandboxConfig, SandboxUnavailable, reply_bytes
from agent.qa.sandbox.launch import Launcher, find_programs, host_layout
from agent.qa.sandbox.seccomp import machine_arch, seccomp_program

__all__ = ["ExecResult", "SandboxSession", "probe"]

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
_ALLOWED_ENV = {"HOME", "TMPDIR", "PATH", "PWD", "LANG", "PYTHONHASHSEED", "LD_LIBRARY_PATH"}
_ERROR_KINDS = {"timeout", "memory", "output_limit", "exception"}


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one call.

    Attributes:
        stdout: printed output (stdout and stderr together), at most ``max_output_chars``.
        value: ``repr`` of the last expression's value, or None (no final expression, or None).
        error_kind: None on success, else ``timeout``, ``memory``, ``output_limit``,
            ``exception`` or ``crashed``.
        error_text: the short traceback or the reason, "" on success.
        worker_lost: this call ended its worker (killed or died): its variables are gone.
        restarted: this call ran in a fresh worker because the previous one was lost.
        wall_seconds: time from sending the code to the reply (or to the kill), seconds.
        cpu_seconds: CPU seconds the worker spent on the call (0.0 when it did not reply).
    """

    stdout: str
    value: str | None
    error_kind: str | None
    error_text: str
    worker_lost: bool
    restarted: bool
    wall_seconds: float
    cpu_seconds: float

    @property
    def ok(self) -> bool:
        return self.error_kind is None


class _NoReply(Exception):
    """The worker did not answer: ``reason`` is ``timeout``, ``eof``, ``garbled`` or ``forged``
    (a reply that does not answer the call: wrong nonce, or a second reply)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail


class _Worker:
    """The running processes of one sandbox and their two pipes."""

    def __init__(self, launcher: Launcher, stage: Path | None, seccomp: bytes | None) -> None:
        in_r, self.in_w = os.pipe()
        self.out_r, out_w = os.pipe()
        child_fds = [in_r, out_w]
        seccomp_fd = None
        if seccomp is not None:  # a few hundred bytes: fits the pipe buffer, bwrap reads it
            seccomp_fd, seccomp_w = os.pipe()
            os.write(seccomp_w, seccomp)
            os.close(seccomp_w)
            child_fds.append(seccomp_fd)
        argv = launcher.argv(in_fd=in_r, out_fd=out_w, stage=stage, seccomp_fd=seccomp_fd)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=tuple(child_fds),
                env=launcher.host_env(),
                cwd="/",
                start_new_session=True,
            )
        except OSError as exc:
            for fd in (self.in_w, self.out_r):
                os.close(fd)
            raise SandboxUnavailable(f"sandbox: cannot start {argv[0]}: {exc}") from exc
        finally:
            for fd in child_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._finalizer = weakref.finalize(self, _kill, self.proc, self.in_w, self.out_r)

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode("utf-8")
        view = memoryview(_HEADER.pack(len(body)) + body)
        while view:
            view = view[os.write(self.in_w, view) :]

    def receive(self, deadline: float, max_bytes: int) -> dict:
        head = self._read(_HEADER.size, deadline)
        size = _HEADER.unpack(head)[0]
        if size > max_bytes:
            raise _NoReply("garbled", f"reply of {size} bytes announced (limit {max_bytes})")
        body = self._read(size, deadline)
        try:
            message = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _NoReply("garbled", f"reply is not JSON: {exc}") from exc
        if not isinstance(message, dict):
            raise _NoReply("garbled", "reply is not a JSON object")
        return message

    def _read(self, size: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _NoReply("timeout")
            ready, _, _ = select.select([self.out_r], [], [], left)
            if not ready:
                raise _NoReply("timeout")
            chunk = os.read(self.out_r, min(size - len(buf), 1 << 20))
            if not chunk:
                raise _NoReply("eof")
            buf += chunk
        return bytes(buf)

    def stop(self, grace_seconds: float = 0.0) -> tuple[int, bool]:
        """Kill the sandbox; returns bwrap's exit status (the worker's own when it ended by
        itself) and whether it had ended by itself. With ``grace_seconds``, first give a worker
        that is ending on its own that long to exit.

        The worker (its pid namespace's only process) is killed first, through a pidfd, and
        waited for; bwrap, its parent, then reaps it and exits. Killing bwrap first would leave
        the worker to die asynchronously (``--die-with-parent``) and be reaped by the host's
        init. So no sandbox process outlives this call."""
        self._finalizer.detach()
        if grace_seconds > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace_seconds)
        ended = self.proc.poll() is not None
        pidfd = self._worker_pidfd()
        if pidfd is not None:
            try:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                select.select([pidfd], [], [], 10.0)  # readable once the worker has exited
            finally:
                os.close(pidfd)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10.0)
        _kill(self.proc, self.in_w, self.out_r)
        return self.proc.returncode, ended

    def _worker_pidfd(self) -> int | None:
        """A pidfd of bwrap's child (the worker), or None (gone, or no /proc children list)."""
        if self.proc.poll() is not None:
            return None
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as fh:
                pids = [int(p) for p in fh.read().split()]
            # bwrap is alive, so its child's pid cannot have been reused.
            return os.pidfd_open(pids[0]) if pids else None
        except (OSError, ValueError):
            return None

    def stderr_text(self) -> str:
        """What bwrap or the interpreter wrote before the worker silenced fd 2 (after stop)."""
        if self.proc.stderr is None:
            return ""
        try:
            return self.proc.stderr.read(8192).decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""


def _kill(proc: subprocess.Popen, *fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
    proc.wait()


def _remove_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


def _check_facts(facts: object, config: SandboxConfig, *, seccomp: bool) -> list[str]:
    """Problems in the worker's report of its own isolation (empty when all is as designed)."""
    if not isinstance(facts, dict):
        return ["no isolation report"]
    problems = []
    if facts.get("uid") == 0 or facts.get("euid") == 0:
        problems.append("the code would run as uid 0")
    for key in ("cap_eff", "cap_prm", "cap_bnd"):
        if facts.get(key) != 0:
            problems.append(f"capabilities left ({key}={facts.get(key)!r})")
    if facts.get("no_new_privs") != 1:
        problems.append("no_new_privs is not set")
    if seccomp and facts.get("seccomp") != 2:
        problems.append(f"seccomp filter not loaded (Seccomp={facts.get('seccomp')!r})")
    if set(facts.get("interfaces") or ["?"]) - {"lo"}:
        problems.append(f"network interfaces visible: {facts.get('interfaces')}")
    if facts.get("root_writable") is not False:
        problems.append("/ is writable")
    if facts.get("host_paths_visible"):
        problems.append(f"host paths visible: {facts.get('host_paths_visible')}")
    if (
        set(facts.get("env_keys") or ["?"])
        - _ALLOWED_ENV
        - {
            "OPENBLAS_NUM_THREADS",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "NUMEXPR_NUM_THREADS",
        }
    ):
        problems.append(f"unexpected environment variables: {facts.get('env_keys')}")
    tasks, limit = facts.get("tasks"), facts.get("nproc_limit")
    if not isinstance(tasks, int) or limit != tasks + config.max_processes:
        problems.append(f"process limit not set (tasks={tasks!r}, RLIMIT_NPROC={limit!r})")
    return problems


class SandboxSession:
    """A sandboxed, stateful Python worker for one question (see the module docstring).

    Not thread-safe: one call at a time. Close it (or use it as a context manager); a session
    that is garbage-collected kills its worker too.

    Raises:
        SandboxUnavailable: at construction when bubblewrap (or, as root, setpriv/unshare) or
            the interpreter's files are missing; at :meth:`start`/:meth:`execute` when the
            sandbox cannot start or fails its isolation check.
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        as_root = os.geteuid() == 0
        self._launcher = Launcher(
            config=self.config,
            layout=host_layout(self.config.packages),
            programs=find_programs(as_root),
            as_root=as_root,
        )
        self._seccomp = seccomp_program()
        if self._seccomp is None:
            log.warning("sandbox: no seccomp table for %s; no syscall filter", machine_arch())
        self._stage: Path | None = None
        self._worker: _Worker | None = None
        self._lost = False
        self._closed = False
        self.facts: dict = {}
        self.starts = 0

    @property
    def running(self) -> bool:
        return self._worker is not None

    def start(self) -> dict:
        """Start the worker if none runs; returns its isolation report.

        Raises:
            SandboxUnavailable: it did not start in ``startup_seconds`` or failed the check.
        """
        if self._closed:
            raise SandboxUnavailable("sandbox: the session is closed")
        if self._worker is not None:
            return self.facts
        if self._stage is None and self._launcher.needs_stage():
            self._stage = Path(tempfile.mkdtemp(prefix="localfin-sandbox-", dir="/tmp"))
            self._stage.chmod(0o755)
            weakref.finalize(self, _remove_dir, self._stage)
        worker = _Worker(self._launcher, self._stage, self._seccomp)
        try:
            ready = worker.receive(time.monotonic() + self.config.startup_seconds, 1 << 20)
        except _NoReply as exc:
            rc, _ = worker.stop()
            detail = worker.stderr_text() or exc.detail or f"exit status {rc}"
            raise SandboxUnavailable(
                f"sandbox: the worker did not start ({exc.reason}): {detail}. Model-written code is never "
                "run without isolation."
            ) from exc
        problems = _check_facts(ready.get("facts"), self.config, seccomp=self._seccomp is not None)
        if problems:
            worker.stop()
            raise SandboxUnavailable(
                "sandbox: isolation check failed, refusing to run code: " + "; ".join(problems)
            )
        self._worker = worker
        self.facts = ready["facts"]
        self.starts += 1
        log.debug("sandbox worker started (%d): %s", self.starts, self.facts)
        return self.facts

    def execute(self, code: str) -> ExecResult:
        """Run ``code`` in the worker (starting one if needed).

        Raises:
            SandboxUnavailable: no worker could be started (never runs the code otherwise).
        """
        restarted = self._lost
        worker = self._worker
        if worker is None:
            self.start()
            worker = self._worker
            assert worker is not None
        self._lost = False
        started = time.monotonic()
        deadline = started + self.config.wall_seconds
        nonce = secrets.token_hex(16)
        try:
            worker.send({"code": code, "cpu_seconds": self.config.cpu_seconds, "nonce": nonce})
            reply = worker.receive(deadline, reply_bytes(self.config))
            if reply.get("nonce") != nonce:
                raise _NoReply("forged", "a reply that does not answer this call")
            token = secrets.token_hex(16)
            worker.send({"sync": token})
            if worker.receive(deadline, 1 << 12) != {"sync": token}:
                raise _NoReply("forged", "a second reply to this call")
            return self._result(reply, restarted, time.monotonic() - started)
        except (_NoReply, BrokenPipeError) as exc:
            wall = time.monotonic() - started
            reason = exc.reason if isinstance(exc, _NoReply) else "eof"
            rc, ended = self._drop_worker(grace_seconds=0.5 if reason == "eof" else 0.0)
            detail = exc.detail if isinstance(exc, _NoReply) else ""
            kind, text = self._loss_text(reason, detail, rc, ended)
            return ExecResult("", None, kind, text, True, restarted, wall, 0.0)

    def _result(self, reply: dict, restarted: bool, wall: float) -> ExecResult:
        stdout, value, error = reply.get("stdout"), reply.get("value"), reply.get("error")
        if not isinstance(stdout, str) or not (value is None or isinstance(value, str)):
            raise _NoReply("garbled", "reply fields have the wrong types")
        kind, text = None, ""
        if error is not None:
            if not isinstance(error, dict) or error.get("kind") not in _ERROR_KINDS:
                raise _NoReply("garbled", "reply error has the wrong form")
            kind, text = error["kind"], str(error.get("text") or "")
        cpu = reply.get("cpu_seconds")
        return ExecResult(
            stdout=stdout,
            value=value,
            error_kind=kind,
            error_text=text,
            worker_lost=False,
            restarted=restarted,
            wall_seconds=wall,
            cpu_seconds=float(cpu) if isinstance(cpu, (int, float)) else 0.0,
        )

    def _loss_text(self, reason: str, detail: str, rc: int, ended: bool) -> tuple[str, str]:
        cfg = self.config
        if reason == "timeout":
            return "timeout", f"no reply within {cfg.wall_seconds:g} s of wall time: the worker was stopped"
        if reason == "garbled":
            return "crashed", f"the worker's reply was unreadable ({detail})"
        if reason == "forged":
            return "crashed", (
                f"the worker's reply pipe held {detail} (the code wrote into the reply pipe): "
                "the worker was stopped"
            )
        if not ended:
            return "crashed", "the worker stopped replying and was killed"
        if rc == 128 + signal.SIGXCPU:
            return "timeout", f"the worker used up its CPU budget ({cfg.worker_cpu_seconds} s over its life)"
        if rc == 128 + signal.SIGKILL:
            return "crashed", (
                f"the worker was killed (SIGKILL: past its CPU budget of {cfg.worker_cpu_seconds} s, "
                "or the kernel ran out of memory)"
            )
        if rc > 128:
            return "crashed", f"the worker died (signal {rc - 128})"
        return "crashed", f"the worker exited (status {rc})"

    def _drop_worker(self, grace_seconds: float = 0.0) -> tuple[int, bool]:
        worker, self._worker = self._worker, None
        self._lost = True
        assert worker is not None
        return worker.stop(grace_seconds)

    def close(self) -> None:
        """Kill the worker and remove the stage folder; the session cannot be used again."""
        self._closed = True
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        if self._stage is not None:
            _remove_dir(self._stage)
            self._stage = None

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def probe(config: SandboxConfig | None = None) -> dict:
    """Start a sandbox, run ``1 + 1`` in it and close it; returns the isolation report.

    Raises:
        SandboxUnavailable: no working isolation here (the message says why and what to do).
    """
    with SandboxSession(config) as session:
        facts = session.start()
        result = session.execute("1 + 1")
        if result.value != "2":
            raise SandboxUnavailable(f"sandbox: probe call returned {result!r}")
        return facts
