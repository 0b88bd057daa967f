"""The persistent experience bank: SQLite rows (the source of truth, vectors included) plus an
hnswlib index file beside it and an in-memory exact threshold index.

Crash safety: a batch of rows is one SQLite transaction (WAL journal), so a process killed
mid-add leaves the last committed batch. The hnsw file is written to a temp file and moved into
place with ``os.replace``; on open, an index that lags the rows is extended from the SQLite
vectors and one that disagrees with them is rebuilt. Adds and queries take one lock, so threads
may share a bank; one process writes at a time (SQLite locking makes a second writer wait).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bank.embedder import Embedder, normalize_rows
from bank.errors import BankConfigError, BankError, BankIntegrityError, IndexError_
from bank.exact import ExactConfig, ExactThresholdIndex
from bank.index import HnswConfig, HnswIndex
from bank.schema import BankEntry, NewEntry

__all__ = ["ExperienceBank", "IntegrityReport", "DB_NAME", "INDEX_NAME"]

log = logging.getLogger(__name__)

DB_NAME = "bank.sqlite"
INDEX_NAME = "index.hnsw"
SCHEMA_VERSION = "1"
_SPOT_CHECK = 32  # rows whose hnsw vector is compared with the SQLite vector on open/check

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    source_id TEXT NOT NULL,
    dataset TEXT NOT NULL,
    question TEXT NOT NULL,
    context_head TEXT NOT NULL,
    findings TEXT NOT NULL,
    cautions TEXT NOT NULL,
    model_id TEXT NOT NULL,
    dim INTEGER NOT NULL,
    created_at REAL NOT NULL,
    use_count INTEGER NOT NULL DEFAULT 0,
    hit_count INTEGER NOT NULL DEFAULT 0,
    vector BLOB NOT NULL,
    answer TEXT NOT NULL DEFAULT '',
    images TEXT NOT NULL DEFAULT '[]'
);
"""
_COLS = (
    "id, source_id, dataset, question, context_head, findings, cautions, model_id, dim, created_at, "
    "use_count, hit_count, answer, images"
)


@dataclass(frozen=True)
class IntegrityReport:
    """Outcome of :meth:`ExperienceBank.integrity_check` (raised as an error when not ok)."""

    rows: int
    index_rows: int
    checks: tuple[str, ...]  # names of the checks that passed


