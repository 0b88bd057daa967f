"""A write that fails (the disk fills) while the journal or a run's tables are written. The
fault is a file-size limit (RLIMIT_FSIZE) on the `localfin` child process, unprivileged: lowered
by the fake server's gate when request N arrives (the journal's next transaction cannot grow its
file), or set when the child starts (the first run file larger than the limit cannot be
written). `localfin` ignores SIGXFSZ, so the write fails with EFBIG as on a full disk (ENOSPC).

Either way the run stops with exit code 5 and a message naming the path; the journal holds
every earlier chunk (SQLite rolled the failed transaction back) and no file is left torn (tables
are written to a temporary name and renamed); once the limit is gone, ``--resume`` ends with the
uninterrupted run's result."""

from __future__ import annotations

import resource
import shutil

import pytest
from fake_openai import Call, FakeOpenAI
from faults_support import (
    assert_same_results,
    journal_keys,
    journaled_through,
    openai_config,
    start_cli,
)
from moira_support import WINDOWS

from localfin.errors import WriteFailedError
from localfin.files import check_json, check_parquet, write_text
from serving.journal import Journal

#: the request at which the journal's file stops growing (of the reference's 89)
FULL_AT = 40


def test_the_journal_cannot_grow_mid_run_and_resume_completes(tmp_path, reference, server, cli):
    out = tmp_path / "exp"
    child_pid: list[int] = []

    def fill_the_disk(srv: FakeOpenAI) -> None:
        wal = out / "journal.sqlite-wal"
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.prlimit(child_pid[0], resource.RLIMIT_FSIZE, (wal.stat().st_size, hard))

    server.gates[FULL_AT] = Call(fill_the_disk)
    config = openai_config(tmp_path, server.base_url)
    child = start_cli(["pairs", "run", "--config", str(config), "--out", str(out)], tmp_path / "err.log")
    child_pid.append(child.proc.pid)
    try:
        assert child.wait() == 5, child.stderr()[-3000:]
    finally:
        child.kill()
    err = child.stderr()
    assert f"cannot write journal {out / 'journal.sqlite'}" in err
    assert (
        "the transaction was rolled back, every earlier chunk is kept: free space, then rerun with --resume"
        in err
    )
    # every chunk before the one whose transaction failed is journaled, whole
    sizes = reference.chunks
    kept = journaled_through(sizes, FULL_AT) - _chunk_of(sizes, FULL_AT)
    with Journal(out / "journal.sqlite", verify=True) as j:
        assert j.count() == kept

    before = server.n
    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 0, run.err
    assert server.n - before == reference.requests - kept  # only the chunk that was not journaled
    assert_same_results(reference.out, out)


def _chunk_of(sizes: list[int], n: int) -> int:
    total = 0
    for size in sizes:
        total += size
        if total >= n:
            return size
    raise AssertionError(n)


def test_a_run_table_cannot_be_written_and_resume_completes(tmp_path, server, cli):
    # a longer test window than the other tests', so that a run's trace outgrows SQLite's 32 KiB
    # shared-memory file (which the journal needs under any limit)
    config = openai_config(tmp_path, server.base_url, windows=dict(WINDOWS))
    ref = tmp_path / "ref"
    assert cli("pairs", "run", "--config", config, "--out", ref).code == 0
    sizes = sorted(f.stat().st_size for f in (ref / "runs").rglob("*") if f.is_file())
    limit = sizes[-1] - 1  # the largest run file cannot be written, every other one can
    assert limit > 32 * 1024 and sizes[-2] <= limit

    out = tmp_path / "exp"  # everything journaled: the run only writes its files
    out.mkdir()
    for name in ("config.toml", "journal.sqlite"):
        shutil.copy(ref / name, out / name)
    sent = server.n

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    args = ["pairs", "run", "--config", str(config), "--out", str(out), "--resume"]
    child = start_cli(args, tmp_path / "err.log", preexec=limited)
    try:
        assert child.wait() == 5, child.stderr()[-3000:]
    finally:
        child.kill()
    err = child.stderr()
    assert "error: cannot write " in err and "trace.parquet: " in err and "File too large" in err
    assert "then rerun with --resume (journaled calls are kept)" in err
    # no file torn, no temporary file left
    files = [f for f in out.rglob("*") if f.is_file()]
    assert not [f for f in files if f.name.endswith(".tmp")]
    for f in files:
        check = {".parquet": check_parquet, ".json": check_json}.get(f.suffix)
        assert check is None or check(f) is None, f
    assert not (out / "manifest.json").exists()  # the experiment is not passed off as done

    run = cli("pairs", "run", "--config", config, "--out", out, "--resume")
    assert run.code == 0, run.err
    assert server.n == sent  # every call replayed from the journal
    assert_same_results(ref, out)
    assert journal_keys(out / "journal.sqlite") == journal_keys(ref / "journal.sqlite")


def test_a_failed_write_leaves_the_previous_file_and_no_temporary_one(tmp_path):
    import subprocess
    import sys

    target = tmp_path / "table.json"
    target.write_text('{"old": true}\n')
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))\n"
        "from localfin.errors import WriteFailedError\n"
        "from localfin.files import write_text\n"
        "try:\n"
        "    write_text(sys.argv[1], 'x' * 5000)\n"
        "except WriteFailedError as exc:\n"
        "    print(exc.exit_code, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(target)], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith(f"5 cannot write {target}: File too large; free space")
    assert target.read_text() == '{"old": true}\n'  # the previous file is whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.json"]
    assert issubclass(WriteFailedError, OSError) and write_text(target, "new").read_text() == "new"


@pytest.mark.slow  # a report built twice; the journal and table tests above cover a full disk by default
def test_a_report_that_cannot_be_written_leaves_the_previous_one(tmp_path, server, cli):
    config = openai_config(tmp_path, server.base_url)
    out = tmp_path / "exp"
    assert cli("pairs", "run", "--config", config, "--out", out).code == 0
    report = tmp_path / "report"
    assert cli("report", out, "--out", report).code == 0
    before = {p.relative_to(report): p.read_bytes() for p in report.rglob("*") if p.is_file()}
    limit = max(len(b) for b in before.values()) - 1  # its largest file cannot be written again

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    child = start_cli(["report", str(out), "--out", str(report)], tmp_path / "err.log", preexec=limited)
    try:
        assert child.wait() == 5, child.stderr()[-3000:]
    finally:
        child.kill()
    assert f"error: cannot write {report}: " in child.stderr() and "File too large" in child.stderr()
    after = {p.relative_to(report): p.read_bytes() for p in report.rglob("*") if p.is_file()}
    assert after == before  # the previous report, whole
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report.tmp")]  # nothing left over
