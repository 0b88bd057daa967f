"""The program that runs inside the sandbox: a small REPL serving one question's Python calls.

localfin never imports this module: :mod:`agent.qa.sandbox.launch` reads its text and hands it
to the sandbox's interpreter with ``-c`` (so no file of the repository has to be visible inside).
It uses the standard library only and runs with ``-S`` (no site-packages but the bound ones).

Start-up, before any model code runs:
1. fds 0, 1 and 2 are pointed at ``/dev/null``: the replies travel on two private pipe
   descriptors (``in_fd``, ``out_fd``, marked close-on-exec), so output written by C code,
   ``os.system`` or a forked child to 0/1/2 can never be mistaken for a reply.
2. Resource limits are set (soft = hard, so the code cannot raise them again): address space,
   whole-life CPU seconds, processes (the tasks present now plus ``max_processes``: 0 forbids
   ``fork`` and threads alike), open files, file size, no core files.
3. A ``ready`` message reports what the worker sees of its own isolation (uid, capabilities,
   no_new_privs, network interfaces, whether ``/`` is writable, whether host paths exist); the
   parent refuses a sandbox whose report is wrong.

Each request ``{"code": str, "cpu_seconds": float, "nonce": str}`` runs in one namespace kept
across calls; its reply carries the request's nonce back. A request ``{"sync": token}`` is answered
``{"sync": token}`` at once: the host sends one after every reply, so a reply the model's code
forged into the reply pipe is found out (the real reply arrives where the host waits for the
sync answer) and never shifts the replies of later calls. The code is parsed; if its last
statement is an expression, that expression's value is returned as
its ``repr`` (like the interactive prompt) and bound to ``_``. Printed output (stdout and stderr)
is captured up to ``max_output_chars``; beyond that the call stops with ``output_limit``. The
per-call CPU limit is a profiling timer (``ITIMER_PROF``, CPU time of the process, microsecond
resolution) armed for the call; its ``SIGPROF`` interrupts the code with a ``timeout`` error and
the namespace survives. ``RLIMIT_CPU`` bounds the worker's whole life (the kernel ends it with
``SIGXCPU``, then ``SIGKILL`` a second later, whatever the code does with the timer). Errors come
back as a short traceback of the model's own cells (frames of the standard library, numpy or
this file are dropped): at most ``_MAX_FRAMES`` frames and ``max_error_chars`` characters,
formatted under the same CPU timer (at most ``_FORMAT_CPU_SECONDS``), so an exception whose
``__str__`` never returns, or a traceback a million frames deep, stops with the worker's state
kept. Text the code hands over as a ``str`` subclass is copied to a plain ``str`` first (its
``__len__`` cannot hide output from the limit).

Frames: a 4-byte big-endian length, then that many bytes of UTF-8 JSON, non-ASCII characters
written as they are: at most 6 bytes a character (``\\u00XX`` for control characters), so a
reply stays within the host's cap for any output within ``max_output_chars``.
"""

from __future__ import annotations

import ast
import collections
import io
import json
import linecache
import os
import resource
import signal
import socket
import struct
import sys
import traceback

_HEADER = struct.Struct(">I")
_CELL_PREFIX = "<cell-"
_MAX_FRAMES = 6
_MAX_TRACEBACK_WALK = 1_000_000  # traceback entries looked at (the cell frames are kept)
_FORMAT_CPU_SECONDS = 1.0  # CPU time allowed to format one error (a bounded traceback: ms)
_REARM_SECONDS = 0.1  # CPU time between further interrupts once the limit is reached
_HOST_PATHS = ("/etc/passwd", "/etc/shadow", "/root", "/home", "/work", "/var", "/usr/bin", "/sys")


class CpuLimitExceeded(BaseException):
    """Raised into the model's code by SIGPROF (a BaseException: ``except Exception`` in the
    model's code does not swallow it)."""


class OutputLimitExceeded(BaseException):
    """Raised by the output capture once the call printed ``max_output_chars`` characters."""


class _State:
    in_user_code = False


def _on_sigprof(signum: int, frame: object) -> None:
    # The timer is disarmed after each call; a late tick outside the model's code is ignored.
    if _State.in_user_code:
        raise CpuLimitExceeded()


def _on_sigxcpu(signum: int, frame: object) -> None:
    os._exit(128 + signal.SIGXCPU)


