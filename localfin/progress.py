"""Progress for long work: a live display on a terminal, plain lines elsewhere (CI, pipes).

Library code takes a :class:`Progress` argument (default :data:`NULL_PROGRESS`, which shows
nothing) and reports what it does; only the CLI builds a visible one, with
:func:`console_progress`. Nothing global: each command makes its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
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


def _clock_text(seconds: float) -> str:
    """``75`` -> ``1m15s``; ``8`` -> ``8s`` (elapsed times and estimates of progress lines)."""
    s = max(0, round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class _LineTask:
    def __init__(self, owner: LineProgress, description: str, total: int | None, depth: int) -> None:
        self.owner, self.description, self.total, self.depth = owner, description, total, depth
        #: the thread that opened it: tasks of parts that run at once (the demo) nest per thread
        self.thread = threading.get_ident()
        self.completed = 0
        self.info = ""
        self.t0 = owner.clock()
        self._last_decile = 0
        #: (time, count) when the count first moved: the pace is measured from there, so a slow
        #: first unit (an engine starting) does not inflate the estimate
        self._first: tuple[float, int] | None = None

    def advance(self, n: int = 1) -> None:
        self.update(completed=self.completed + n)

    def update(
        self, *, completed: int | None = None, total: int | None = None, info: str | None = None
    ) -> None:
        with self.owner.lock:
            if completed is not None:
                if self._first is None and completed > self.completed:
                    self._first = (self.owner.clock(), completed)
                self.completed = completed
            if total is not None:
                self.total = total
            if info is not None:
                self.info = info
        if self.owner.stages_only:
            self.owner.beat()
            return
        decile = int(10 * self.completed / self.total) if self.total else 0
        if self.total and self._last_decile < decile < 10:
            self._last_decile = decile
            self.owner.emit(self.status())
        else:
            self.owner.beat()

    def _count(self) -> str:
        return f"{self.completed}/{self.total}" if self.total else f"{self.completed}"

    def _info(self) -> str:
        return f", {self.info}" if self.info else ""

    def eta(self, now: float) -> str:
        """``, ~1m20s left`` from the pace since the count first moved (from the start while it
        moved only once; empty before that or without a total)."""
        if not self.total or self.completed <= 0 or self.completed >= self.total:
            return ""
        t1, c1 = self._first if self._first is not None else (self.t0, 0)
        if self.completed > c1:
            pace = (now - t1) / (self.completed - c1)
        else:
            pace = (now - self.t0) / self.completed
        return f", ~{_clock_text(pace * (self.total - self.completed))} left"

    def status(self) -> str:
        """One plain status line: count, info, elapsed time and the estimate of the time left."""
        now = self.owner.clock()
        return (
            f"{self.description}: {self._count()}{self._info()}, "
            f"{_clock_text(now - self.t0)} elapsed{self.eta(now)}"
        )

    def finish(self, *, failed: bool = False) -> None:
        """The task's last line: ``done`` with its count, or, when an error ends it (``failed``),
        ``stopped at`` the count it reached (never "done" before an error line)."""
        counted = f", {self._count()}" if self.total or self.completed else ""
        took = self.owner.clock() - self.t0
        if self.owner.stages_only:
            if self.depth == 0:
                count = f" {self.completed}/{self.total}" if self.total else ""
                end = " stopped by an error" if failed else ""
                self.owner.emit(f"  {self.description}:{count}{self._info()}{end} ({took:.0f} s)")
            return
        if failed:
            at = f"{self._count()}{self._info()}"
            self.owner.emit(f"{self.description}: stopped at {at} after {took:.1f} s")
            return
        self.owner.emit(f"{self.description}: done{counted}{self._info()} in {took:.1f} s")


class LineProgress:
    """Plain lines on a stream, for logs, pipes and CI: one when a task starts, at most one per
    tenth of its total, one when it ends, and a *heartbeat*: whenever ``every_s`` seconds pass
    without a line while a task is open, a status line of the innermost open task (count, info,
    elapsed, estimated time left). The heartbeat is checked at every task update and by a
    daemon thread (``heartbeat_thread``), so one long engine call cannot silence it.

    ``stages_only``: write only when a top-level task ends (nested tasks silent) and the
    heartbeat lines (the demo's short output). ``clock``: the time source (tests inject one).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        every_s: float = 30.0,
        stages_only: bool = False,
        clock: Callable[[], float] = time.monotonic,
        heartbeat_thread: bool = True,
    ) -> None:
        self.stream = stream
        self.every_s = every_s
        self.stages_only = stages_only
        self.clock = clock
        self.heartbeat_thread = heartbeat_thread
        self.lock = threading.RLock()
        self._open: list[_LineTask] = []
        self._last_line = clock()
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def emit(self, line: str) -> None:
        with self.lock:
            self._last_line = self.clock()
            self.stream.write(line + "\n")
            self.stream.flush()

    def beat(self) -> bool:
        """Write the innermost open task's status line if ``every_s`` passed since the last line
        (the heartbeat); returns whether it wrote one."""
        with self.lock:
            if not self._open or self.clock() - self._last_line < self.every_s:
                return False
            # the innermost task that counts something (a nested one without a total says less)
            task = next((t for t in reversed(self._open) if t.total), self._open[-1])
            top = next(t for t in self._open if t.thread == task.thread)
            prefix = f"{top.description} / " if task is not top and self.stages_only else ""
            self.emit(f"  ... {prefix}{task.status()}")
            return True

    def _start_thread(self) -> None:
        stop = threading.Event()
        period = max(self.every_s / 3, 0.05)

        def loop() -> None:
            while not stop.wait(period):
                self.beat()

        self._stop = stop
        self._thread = threading.Thread(target=loop, name="progress-heartbeat", daemon=True)
        self._thread.start()

    def _stop_thread(self) -> None:
        if self._stop is not None and self._thread is not None:
            self._stop.set()
            self._thread.join()
        self._stop = self._thread = None

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[_LineTask]:
        with self.lock:
            me = threading.get_ident()
            t = _LineTask(self, description, total, sum(o.thread == me for o in self._open))
            self._open.append(t)
            first = len(self._open) == 1
        if first and self.heartbeat_thread:
            self._start_thread()
        if not self.stages_only:
            self.emit(f"{description}: started" + (f" ({total} to do)" if total else ""))
        failed = False
        try:
            yield t
        except BaseException:
            failed = True  # the error follows this line: it says why, this one only where
            raise
        finally:
            with self.lock:
                self._open.remove(t)
                last = not self._open
            if last:
                self._stop_thread()
            t.finish(failed=failed)

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
        failed = False
        try:
            yield _RichTask(self._bar, task_id)
        except BaseException:
            failed = True
            raise
        finally:
            t = next((x for x in self._bar.tasks if x.id == task_id), None)
            if failed:
                self._bar.update(task_id, info="stopped by an error")  # its bar stays where it got
            elif t is not None and t.total is None:
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
