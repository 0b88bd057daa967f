"""`bench all` runs its benchmarks as subprocesses, collects their records, writes the summary and
replaces the README's generated section; the CPU-settings and GPU-check modules at tiny sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.records import read_records
from bench.serving import cpu_settings
from bench.suite import all as bench_all
from bench.suite.summary import BEGIN, END
from localfin.errors import ConfigError


def test_all_tiny_subset_writes_summary_and_readme(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{BEGIN}\nold\n{END}\n", encoding="utf-8")
    out = tmp_path / "out"
    rc = bench_all.main(["--tiny", "--only", "retrieval", "--out", str(out), "--readme", str(readme)])
    assert rc == 0
    recs = list(read_records(out / "records.jsonl"))
    assert {r.benchmark for r in recs} >= {"retrieval", "all"}
    walls = {r.params["bench"]: r for r in recs if r.case == "run" and r.metric == "wall_time"}
    assert set(walls) == {"retrieval"} and all(r.params["status"] == "ok" for r in walls.values())
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "| retrieval | bank retrieval, 1,500 entries" in summary
    assert "Wall time per part: retrieval " in summary and "; total " in summary
    text = readme.read_text(encoding="utf-8")
    assert "old" not in text and summary.strip() in text


def test_all_reports_a_failing_benchmark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = bench_all.plan(tmp_path, None, tiny=True)
    monkeypatch.setattr(bench_all, "plan", lambda *a, **k: {**plan, "retrieval": ["--no-such-option"]})
    rc = bench_all.main(["--tiny", "--only", "retrieval", "--out", str(tmp_path)])
    assert rc == 1
    assert "failed: retrieval (exit code 2" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_cpu_settings_child_env_holds_only_the_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "3")
    monkeypatch.setenv("LD_PRELOAD", "/x/libgomp.so")
    monkeypatch.setenv("LOCALFIN_CPU_IOMP", "0")
    assert not {"VLLM_CPU_NUM_OF_RESERVED_CPU", "LD_PRELOAD", "LOCALFIN_CPU_IOMP"} & set(
        cpu_settings._child_env("localfin_default")
    )
    env = cpu_settings._child_env("vllm_default")
    assert env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "1" and env["LOCALFIN_CPU_IOMP"] == "0"
    assert "LD_PRELOAD" not in env


def test_cpu_settings_rejects_unknown_variant() -> None:
    with pytest.raises(ConfigError, match="turbo"):
        cpu_settings.main(["--variants", "vllm_default,turbo"])


@pytest.mark.slow
def test_cpu_settings_tiny_two_variants(capsys: pytest.CaptureFixture[str]) -> None:
    argv = "--tiny --variants vllm_default,localfin_default --levels 1,2 --prompt-tokens 64 --max-tokens 4"
    assert cpu_settings.main(argv.split()) == 0
    recs = list(read_records(capsys.readouterr().out.splitlines()))
    best = {r.case: r for r in recs if r.metric == "best_output_tokens_per_s"}
    assert set(best) == {"vllm_default", "localfin_default"}
    assert best["localfin_default"].headline and best["localfin_default"].ratio > 0


def test_gpu_check_tiny_on_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from bench.suite.gpu_check import main

    assert main(["--tiny", "--models", "qwen3-4b", "--batches", "1,2"]) == 0
    recs = list(read_records(capsys.readouterr().out.splitlines()))
    assert {r.benchmark for r in recs} == {"gpu"} and recs[0].machine["device"] == "cpu"
    gen = [r for r in recs if r.case == "generate" and r.metric == "output_tokens_per_s"]
    assert [r.params["batch"] for r in gen][:1] == [1] and all(r.value > 0 for r in gen)
    assert all(r.params["new_tokens"] == 4 and r.params["itl_p50_ms"] > 0 for r in gen)
    assert {(r.case, r.metric) for r in recs} >= {
        ("kernels", "large_pool_time"),
        ("kernels", "rescreen_time"),
        ("bank", "exact_search_p50"),
    }


@pytest.mark.parametrize(("name", "billions"), [("qwen3-4b", 4.02), ("llama-3.1-8b", 8.03)])
def test_gpu_check_configs_have_the_published_sizes(name: str, billions: float) -> None:
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM

    from bench.suite.gpu_check import model_config

    with torch.device("meta"):  # shapes only, no memory
        model = AutoModelForCausalLM.from_config(model_config(name))
    n = sum(p.numel() for p in model.parameters()) / 1e9
    assert n == pytest.approx(billions, abs=0.01)


def test_gpu_check_script_is_runnable() -> None:
    script = Path(__file__).resolve().parents[2] / "bench" / "suite" / "gpu_check.sh"
    text = script.read_text(encoding="utf-8")
    assert (
        text.startswith("#!/usr/bin/env bash")
        and "-m bench.suite.gpu_check" in text
        and "timeout 570" in text
    )


def test_all_keep_reruns_one_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the agent part fails at once (a bad option): its failure is kept like any record
    plan = bench_all.plan(tmp_path, None, tiny=True)
    monkeypatch.setattr(bench_all, "plan", lambda *a, **k: {**plan, "agent": ["--no-such-option"]})
    assert bench_all.main(["--tiny", "--only", "agent", "--out", str(tmp_path)]) == 1
    assert bench_all.main(["--tiny", "--only", "retrieval", "--out", str(tmp_path), "--keep"]) == 0
    recs = list(read_records(tmp_path / "records.jsonl"))
    assert "retrieval" in {r.benchmark for r in recs}
    walls = {
        r.params["bench"]: r.params["status"] for r in recs if r.case == "run" and r.metric == "wall_time"
    }
    assert sorted(walls) == ["agent", "retrieval"] and walls["retrieval"] == "ok"
    assert walls["agent"].startswith("exit code 2")
    assert "| failed: agent (exit code 2" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert sum(r.metric == "total_wall_time" for r in recs) == 1


@pytest.mark.slow
def test_all_tiny_agent_part_end_to_end(tmp_path: Path) -> None:
    """Both agents on the tiny model in a `bench all` subprocess, through to the README table."""
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{BEGIN}\nold\n{END}\n", encoding="utf-8")
    rc = bench_all.main(["--tiny", "--only", "agent", "--out", str(tmp_path), "--readme", str(readme)])
    recs = list(read_records(tmp_path / "records.jsonl"))
    assert rc == 0, [r for r in recs if r.value == "failed"]
    speed = {r.case: r for r in recs if r.metric == "lockstep_wall_time"}
    assert set(speed) == {"moira", "finacumen"} and all(r.ratio and r.ratio > 0 for r in speed.values())
    text = readme.read_text(encoding="utf-8")
    assert "| agent | moira: tokens per finalized trading step |" in text
    assert "| agent | finacumen: tokens per question |" in text
    assert "Agents, tokens by call type" in text and "| finacumen | qa_solve |" in text