class _Capture(io.TextIOBase):
    """stdout/stderr of one call: keeps at most ``limit`` characters, then raises."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.exceeded = False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        text = _plain(text)
        if self.exceeded:
            raise OutputLimitExceeded()
        room = self.limit - self.size
        if len(text) > room:
            self.parts.append(text[:room])
            self.size = self.limit
            self.exceeded = True
            raise OutputLimitExceeded()
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def text(self) -> str:
        return "".join(self.parts)


def _read_exact(fd: int, size: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < size:
        chunk = os.read(fd, size - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(fd: int) -> dict | None:
    head = _read_exact(fd, _HEADER.size)
    if head is None:
        return None
    body = _read_exact(fd, _HEADER.unpack(head)[0])
    return None if body is None else json.loads(body.decode("utf-8"))


def _send(fd: int, message: dict) -> None:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    view = memoryview(_HEADER.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


def _plain(text: str) -> str:
    """An exact ``str`` copy of ``text`` (a subclass may redefine ``__len__``, slicing, ``encode``)."""
    return text if type(text) is str else "".join([text])


def _clean(text: str) -> str:
    # Lone surrogates (possible in printed str) would break the UTF-8 JSON reply.
    return _plain(text).encode("utf-8", "replace").decode("utf-8")


def _count_tasks() -> int:
    """Tasks (processes and threads) in this pid namespace: the worker alone (``--as-pid-1``)."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return max(count, 1)