class ExperienceBank:
    """A bank folder: ``bank.sqlite`` + ``index.hnsw``. Use :meth:`open`."""

    def __init__(
        self, folder: Path, conn: sqlite3.Connection, hnsw_config: HnswConfig, exact_config: ExactConfig
    ) -> None:
        self.folder = folder
        self._conn = conn
        self._lock = threading.RLock()
        self._hnsw_config = hnsw_config
        self._exact_config = exact_config
        self.model_id: str | None = self._meta("model_id")
        dim = self._meta("dim")
        self.dim: int | None = int(dim) if dim is not None else None
        self._sources: list[str] = []
        self._exact: ExactThresholdIndex | None = None
        self._hnsw: HnswIndex | None = None

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        folder: str | Path,
        hnsw_config: HnswConfig | None = None,
        exact_config: ExactConfig | None = None,
    ) -> ExperienceBank:
        """Open (creating if needed) the bank in ``folder``; repairs a lagging index file."""
        folder = Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(folder / DB_NAME, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL+NORMAL: durable across process crashes
            conn.executescript(_DDL)
            _add_columns(conn)
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        except sqlite3.Error as exc:
            raise BankError(f"could not open bank database {folder / DB_NAME}: {exc}") from exc
        bank = cls(folder, conn, hnsw_config or HnswConfig(), exact_config or ExactConfig())
        bank._load()
        return bank

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _load(self) -> None:
        rows = self._conn.execute("SELECT id, source_id, vector FROM entries ORDER BY id").fetchall()
        n = len(rows)
        if n and [r[0] for r in rows] != list(range(n)):
            raise BankIntegrityError(f"entry ids in {self.folder / DB_NAME} are not 0..{n - 1}")
        self._sources = [r[1] for r in rows]
        if self.dim is None:
            return
        vecs = (
            np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(n, self.dim)
            if n
            else np.zeros((0, self.dim), dtype=np.float32)
        )
        self._exact = ExactThresholdIndex(self.dim, self._exact_config)
        self._exact.add(vecs)
        self._hnsw = self._open_index(vecs)

    def _open_index(self, vecs: np.ndarray) -> HnswIndex:
        assert self.dim is not None
        path = self.folder / INDEX_NAME
        for stale in self.folder.glob(f".{INDEX_NAME}.*.tmp"):  # left by a save that was killed
            log.info("removing unfinished index file %s", stale)
            stale.unlink(missing_ok=True)
        n = len(vecs)
        index: HnswIndex | None = None
        if path.exists():
            try:
                index = HnswIndex.load(path, self.dim, self._hnsw_config)
                if len(index) > n or not self._spot_check(index, vecs, len(index)):
                    log.warning("hnsw index %s disagrees with the database; rebuilding", path)
                    index = None
            except IndexError_ as exc:
                log.warning("%s; rebuilding from the database", exc)
                index = None
        if index is None:
            index = HnswIndex(self.dim, self._hnsw_config)
        if len(index) < n:
            log.info("indexing %d rows missing from %s", n - len(index), path)
            index.add(vecs[len(index) :])
            self._save_index(index)
        return index

    @staticmethod
    def _spot_check(index: HnswIndex, vecs: np.ndarray, upto: int) -> bool:
        if upto == 0:
            return True
        rng = np.random.default_rng(upto)
        labels = np.unique(np.concatenate([rng.integers(0, upto, _SPOT_CHECK), [upto - 1]]))
        return bool(np.allclose(index.get_vectors(labels), vecs[labels], atol=1e-5))

    def _save_index(self, index: HnswIndex) -> None:
        index.save(self.folder / INDEX_NAME)
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('index_rows', ?)", (str(len(index)),))

    # ------------------------------------------------------------------- writing
    def __len__(self) -> int:
        return len(self._sources)

    def add(
        self, entries: Sequence[NewEntry], vectors: np.ndarray, model_id: str, save_index: bool = True
    ) -> list[int]:
        """Store ``entries`` with their embedding ``vectors`` (m, dim) from model ``model_id``.

        One transaction: either all rows are stored or none. Returns the new ids. With
        ``save_index`` False the hnsw file is written only at :meth:`flush`/:meth:`close` (the
        rows are safe either way; a lagging index is extended on the next open).
        """
        vecs = normalize_rows(vectors) if len(entries) else np.zeros((0, vectors.shape[-1]), np.float32)
        if len(entries) != len(vecs):
            raise BankConfigError(f"got {len(entries)} entries but {len(vecs)} vectors")
        dim = vecs.shape[1]
        with self._lock:
            if self.model_id is not None and (model_id != self.model_id or dim != self.dim):
                raise BankConfigError(
                    f"bank holds model {self.model_id!r} dim {self.dim}; got model {model_id!r} dim {dim}"
                )
            if not entries:
                return []
            start = len(self)
            now = time.time()
            rows = [
                (
                    start + i,
                    e.source_id,
                    e.dataset,
                    e.question,
                    e.context_head,
                    json.dumps(list(e.findings)),
                    json.dumps(list(e.cautions)),
                    model_id,
                    dim,
                    now,
                    0,
                    0,
                    e.answer,
                    json.dumps(list(e.images)),
                    vecs[i].tobytes(),
                )
                for i, e in enumerate(entries)
            ]
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                if self.model_id is None:
                    self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('model_id', ?)", (model_id,))
                    self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(dim),))
                self._conn.executemany(
                    f"INSERT INTO entries ({_COLS}, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows
                )
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise BankError(f"could not add {len(rows)} entries to {self.folder}: {exc}") from exc
            if self.model_id is None:
                self.model_id, self.dim = model_id, dim
                self._exact = ExactThresholdIndex(dim, self._exact_config)
                self._hnsw = HnswIndex(dim, self._hnsw_config)
            assert self._exact is not None and self._hnsw is not None
            self._sources.extend(e.source_id for e in entries)
            self._exact.add(vecs)
            self._hnsw.add(vecs)
            if save_index:
                self._save_index(self._hnsw)
            return list(range(start, start + len(entries)))

    def add_texts(
        self,
        entries: Sequence[NewEntry],
        embedder: Embedder,
        context_chars: int = 600,
        save_index: bool = True,
    ) -> list[int]:
        """Embed each entry's question + context head with ``embedder`` and :meth:`add` it."""
        vecs = embedder.embed([e.text(context_chars) for e in entries])
        return self.add(entries, vecs, embedder.model_id, save_index=save_index)

    def flush(self) -> None:
        """Write the hnsw file if it lags the rows."""
        with self._lock:
            if self._hnsw is not None and self._meta("index_rows") != str(len(self._hnsw)):
                self._save_index(self._hnsw)

    def record_hits(self, ids: Sequence[int]) -> None:
        """Count one retrieval for each id."""
        self._bump("hit_count", ids)

    def record_uses(self, ids: Sequence[int]) -> None:
        """Count one use (rendered into a prompt) for each id."""
        self._bump("use_count", ids)

    def _bump(self, column: str, ids: Sequence[int]) -> None:
        with self._lock:
            try:
                self._conn.executemany(
                    f"UPDATE entries SET {column} = {column} + 1 WHERE id = ?", [(int(i),) for i in ids]
                )
            except sqlite3.Error as exc:
                raise BankError(f"could not update {column} in {self.folder}: {exc}") from exc

    def close(self) -> None:
        """Flush the index, stop search threads and close the database."""
        with self._lock:
            self.flush()
            if self._exact is not None:
                self._exact.close()
            self._conn.close()

    def __enter__(self) -> ExperienceBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------- reading
    def get(self, ids: Sequence[int]) -> list[BankEntry]:
        """Entries by id, in the order given."""
        ids = [int(i) for i in ids]
        if not ids:
            return []
        with self._lock:
            marks = ",".join("?" * len(ids))
            rows = self._conn.execute(f"SELECT {_COLS} FROM entries WHERE id IN ({marks})", ids).fetchall()
        by_id = {r[0]: _entry(r) for r in rows}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise BankConfigError(f"no entries with ids {missing[:5]} (bank has ids 0..{len(self) - 1})")
        return [by_id[i] for i in ids]

    def source_of(self, entry_id: int) -> str:
        return self._sources[entry_id]

    @property
    def sources(self) -> Sequence[str]:
        """Source item id of every entry, by entry id (the live list: read, never modify)."""
        return self._sources

    def vectors(self) -> np.ndarray:
        """All stored unit vectors, float32 (n, dim), read-only."""
        if self._exact is None:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return self._exact.vectors

    def datasets(self) -> list[str]:
        """Dataset name of every entry, by entry id."""
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT dataset FROM entries ORDER BY id")]

    def threshold_search(
        self, q: np.ndarray, threshold: float, limit: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact: all ids < ``limit`` with cosine >= ``threshold`` (see :mod:`bank.exact`)."""
        with self._lock:
            if self._exact is None:
                return np.zeros(0, dtype=np.int64), np.zeros(0)
            return self._exact.search(q, threshold, limit)

    def knn(self, q: np.ndarray, k: int, ef: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Approximate k nearest entries from hnswlib: (ids, cosine sims)."""
        with self._lock:
            if self._hnsw is None:
                return np.zeros(0, dtype=np.int64), np.zeros(0)
            return self._hnsw.knn(q, k, ef)

    def integrity_check(self) -> IntegrityReport:
        """Check database, rows, vectors and index agree; raises BankIntegrityError if not."""
        with self._lock:
            done: list[str] = []
            res = self._conn.execute("PRAGMA integrity_check").fetchone()[0]
            if res != "ok":
                raise BankIntegrityError(f"sqlite integrity_check failed: {res}")
            done.append("sqlite")
            n = len(self)
            ids = [r[0] for r in self._conn.execute("SELECT id FROM entries ORDER BY id")]
            if ids != list(range(n)):
                raise BankIntegrityError(f"entry ids are not 0..{n - 1} (found {len(ids)} rows)")
            done.append("ids")
            if n == 0:
                return IntegrityReport(0, 0, tuple(done))
            bad = self._conn.execute(
                "SELECT COUNT(*) FROM entries WHERE model_id != ? OR dim != ? OR length(vector) != ?",
                (self.model_id, self.dim, 4 * (self.dim or 0)),
            ).fetchone()[0]
            if bad:
                raise BankIntegrityError(f"{bad} rows disagree with model {self.model_id!r} dim {self.dim}")
            done.append("model")
            assert self._exact is not None and self._hnsw is not None
            vecs = self._exact.vectors
            norms = np.linalg.norm(vecs.astype(np.float64), axis=1)
            if len(vecs) != n or not np.all(np.abs(norms - 1) < 1e-4):
                raise BankIntegrityError("stored vectors are missing or not unit length")
            done.append("vectors")
            if len(self._hnsw) != n or not self._spot_check(self._hnsw, vecs, n):
                raise BankIntegrityError(
                    f"hnsw index holds {len(self._hnsw)} rows for {n} entries or differs"
                )
            done.append("index")
            return IntegrityReport(n, len(self._hnsw), tuple(done))


def _entry(r: tuple) -> BankEntry:
    return BankEntry(
        id=r[0],
        source_id=r[1],
        dataset=r[2],
        question=r[3],
        context_head=r[4],
        findings=tuple(json.loads(r[5])),
        cautions=tuple(json.loads(r[6])),
        model_id=r[7],
        dim=r[8],
        created_at=r[9],
        use_count=r[10],
        hit_count=r[11],
        answer=r[12],
        images=tuple(json.loads(r[13] or "[]")),
    )


def _add_columns(conn: sqlite3.Connection) -> None:
    """A bank made before entries stored their source item's answer (or its images) gets the
    column, empty."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(entries)")}
    if "answer" not in cols:
        conn.execute("ALTER TABLE entries ADD COLUMN answer TEXT NOT NULL DEFAULT ''")
    if "images" not in cols:
        conn.execute("ALTER TABLE entries ADD COLUMN images TEXT NOT NULL DEFAULT '[]'")
