"""SQLite journal of every model call, keyed by the hash of the exact request.

A journaled backend looks each request up before calling the model and records each result as
soon as its chunk returns, in one transaction per chunk, so a killed run loses at most the chunk
in flight and a rerun calls the model only for requests that are not journaled yet. The file is
in WAL mode with a busy timeout, so several processes may write to one journal at once.
Failed calls (``finish_reason == "error"``) are not journaled: a rerun retries them.

Faults (docs/faults.md): a file that is not a journal, or one cut short (its header counts
more pages than the file holds; with ``verify=True`` also SQLite's ``quick_check``), is a
:class:`~serving.errors.JournalDamagedError` naming it (exit code 6) before anything is sent;
a transaction that cannot be written (a full disk) is rolled back and raised as a
:class:`~serving.errors.JournalWriteError` (exit code 5), so the journal holds every earlier
chunk whole. :class:`JournaledBackend` is where a run stops on request: before it sends a
chunk it checks :func:`localfin.interrupt.check` (SIGINT / SIGTERM), and when the server goes
away mid-chunk it journals the chunk's answered calls before the error goes on.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localfin import interrupt
from serving.chat.backend import Backend
from serving.chat.types import ChatRequest, ChatResult, ensure_requests
from serving.errors import (
    BackendError,
    ConfigError,
    JournalDamagedError,
    JournalError,
    JournalWriteError,
    ServerUnavailableError,
)

__all__ = [
    "Journal",
    "JournaledBackend",
    "TokenSummary",
    "CallUsage",
    "check_journal_file",
    "journal_problem",
    "COLUMNS",
]

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key               TEXT PRIMARY KEY,
    run_id            TEXT NOT NULL,
    call_type         TEXT NOT NULL,
    model             TEXT NOT NULL,
    backend           TEXT NOT NULL,
    revision          TEXT NOT NULL,
    finish_reason     TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens     INTEGER NOT NULL,
    latency_s         REAL NOT NULL,
    created_at        REAL NOT NULL,
    request_json      TEXT NOT NULL,
    result_json       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_run ON calls(run_id, call_type);
"""

#: the columns of the ``calls`` table, in order
COLUMNS = (
    "key",
    "run_id",
    "call_type",
    "model",
    "backend",
    "revision",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "latency_s",
    "created_at",
    "request_json",
    "result_json",
)
_MAGIC = b"SQLite format 3\x00"
#: SQLite's messages for a file it cannot use as a database / for a write with no room
_DAMAGED = ("file is not a database", "malformed", "not a database", "file is encrypted")
_NO_ROOM = ("disk is full", "disk i/o error")


