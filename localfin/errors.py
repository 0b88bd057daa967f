"""The root of localfin's error hierarchy and the one table of exit codes.

Every package raises subclasses of :class:`LocalfinError` and translates third-party errors at
its boundary, so the CLI catches one family and prints one line. Each class carries the exit
code the CLI uses (:data:`EXIT_CODES`): a scheduler or a script can tell "fix the call" (2)
from "wait and rerun" (3, 4), "free space and rerun" (5), "repair the folder" (6) and "stopped
on request" (130, 143) without reading the message. Every code other than 0 and 2 leaves the
journaled model calls in place: rerunning the same command (with ``--resume`` where the command
has it) continues the run.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

__all__ = [
    "ExitCode",
    "EXIT_CODES",
    "LocalfinError",
    "ConfigError",
    "InputError",
    "FolderInUseError",
    "ServerUnavailableError",
    "WriteFailedError",
    "DamagedFileError",
    "Interrupted",
    "exit_code_for",
    "signal_exit_code",
]


@dataclass(frozen=True)
class ExitCode:
    """One row of the exit-code table: the code, its name, what happened, what to do."""

    code: int
    name: str
    meaning: str
    action: str


#: Every exit code of the ``localfin`` command (docs/faults.md shows this table).
EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(0, "ok", "success", "nothing"),
    ExitCode(
        1,
        "failed",
        "a failure at run time: the engine died or failed repeatedly, a Ray task failed, a bank "
        "database is corrupt, a server did not start",
        "read the message (and the log file it names); fix the cause; rerun with --resume",
    ),
    ExitCode(
        2,
        "bad-input",
        "bad input or configuration: unknown option or model key, a malformed file, a value out "
        "of range, weights not prepared, a server that refuses the API key or does not serve "
        "the model",
        "fix the call or the file and rerun",
    ),
    ExitCode(
        3,
        "folder-in-use",
        "another process writes the same run folder (the message names its pid and start time)",
        "wait for it to end or choose another folder; a dead holder's lock is freed by the kernel",
    ),
    ExitCode(
        4,
        "server-unavailable",
        "the model server did not answer within the retries (connection refused or reset, "
        "HTTP 502/503/504, timeouts), or the Ray cluster's head did not answer at start; the run "
        "stopped at a call boundary",
        "restart the server (or the Ray head), then rerun with --resume",
    ),
    ExitCode(
        5,
        "write-failed",
        "a file of the run could not be written (disk full, file-size limit, I/O error); the "
        "message names the path; the journal is consistent and no table is left half-written",
        "free space, then rerun with --resume",
    ),
    ExitCode(
        6,
        "damaged-file",
        "a file of a run folder is torn or belongs to another run (a truncated journal or "
        "Parquet file, a manifest of another config); the message names the file",
        "remove or restore the file the message names, then rerun with --resume",
    ),
    ExitCode(
        130,
        "interrupted",
        "stopped by SIGINT (Ctrl-C) at a call boundary (a second Ctrl-C stops at once)",
        "rerun with --resume",
    ),
    ExitCode(
        143,
        "terminated",
        "stopped by SIGTERM (a scheduler's preemption) at a call boundary",
        "rerun with --resume",
    ),
)


class LocalfinError(Exception):
    """Base of every error raised on purpose by localfin (a failure at run time: exit code 1)."""

    exit_code: int = 1


class ConfigError(LocalfinError, ValueError):
    """A parameter or config value is out of its allowed range; the message names both."""

    exit_code = 2


class InputError(LocalfinError, ValueError):
    """An input file or argument is malformed or missing; the message says where and why."""

    exit_code = 2


class FolderInUseError(LocalfinError, RuntimeError):
    """Another process holds the run folder's lock (:mod:`localfin.runlock`)."""

    exit_code = 3


class ServerUnavailableError(LocalfinError, RuntimeError):
    """The model server did not answer within the retries; the run stopped at a call boundary.

    ``done``: results of the failed call that did arrive (position in the call -> result), so
    that a journal records them before the run stops (nothing computed is lost)."""

    exit_code = 4

    def __init__(self, message: str, done: dict[int, object] | None = None) -> None:
        super().__init__(message)
        self.done: dict[int, object] = dict(done or {})


class WriteFailedError(LocalfinError, OSError):
    """A file could not be written (disk full, file-size limit, I/O error); names the path.
    ``errno`` and ``filename`` are the failed write's."""

    exit_code = 5

    def __str__(self) -> str:  # the message, not OSError's "[Errno N] ..." form
        return str(self.args[0]) if self.args else ""


class DamagedFileError(InputError):
    """A file of a run folder is torn or foreign; the message names it and what is wrong."""

    exit_code = 6


def signal_exit_code(signum: int) -> int:
    """The shell's code for a process stopped by signal ``signum``: 128 + its number."""
    return 128 + int(signum)


class Interrupted(LocalfinError):
    """The run stopped on SIGINT or SIGTERM at a call boundary (:mod:`localfin.interrupt`)."""

    def __init__(self, message: str, signum: int = signal.SIGINT, *, at_once: bool = False) -> None:
        super().__init__(message)
        self.signum = int(signum)
        self.exit_code = signal_exit_code(signum)
        #: stopped by a second signal, with a call still in flight (not at a call boundary)
        self.at_once = at_once


def exit_code_for(exc: BaseException) -> int:
    """The CLI exit code of an error: the class's own for ours, 2 for any other ``ValueError``
    (e.g. the kernels' input errors, which do not import this module), 1 otherwise."""
    if isinstance(exc, LocalfinError):
        return int(exc.exit_code)
    if isinstance(exc, ValueError):
        return 2
    return 1
