"""The serving benchmark's parts at tiny sizes: the pure figures and stop rule, the workload, the
three drivers (transformers on the tiny model; the real engine and server through the session
fixtures) and the command end to end with the transformers reference. No timed assertions."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.records import read_records
from bench.serving.drivers import Sample
from bench.serving.stats import percentile, saturation_point, should_stop, summarize
from bench.serving.workload import SCHEMA, Workload, token_counter


def _sample(
    out: int, ttft: float | None = None, itl: tuple[float, ...] = (), valid: bool | None = None
) -> Sample:
    return Sample(
        100, out, 40 if ttft is None else None, 1.0, ttft, itl, valid, "stop" if out < 8 else "length"
    )


def test_summarize_figures_and_missing_ones() -> None:
    fig = summarize(2.0, [_sample(4, 0.1, (0.01, 0.03), True), _sample(8, 0.3, (0.02,), False)])
    assert fig["output_tokens_per_s"] == 6.0 and fig["requests_per_s"] == 1.0
    assert fig["ttft_p50_ms"] == pytest.approx(200.0) and fig["itl_p50_ms"] == pytest.approx(20.0)
    assert fig["schema_valid_share"] == 0.5 and fig["finish_length_share"] == 0.5
    assert fig["prefix_cache_hit_rate"] is None  # neither sample could observe its cache
    plain = summarize(1.0, [_sample(3), _sample(5)])
    assert plain["ttft_p50_ms"] is None and plain["schema_valid_share"] is None
    assert plain["prefix_cache_hit_rate"] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="wall_s > 0"):
        summarize(0.0, [_sample(1)])


def test_percentile_interpolates() -> None:
    assert percentile([], 0.5) is None
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([5.0], 0.99) == 5.0


def test_stop_rule_and_saturation_point() -> None:
    assert not should_stop([10.0], 0.1)
    assert not should_stop([10.0, 11.5], 0.1)  # +15%: still rising
    assert should_stop([10.0, 11.5, 12.0], 0.1)  # +4%: stopped paying
    assert should_stop([10.0, 20.0, 15.0], 0.1)  # fell
    assert not should_stop([10.0, 20.0, 15.0], 0.1, patience=2)  # one noisy point is not enough
    assert should_stop([10.0, 20.0, 15.0, 21.0], 0.1, patience=2)
    assert not should_stop([10.0, 20.0, 15.0, 30.0], 0.1, patience=2)  # rose again past the best
    assert saturation_point([1, 2, 4, 8], [10.0, 20.0, 29.0, 30.0], 0.1) == 4
    assert saturation_point([1, 2], [10.0, 9.0], 0.1) == 1
    with pytest.raises(ValueError):
        saturation_point([1, 2], [1.0], 0.1)


@pytest.fixture(scope="module")
def tiny_work(tiny_model_dir: Path) -> Workload:
    return Workload("tiny-qwen3", "text", token_counter(str(tiny_model_dir)))


def test_workload_requests_are_unique_and_sized(tiny_work: Workload, tiny_model_dir: Path) -> None:
    counter = token_counter(str(tiny_model_dir))
    short = tiny_work.requests(3, 64, 8)
    long = tiny_work.requests(2, 1500, 8)
    texts = [r.messages[-1].content for r in short + long]
    assert len(set(texts)) == 5 and all(r.json_schema is None for r in short)
    assert len({r.messages[0].content for r in short + long}) == 1  # the shared system prefix
    n_long = counter([m.to_openai() for m in long[0].messages])
    assert 1300 <= n_long <= 1700  # calibrated to the target within a row or two
    js = Workload("tiny-qwen3", "json", counter, first_id=1_000_000).requests(1, 64, 40)[0]
    assert js.json_schema == SCHEMA and "Request 1000000." in js.messages[-1].content
    with pytest.raises(ValueError, match="workload='xml'"):
        Workload("tiny-qwen3", "xml", counter)


def test_transformers_driver_counts_real_tokens(
    tiny_work: Workload, tiny_model_dir: Path, tiny_registry
) -> None:
    from bench.serving.drivers import TransformersDriver

    drv = TransformersDriver(tiny_model_dir, tiny_registry.get("tiny-qwen3"))
    drv.start()
    try:
        wall, samples = drv.run(tiny_work.requests(3, 64, 6), 2)
    finally:
        drv.close()
    assert wall > 0 and len(samples) == 3
    for s in samples:
        assert 1 <= s.completion_tokens <= 6 and s.prompt_tokens > 50
        assert s.ttft_s is not None and len(s.itl_s) == s.completion_tokens - 1
        assert s.cached_tokens is None and s.valid is None


def test_transformers_reference_dtype_and_threads_on_cpu(tiny_model_dir: Path, tiny_registry) -> None:
    """auto is float32 on a CPU (PyTorch's fast path there), an explicit dtype is honoured, and
    the reference computes on every usable core."""
    import os

    from bench.serving.drivers import TransformersDriver

    spec = tiny_registry.get("tiny-qwen3")
    for asked, got in (("auto", "float32"), ("bfloat16", "bfloat16")):
        drv = TransformersDriver(tiny_model_dir, spec, dtype=asked, device="cpu")
        drv.start()
        try:
            assert drv.torch_dtype == got and drv.threads == len(os.sched_getaffinity(0))
        finally:
            drv.close()


def test_in_process_and_server_drivers(
    vllm_backend, openai_server, tiny_registry, tiny_model_dir: Path
) -> None:
    from bench.serving.drivers import InProcessDriver, ServerDriver

    counter = token_counter(str(tiny_model_dir))
    text = Workload("tiny-qwen3", "text", counter)
    wall, samples = InProcessDriver(vllm_backend).run(text.requests(3, 64, 6), 2)
    assert wall > 0 and [s.ttft_s for s in samples] == [None] * 3
    assert all(1 <= s.completion_tokens <= 6 and s.cached_tokens is not None for s in samples)
    server = ServerDriver(
        tiny_registry.get("tiny-qwen3"), tiny_registry, base_url=openai_server.base_url, api_key="test-key"
    )
    assert server.start() == 0.0  # given a running server, nothing is started
    wall, samples = server.run(text.requests(3, 64, 6), 2)
    assert all(s.ttft_s is not None and s.ttft_s > 0 and 1 <= s.completion_tokens <= 6 for s in samples)
    # one gap between each two streamed pieces of text (how many tokens a piece holds is the
    # server's and the detokenizer's choice, so the count is checked against the pieces)
    assert all(s.pieces >= 1 and len(s.itl_s) == s.pieces - 1 for s in samples)
    assert all(x >= 0 for s in samples for x in s.itl_s)
    js = Workload("tiny-qwen3", "json", counter).requests(2, 64, 200)
    wall, samples = server.run_backend(js, 2)  # OpenAIBackend, the agents' path
    assert all(s.valid is not None for s in samples)
    server.close()


def test_command_with_the_transformers_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.serving.backends import main

    png = tmp_path / "serving.png"
    argv = (
        "--tiny --backends transformers --max-concurrency 4 --min-requests 2 --prompt-tokens 64 "
        "--max-tokens 4 --prompt-lengths 64 --output-lengths 2,4"
    )
    assert main(argv.split() + ["--plot", str(png)]) == 0
    recs = list(read_records(capsys.readouterr().out.splitlines()))
    sweep = [r for r in recs if r.case == "concurrency_sweep"]
    levels = [r.params["concurrency"] for r in sweep]
    assert levels[:2] == [1, 2] and set(levels) <= {1, 2, 4}  # doubling, capped by --max-concurrency
    assert all(r.unit == "tokens/s" and r.value > 0 and r.params["backend"] == "transformers" for r in sweep)
    assert all(r.params["ttft_p50_ms"] is not None and r.params["requests"] >= 2 for r in sweep)
    sat = next(r for r in recs if r.case == "saturation")
    assert sat.value in levels and sat.params["levels_measured"] == levels
    lengths = [r for r in recs if r.case == "length_sweep"]
    assert sorted(r.params["max_tokens"] for r in lengths) == [2, 4]
    assert png.is_file() and png.stat().st_size > 10_000


@pytest.mark.slow
def test_command_three_backends_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.serving.backends import main

    argv = (
        "--tiny --levels 1,2 --min-requests 2 --prompt-tokens 64 --max-tokens 4 --prompt-lengths 64 "
        "--output-lengths 4 --json-max-tokens 200"
    )
    assert main(argv.split() + ["--plot", str(tmp_path / "s.png")]) == 0
    recs = list(read_records(capsys.readouterr().out.splitlines()))
    assert {r.params["backend"] for r in recs if r.case == "concurrency_sweep"} == {
        "vllm",
        "openai",
        "transformers",
    }
    best = {r.params["backend"]: r for r in recs if r.case == "best_vs_transformers" and r.reference}
    assert set(best) == {"vllm", "openai"} and all(r.ratio > 0 for r in best.values())
    assert {
        r.params["backend"] for r in recs if r.case == "json_point" and r.metric == "schema_valid_share"
    } == {
        "vllm",
        "openai",
    }
