"""GPU machine check: transformers generation throughput on randomly initialised models of the
real architectures, a batch sweep, and the kernels and the bank on that machine's CPUs.

Needs only PyTorch, transformers, numba and numpy (no vLLM, no weights, no downloads, no
statsmodels or hnswlib). Speed does not depend on the weights, so the models are the published
shapes of Qwen3-4B and Llama-3.1-8B (configs written out below) with random bf16 weights made
on the device; prompts are random token ids and every row generates exactly ``--new-tokens``
(end-of-sequence disabled). Per model and batch size: output tokens/s, time to first token and
inter-token latency (a per-step clock), peak GPU memory. The sweep of a model stops when tokens/s
stops rising by more than 10 %, at an out-of-memory error, or when ``--budget`` seconds are used.
Then on the CPUs: the Engle-Granger kernels (all threads vs one, and vs the plain numpy twin on a
sample) and the exact threshold index against numpy brute force (and torch on the GPU).

    bash bench/suite/gpu_check.sh              # on the lent GPU machine, < 10 minutes
    python -m bench.suite.gpu_check --tiny     # anywhere, tiny shapes on CPU, seconds

Where vLLM is installed, ``gpu_check.sh`` first runs ``localfin gpu-check`` (the engine path on
tiny models: two engines at their placed shares, thinking with a JSON schema, close and start,
tensor parallelism 2, ``vllm serve`` with an image; about 3 minutes) and gives the sweeps the
rest of its budget.

vLLM GPU figures need a workstation with vLLM and a checkpoint: ``localfin serve qwen3-4b``, then
vLLM's own serving benchmark on the agents' journaled prompts beside our driver
(``localfin bench vllm-serve --journal RUN_DIR --out OUT --model qwen3-4b --base-url
http://127.0.0.1:8000/v1 --rates 2,8 --max-concurrency 64``; the ``vllm bench serve`` line it runs
is in ``bench/suite/gpu_check.sh``). For the transformers reference, transformers loads the model
on the same GPU beside the server, so serve it with room left (``localfin serve qwen3-4b
--gpu-share 0.45``), then ``localfin bench serving --backends openai,transformers --base-url
http://127.0.0.1:8000/v1 --model qwen3-4b``; or run the two one after the other.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

from bench._args import BenchParser, run_main
from bench.records import RecordWriter

__all__ = ["HELP", "ARCHS", "main", "parser", "model_config"]

#: Published shapes (config.json of the released checkpoints), written out by hand.
ARCHS: dict[str, dict[str, Any]] = {
    "qwen3-4b": dict(
        model_type="qwen3",
        vocab_size=151_936,
        hidden_size=2560,
        intermediate_size=9728,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40_960,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        hidden_act="silu",
        attention_bias=False,
    ),
    "llama-3.1-8b": dict(
        model_type="llama",
        vocab_size=128_256,
        hidden_size=4096,
        intermediate_size=14_336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=131_072,
        rope_theta=500_000.0,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        hidden_act="silu",
        attention_bias=False,
    ),
}

_TINY = dict(
    vocab_size=1024,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)


def model_config(name: str, tiny: bool = False) -> Any:
    """The transformers config of ``name`` (see :data:`ARCHS`); ``tiny`` shrinks it for tests."""
    from transformers import AutoConfig

    spec = dict(ARCHS[name])
    if tiny:
        spec.update(_TINY)
    model_type = spec.pop("model_type")
    return AutoConfig.for_model(model_type, **spec)


def _build(name: str, tiny: bool, device: Any, dtype: Any) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    cfg = model_config(name, tiny)
    with torch.device(device):  # random init directly on the device (an 8B model in seconds)
        try:
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        except TypeError:  # transformers < 4.56 calls it torch_dtype
            model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.eval()


def _generate(model: Any, batch: int, prompt: int, new: int, device: Any) -> dict[str, float]:
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    stamps: list[float] = []

    class Clock(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            if device.type == "cuda":
                torch.cuda.synchronize()
            stamps.append(time.perf_counter())
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    gen = torch.Generator(device="cpu").manual_seed(batch)
    ids = torch.randint(10, model.config.vocab_size - 10, (batch, prompt), generator=gen).to(device)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=False,
            stopping_criteria=StoppingCriteriaList([Clock()]),
        )
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    produced = int(out.shape[1] - prompt) * batch
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
    res = {
        "output_tokens_per_s": produced / wall,
        "wall_s": wall,
        "ttft_ms": 1e3 * (stamps[0] - t0) if stamps else float("nan"),
        "itl_p50_ms": 1e3 * gaps[len(gaps) // 2] if gaps else float("nan"),
        "itl_p99_ms": 1e3 * gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))] if gaps else float("nan"),
    }
    if device.type == "cuda":
        res["peak_gpu_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return res


def _generation(args: argparse.Namespace, w: RecordWriter, device: Any, deadline: float) -> None:
    import torch

    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    for name in args.models:
        t0 = time.perf_counter()
        model = _build(name, args.tiny, device, dtype)
        params_b = sum(p.numel() for p in model.parameters()) / 1e9
        dtype_name = str(dtype).removeprefix("torch.")
        common = dict(model=name, arch="random weights, published shape", dtype=dtype_name)
        w.metric("generate", "model_init", time.perf_counter() - t0, "s", params_billion=params_b, **common)
        _generate(model, 1, min(args.prompt_tokens, 32), 4, device)  # warm-up: kernels, allocator
        best: list[float] = []
        for batch in args.batches:
            if time.perf_counter() > deadline:
                w.metric("generate", "status", "skipped: time budget used", "", batch=batch, **common)
                break
            try:
                res = _generate(model, batch, args.prompt_tokens, args.new_tokens, device)
            except torch.OutOfMemoryError:
                w.metric("generate", "status", "out of memory", "", batch=batch, **common)
                torch.cuda.empty_cache()
                break
            tput = res.pop("output_tokens_per_s")
            w.metric(
                "generate",
                "output_tokens_per_s",
                tput,
                "tokens/s",
                batch=batch,
                prompt_tokens=args.prompt_tokens,
                new_tokens=args.new_tokens,
                headline=True,
                label=f"transformers generate, {name} shape, batch {batch}",
                **res,
                **common,
            )
            if best and tput <= 1.1 * max(best):
                break
            best.append(tput)
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _kernels(args: argparse.Namespace, w: RecordWriter) -> None:
    import numba

    from bench.kernels.speed import synthetic_panel
    from kernels import engle_granger_pairs, rolling_engle_granger_pairs
    from kernels.reference import eg_reference

    threads = numba.get_num_threads()
    window = 120 if args.tiny else 2520
    n_pool = 12 if args.tiny else 500
    panel = synthetic_panel(n_pool, window, 3)
    engle_granger_pairs(panel[:, :8])  # compile / cache load
    t0 = time.perf_counter()
    res = engle_granger_pairs(panel)
    ours = time.perf_counter() - t0
    n_pairs = res.stat.size
    sample = min(n_pairs, 4 if args.tiny else 40)
    t0 = time.perf_counter()
    for k in range(sample):
        eg_reference(panel[:, res.i[k]], panel[:, res.j[k]])
    ref = (time.perf_counter() - t0) / sample * n_pairs
    w.metric(
        "kernels",
        "large_pool_time",
        ours,
        "s",
        reference="numpy twin (kernels.reference), extrapolated",
        reference_value=ref,
        lower_is_better=True,
        tickers=n_pool,
        pairs=int(n_pairs),
        window=window,
        reference_pairs_measured=sample,
        threads=threads,
        headline=True,
        label=f"one selection date, {n_pairs:,} pairs, {threads} CPU threads",
    )
    rpanel = synthetic_panel(10, window + 99, 0)
    ends = np.arange(window - 1, rpanel.shape[0])
    rolling_engle_granger_pairs(rpanel, window, ends=ends[:40])
    t0 = time.perf_counter()
    rolling_engle_granger_pairs(rpanel, window, ends=ends)
    par = time.perf_counter() - t0
    numba.set_num_threads(1)
    try:
        t0 = time.perf_counter()
        rolling_engle_granger_pairs(rpanel, window, ends=ends)
        one = time.perf_counter() - t0
    finally:
        numba.set_num_threads(threads)
    w.metric(
        "kernels",
        "rescreen_time",
        par,
        "s",
        reference="one thread",
        reference_value=one,
        lower_is_better=True,
        threads=threads,
        cells=int(ends.size * 45),
        headline=True,
        label=f"re-screen, {threads} threads vs 1",
    )


def _bank(args: argparse.Namespace, w: RecordWriter, device: Any) -> None:
    import torch

    from bank.exact import ExactConfig, ExactThresholdIndex
    from bench.retrieval.synth import synthetic_bank

    n = 3000 if args.tiny else args.bank_rows
    dim = 32 if args.tiny else 384
    x = synthetic_bank(n + 50, dim, clusters=20 if args.tiny else 100)
    queries, x = x[:50], x[50:]
    t0 = time.perf_counter()
    cpus = os.cpu_count() or 2
    cfg = ExactConfig(min_rows=500, stage_dims=(8, 16)) if args.tiny else ExactConfig(threads=cpus)
    index = ExactThresholdIndex(dim, cfg)
    index.add(x)
    build = time.perf_counter() - t0
    tau = 0.65

    def timed(fn: Any) -> float:
        fn(queries[0])
        ms = []
        for q in queries:
            t = time.perf_counter()
            fn(q)
            ms.append(1e3 * (time.perf_counter() - t))
        return float(np.median(ms))

    brute = timed(lambda q: np.flatnonzero(x @ q >= tau))
    exact = timed(lambda q: index.search(q, tau))
    common = dict(rows=n, dim=dim, tau=tau, queries=len(queries), exact_build_s=build)
    w.metric(
        "bank",
        "exact_search_p50",
        exact,
        "ms",
        reference="numpy brute force (CPU)",
        reference_value=brute,
        lower_is_better=True,
        headline=True,
        label=f"bank threshold search, {n:,} rows, CPUs",
        **common,
    )
    if device.type == "cuda":
        xg = torch.from_numpy(x).to(device)

        def gpu(q: np.ndarray) -> Any:
            out = torch.nonzero(xg @ torch.from_numpy(q).to(device) >= tau)
            torch.cuda.synchronize()
            return out

        w.metric(
            "bank",
            "torch_gpu_brute_p50",
            timed(gpu),
            "ms",
            reference="numpy brute force (CPU)",
            reference_value=brute,
            lower_is_better=True,
            **common,
        )


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """GPU machine check: generation throughput of the backbones' architectures with random weights, a
batch sweep, and the kernels and the bank on the machine's CPUs.

