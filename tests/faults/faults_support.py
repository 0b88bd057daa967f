"""Shared helpers of the fault tests (not a conftest): the small Moira experiment against the
fake OpenAI server, the CLI as a child process, gates on marker lines, and the comparison of a
run folder with the uninterrupted reference."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from moira_support import small_config, small_store

from agent.pairs.market.records import read_json

REPO_ROOT = Path(__file__).resolve().parents[2]

#: the experiment's shape: two runs (both exposures), one replay cycle, a 30-session test window
SHAPE = {
    "experiment": {"exposures": ["no_beta", "beta"]},
    "windows": {"test_end": "2015-02-27"},
    "policy": {"max_cycles": 1},
}
#: the HTTP client's fault settings in the tests: two quick retries
RETRIES = {"max_retries": 2, "retry_backoff_s": 0.01, "retry_backoff_max_s": 0.02}


def openai_config(folder: Path, base_url: str, **tables: dict[str, Any]) -> Path:
    """``folder/c.toml``: the small experiment on the OpenAI backend at ``base_url``."""
    over = {**SHAPE, **tables}
    model = {"backend": "openai", "base_url": base_url, **RETRIES, **over.pop("model", {})}
    _, text = small_config(small_store(), model=model, **over)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "c.toml"
    path.write_text(text)
    return path


def results(out: Path) -> dict[str, tuple]:
    """Every run's metrics, training record, steps and trace (what the report reads)."""
    return {
        r.name: (
            read_json(r / "metrics.json"),
            read_json(r / "training.json") if (r / "training.json").is_file() else None,
            pd.read_parquet(r / "steps.parquet"),
            pd.read_parquet(r / "trace.parquet") if (r / "trace.parquet").is_file() else None,
        )
        for r in sorted((out / "runs").iterdir())
    }


def assert_same_results(ref: Path, got: Path) -> None:
    """The runs of ``got`` equal those of the uninterrupted ``ref``, and so do the journals' keys."""
    a, b = results(ref), results(got)
    assert list(a) == list(b) and a
    for run_id, (m, t, steps, trace) in a.items():
        gm, gt, gsteps, gtrace = b[run_id]
        assert m == gm and t == gt, run_id
        pd.testing.assert_frame_equal(steps, gsteps)
        if trace is not None or gtrace is not None:
            pd.testing.assert_frame_equal(trace, gtrace)
    assert journal_keys(ref / "journal.sqlite") == journal_keys(got / "journal.sqlite")
    assert read_json(ref / "summary.json")["runs"] == read_json(got / "summary.json")["runs"]


def journal_keys(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {k for (k,) in db.execute("SELECT key FROM calls")}


def chunks(path: Path) -> list[int]:
    """Rows of each journal transaction, in order (a transaction is one engine call's chunk: its
    rows share ``created_at``)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return [n for _, n in db.execute("SELECT created_at, COUNT(*) FROM calls GROUP BY 1 ORDER BY 1")]


def journaled_through(sizes: list[int], n: int) -> int:
    """Requests journaled when the run stops after the chunk holding the ``n``-th request sent."""
    total = 0
    for size in sizes:
        total += size
        if total >= n:
            return total
    raise AssertionError(f"request {n} is past the reference's {total}")


@dataclass
class Child:
    """A ``localfin`` command in a child process; its stderr goes to a file (a gate reads it)."""

    proc: subprocess.Popen
    err: Path

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def wait_for_line(self, words: str) -> None:
        """Wait until the child's stderr holds ``words`` (a gate; the deadline only catches a hang)."""
        deadline = time.monotonic() + 300
        while words not in self.stderr():
            if self.proc.poll() is not None:
                raise AssertionError(f"child ended before {words!r}:\n{self.stderr()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"child never wrote {words!r}:\n{self.stderr()[-3000:]}")
            time.sleep(0.02)

    def wait(self) -> int:
        return self.proc.wait(timeout=600)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def start_cli(args: list[str], log: Path, *, preexec: Any = None, env: dict[str, str] | None = None) -> Child:
    """``localfin ARGS`` in a child process of its own process group."""
    environ = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), environ.get("PYTHONPATH", "")])
    fh = open(log, "wb")  # noqa: SIM115 - the child owns it
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "localfin_cli.main", *args],
            stdout=subprocess.DEVNULL,
            stderr=fh,
            start_new_session=True,
            env=environ,
            preexec_fn=preexec,
        )
    finally:
        fh.close()
    return Child(proc, log)
