"""What every command shares: the ``--verbose`` switch, quiet runs with a log file, and where
results go.

A command that starts an engine or does long work runs inside :func:`quiet_run`: engine and
library output goes to a log file (in the command's run or report folder, else
``$LOCALFIN_HOME/logs/``), warnings and progress reach the terminal on stderr, and the result
is written with :func:`result` to the real stdout, so it can be piped.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import typer

from localfin.logs import RunLog, log_path, stdio_is_fds
from localfin.progress import Progress, RichProgress, console_progress

__all__ = ["is_verbose", "quiet_run", "progress_for", "result", "note", "renamed"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: what the ``log:`` line says goes to the file (the terminal keeps warnings that need a look and
#: errors: :func:`localfin.logs.is_terminal_worthy`)
_LOG_NOTE = " (engine and library output; problems show here too; --verbose shows all)"


def is_verbose(ctx: typer.Context | None) -> bool:
    """The root command's ``--verbose`` flag (False without a context)."""
    return bool(ctx is not None and ctx.find_root().params.get("verbose"))


@contextmanager
def quiet_run(
    ctx: typer.Context | None, name: str, folder: str | Path | None = None, *, announce: bool = True
) -> Iterator[RunLog]:
    """Run a block with engine and library output captured into a log file (see module doc).

    ``ctx``: the command's context (for ``--verbose``); ``announce``: say on stderr where the
    log file is.
    """
    path = log_path(name, folder)
    with RunLog(path, verbose=is_verbose(ctx), capture_fds=stdio_is_fds()) as rl:
        if announce:
            note(
                rl,
                f"log: {path}" + ("" if rl.verbose else _LOG_NOTE),
            )
        try:
            yield rl
        except BaseException:
            rl.record_failure()
            raise


def progress_for(rl: RunLog) -> Progress:
    """A rich display on a terminal, plain lines otherwise, on the run's stderr; the run's
    terminal lines (warnings) are printed above a live display, not over it."""
    progress = console_progress(rl.stderr)
    if isinstance(progress, RichProgress):
        rl.write_terminal_with(progress.note)
    return progress


def result(rl: RunLog | None, text: str) -> None:
    """Write a command's result (one or more lines) to the real stdout."""
    stream = rl.stdout if rl is not None else sys.stdout
    stream.write(text if text.endswith("\n") else text + "\n")
    stream.flush()


def note(rl: RunLog | None, text: str) -> None:
    """A line for the person at the terminal (stderr), never part of the result."""
    stream = rl.stderr if rl is not None else sys.stderr
    stream.write(text + "\n")
    stream.flush()


def renamed(value: T | None, old_value: T | None, old: str, new: str) -> T | None:
    """The value of option ``new``, or of its deprecated name ``old`` (which logs a warning
    naming ``new``); both given is an error."""
    from localfin.errors import ConfigError

    if old_value is None:
        return value
    if value is not None:
        raise ConfigError(f"{old} and {new} given; allowed: {new} alone ({old} is its deprecated name)")
    log.warning("%s is deprecated and goes in the next release; use %s", old, new)
    return old_value
