"""One writer per run folder: an OS file lock on ``<folder>/.localfin.lock``.

Two processes writing one run folder (two ``pairs run`` or ``qa eval`` with the same ``--out``)
would interleave their tables and count each other's calls. The first process takes an
exclusive ``flock`` on the folder's lock file and writes its pid, start time and command into
it; a second one fails at once with :class:`~localfin.errors.FolderInUseError` (exit code 3)
naming that pid and time. The kernel releases a ``flock`` when its holder exits, however it
exits (kill -9 included), so a lock file left behind never blocks a resume: only a live holder
does. The file itself stays (removing it would let a third process lock a file the second one
already opened).

Within one process the lock is re-entrant per folder (the CLI takes it before it opens the
folder's log, the run takes it again). ``flock`` is advisory and local: on a network file
system whose server does not support it, two machines may still write one folder.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import functools
import inspect
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from localfin.errors import FolderInUseError
from localfin.files import write_failed

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["LOCK_FILE", "hold", "holder", "locking"]

LOCK_FILE = ".localfin.lock"

_held: dict[str, tuple[int, int]] = {}  # resolved folder -> (fd, depth)
_guard = threading.Lock()


def holder(folder: str | Path) -> dict[str, object]:
    """What the folder's lock file says about its last holder (empty when unreadable)."""
    try:
        data = json.loads((Path(folder) / LOCK_FILE).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(info: dict[str, object]) -> str:
    if not info:
        return "another process"
    what = f"pid {info.get('pid', '?')}"
    if info.get("host"):
        what += f" on {info['host']}"
    if info.get("started"):
        what += f", started {info['started']}"
    if info.get("command"):
        what += f" ({info['command']})"
    return what


@contextmanager
def hold(folder: str | Path, command: str = "") -> Iterator[Path]:
    """Hold ``folder``'s write lock for the block (creating the folder); raise
    FolderInUseError at once when another process holds it. ``command``: recorded for the
    message a second writer sees (default: this process's command line)."""
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failed(path, exc) from exc
    key = str(path.resolve())
    with _guard:
        if key in _held:
            fd, depth = _held[key]
            _held[key] = (fd, depth + 1)
        else:
            _held[key] = (_acquire(path, command), 1)
    try:
        yield path
    finally:
        with _guard:
            fd, depth = _held[key]
            if depth > 1:
                _held[key] = (fd, depth - 1)
            else:
                del _held[key]
                os.close(fd)  # releases the flock


def _acquire(path: Path, command: str = "") -> int:
    lock = path / LOCK_FILE
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise write_failed(lock, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise FolderInUseError(
            f"run folder {path} is in use by {_describe(holder(path))}; wait for it to end or choose "
            "another folder (a lock left by a process that has ended does not block)"
        ) from None
    except OSError as exc:
        os.close(fd)
        raise write_failed(lock, exc) from exc
    info = {
        "pid": os.getpid(),
        "host": os.uname().nodename,
        "started": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": (command or " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]))[:300],
    }
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
    except OSError:  # the lock holds without its note (e.g. a full disk): the run may go on
        pass
    return fd


def locking(param: str) -> Callable[[F], F]:
    """Decorator: the function holds the lock of the folder passed as its argument ``param``
    while it runs (the library's own guard; the CLI takes the same lock earlier)."""

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            folder = sig.bind(*args, **kwargs).arguments[param]
            with hold(folder):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return wrap
