"""Stopping a long run on SIGINT / SIGTERM at the next call boundary.

Inside :func:`graceful` (the CLI wraps its long commands in it), the first SIGINT (Ctrl-C) or
SIGTERM (a scheduler's preemption) only records the request and says so on stderr; the model
call in flight finishes and is journaled, and the next call boundary
(:func:`check`, called by :class:`serving.journal.JournaledBackend` before it sends a chunk)
raises :class:`~localfin.errors.Interrupted`: exit code 130 for SIGINT, 143 for SIGTERM, with
the journal flushed and a message that says how to resume. A second signal stops at once
(:class:`StopNow`, a ``KeyboardInterrupt``): the chunk in flight is lost, every journaled call
stays (each chunk is one SQLite transaction); :func:`graceful` turns it into an Interrupted with
``at_once`` set, and the ``localfin`` command then exits without waiting for threads blocked in
a request.

An in-process engine started from a terminal shares its process group: Ctrl-C reaches vLLM's
engine processes too, which exit, so the call in flight fails and is not journaled. The run
still stops with the signal's exit code and its journal intact (:func:`graceful` turns the
failure that follows a requested stop into :class:`Interrupted`). ``kill -INT PID`` or ``kill
-TERM PID`` to the localfin process alone lets that call finish.

The handler does no I/O but one ``os.write`` to descriptor 2 (no lock is taken in a signal
handler); the state is process-wide, as signals are.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from localfin.errors import Interrupted, LocalfinError

__all__ = ["StopNow", "graceful", "check", "requested", "request"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopNow(KeyboardInterrupt):
    """The second signal: stop at once (the CLI exits with 128 + ``signum``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped at once by a second {signal.Signals(signum).name}")
        self.signum = int(signum)


class _State:
    signum: int | None = None
    hint: str = ""
    depth: int = 0


_state = _State()


def requested() -> int | None:
    """The signal that asked the run to stop (None: none)."""
    return _state.signum


def request(signum: int = signal.SIGINT) -> None:
    """Ask the run to stop at the next call boundary, as the first signal does (tests, embedders)."""
    if _state.signum is None:
        _state.signum = int(signum)


def _message(signum: int, where: str = "") -> str:
    name = signal.Signals(signum).name
    hint = _state.hint or "rerun the same command with --resume to continue"
    return f"interrupted by {name} at a call boundary; every answered call is journaled{where}; {hint}"


def check(where: str = "") -> None:
    """Raise :class:`Interrupted` when a stop was requested (call at a call boundary, after the
    last results are journaled; ``where``: e.g. the journal's path and call count)."""
    if _state.signum is not None:
        raise Interrupted(_message(_state.signum, where), _state.signum)


def _handler(signum: int, frame: object) -> None:
    if _state.signum is not None:
        raise StopNow(signum)
    _state.signum = signum
    name = signal.Signals(signum).name
    note = (
        f"WARNING localfin: {name} received: stopping at the next call boundary (the call in flight "
        f"is finished and journaled); send it again to stop at once\n"
    )
    try:
        os.write(2, note.encode())
    except OSError:
        pass


@contextmanager
def graceful(hint: str = "") -> Iterator[None]:
    """Handle SIGINT and SIGTERM as the module says while the block runs (main thread only;
    elsewhere it changes nothing). ``hint``: how to resume, in the Interrupted message (e.g.
    ``rerun with: localfin pairs run --config C --out D --resume``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in _SIGNALS}
    outer_hint = _state.hint
    if _state.depth == 0:
        _state.signum = None
    _state.depth += 1
    _state.hint = hint or outer_hint
    for s in _SIGNALS:
        signal.signal(s, _handler)
    try:
        yield
    except Interrupted:
        raise
    except StopNow as exc:
        name = signal.Signals(exc.signum).name
        hint = _state.hint or "rerun the same command with --resume to continue"
        raise Interrupted(
            f"stopped at once by a second {name}; the call in flight is lost, every journaled call is "
            f"kept; {hint}",
            exc.signum,
            at_once=True,
        ) from exc
    except Exception as exc:
        signum = _state.signum
        if signum is None or (isinstance(exc, LocalfinError) and exc.exit_code != 1):
            raise  # not a stop request's doing, or a failure with its own meaning (a full disk)
        # the signal reached the engine's processes as well (a terminal's Ctrl-C): the call in
        # flight failed because of it; the run stopped on request, with its journal intact
        raise Interrupted(
            _message(signum, f" (the call in flight failed as the signal reached it too: {exc})"), signum
        ) from exc
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _state.depth -= 1
        _state.hint = outer_hint
        if _state.depth == 0:
            _state.signum = None
