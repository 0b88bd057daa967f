"""Errors of the serving layer, under the root classes of :mod:`localfin.errors`.

Every package raises subclasses of :class:`LocalfinError`; third-party errors are translated
at the boundary so that callers (the CLI, the agents) catch one family and show one message.
"""

from __future__ import annotations

from localfin.errors import ConfigError, LocalfinError

__all__ = [
    "LocalfinError",
    "ConfigError",
    "BackendError",
    "ModelOutputError",
    "JournalError",
    "ModelNotPreparedError",
]


class BackendError(LocalfinError, RuntimeError):
    """A serving backend failed (engine start, HTTP error, timeout) after its retries."""


class ModelOutputError(LocalfinError, ValueError):
    """A model reply could not be parsed or did not satisfy its schema."""


class JournalError(LocalfinError, RuntimeError):
    """The SQLite call journal could not be opened, read or written."""


class ModelNotPreparedError(LocalfinError, FileNotFoundError):
    """A registry model has no local weights yet; the message says how to prepare them."""

    exit_code = 2
