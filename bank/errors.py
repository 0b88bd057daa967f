"""Errors raised by the experience bank (all subclasses of :class:`localfin.errors.LocalfinError`)."""

from __future__ import annotations

from localfin.errors import ConfigError, InputError, LocalfinError

__all__ = [
    "BankError",
    "BankConfigError",
    "BankInputError",
    "BankIntegrityError",
    "EmbedderError",
    "IndexError_",
]


class BankError(LocalfinError, RuntimeError):
    """The bank could not be opened, read or written (SQLite or index file trouble)."""


class BankConfigError(ConfigError):
    """A bank or retrieval parameter is out of range; the message names it and the allowed values."""


class BankInputError(InputError):
    """An input file (entries, queries) or bank folder is missing or malformed; the message
    names the file and line."""


class BankIntegrityError(BankError):
    """The stored bank is inconsistent (rows, vectors, index); the message says which check failed."""


class EmbedderError(BankError):
    """The embedding model could not be loaded or produced vectors of the wrong shape."""


class IndexError_(BankError):  # noqa: N801 - the builtin name IndexError is taken
    """The hnswlib index failed (its bare RuntimeErrors are translated into this)."""
