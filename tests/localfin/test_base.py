"""The base package: error classes and exit codes, the environment module, run logs, progress."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localfin import env
from localfin.errors import ConfigError, InputError, LocalfinError, exit_code_for
from localfin.logs import RunLog, is_terminal_worthy
from localfin.progress import NULL_PROGRESS, LineProgress, console_progress


def test_exit_codes_follow_the_error_family():
    assert exit_code_for(ConfigError("x")) == 2
    assert exit_code_for(InputError("x")) == 2
    assert exit_code_for(LocalfinError("x")) == 1
    assert exit_code_for(ValueError("x")) == 2
    assert exit_code_for(RuntimeError("x")) == 1


def test_env_defaults_and_overrides(monkeypatch, tmp_path):
    monkeypatch.delenv("LOCALFIN_DATA_DIR", raising=False)
    monkeypatch.delenv("LOCALFIN_STORE", raising=False)
    assert env.default_store_path() == Path("localfin_data") / "market.sqlite"
    monkeypatch.setenv("LOCALFIN_DATA_DIR", str(tmp_path))
    assert env.default_bank_dir() == tmp_path / "bank"
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "lots")
    with pytest.raises(ConfigError, match="VLLM_CPU_KVCACHE_SPACE"):
        env.cpu_kvcache_gib()
    assert env.offline_env()["ORT_DISABLE_TELEMETRY"] == "1"


def test_kernels_import_loads_no_other_package_of_ours():
    code = (
        "import sys, kernels, numpy as np\n"
        "kernels.half_life(np.sin(np.arange(300) / 7.0))\n"
        "ours = ('localfin', 'serving', 'bank', 'agent', 'bench', 'localfin_cli')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ours))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_runlog_sends_library_output_to_the_file_and_warnings_to_the_terminal(tmp_path, capfd):
    path = tmp_path / "run.log"
    with RunLog(path) as rl:
        os.write(1, b"INFO 12-01 engine chatter from C code\n")
        subprocess.run([sys.executable, "-c", "print('child process line')"], check=True)
        logging.getLogger("localfin.test").info("an info record")
        logging.getLogger("localfin.test").warning("a warning record")
        rl.stdout.write("RESULT\n")
    out, err = capfd.readouterr()
    text = path.read_text()
    assert "engine chatter" in text and "child process line" in text and "an info record" in text
    assert out == "RESULT\n"
    assert "a warning record" in err and "engine chatter" not in err and "child process" not in err


def test_runlog_verbose_shows_everything(tmp_path, capfd):
    with RunLog(tmp_path / "run.log", verbose=True):
        os.write(1, b"plain engine line\n")
    _, err = capfd.readouterr()
    assert "plain engine line" in err


def test_terminal_filter():
    assert is_terminal_worthy("WARNING 12-01 01:02:03 [x.py:1] disk almost full")
    assert is_terminal_worthy("Traceback (most recent call last):")
    assert not is_terminal_worthy("INFO 12-01 loading weights")
    assert not is_terminal_worthy("WARNING 12-01 Triton is not installed")


def test_line_progress_prints_start_and_end_lines():
    buf = io.StringIO()
    prog = LineProgress(buf)
    with prog.task("calls", total=4) as t:
        for _ in range(4):
            t.advance()
    lines = buf.getvalue().splitlines()
    assert lines[0] == "calls: started (4 to do)" and lines[-1].startswith("calls: done, 4/4")
    assert len(lines) <= 6
    assert isinstance(console_progress(io.StringIO()), LineProgress)
    with NULL_PROGRESS.task("nothing") as t:
        t.advance()


class _Clock:
    """A hand-moved clock for the progress heartbeat (no wall-clock timing in the test)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_line_progress_heartbeat_speaks_every_30_s_with_counts_and_the_time_left():
    buf, clock = io.StringIO(), _Clock()
    prog = LineProgress(buf, clock=clock, heartbeat_thread=False)
    with prog.task("sessions", total=100) as t:
        t.update(completed=5, info="3 rounds, 12 calls, 900 tokens")  # no decile crossed yet
        clock.now += 29.0
        assert not prog.beat()  # 29 s since the start line: quiet
        clock.now += 2.0
        assert prog.beat()  # 31 s: a heartbeat line even though nothing advanced
        line = buf.getvalue().splitlines()[-1]
        assert line == "  ... sessions: 5/100, 3 rounds, 12 calls, 900 tokens, 31s elapsed, ~9m49s left"
        clock.now += 10.0
        assert not prog.beat()  # the clock restarts at every line
    assert "done, 5/100" in buf.getvalue().splitlines()[-1]
    clock.now += 60.0
    assert not prog.beat()  # nothing open: nothing to say


def test_stage_lines_stay_short_but_the_heartbeat_names_the_stage():
    buf, clock = io.StringIO(), _Clock()
    prog = LineProgress(buf, clock=clock, stages_only=True, heartbeat_thread=False)
    with prog.task("runs", total=2), prog.task("sessions", total=10) as s:
        s.update(completed=1)
        clock.now += 5.0
        s.update(completed=2)
        assert buf.getvalue() == ""  # no start or decile lines in this mode
        clock.now += 30.0
        s.update(completed=4)  # an update past 30 s is a heartbeat too
    lines = buf.getvalue().splitlines()
    assert lines[0] == "  ... runs / sessions: 4/10, 35s elapsed, ~1m10s left"  # 3 units in 35 s
    assert lines[1] == "  runs: 0/2 (35 s)" and len(lines) == 2


