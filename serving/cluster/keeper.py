"""The journal keeper: every call a shard's model answers is recorded on the driver's node.

A shard (:mod:`serving.cluster.shards`) runs on some node with a journal of its own in a
scratch folder there. That node may be lost (its machine stops; ``kill -9`` of its processes):
its scratch folder goes with it. So each answered engine call is also sent, before the shard
goes on, to the keeper, one Ray actor on the driver's node (``num_cpus=0``, pinned there) that
writes it into ``<root>/<shard key>/journal.sqlite`` (a :class:`serving.journal.Journal`, one
transaction per engine call). When Ray runs a lost shard again, on whichever node, the new
attempt first copies the keeper's journal into its scratch folder and replays it: no call that
was journaled is sent twice, and none is lost. Calls in flight when the node died were never
journaled; the new attempt sends them again (docs/faults.md counts them).

:class:`Relay` is the backend wrapper that sends each engine call's answered requests to the
keeper; with the actor it waits for the keeper's write (the call counts as journaled only
then). The keeper also records each shard's attempts and the node each ran on
(``attempts.txt`` beside the journal). Everything it keeps is on disk, so a keeper that dies
(Ray's memory monitor may pick it) is started again on the driver's node and carries on.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from serving.chat.backend import Backend
from serving.chat.types import ChatRequest, ChatResult
from serving.errors import BackendError, ConfigError, ServerUnavailableError
from serving.journal import Journal

__all__ = ["JOURNAL", "ATTEMPTS", "JournalKeeper", "Relay", "check_key", "write_snapshot", "start_keeper"]

log = logging.getLogger(__name__)

JOURNAL = "journal.sqlite"
#: the node of each attempt of a shard, one line each, beside its journal
ATTEMPTS = "attempts.txt"

#: receives the answered (request, result) pairs of one engine call
Keep = Callable[[list[tuple[ChatRequest, ChatResult]]], None]


def check_key(key: str) -> str:
    """A shard key is a relative folder path (``a/b/s0``) without ``..``."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"shard key {key!r}; allowed: a relative folder path such as 'name/s0'")
    return key


class JournalKeeper:
    """The shards' journals under ``root`` (module doc). Runs as a Ray actor on the driver's
    node (:func:`start_keeper`) or, for the in-process runner, as a plain object."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self._open: dict[str, Journal] = {}

    def path(self, key: str) -> str:
        return str(self.root / check_key(key) / JOURNAL)

    def _journal(self, key: str) -> Journal:
        j = self._open.get(key)
        if j is None:
            j = self._open[key] = Journal(self.path(key), run_id=key)
        return j

    def _attempts_file(self, key: str) -> Path:
        return self.root / check_key(key) / ATTEMPTS

    def begin(self, key: str, node: str) -> int:
        """Record an attempt of shard ``key`` on ``node`` (on disk: a keeper started again
        keeps the count); returns its number (1 for the first)."""
        path = self._attempts_file(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(node + "\n")
        return len(path.read_text(encoding="utf-8").split())

    def attempts(self) -> dict[str, list[str]]:
        """Per shard key, the node of each attempt, in order (every run into this root)."""
        out = {}
        for p in sorted(self.root.glob(f"**/{ATTEMPTS}")):
            out[str(p.parent.relative_to(self.root))] = p.read_text(encoding="utf-8").split()
        return out

    def put(self, key: str, pairs: Sequence[tuple[ChatRequest, ChatResult]]) -> int:
        """Journal answered calls of shard ``key`` (one transaction); returns the rows added."""
        return self._journal(key).put_many(pairs)

    def count(self, key: str) -> int:
        """Calls journaled for shard ``key``."""
        if key in self._open:
            return self._open[key].count()
        path = Path(self.path(key))
        if not path.is_file():
            return 0
        with Journal(path) as j:
            return j.count()

    def snapshot(self, key: str) -> bytes | None:
        """Shard ``key``'s journal as the bytes of one SQLite file (None: nothing journaled)."""
        path = Path(self.path(key))
        if not path.is_file():
            return None
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            # sqlite3_serialize reads through the WAL: every committed transaction is in it
            return bytes(db.serialize())

    def close(self) -> None:
        for j in self._open.values():
            j.close()
        self._open.clear()


def write_snapshot(data: bytes | None, path: Path) -> int:
    """Write a keeper snapshot as the journal file ``path`` (when ``path`` has none); returns
    the calls it holds."""
    if data is None or path.exists():
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    with Journal(path) as j:
        return j.count()


def start_keeper(ray: Any, root: Path, driver_node: str) -> Any:
    """The keeper actor, pinned to the driver's node (its journals are the driver's files).
    Killed (Ray's memory monitor may pick it), it is started again there and the calls sent
    to it meanwhile are made again: everything it keeps is on disk, and writing a call twice
    keeps it once."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)(JournalKeeper)
    strategy = NodeAffinitySchedulingStrategy(node_id=driver_node, soft=False)
    return actor.options(scheduling_strategy=strategy).remote(str(root))


class Relay:
    """Wraps a shard's backend: the answered requests of each engine call go to ``keep``
    before the results are returned (also those that arrived before the server went away)."""

    def __init__(self, inner: Backend, keep: Keep) -> None:
        self.inner = inner
        self.keep = keep
        self.name = inner.name

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        reqs = list(requests)
        try:
            results = self.inner.chat(reqs)
        except (ServerUnavailableError, BackendError) as exc:
            answered = [(reqs[i], r) for i, r in sorted(exc.done.items()) if i < len(reqs)]
            self._keep(answered)  # type: ignore[arg-type]
            raise
        self._keep(list(zip(reqs, results)))
        return results

    def _keep(self, pairs: list[tuple[ChatRequest, ChatResult]]) -> None:
        kept = [(q, r) for q, r in pairs if isinstance(r, ChatResult) and r.finish_reason != "error"]
        if kept:
            self.keep(kept)

    def settings(self) -> dict[str, object]:
        fn = getattr(self.inner, "settings", None)
        return dict(fn()) if callable(fn) else {"backend": self.name}

    def check(self) -> None:
        fn = getattr(self.inner, "check", None)
        if callable(fn):
            fn()

    def effective_sampling(self, req: ChatRequest) -> dict[str, Any] | None:
        fn = getattr(self.inner, "effective_sampling", None)
        return fn(req) if callable(fn) else None

    def close(self) -> None:
        self.inner.close()