Needs only PyTorch, transformers, numba and numpy (no vLLM, weights or downloads). Per model and
batch size: output tokens/s, time to first token, inter-token latency and peak GPU memory; a model's
sweep stops when tokens/s stops rising by more than 10 %, at out-of-memory, or when --budget seconds
are used. Then the Engle-Granger kernels (all threads against one) and the exact threshold index
against brute force.

    localfin bench gpu-check                # on a GPU machine, under 10 minutes
    localfin bench gpu-check --tiny         # anywhere, tiny shapes on the CPU, seconds
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench gpu-check", description=HELP)
    ap.add_argument("--tiny", action="store_true", help="tiny shapes on CPU (tests)")
    ap.add_argument("--models", default=",".join(ARCHS), help=f"from {', '.join(ARCHS)}")
    ap.add_argument("--batches", default="1,8,32,64,128,256", help="batch sizes of the sweep")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--budget", type=float, default=420.0, help="seconds for the generation sweeps")
    ap.add_argument("--bank-rows", type=int, default=1_000_000)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: generate, kernels, bank")
    return ap


def main(argv: list[str] | None = None, writer: RecordWriter | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    if any(m not in ARCHS for m in args.models):
        ap.error(f"--models {args.models}; allowed: {', '.join(ARCHS)}")
    args.batches = [int(b) for b in args.batches.split(",") if b.strip()]
    if args.tiny:
        args.batches = [b for b in args.batches if b <= 8] or [1]
        args.prompt_tokens, args.new_tokens = min(args.prompt_tokens, 16), min(args.new_tokens, 4)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    extra: dict[str, Any] = {"torch": torch.__version__, "device": str(device)}
    if device.type == "cuda":
        extra["gpu"] = torch.cuda.get_device_name(0)
        extra["cuda"] = torch.version.cuda
    try:
        import transformers

        extra["transformers"] = transformers.__version__
    except ImportError:
        pass
    w = writer or RecordWriter("gpu", extra_machine=extra)
    deadline = time.perf_counter() + args.budget
    if "generate" not in skip:
        _generation(args, w, device, deadline)
    if "kernels" not in skip:
        _kernels(args, w)
    if "bank" not in skip:
        _bank(args, w, device)
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
