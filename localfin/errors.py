"""The root of localfin's error hierarchy.

Every package raises subclasses of :class:`LocalfinError` and translates third-party errors at
its boundary, so the CLI catches one family and prints one line. Each class carries the exit
code the CLI uses: 2 for bad input or configuration (the user can fix the call), 1 for a
failure at run time.
"""

from __future__ import annotations

__all__ = ["LocalfinError", "ConfigError", "InputError", "exit_code_for"]


class LocalfinError(Exception):
    """Base of every error raised on purpose by localfin (a failure at run time: exit code 1)."""

    exit_code: int = 1


class ConfigError(LocalfinError, ValueError):
    """A parameter or config value is out of its allowed range; the message names both."""

    exit_code = 2


class InputError(LocalfinError, ValueError):
    """An input file or argument is malformed or missing; the message says where and why."""

    exit_code = 2


def exit_code_for(exc: BaseException) -> int:
    """The CLI exit code of an error: the class's own for ours, 2 for any other ``ValueError``
    (e.g. the kernels' input errors, which do not import this module), 1 otherwise."""
    if isinstance(exc, LocalfinError):
        return int(exc.exit_code)
    if isinstance(exc, ValueError):
        return 2
    return 1