def check_journal_file(path: str | Path) -> str | None:
    """What is wrong with the journal file ``path`` as a file (None: nothing seen; a missing or
    empty file is a new journal): not a SQLite database, or cut short (its header counts more
    pages than the file holds). O(1): reads the 100-byte header only."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size == 0:
            return None
        with open(p, "rb") as fh:
            head = fh.read(100)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    if len(head) < 100 or not head.startswith(_MAGIC):
        return "not a SQLite database (torn, or another kind of file)"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    if pages and page and size < pages * page:
        return f"cut short: {size} bytes where its header counts {pages} pages of {page} bytes"
    return None


def journal_problem(path: str | Path) -> str | None:
    """What is wrong with the journal ``path`` (None: a whole localfin journal), read only: the
    file check of :func:`check_journal_file`, SQLite's ``quick_check`` and the table's columns.
    For audits; it writes nothing."""
    problem = check_journal_file(path)
    if problem is not None:
        return problem
    try:
        db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return f"cannot open it ({exc})"
    try:
        found = db.execute("PRAGMA quick_check(1)").fetchone()
        if found is None or found[0] != "ok":
            return f"SQLite's quick_check fails ({found[0] if found else 'no answer'})"
        columns = tuple(r[1] for r in db.execute("PRAGMA table_info(calls)"))
    except sqlite3.Error as exc:
        return f"not a readable SQLite database ({exc})"
    finally:
        db.close()
    if columns != COLUMNS:
        return f"not a localfin call journal (its calls table has columns {list(columns)})"
    return None


@dataclass(frozen=True)
class TokenSummary:
    """Token and latency totals of one call type."""

    call_type: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    latency_s: float
    fallbacks: int


@dataclass(frozen=True)
class CallUsage:
    """What one journaled call cost: its tokens and its share of engine seconds (the wall time of
    the engine call that answered it divided by the number of requests that engine call answered:
    the rows journaled in the same transaction with the same latency)."""

    key: str
    call_type: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    engine_s: float


class Journal:
    """An append-only call journal in one SQLite file (WAL).

    Args:
        path: the database file (created with its folder if missing).
        run_id: label stored with every new row (e.g. an experiment name).
        busy_timeout_s: how long a writer waits for another writer's lock (seconds).
        verify: also run SQLite's ``quick_check`` on an existing file (reads all of it: runs
            that resume ask for it, readers of a finished folder do not).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        run_id: str = "default",
        busy_timeout_s: float = 60.0,
        verify: bool = False,
    ) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self._lock = threading.Lock()
        problem = check_journal_file(self.path)
        if problem is not None:
            raise self._damaged(problem)
        existed = self.path.is_file() and self.path.stat().st_size > 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalWriteError(f"cannot create the folder of journal {self.path}: {exc}") from exc
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout_s, check_same_thread=False, isolation_level=None
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            if existed and verify:
                found = self._db.execute("PRAGMA quick_check(1)").fetchone()
                if found is None or found[0] != "ok":
                    raise self._damaged(f"SQLite's quick_check fails ({found[0] if found else 'no answer'})")
            columns = tuple(r[1] for r in self._db.execute("PRAGMA table_info(calls)"))
            if columns and columns != COLUMNS:
                self._db.close()
                raise self._damaged(
                    f"not a localfin call journal (its calls table has columns {list(columns)})"
                )
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise self._translate(exc, "open") from exc

    def _damaged(self, what: str) -> JournalDamagedError:
        return JournalDamagedError(
            f"journal {self.path} is damaged: {what}; restore it from a copy, or move it away to "
            "start the run's calls afresh"
        )

    def _translate(self, exc: sqlite3.Error, doing: str) -> JournalError:
        """Our error for a SQLite error while ``doing`` (open / read / write) the journal."""
        text = str(exc).lower()
        if any(m in text for m in _DAMAGED):
            return self._damaged(str(exc))
        if doing != "read" and any(m in text for m in _NO_ROOM):
            return JournalWriteError(
                f"cannot write journal {self.path}: {exc}; the transaction was rolled back, every "
                "earlier chunk is kept: free space, then rerun with --resume"
            )
        return JournalError(f"cannot {doing} journal {self.path}: {exc}")

    def get(self, key: str) -> ChatResult | None:
        """The journaled result for a request key, or ``None``."""
        found = self.get_many([key])
        return found.get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, ChatResult]:
        keys = list(dict.fromkeys(keys))
        out: dict[str, ChatResult] = {}
        with self._lock:
            try:
                for start in range(0, len(keys), 500):
                    part = keys[start : start + 500]
                    q = f"SELECT key, result_json FROM calls WHERE key IN ({','.join('?' * len(part))})"
                    for key, blob in self._db.execute(q, part):
                        out[key] = ChatResult.from_dict(json.loads(blob), from_journal=True)
            except sqlite3.Error as exc:
                raise self._translate(exc, "read") from exc
        return out

    def put_many(self, pairs: Sequence[tuple[ChatRequest, ChatResult]]) -> int:
        """Record results in one transaction; returns how many rows were new.

        Error results are skipped. A key already present is kept (first write wins: the
        journal is append-only).
        """
        rows = []
        now = time.time()
        for req, res in pairs:
            if res.finish_reason == "error":
                continue
            if res.request_key != req.key():
                raise JournalError("result.request_key does not match the request it is stored for")
            u = res.usage
            rows.append(
                (
                    res.request_key,
                    self.run_id,
                    req.call_type,
                    req.model,
                    res.backend,
                    res.revision,
                    res.finish_reason,
                    u.prompt_tokens,
                    u.completion_tokens,
                    u.cached_tokens,
                    res.latency_s,
                    now,
                    json.dumps(req.to_dict(), sort_keys=True),
                    json.dumps(res.to_dict(), sort_keys=True),
                )
            )
        if not rows:
            return 0
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                before = self._db.total_changes
                self._db.executemany("INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
                added = self._db.total_changes - before
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise self._translate(exc, "write") from exc
        return added

    def count(self, *, run_id: str | None = None) -> int:
        with self._lock:
            if run_id is None:
                return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
            return int(
                self._db.execute("SELECT COUNT(*) FROM calls WHERE run_id = ?", (run_id,)).fetchone()[0]
            )

    def token_summary(self, *, run_id: str | None = None) -> list[TokenSummary]:
        """Totals per call type (all runs, or one)."""
        where, args = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
        q = f"""SELECT call_type, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens),
                       SUM(cached_tokens), SUM(latency_s),
                       SUM(CASE WHEN finish_reason != 'stop'
                                 OR json_extract(result_json, '$.parse_error') IS NOT NULL
                            THEN 1 ELSE 0 END)
                FROM calls {where} GROUP BY call_type ORDER BY call_type"""
        with self._lock:
            rows = self._db.execute(q, args).fetchall()
        return [TokenSummary(r[0], r[1], r[2], r[3], r[4], float(r[5]), r[6]) for r in rows]

    def call_usage(self, keys: Iterable[str]) -> dict[str, CallUsage]:
        """:class:`CallUsage` of each journaled key among ``keys`` (absent keys are left out)."""
        wanted = set(keys)
        q = """SELECT c.key, c.call_type, c.prompt_tokens, c.completion_tokens, c.cached_tokens,
                      c.latency_s / g.n
               FROM calls c JOIN (SELECT created_at, latency_s, COUNT(*) AS n FROM calls
                                  GROUP BY created_at, latency_s) g
               ON c.created_at = g.created_at AND c.latency_s = g.latency_s"""
        with self._lock:
            try:
                rows = self._db.execute(q).fetchall()
            except sqlite3.Error as exc:
                raise self._translate(exc, "read") from exc
        return {r[0]: CallUsage(r[0], r[1], r[2], r[3], r[4], float(r[5])) for r in rows if r[0] in wanted}

    def records(self, *, run_id: str | None = None) -> list[dict[str, Any]]:
        """Every journaled (request, result) pair, oldest first, for audits."""
        where, args = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
        with self._lock:
            rows = self._db.execute(
                f"SELECT request_json, result_json FROM calls {where} ORDER BY rowid", args
            ).fetchall()
        return [{"request": json.loads(a), "result": json.loads(b)} for a, b in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JournaledBackend:
    """Wraps a backend: replays journaled requests, calls the model for the rest.

    Counts: ``called`` requests sent to the model; ``replayed`` requests answered from what an
    earlier run (an earlier backend on the journal: a rerun, a resume) journaled; ``repeated``
    requests identical to one this backend already sent (two runs sharing a training phase, an
    unchanged reflection), answered by that call. A first run replays nothing.

    Args:
        backend: the backend that calls the model.
        journal: where results are looked up and recorded.
        chunk_size: requests sent to the model per call (and per journal transaction): the
            most a killed run can lose.
    """

    def __init__(self, backend: Backend, journal: Journal, *, chunk_size: int = 16) -> None:
        if chunk_size < 1:
            raise ConfigError(f"chunk_size={chunk_size}; allowed: >= 1")
        self.inner = backend
        self.journal = journal
        self.chunk_size = chunk_size
        self.name = f"journaled:{backend.name}"
        self.replayed = 0
        self.repeated = 0
        self.called = 0
        self._sent: set[str] = set()  # keys this backend journaled (its repeats are not replays)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        reqs = ensure_requests(requests)
        keys = [r.key() for r in reqs]
        done: dict[str, ChatResult] = self.journal.get_many(keys)
        self.repeated += sum(1 for k in keys if k in done and k in self._sent)
        self.replayed += sum(1 for k in keys if k in done and k not in self._sent)
        todo: dict[str, ChatRequest] = {}
        for k, r in zip(keys, reqs):
            if k not in done:
                if k in todo:
                    self.repeated += 1  # identical requests in one batch are called once
                todo.setdefault(k, r)
        pending = list(todo.items())
        for start in range(0, len(pending), self.chunk_size):
            chunk = pending[start : start + self.chunk_size]
            if interrupt.requested() is not None:  # a call boundary: stop here on SIGINT / SIGTERM
                interrupt.check(f" ({self.journal.count()} calls in {self.journal.path})")
            try:
                results = self.inner.chat([r for _, r in chunk])
            except (ServerUnavailableError, BackendError) as exc:
                # the server went away (or the engine failed) mid-chunk: keep what was answered
                answered = [(chunk[i][1], res) for i, res in sorted(exc.done.items()) if i < len(chunk)]
                if answered:
                    self.called += len(answered)
                    self.journal.put_many(answered)  # type: ignore[arg-type]
                    self._sent.update(r.key() for r, _ in answered)
                raise
            self.called += len(chunk)
            self.journal.put_many([(r, res) for (_, r), res in zip(chunk, results)])
            self._sent.update(k for k, _ in chunk)
            for (k, _), res in zip(chunk, results):
                done[k] = res
        return [done[k] for k in keys]

    def effective_sampling(self, req: ChatRequest) -> dict[str, Any] | None:
        """The sampling values the wrapped backend applies to ``req`` (None where it cannot
        say, e.g. the scripted backend)."""
        fn = getattr(self.inner, "effective_sampling", None)
        return fn(req) if callable(fn) else None

    def close(self) -> None:
        self.inner.close()