def test_parts_running_at_once_nest_their_stages_per_thread():
    """The demo's Moira and QA parts: each part's top task ends with its own stage line, and
    the heartbeat names the top task of the thread whose stage it reports."""
    import threading

    buf, clock = io.StringIO(), _Clock()
    prog = LineProgress(buf, clock=clock, stages_only=True, heartbeat_thread=False)
    qa_in, qa_may_end = threading.Event(), threading.Event()

    def qa() -> None:
        with prog.task("QA"), prog.task("eval ft", total=6) as t:
            t.update(completed=2)
            qa_in.set()
            qa_may_end.wait(60)

    with prog.task("Moira"), prog.task("sessions", total=48) as s:
        s.update(completed=1)
        th = threading.Thread(target=qa, daemon=True)
        th.start()
        assert qa_in.wait(60)
        clock.now += 31.0
        assert prog.beat()  # the latest task with a total: QA's, under its own top task
        qa_may_end.set()
        th.join(60)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("  ... QA / eval ft: 2/6")
    assert "  QA: (31 s)" in lines and "  Moira: (31 s)" in lines


def test_the_heartbeat_thread_stops_with_the_last_task():
    prog = LineProgress(io.StringIO(), every_s=3600.0)
    with prog.task("work", total=1) as t:
        assert prog._thread is not None and prog._thread.is_alive()
        t.advance()
    assert prog._thread is None


def test_terminal_filter_knows_the_cpu_engines_real_chatter():
    """Lines vllm-cpu 0.32 logs at WARNING while starting and stopping `make demo` (each line as
    the demo's log holds it): file only."""
    benign = [
        "(MainProcess pid=1) WARNING 12-01 01:44:35 [cpu.py:224] Triton is not installed. triton-cpu "
        "is expected on x86 CPUs.",
        "(VllmWorker-0 pid=2) WARNING 12-01 01:45:17 [vllm.py:725] Model Runner V2 requires Triton; "
        "using the V1 model runner instead.",
        "(Worker pid=2) WARNING 12-01 01:45:17 [cpu_worker.py:114] libtcmalloc is not found in "
        "LD_PRELOAD. For best performance, please follow the section `set LD_PRELOAD`",
        "(MainProcess pid=1) WARNING 12-01 01:44:35 [arg_utils.py:3005] This model does not officially "
        "support disabling chunked prefill. Disabling this manually may cause the engine to crash",
        "(MainProcess pid=1) WARNING 12-01 02:07:31 [utils.py:653] [shutdown] Process manager: force "
        "killing remaining process EngineCore pid 14168",
        "(EngineCore pid=3) WARNING 12-01 02:07:31 [multiproc_executor.py:491] [shutdown] Executor: "
        "workers still running after grace period; sending SIGTERM count=1",
        # localfin sets VLLM_CPU_NUM_OF_RESERVED_CPU=0 on purpose (2 cores: one would sit idle)
        "(EngineCore pid=26430) WARNING 12-04 22:27:58 [ompmultiprocessing.py:63] "
        "VLLM_CPU_NUM_OF_RESERVED_CPU is less than the minimum requirement: 1 cores",
        "(Worker pid=28809) WARNING 12-04 22:34:06 [torch_utils.py:283] OMP_NUM_THREADS=2 is set; leaving "
        "Torch threads at 2 for serving. Multi-threaded torch CPU ops during serving can degrade "
        "performance through spin-wait contention and cgroup CPU-quota throttling.",
    ]
    assert not any(is_terminal_worthy(line) for line in benign)
    # whole phrases only: another warning of the same modules still shows
    assert is_terminal_worthy(
        "(EngineCore pid=3) WARNING 12-01 [cpu.py:99] KV cache too small for 8192 tokens"
    )


def test_runlog_keeps_developer_warnings_in_the_file_and_routes_terminal_lines(tmp_path):
    import warnings

    seen: list[str] = []
    path = tmp_path / "run.log"
    with RunLog(path, capture_fds=False) as rl:
        rl.write_terminal_with(seen.append)
        warnings.warn("old api", DeprecationWarning, stacklevel=1)
        logging.getLogger("localfin.test").warning("disk almost full")
    text = path.read_text()
    assert "DeprecationWarning: old api" in text and "disk almost full" in text
    assert seen == ["WARNING localfin.test: disk almost full"]


def test_rich_progress_leaves_stdout_alone():
    from localfin.progress import RichProgress

    before, buf = sys.stdout, io.StringIO()
    prog = RichProgress(buf)
    with prog.task("engine") as t:
        assert sys.stdout is before  # engine output keeps going to the run log, not the display
        t.advance()
    with prog.task("calls", total=2) as t:
        t.advance(2)
    assert buf.getvalue().count("engine") == 1  # a finished task is drawn once, not again later


def test_the_demo_names_the_instruction_set_and_what_it_means():
    from localfin.machine import CpuFeatures, cpu_features, cpu_lines

    here = cpu_features()
    assert here.isa in {"avx512_bf16", "avx512", "avx2", "other"} and here.cores >= 1
    slow = cpu_lines(CpuFeatures("Some CPU", 2, "avx2", ("avx2",)), 150.0)
    assert slow[0] == "CPU: Some CPU, 2 cores, instruction set avx2; speed index 150 us for one " + (
        "Engle-Granger window (README machine: 50-60 us)"
    )
    assert "no AVX-512" in slow[1] and "AVX2 kernels" in slow[1]
    assert "README" in cpu_lines(CpuFeatures("X", 2, "avx512_bf16", ()), None)[1]
