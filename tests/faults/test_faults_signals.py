"""SIGINT / SIGTERM during a run (`localfin pairs run` in a child process against the fake
OpenAI server): the signal is sent while the server holds request N (a gate), and the held
request is released only once the child has said it will stop (a line on its stderr), so the
stop point is exact. The first signal lets the chunk in flight finish and be journaled, stops
at the next call boundary, says how to resume and exits 130 / 143; a second one stops at once
(the chunk in flight is lost, every journaled call stays). ``--resume`` then sends only the
calls never journaled and ends with the uninterrupted run's result."""

from __future__ import annotations

import os
import signal

import pytest
from fake_openai import Hold
from faults_support import (
    assert_same_results,
    journal_keys,
    journaled_through,
    openai_config,
    start_cli,
)

#: the request held while the signal arrives (of the reference's 89; the second of a chunk of two)
HELD = 40


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_at_the_next_call_boundary_and_resume_completes(
    tmp_path, reference, server, cli, sig, code
):
    hold = Hold()
    server.gates[HELD] = hold
    config = openai_config(tmp_path, server.base_url)
    out = tmp_path / "exp"
    child = start_cli(["pairs", "run", "--config", str(config), "--out", str(out)], tmp_path / "err.log")
    try:
        assert hold.arrived.wait(600), child.stderr()  # request HELD is in flight
        os.kill(child.proc.pid, sig)
        child.wait_for_line(f"{sig.name} received: stopping at the next call boundary")
        hold.release.set()
        assert child.wait() == code, child.stderr()[-3000:]
    finally:
        hold.release.set()
        child.kill()
    err = child.stderr()
    assert f"interrupted by {sig.name} at a call boundary; every answered call is journaled" in err
    assert f"rerun with: localfin pairs run --config {config} --out {out} --resume" in err
    # the chunk in flight was finished and journaled, nothing after it was sent
    done = journaled_through(reference.chunks, HELD)
    assert len(journal_keys(out / "journal.sqlite")) == done == server.n == len(server.answered)

    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 0, run.err
    assert server.n == reference.requests  # nothing journaled was sent again
    assert len(set(server.answered)) == len(server.answered)
    assert_same_results(reference.out, out)


def test_a_second_sigint_stops_at_once_keeping_every_journaled_call(tmp_path, reference, server, cli):
    hold = Hold()
    server.gates[HELD] = hold
    config = openai_config(tmp_path, server.base_url)
    out = tmp_path / "exp"
    child = start_cli(["pairs", "run", "--config", str(config), "--out", str(out)], tmp_path / "err.log")
    try:
        assert hold.arrived.wait(600), child.stderr()
        os.kill(child.proc.pid, signal.SIGINT)
        child.wait_for_line("SIGINT received: stopping at the next call boundary")
        os.kill(child.proc.pid, signal.SIGINT)  # request HELD is still held: no reply will come
        assert child.wait() == 130, child.stderr()[-3000:]
    finally:
        hold.release.set()
        child.kill()
    assert (
        "stopped at once by a second SIGINT; the call in flight is lost, every journaled call is kept"
        in child.stderr()
    )
    # every chunk before the one in flight is journaled; that chunk is not
    kept = journaled_through(reference.chunks, HELD) - _chunk_of(reference.chunks, HELD)
    assert len(journal_keys(out / "journal.sqlite")) == kept

    sent_before = server.n
    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 0, run.err
    assert server.n - sent_before == reference.requests - kept  # only what was never journaled
    assert_same_results(reference.out, out)


def _chunk_of(sizes: list[int], n: int) -> int:
    """The size of the chunk holding the ``n``-th request sent."""
    total = 0
    for size in sizes:
        total += size
        if total >= n:
            return size
    raise AssertionError(n)
