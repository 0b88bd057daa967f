"""Errors of the serving layer, under the root classes of :mod:`localfin.errors`.

Every package raises subclasses of :class:`LocalfinError`; third-party errors are translated
at the boundary so that callers (the CLI, the agents) catch one family and show one message.
"""

from __future__ import annotations

from localfin.errors import (
    ConfigError,
    DamagedFileError,
    LocalfinError,
    ServerUnavailableError,
    WriteFailedError,
)

__all__ = [
    "LocalfinError",
    "ConfigError",
    "BackendError",
    "ModelOutputError",
    "JournalError",
    "JournalDamagedError",
    "JournalWriteError",
    "ServerUnavailableError",
    "ClusterUnavailableError",
    "ModelNotPreparedError",
]


class BackendError(LocalfinError, RuntimeError):
    """A serving backend failed (engine start, HTTP error, timeout) after its retries.

    ``done``: results of the failed call that did arrive (position -> result), which a journal
    records before the error goes on."""

    def __init__(self, message: str, done: dict[int, object] | None = None) -> None:
        super().__init__(message)
        self.done: dict[int, object] = dict(done or {})


class ModelOutputError(LocalfinError, ValueError):
    """A model reply could not be parsed or did not satisfy its schema."""


class JournalError(LocalfinError, RuntimeError):
    """The SQLite call journal could not be opened, read or written."""


class JournalDamagedError(DamagedFileError, JournalError):
    """The journal file is torn (truncated, malformed) or is not a localfin call journal (exit 6)."""


class JournalWriteError(WriteFailedError, JournalError):
    """A journal transaction could not be written (disk full, I/O error); it was rolled back, so
    the journal holds every earlier chunk and nothing of this one (exit 5)."""


class ModelNotPreparedError(LocalfinError, FileNotFoundError):
    """A registry model has no local weights yet; the message says how to prepare them."""

    exit_code = 2


class ClusterUnavailableError(ServerUnavailableError):
    """The Ray cluster a run was pointed at did not answer (its head is down or the address is
    wrong); nothing was sent to a model (exit 4)."""