def _set_limits(cfg: dict) -> None:
    def both(kind: int, value: int) -> None:
        resource.setrlimit(kind, (value, value))

    both(resource.RLIMIT_CORE, 0)
    both(resource.RLIMIT_NOFILE, int(cfg["max_open_files"]))
    both(resource.RLIMIT_FSIZE, int(cfg["max_file_bytes"]))
    both(resource.RLIMIT_NPROC, _count_tasks() + int(cfg["max_processes"]))
    cpu = int(cfg["worker_cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    both(resource.RLIMIT_AS, int(cfg["memory_bytes"]))
    signal.signal(signal.SIGPROF, _on_sigprof)
    # The worker is pid 1 of its namespace, where a signal left at its default action is
    # ignored: SIGXCPU (CPU budget spent) must end the worker explicitly (SIGKILL follows a
    # second later if the code took this handler away).
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    # A write past RLIMIT_FSIZE then fails with EFBIG instead of killing the worker.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _status_fields() -> dict[str, str]:
    with open("/proc/self/status") as fh:
        return dict(line.split(":\t", 1) for line in fh.read().splitlines() if ":\t" in line)


def _root_writable() -> bool:
    probe = "/.localfin-probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def _facts() -> dict:
    status = _status_fields()
    return {
        "uid": os.getuid(),
        "euid": os.geteuid(),
        "gid": os.getgid(),
        "cap_eff": int(status.get("CapEff", "ffff"), 16),
        "cap_prm": int(status.get("CapPrm", "ffff"), 16),
        "cap_bnd": int(status.get("CapBnd", "ffff"), 16),
        "no_new_privs": int(status.get("NoNewPrivs", "0").strip()),
        "seccomp": int(status.get("Seccomp", "0").strip()),
        "interfaces": sorted(name for _, name in socket.if_nameindex()),
        "root_writable": _root_writable(),
        "host_paths_visible": [p for p in _HOST_PATHS if os.path.lexists(p)],
        "nproc_limit": resource.getrlimit(resource.RLIMIT_NPROC)[0],
        "tasks": _count_tasks(),
        "env_keys": sorted(os.environ),
        "python": sys.version.split()[0],
    }


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _interruptible(seconds: float, step: object) -> object:
    """``step()`` under the per-call CPU timer: SIGPROF after ``seconds`` of CPU time raises
    :class:`CpuLimitExceeded` inside it, and again every ``_REARM_SECONDS`` after that (code
    that swallows one interrupt, as ``traceback`` does around ``__str__``, meets the next). The
    timer is off again when this returns or raises."""
    try:
        _State.in_user_code = True
        signal.setitimer(signal.ITIMER_PROF, seconds, _REARM_SECONDS)
        return step()  # type: ignore[operator]
    finally:
        _State.in_user_code = False
        signal.setitimer(signal.ITIMER_PROF, 0)


def _type_name(cls: type) -> str:
    # type's own __name__ slot: a metaclass property of that name is not consulted
    return type.__dict__["__name__"].__get__(cls, type)  # type: ignore[no-any-return]


def _format_error(exc: BaseException, max_chars: int) -> str:
    """The last cell frames of ``exc``'s traceback and its message (runs the model's
    ``__str__``: call under :func:`_interruptible`)."""
    kept: collections.deque = collections.deque(maxlen=_MAX_FRAMES)
    tb = exc.__traceback__
    for _ in range(_MAX_TRACEBACK_WALK):
        if tb is None:
            break
        if tb.tb_frame.f_code.co_filename.startswith(_CELL_PREFIX):
            kept.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    summary = traceback.StackSummary.extract(iter(kept), limit=None, lookup_lines=True)
    lines = ["Traceback (most recent call last):\n"] if kept else []
    lines += summary.format()
    lines += traceback.format_exception_only(type(exc), exc)
    text = _plain("".join(lines))
    if len(text) > max_chars:
        text = "... (traceback cut)\n" + text[-max_chars:]
    return text


def _describe(exc: BaseException, cpu_seconds: float, max_chars: int) -> str:
    """:func:`_format_error` under the CPU timer; a short fixed text when even that fails."""
    name = _type_name(type(exc))
    try:
        text = _interruptible(min(cpu_seconds, _FORMAT_CPU_SECONDS), lambda: _format_error(exc, max_chars))
    except CpuLimitExceeded:
        text = f"{name} (its message could not be formatted within the CPU limit)"
    except OutputLimitExceeded:
        text = f"{name} (formatting its message printed past the output limit)"
    except MemoryError:
        text = f"{name} (formatting its message ran out of memory)"
    except BaseException as inner:  # noqa: BLE001 - the model's __str__ may raise anything
        text = f"{name} (formatting its message raised {_type_name(type(inner))})"
    return _clean(str(text))


def _exec_cell(code: str, filename: str, namespace: dict) -> object:
    tree = ast.parse(code, filename, "exec")
    last: ast.Expression | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(tree, filename, "exec"), namespace)
    if last is None:
        return None
    return eval(compile(last, filename, "eval"), namespace)


def _run(request: dict, namespace: dict, number: int, cfg: dict) -> dict:
    code = request["code"]
    cpu_seconds = float(request["cpu_seconds"])
    limit = int(cfg["max_output_chars"])
    max_error = int(cfg["max_error_chars"])
    capture = _Capture(limit)
    start = _cpu_used()
    value_text: str | None = None
    error: dict | None = None

    def cell() -> str | None:
        value = _exec_cell(code, f"{_CELL_PREFIX}{number}>", namespace)
        if value is None:
            return None
        namespace["_"] = value
        return _plain(repr(value))

    sys.stdout = sys.stderr = capture
    try:
        value_text = _interruptible(cpu_seconds, cell)  # type: ignore[assignment]
    except CpuLimitExceeded:
        error = {"kind": "timeout", "text": ""}
    except OutputLimitExceeded:
        error = {"kind": "output_limit", "text": ""}
    except MemoryError as exc:
        error = {"kind": "memory", "text": _describe(exc, cpu_seconds, max_error)}
    except BaseException as exc:  # noqa: BLE001 - the model's code may raise anything (SystemExit too)
        error = {"kind": "exception", "text": _describe(exc, cpu_seconds, max_error)}
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    if capture.exceeded and error is None:  # the code caught OutputLimitExceeded itself
        error = {"kind": "output_limit", "text": ""}
    if value_text is not None and len(value_text) > limit:
        value_text = value_text[:limit] + f"... [{len(value_text) - limit} chars cut]"
    return {
        "stdout": _clean(capture.text()),
        "value": None if value_text is None else _clean(value_text),
        "error": error,
        "cpu_seconds": round(_cpu_used() - start, 4),
        "nonce": request.get("nonce"),
    }


def main() -> None:
    cfg = json.loads(sys.argv[1])
    in_fd, out_fd = int(cfg["in_fd"]), int(cfg["out_fd"])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.set_inheritable(in_fd, False)
    os.set_inheritable(out_fd, False)
    sys.path.append(cfg["site"])
    _set_limits(cfg)
    _send(out_fd, {"ready": True, "facts": _facts()})
    namespace: dict = {"__name__": "__sandbox__", "__builtins__": __builtins__}
    number = 0
    while True:
        request = _recv(in_fd)
        if request is None:
            return
        if "sync" in request:
            _send(out_fd, {"sync": request["sync"]})
            continue
        number += 1
        _send(out_fd, _run(request, namespace, number, cfg))


if __name__ == "__main__":
    main()
