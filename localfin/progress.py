"""Progress for long work: a live display on a terminal, plain lines elsewhere (CI, pipes).

Library code takes a :class:`Progress` argument (default :data:`NULL_PROGRESS`, which shows
nothing) and reports what it does; only the CLI builds a visible one, with
:func:`console_progress`. Nothing global: each command makes its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

__all__ = [
    "Progress",
    "Task",
    "NullProgress",
    "LineProgress",
    "RichProgress",
    "NULL_PROGRESS",
    "console_progress",
]


class Task(Protocol):
    """One unit of long work: advance it, or change its total or its info text."""

    def advance(self, n: int = 1) -> None: ...

    def update(
        self, *, completed: int | None = None, total: int | None = None, info: str | None = None
    ) -> None: ...


class Progress(Protocol):
    """What library code reports to: tasks with a count, and one-line notes."""

    def task(self, description: str, total: int | None = None) -> Any:
        """A context manager yielding a :class:`Task`; ``total=None`` is an open-ended task."""
        ...

    def note(self, message: str) -> None: ...


class _NullTask:
    def advance(self, n: int = 1) -> None:
        return None

    def update(
        self, *, completed: int | None = None, total: int | None = None, info: str | None = None
    ) -> None:
        return None


class NullProgress:
    """Shows nothing (the default of every library function)."""

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[_NullTask]:
        yield _NullTask()

    def note(self, message: str) -> None:
        return None


NULL_PROGRESS = NullProgress()


class _LineTask:
    def __init__(self, owner: LineProgress, description: str, total: int | None) -> None:
        self.owner, self.description, self.total = owner, description, total
        self.completed = 0
        self.info = ""
        self.t0 = time.monotonic()
        self._last_emit = self.t0
        self._last_decile = 0

    def advance(self, n: int = 1) -> None:
        self.update(completed=self.completed + n)

    def update(
        self, *, completed: int | None = None, total: int | None = None, info: str | None = None
    ) -> None:
        if completed is not None:
            self.completed = completed
        if total is not None:
            self.total = total
        if info is not None:
            self.info = info
        now = time.monotonic()
        decile = int(10 * self.completed / self.total) if self.total else 0
        if (
            self.total and decile > self._last_decile and decile < 10
        ) or now - self._last_emit >= self.owner.every_s:
            self._last_decile = max(decile, self._last_decile)
            self._last_emit = now
            self.owner.emit(f"{self.description}: {self._count()}{self._info()} ({now - self.t0:.0f} s)")

    def _count(self) -> str:
        return f"{self.completed}/{self.total}" if self.total else f"{self.completed}"

    def _info(self) -> str:
        return f", {self.info}" if self.info else ""

    def finish(self) -> None:
        counted = f", {self._count()}" if self.total or self.completed else ""
        self.owner.emit(
            f"{self.description}: done{counted}{self._info()} in {time.monotonic() - self.t0:.1f} s"
        )


class LineProgress:
    """Plain lines on a stream: one when a task starts, at most one per tenth of its total (or
    per ``every_s`` seconds), and one when it ends. For logs and CI."""

    def __init__(self, stream: TextIO, *, every_s: float = 30.0) -> None:
        self.stream = stream
        self.every_s = every_s

    def emit(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[_LineTask]:
        t = _LineTask(self, description, total)
        self.emit(f"{description}: started" + (f" ({total} to do)" if total else ""))
        yield t
        t.finish()

    def note(self, message: str) -> None:
        self.emit(message)


class _RichTask:
    def __init__(self, bar: Any, task_id: Any) -> None:
        self.bar, self.task_id = bar, task_id

    def advance(self, n: int = 1) -> None:
        self.bar.advance(self.task_id, n)

    def update(
        self, *, completed: int | None = None, total: int | None = None, info: str | None = None
    ) -> None:
        kwargs: dict[str, Any] = {}
        if completed is not None:
            kwargs["completed"] = completed
        if total is not None:
            kwargs["total"] = total
        if info is not None:
            kwargs["info"] = info
        self.bar.update(self.task_id, **kwargs)


class RichProgress:
    """A live rich display on a terminal; finished tasks stay as one line each."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as _Bar

        self.console = Console(file=stream, highlight=False)
        self._bar = _Bar(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=self.console,
            transient=False,
            # the run log owns descriptors 1 and 2; a live display that swapped sys.stdout for
            # its own proxy would show every engine line that Python code prints
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._open = 0

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[_RichTask]:
        if self._open == 0:
            self._bar.start()
        self._open += 1
        task_id = self._bar.add_task(description, total=total, info="")
        try:
            yield _RichTask(self._bar, task_id)
        finally:
            t = next((x for x in self._bar.tasks if x.id == task_id), None)
            if t is not None and t.total is None:
                self._bar.update(task_id, total=max(t.completed, 1), completed=max(t.completed, 1))
            self._open -= 1
            if self._open == 0:
                self._bar.stop()  # the finished tasks stay on screen, drawn once
                for done in list(self._bar.task_ids):
                    self._bar.remove_task(done)

    def note(self, message: str) -> None:
        self.console.print(message, markup=False)


def console_progress(stream: TextIO) -> Progress:
    """A live display when ``stream`` is a terminal, plain lines otherwise."""
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return RichProgress(stream)
    return LineProgress(stream)
