"""Gathering shards: their journals merged into a run folder's, and the backend the driver
writes the run with (it refuses every call, so the run is written from the journal alone).

The driver merges the journals the keeper holds into the run folder's journal
(:func:`merge_journal`: ``INSERT OR IGNORE`` by request key, so merging twice adds nothing and
a call answered by two attempts is kept once), then runs the very code of the one-process path
on the whole stage with :class:`JournalOnly` as its backend: every request is found in the
journal, and one that is not is an error, never a new model call. The run folder is thus
written by the same code as on one machine, from the same answers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

from serving.chat.types import ChatRequest, ChatResult
from serving.errors import LocalfinError
from serving.journal import COLUMNS, Journal

__all__ = ["merge_journal", "JournalOnly"]


def merge_journal(dst: Path, src: Path, *, run_id: str | None = None) -> int:
    """Copy every call of the journal ``src`` missing from ``dst`` into it (``run_id``: the
    label the rows take, default theirs); returns the rows added."""

    Journal(dst).close()  # creates the schema when new
    cols = ", ".join("?" if c == "run_id" and run_id is not None else c for c in COLUMNS)
    db = sqlite3.connect(dst, timeout=60.0, isolation_level=None)
    try:
        before = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        db.execute("ATTACH DATABASE ? AS src", (str(src),))
        db.execute("BEGIN IMMEDIATE")
        args = (run_id,) if run_id is not None else ()
        db.execute(f"INSERT OR IGNORE INTO calls SELECT {cols} FROM src.calls ORDER BY rowid", args)
        db.execute("COMMIT")
        db.execute("DETACH DATABASE src")
        return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] - before)
    except sqlite3.Error as exc:
        raise LocalfinError(f"cannot merge journal {src} into {dst}: {exc}") from exc
    finally:
        db.close()


class JournalOnly:
    """A backend that refuses every call: gathering must find every request journaled.
    ``settings`` go to the run's manifest in place of a client's (where the calls were made)."""

    name = "journal-only"

    def __init__(self, what: str, settings: Mapping[str, object] | None = None) -> None:
        self.what = what
        self._settings = dict(settings or {"backend": self.name})

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        raise LocalfinError(
            f"gathering {self.what}: {len(requests)} call(s) missing from the merged journal "
            f"(first: {requests[0].call_type}); rerun with --resume"
        )

    def settings(self) -> dict[str, object]:
        return dict(self._settings)

    def close(self) -> None:
        return None
