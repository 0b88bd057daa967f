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
