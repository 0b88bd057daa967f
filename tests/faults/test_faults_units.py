"""The pieces the fault paths are built from, each on its own: the journal's stop at a call
boundary, its refusal of a torn or foreign file, the run-folder lock, the failure streak, the
exit codes of the error classes."""

from __future__ import annotations

import signal
import sqlite3

import pytest

from localfin import interrupt, runlock
from localfin.errors import (
    EXIT_CODES,
    DamagedFileError,
    FolderInUseError,
    Interrupted,
    ServerUnavailableError,
    WriteFailedError,
    exit_code_for,
)
from serving.chat.replies import FailureStreak, error_result
from serving.chat.scripted import ScriptedBackend
from serving.chat.types import ChatRequest
from serving.errors import BackendError, JournalDamagedError, JournalWriteError
from serving.journal import Journal, JournaledBackend, check_journal_file, journal_problem


def _reqs(n: int) -> list[ChatRequest]:
    return [ChatRequest.simple("m", f"q{i}", max_tokens=4, call_type="chat") for i in range(n)]


def test_exit_codes_are_one_table():
    assert [e.code for e in EXIT_CODES] == [0, 1, 2, 3, 4, 5, 6, 130, 143]
    assert exit_code_for(FolderInUseError("x")) == 3
    assert exit_code_for(ServerUnavailableError("x")) == 4
    assert exit_code_for(WriteFailedError("x")) == 5 and exit_code_for(JournalWriteError("x")) == 5
    assert exit_code_for(DamagedFileError("x")) == 6 and exit_code_for(JournalDamagedError("x")) == 6
    assert exit_code_for(Interrupted("x", signal.SIGINT)) == 130
    assert exit_code_for(Interrupted("x", signal.SIGTERM)) == 143


def test_a_stop_request_ends_the_run_at_the_next_chunk_with_the_earlier_ones_journaled(tmp_path):
    class StopAfterFirst:
        name = "stop-after-first"

        def __init__(self) -> None:
            self.inner, self.calls = ScriptedBackend(default="ok"), 0

        def chat(self, reqs):
            self.calls += 1
            interrupt.request(signal.SIGTERM)  # as the first signal would, while this call runs
            return self.inner.chat(reqs)

        def close(self) -> None:
            return None

    be = StopAfterFirst()
    with Journal(tmp_path / "j.sqlite") as j, interrupt.graceful("rerun it"):
        with pytest.raises(Interrupted, match="interrupted by SIGTERM at a call boundary") as err:
            JournaledBackend(be, j, chunk_size=2).chat(_reqs(5))
        assert err.value.exit_code == 143 and "(2 calls in" in str(err.value) and "rerun it" in str(err.value)
        assert be.calls == 1 and j.count() == 2  # the call in flight finished and was journaled
    assert interrupt.requested() is None  # reset when the block ends


def test_an_engine_failure_after_a_stop_request_is_the_stop(tmp_path):
    with (
        pytest.raises(Interrupted, match="the call in flight failed as the signal reached it too"),
        interrupt.graceful(),
    ):
        interrupt.request(signal.SIGINT)
        raise BackendError("the vLLM engine died")
    with pytest.raises(WriteFailedError), interrupt.graceful():  # a failure with its own meaning stays
        interrupt.request(signal.SIGINT)
        raise WriteFailedError("cannot write x")


def test_a_torn_or_foreign_journal_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "j.sqlite"
    with Journal(path) as j:
        res = ScriptedBackend(default="ok").chat(_reqs(40))
        j.put_many(list(zip(_reqs(40), res)))
    whole = path.read_bytes()
    assert check_journal_file(path) is None and journal_problem(path) is None
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(JournalDamagedError, match="is damaged: cut short"):
        Journal(path)
    assert path.read_bytes() == whole[: len(whole) // 2]
    assert "cut short" in journal_problem(path)
    path.write_bytes(b"PAR1 not a database at all" * 10)
    with pytest.raises(JournalDamagedError, match="not a SQLite database"):
        Journal(path)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE calls (key TEXT, answer TEXT)")
    with pytest.raises(JournalDamagedError, match="not a localfin call journal"):
        Journal(other)


def test_the_folder_lock_is_exclusive_between_processes_and_reentrant_within_one(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "run"
    with runlock.hold(folder, "first"), runlock.hold(folder):  # re-entrant in this process
        info = runlock.holder(folder)
        assert info["command"] == "first" and info["started"]
        code = (
            "import sys\nfrom localfin import runlock\nfrom localfin.errors import FolderInUseError\n"
            f"try:\n    runlock.hold({str(folder)!r}).__enter__()\nexcept FolderInUseError as e:\n"
            "    print(e)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert "is in use by pid" in out.stdout and "(first)" in out.stdout
    with runlock.hold(folder):  # released
        pass


def test_failures_in_a_row_stop_with_the_answered_results_kept():
    streak = FailureStreak(3, what="the engine")
    req = _reqs(1)[0]
    ok = ScriptedBackend(default="ok").chat([req])[0]
    bad = error_result(req, "engine error: boom", backend="x")
    streak.update([bad, bad, ok, bad])  # an answer in between resets the count
    with pytest.raises(BackendError, match="failed 3 requests in a row") as err:
        streak.update([ok, bad, bad, bad])
    assert list(err.value.done) == [0]  # the answered one, for the journal
    with pytest.raises(Exception, match="max_failures_in_a_row=0"):
        FailureStreak(0)
