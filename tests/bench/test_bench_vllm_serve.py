"""`localfin bench vllm-serve`: the dataset exported from journals, vLLM's benchmark command per
load point, our driver's figures computed as vLLM computes them, and both clients against the
session's vLLM server on the same requests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.serving.dataset import agent_of, export_dataset, find_journals, journal_calls, read_dataset
from bench.serving.drivers import Sample
from bench.serving.stats import VLLM_FIGURES, vllm_figures
from bench.serving.vllm_serve import Point, bench_serve_command, parse_points
from localfin.errors import ConfigError
from serving.chat.replies import build_result
from serving.chat.types import ChatRequest, Message, Usage
from serving.journal import Journal

SYSTEM = "You are the desk's pair-trading assistant. Reply with JSON only."


def _result(req: ChatRequest, completion: int):
    return build_result(
        req, "{}", finish_reason="stop", usage=Usage(10, completion), latency_s=0.1, backend="x", revision=""
    )


def _journal(path: Path, model: str = "tiny-qwen3") -> list[ChatRequest]:
    """A Moira-like and a ReAct-like conversation, one call with an image, in journal order."""
    first = ChatRequest.simple(
        model, "Pair AAA/BBB, z 2.1. Decide.", system=SYSTEM, max_tokens=40, call_type="direction"
    )
    q1 = ChatRequest.simple(
        model, "What is 2 + 2?", system="Solve with tools.", max_tokens=40, call_type="qa_solve"
    )
    q2 = ChatRequest(
        model,
        q1.messages + (Message("assistant", "python: 2 + 2"), Message("user", "observation: 4")),
        max_tokens=40,
        call_type="qa_solve",
    )
    img = ChatRequest(
        model,
        (Message("user", "Read the chart.", images=("data:image/png;base64,AAAA",)),),
        max_tokens=8,
        call_type="qa_solve",
    )
    reqs = [first, q1, q2, img]
    with Journal(path) as j:
        j.put_many([(r, _result(r, n)) for r, n in zip(reqs, (5, 0, 9, 3))])
    return reqs


def test_export_renders_each_call_with_the_models_template_in_journal_order(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    from transformers import AutoTokenizer

    reqs = _journal(tmp_path / "run" / "journal.sqlite")
    assert find_journals([tmp_path]) == [tmp_path / "run" / "journal.sqlite"]
    calls = journal_calls(find_journals([tmp_path]))
    s = export_dataset(calls, tiny_model_dir, tmp_path / "agents.jsonl", thinking_default=False)
    rows = read_dataset(tmp_path / "agents.jsonl")
    assert (s.rows, s.skipped_images) == (3, 1) and s.by_agent == {"moira": 1, "finacumen": 2}
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    for row, req in zip(rows, reqs):
        msgs = [m.to_openai() for m in req.messages]
        # the registry's thinking default applies where the request left it unset, as the HTTP
        # backend sends it (Qwen3's template then pre-fills an empty think block)
        want = tok.apply_chat_template(
            msgs, add_generation_prompt=True, tokenize=False, enable_thinking=False
        )
        assert row["prompt"] == want and want.endswith("<think>\n\n</think>\n\n")
        assert row["messages"] == msgs and row["call_type"] == req.call_type
    # completion tokens as journaled, at least one (vLLM's custom dataset needs a positive length)
    assert [r["output_tokens"] for r in rows] == [5, 1, 9]
    assert rows[2]["prompt"].startswith(
        rows[1]["prompt"].rsplit("<|im_start|>assistant", 1)[0]
    )  # ReAct prefix
    limit = rows[1]["prompt_tokens"] + rows[1]["output_tokens"]
    short = export_dataset(
        calls, tiny_model_dir, tmp_path / "b.jsonl", max_model_len=limit, thinking_default=False
    )
    too_long = sum(r["prompt_tokens"] + r["output_tokens"] > limit for r in rows)
    assert too_long >= 1 and (short.skipped_too_long, short.rows) == (too_long, 3 - too_long)
    assert agent_of("finmem_decision") == "moira" and agent_of("bank_summarize") == "finacumen"
    with pytest.raises(ConfigError, match="no such file or folder"):
        find_journals([tmp_path / "absent"])


def test_points_and_vllms_command_per_point(tmp_path: Path) -> None:
    pts = parse_points([0.5, 2], 16)
    assert pts == [Point("rate", 0.5), Point("rate", 2.0), Point("concurrency", 16)]
    assert [p.label for p in pts] == ["rate 0.5/s", "rate 2/s", "max concurrency 16"]
    with pytest.raises(ConfigError, match="--rates"):
        parse_points([0], None)
    common = dict(
        base_url="http://127.0.0.1:8000/v1",
        served_model="qwen3-4b",
        tokenizer="/models/Qwen3-4B",
        dataset=tmp_path / "agents.jsonl",
        num_prompts=100,
        result_dir=tmp_path,
        result_file="p.json",
    )
    cli = bench_serve_command(point=pts[1], use_cli=True, **common)
    assert cli[:3] == ["vllm", "bench", "serve"]
    args = dict(zip(cli[3::1], cli[4::1]))
    assert args["--base-url"] == "http://127.0.0.1:8000" and args["--endpoint"] == "/v1/completions"
    assert args["--dataset-name"] == "custom" and args["--request-rate"] == "2"
    for flag in ("--skip-chat-template", "--disable-shuffle", "--ignore-eos", "--save-result"):
        assert flag in cli
    assert args["--custom-output-len"] == "-1" and args["--percentile-metrics"] == "ttft,tpot,itl,e2el"
    mod = bench_serve_command(point=pts[2], use_cli=False, python="py", **common)
    assert mod[:2] == ["py", "-c"] and "from vllm.benchmarks.serve import add_cli_args, main" in mod[2]
    tail = mod[3:]
    assert (
        tail[tail.index("--request-rate") + 1] == "inf" and tail[tail.index("--max-concurrency") + 1] == "16"
    )


def test_our_figures_are_computed_as_vllm_computes_them() -> None:
    rng = np.random.default_rng(0)
    samples = []
    for i in range(9):
        n = int(rng.integers(1, 6))
        itl = tuple(float(x) for x in rng.uniform(0.01, 0.05, n - 1))
        ttft = float(rng.uniform(0.1, 0.5))
        samples.append(Sample(100 + i, n, None, ttft + sum(itl), ttft, itl, None, "length"))
    f = vllm_figures(4.0, samples)
    assert set(VLLM_FIGURES) <= set(f)
    out = sum(s.completion_tokens for s in samples)
    assert f["request_throughput"] == 9 / 4.0 and f["output_throughput"] == out / 4.0
    assert f["total_token_throughput"] == (sum(s.prompt_tokens for s in samples) + out) / 4.0
    tpot = [(s.latency_s - s.ttft_s) / (s.completion_tokens - 1) for s in samples if s.completion_tokens > 1]
    itl = [x for s in samples for x in s.itl_s]
    e2el = [s.latency_s for s in samples]
    for name, values in (("tpot", tpot), ("itl", itl), ("e2el", e2el), ("ttft", [s.ttft_s for s in samples])):
        assert f[f"mean_{name}_ms"] == pytest.approx(1e3 * np.mean(values))
        assert f[f"median_{name}_ms"] == pytest.approx(1e3 * np.median(values))
        assert f[f"p99_{name}_ms"] == pytest.approx(1e3 * np.percentile(values, 99))


def test_vllms_benchmark_and_our_driver_on_the_same_server(
    openai_server, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.serving.vllm_serve import main

    _journal(tmp_path / "j" / "journal.sqlite")
    code = main(
        [
            "--journal", str(tmp_path / "j"),
            "--out", str(tmp_path / "out"),
            "--model", "tiny-qwen3",
            "--model-path", str(tiny_model_dir),
            "--base-url", openai_server.base_url,
            "--api-key", "test-key",
            "--rates", "",
            "--max-concurrency", "2",
            "--warmups", "0",
        ]
    )  # fmt: skip
    assert code == 0
    recs = {r["case"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    vllm, ours, lock = recs["vllm:concurrency=2"], recs["ours:concurrency=2"], recs["lockstep:concurrency=2"]
    # vLLM's own result file, and the same load on both clients: every request, its output length
    # exactly (ignore_eos), and the same prompt tokens as the server counted them
    doc = json.loads((tmp_path / "out" / "vllm" / "point0.json").read_text())
    assert doc["completed"] == 3 and doc["total_output_tokens"] == 5 + 1 + 9
    for r in (vllm, ours, lock):
        p = r["params"]
        assert p["completed"] == 3 and r["value"] > 0
        assert p["mean_prompt_tokens"] == pytest.approx(vllm["params"]["mean_prompt_tokens"], abs=1)
        assert p["p99_e2el_ms"] >= p["median_e2el_ms"] > 0
    table = (tmp_path / "out" / "vllm_serve.md").read_text()
    assert "| output throughput (tok/s) (`output_throughput`) |" in table
    assert "vllm bench serve, max concurrency 2" in table and "lock-step rounds" in table


def test_the_gpu_instructions_run_vllms_benchmark_as_the_command_does() -> None:
    script = (Path(__file__).resolve().parents[2] / "bench" / "suite" / "gpu_check.sh").read_text()
    start = script.index("#   vllm bench serve")
    block = []
    for line in script[start:].splitlines():
        if not line.startswith("#"):
            break
        block.append(line.lstrip("# ").rstrip("\\ "))
    shown = " ".join(block).split()
    ours = bench_serve_command(
        base_url="http://127.0.0.1:8000/v1",
        served_model="qwen3-4b",
        tokenizer="/models/Qwen3-4B",
        dataset="runs/vllm-serve/agents.jsonl",
        num_prompts=1,
        point=Point("rate", 8),
        result_dir=".",
        result_file="p.json",
        use_cli=True,
    )
    flags = {a for a in ours if a.startswith("--")} - {
        "--num-prompts", "--num-warmups", "--seed", "--result-dir", "--result-filename", "--disable-tqdm"
    }  # fmt: skip
    assert flags <= set(shown)
    for flag in (
        "--endpoint",
        "--dataset-name",
        "--custom-output-len",
        "--percentile-metrics",
        "--request-rate",
    ):
        assert shown[shown.index(flag) + 1] == ours[ours.index(flag) + 1]
