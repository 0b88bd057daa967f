"""Persistent bank: reopen, index repair, kill -9 mid-add, concurrency, capacity growth."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from bank_synth import clustered

from bank.errors import BankConfigError
from bank.exact import brute_force_threshold
from bank.index import HnswConfig
from bank.schema import NewEntry
from bank.store import INDEX_NAME, ExperienceBank

REPO = Path(__file__).resolve().parents[2]


def _entries(lo: int, hi: int) -> list[NewEntry]:
    return [
        NewEntry(f"src{i // 2}", "synth", f"question {i}", f"context {i}", ("find",), ("careful",))
        for i in range(lo, hi)
    ]


def test_add_reopen_and_get(tmp_path: Path) -> None:
    x = clustered(300, 24, 10, 0.7, 0.0, seed=1)
    with ExperienceBank.open(tmp_path, HnswConfig(initial_capacity=16)) as bank:
        assert bank.add(_entries(0, 200), x[:200], "m") == list(range(200))  # grows past 16
        bank.add(_entries(200, 300), x[200:], "m")
        bank.record_hits([3, 3, 5])
        bank.record_uses([5])
    bank = ExperienceBank.open(tmp_path)
    assert len(bank) == 300 and bank.model_id == "m" and bank.dim == 24
    e3, e5 = bank.get([3, 5])
    assert (e3.hit_count, e5.hit_count, e5.use_count) == (2, 1, 1)
    assert e3.findings == ("find",) and e3.source_id == "src1"
    assert bank.integrity_check().rows == 300
    got = bank.threshold_search(x[7], 0.6)
    assert np.array_equal(got[0], brute_force_threshold(x, x[7], 0.6)[0])
    with pytest.raises(BankConfigError, match="model"):
        bank.add(_entries(300, 301), x[:1], "other-model")
    with pytest.raises(BankConfigError, match="ids"):
        bank.get([999])


def test_an_entry_keeps_its_source_items_answer_and_an_older_bank_opens(tmp_path: Path) -> None:
    """The paper's entry holds the source item's gold answer; a bank written before the column
    existed gets it (empty) on open and keeps its rows."""
    import sqlite3

    x = clustered(3, 8, 1, 0.7, 0.0, seed=2)
    old = tmp_path / "old"
    with ExperienceBank.open(old) as bank:
        bank.add(_entries(0, 2), x[:2], "m")
    con = sqlite3.connect(old / "bank.sqlite")  # the table as it was: no answer column
    con.executescript(
        "CREATE TABLE e2 AS SELECT id, source_id, dataset, question, context_head, findings, cautions, "
        "model_id, dim, created_at, use_count, hit_count, vector FROM entries; DROP TABLE entries; "
        "ALTER TABLE e2 RENAME TO entries;"
    )
    con.close()
    with ExperienceBank.open(old) as bank:
        assert [e.answer for e in bank.get([0, 1])] == ["", ""]
        bank.add([NewEntry("s9", "synth", "q9", "c9", ("f",), (), answer="33.2 million")], x[2:], "m")
    with ExperienceBank.open(old) as bank:
        assert bank.get([2])[0].answer == "33.2 million" and len(bank) == 3
        assert bank.integrity_check().rows == 3


def test_missing_or_stale_index_is_rebuilt(tmp_path: Path) -> None:
    x = clustered(120, 16, 5, 0.7, 0.0, seed=2)
    with ExperienceBank.open(tmp_path) as bank:
        bank.add(_entries(0, 60), x[:60], "m")
    stale = (tmp_path / INDEX_NAME).read_bytes()
    with ExperienceBank.open(tmp_path) as bank:
        bank.add(_entries(60, 120), x[60:], "m")
    (tmp_path / INDEX_NAME).write_bytes(stale)  # index lags the rows (as after a crash)
    with ExperienceBank.open(tmp_path) as bank:
        assert bank.integrity_check().index_rows == 120
    (tmp_path / INDEX_NAME).write_bytes(b"garbage")
    (tmp_path / f".{INDEX_NAME}.123.tmp").write_bytes(b"half-written")  # a save killed midway
    with ExperienceBank.open(tmp_path) as bank:
        assert bank.integrity_check().index_rows == 120
    assert not list(tmp_path.glob("*.tmp"))


_WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from bank.store import ExperienceBank
    from bank.schema import NewEntry
    bank = ExperienceBank.open(sys.argv[1])
    rng = np.random.default_rng(0)
    for b in range(10_000):
        ents = [NewEntry(f"s{b}-{i}", "d", f"q {b} {i}") for i in range(200)]
        bank.add(ents, rng.standard_normal((200, 32)).astype(np.float32), "m", save_index=(b % 3 == 0))
        print(b, flush=True)
    """
)


def test_kill_9_during_bulk_add_leaves_last_commit(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert proc.stdout is not None
    for _ in range(8):  # let several batches commit, then kill mid-stream
        assert proc.stdout.readline(), "writer exited early"
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    bank = ExperienceBank.open(tmp_path)
    n = len(bank)
    assert n >= 8 * 200 and n % 200 == 0  # whole batches only
    report = bank.integrity_check()
    assert report.rows == n and report.index_rows == n
    assert bank.get([n - 1])[0].source_id.endswith("-199")


def test_concurrent_adds_and_queries(tmp_path: Path) -> None:
    x = clustered(2400, 16, 20, 0.7, 0.0, seed=4)
    bank = ExperienceBank.open(tmp_path)
    bank.add(_entries(0, 200), x[:200], "m")
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for lo in range(200, 2400, 100):
                bank.add(_entries(lo, lo + 100), x[lo : lo + 100], "m", save_index=False)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    def reader() -> None:
        try:
            for i in range(200):
                limit = len(bank)
                got = bank.threshold_search(x[i], 0.7, limit)
                want = brute_force_threshold(x[:limit], x[i], 0.7)
                assert np.array_equal(got[0], want[0])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [
        threading.Thread(target=writer),
        threading.Thread(target=reader),
        threading.Thread(target=reader),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(bank) == 2400 and bank.integrity_check().index_rows == 2400
    bank.close()
