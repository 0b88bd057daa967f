"""The `localfin` command: help, registry listing, server command, chat over HTTP and on the
engine (stdout is the JSON result alone)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest


def test_help_lists_every_group(cli):
    r = cli("--help")
    assert r.code == 0
    for word in ("models", "data", "pairs", "bank", "bench", "chat", "serve", "demo"):
        assert word in r.out


def test_models_list_shows_gpu_backbones_and_cpu_default(tmp_path, monkeypatch, cli):
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(tmp_path))
    r = cli("models", "list")
    assert r.code == 0, r.err
    for key in ("llama-3.1-70b", "qwen3-32b-nothink", "qwen3-vl-8b", "smollm2-135m"):
        assert key in r.out


def test_models_prepare_rejects_a_gpu_model(cli):
    r = cli("models", "prepare", "qwen3-4b")
    assert r.code == 2 and "nothing to prepare" in r.err


def test_serve_dry_run_binds_loopback_and_hides_the_key(tiny_model_dir, cli):
    r = cli(
        "serve",
        "tiny-qwen3",
        "--model-path",
        tiny_model_dir,
        "--port",
        "8123",
        "--api-key",
        "s3cret",
        "--dry-run",
    )
    assert r.code == 0, r.err
    assert "--host 127.0.0.1" in r.out and "--port 8123" in r.out
    assert "s3cret" not in r.out + r.err and "--api-key '***'" in r.out
    assert "vllm.entrypoints.openai.api_server" in r.out  # CPU path
    assert f"--model {tiny_model_dir}" in r.out and r.err == ""


def test_serve_dry_run_without_weights_prints_the_command(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(tmp_path / "models"))
    r = cli("serve", "qwen3-32b", "--dry-run")
    assert r.code == 0, r.err
    assert r.out.count("\n") == 1 and f"{tmp_path / 'models' / 'Qwen3-32B'}" in r.out
    assert "--tensor-parallel-size 1" in r.out and "--reasoning-parser qwen3" in r.out  # no GPU seen: one
    assert "note: weights absent" in r.err and "no config.json" in r.err
    r = cli("serve", "tiny-qwen3", "--dry-run")  # a built model without a path: a placeholder
    assert r.code == 0 and "--model '<tiny-qwen3-weights-dir>'" in r.out


def _piped_chat(args: list[object], tmp_path) -> subprocess.CompletedProcess[str]:
    """`localfin chat ARGS | python -m json.tool` in a shell, with our folders under tmp_path."""
    cmd = [sys.executable, "-m", "localfin_cli.main", "chat", *map(str, args)]
    return subprocess.run(
        f"{shlex.join(cmd)} | {shlex.quote(sys.executable)} -m json.tool",
        shell=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, LOCALFIN_HOME=str(tmp_path / "home"), VLLM_CPU_KVCACHE_SPACE="1"),
        timeout=600,
        cwd=tmp_path,
    )


def _ok_schema(tmp_path) -> object:
    schema = tmp_path / "s.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
                "additionalProperties": False,
            }
        )
    )
    return schema


def test_chat_against_a_running_server_pipes_into_json_tool(openai_server, tmp_path):
    journal = tmp_path / "j.sqlite"
    args = ["tiny-qwen3", "is it ok?", "--schema", _ok_schema(tmp_path), "--base-url", openai_server.base_url]
    proc = _piped_chat([*args, "--api-key", "test-key", "--max-tokens", "16", "--journal", journal], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["parsed"] in ({"ok": True}, {"ok": False}) and out["backend"] == "openai"
    assert journal.exists()


@pytest.mark.slow
def test_chat_stdout_is_only_json_on_the_real_engine(tiny_model_dir, tmp_path):
    """The engine starts in the chat process: its output goes to the log file, progress to
    stderr, and stdout holds the JSON result alone (a fresh engine start: ~40 s idle, so slow)."""
    args = ["tiny-qwen3", "ok?", "--schema", _ok_schema(tmp_path), "--model-path", tiny_model_dir]
    proc = _piped_chat([*args, "--max-tokens", "12"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["backend"] == "vllm" and out["finish_reason"] in ("stop", "length")
    logs = list((tmp_path / "home" / "logs").glob("chat-*.log"))
    assert len(logs) == 1
    log_text = logs[0].read_text()
    assert "starting vLLM engine for tiny-qwen3" in log_text and "engine ready in" in log_text
    assert "INFO" not in proc.stderr and f"log: {logs[0]}" in proc.stderr


def test_chat_reports_bad_schema_file_cleanly(tmp_path, cli):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = cli("chat", "tiny-qwen3", "x", "--schema", bad, "--base-url", "http://127.0.0.1:9/v1")
    assert r.code == 2 and "not valid JSON at line 1" in r.err and r.out == ""


def test_import_vllm_works_in_a_fresh_interpreter():
    # vllm-cpu pulls torchvision/torchaudio builds that break `import vllm` on CPU; the Makefile
    # removes them. This proves the installed environment imports cleanly.
    proc = subprocess.run(
        [sys.executable, "-c", "import vllm, sys; print(vllm.__version__)"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().startswith("0.3")


def test_library_logging_goes_to_the_log_file_unless_verbose(tmp_path, monkeypatch, cli):
    monkeypatch.setenv("LOCALFIN_HOME", str(tmp_path / "home"))
    args = ["data", "synth", "--out", tmp_path / "syn", "--sessions", "300"]
    quiet = cli(*args)
    loud = cli("--verbose", *args)
    assert quiet.code == loud.code == 0 and quiet.out == loud.out and quiet.out.startswith("wrote ")
    record = "INFO agent.data.synthetic: synthetic market: 300 sessions"
    assert record not in quiet.err and record in loud.err
    logs = sorted((tmp_path / "home" / "logs").glob("data-synth-*.log"))
    assert len(logs) == 2 and all(
        "agent.data.synthetic: synthetic market: 300 sessions" in p.read_text() for p in logs
    )
