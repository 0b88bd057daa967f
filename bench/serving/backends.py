"""Serving benchmark: the in-process vLLM engine, the OpenAI server path on loopback and plain
transformers ``generate`` on the same model, prompts and ``max_tokens``, in one run.

For each backend (one at a time, each closed before the next starts): start-up time, a warm-up,
then a concurrency sweep (1, 2, 4, ... until output tokens/s stops rising by more than
``--margin`` over the best so far, or ``--max-concurrency``), a prompt/output length sweep at the
backend's saturation concurrency (``--patience`` points in a row must fail to rise before the
sweep stops), and (vLLM paths) a point of JSON-schema requests for the
schema-valid share and the prefix-cache hit rate. One JSON line per point (:mod:`bench.records`:
metric ``output_tokens_per_s``, every other figure in ``params``), then the saturation point of
each backend, each backend's best against transformers' best, and a PNG plot.

What each backend can observe, and how concurrency is applied, is in :mod:`bench.serving.drivers`
(TTFT/ITL of vLLM come from the server's streaming API; the in-process batch API returns all
answers at the end of a call).

    localfin bench serving                                   # smollm2-135m on this CPU
    localfin bench serving --tiny --max-concurrency 2        # tiny random model, seconds
    localfin bench serving --backends openai --base-url http://127.0.0.1:8000/v1 --model qwen3-4b
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._args import BenchParser, run_main
from bench.records import RecordWriter
from bench.serving.drivers import InProcessDriver, ServerDriver, TransformersDriver
from bench.serving.stats import saturation_point, should_stop, summarize
from bench.serving.workload import WORKLOADS, Workload, token_counter

__all__ = ["HELP", "main", "parser"]

BACKENDS = ("vllm", "openai", "transformers")
_LABEL = {
    "vllm": "vLLM in-process engine",
    "openai": "vLLM OpenAI server (loopback, streaming)",
    "transformers": "transformers generate (batched)",
}


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """Chat backend throughput, latency and tokens: the in-process vLLM engine, the OpenAI server on
loopback and plain transformers generate, on the same model, prompts and lengths.

For each backend, one at a time: start-up time, a warm-up, a concurrency sweep (1, 2, 4, ... until
output tokens/s stops rising by more than --margin, or --max-concurrency), a prompt and output
length sweep at the backend's saturation concurrency and, on the vLLM paths, a point of JSON-schema
requests (schema-valid share, prefix-cache hit rate). One JSON line per point, then each backend's
saturation point and best against transformers', and a PNG plot (--plot).

    localfin bench serving                                   # smollm2-135m on this CPU
    localfin bench serving --tiny --max-concurrency 2        # tiny random model, seconds
    localfin bench serving --backends openai --base-url http://127.0.0.1:8000/v1 --model qwen3-4b
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(
        prog="localfin bench serving",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--model", default="smollm2-135m", help="registry key")
    ap.add_argument("--model-path", default=None, help="explicit weights directory")
    ap.add_argument(
        "--tiny", action="store_true", help="build the tiny random Qwen3 into a temp dir and use it"
    )
    ap.add_argument(
        "--backends", default=",".join(BACKENDS), help=f"comma-separated, from {', '.join(BACKENDS)}"
    )
    ap.add_argument("--base-url", default=None, help="use this running OpenAI server instead of starting one")
    ap.add_argument("--api-key", default=None, help="bearer key of --base-url")
    ap.add_argument("--workload", default="text", choices=WORKLOADS, help="workload of the sweeps")
    ap.add_argument("--prompt-tokens", type=int, default=512, help="prompt length of the concurrency sweep")
    ap.add_argument("--max-tokens", type=int, default=64, help="max_tokens of the concurrency sweep")
    ap.add_argument("--max-concurrency", type=int, default=128)
    ap.add_argument("--levels", type=_ints, default=None, help="explicit concurrency levels (no stop rule)")
    ap.add_argument(
        "--margin", type=float, default=0.10, help="stop when tokens/s rises by no more than this"
    )
    ap.add_argument(
        "--patience", type=int, default=2, help="stop after this many points in a row that did not rise"
    )
    ap.add_argument("--min-requests", type=int, default=8, help="requests per point at least")
    ap.add_argument("--rounds", type=int, default=1, help="requests per point = concurrency x rounds")
    ap.add_argument("--prompt-lengths", type=_ints, default=[128, 1536], help="length sweep prompts")
    ap.add_argument("--output-lengths", type=_ints, default=[32, 128], help="length sweep max_tokens")
    ap.add_argument("--length-concurrency", type=int, default=None, help="default: the saturation point")
    ap.add_argument("--json-max-tokens", type=int, default=200)
    ap.add_argument("--no-json", action="store_true", help="skip the JSON-schema point")
    ap.add_argument(
        "--max-num-seqs", type=int, default=None, help="in-process engine (default: max concurrency)"
    )
    ap.add_argument(
        "--dtype",
        default="auto",
        help="transformers dtype (auto: the checkpoint's on a GPU, float32 on a CPU)",
    )
    ap.add_argument(
        "--hf-device", default="auto", help="transformers device (auto: cuda if present, else cpu)"
    )
    ap.add_argument(
        "--plot", default=None, help="PNG path (default: $LOCALFIN_REPORTS_DIR/bench-serving.png)"
    )
    ap.add_argument("--no-plot", action="store_true")
    return ap


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = parser()
    args = ap.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in args.backends if b not in BACKENDS]
    if bad or not args.backends:
        ap.error(f"--backends {bad or 'empty'}; allowed: {', '.join(BACKENDS)}")
    if min(args.prompt_tokens, args.max_tokens, args.max_concurrency, args.min_requests, args.rounds) < 1:
        ap.error("--prompt-tokens, --max-tokens, --max-concurrency, --min-requests and --rounds must be >= 1")
    if args.patience < 1:
        ap.error(f"--patience={args.patience}; allowed: >= 1")
    if not 0 <= args.margin < 1:
        ap.error(f"--margin={args.margin}; allowed: 0 <= margin < 1")
    if args.levels is not None and (not args.levels or min(args.levels) < 1):
        ap.error("--levels must list concurrencies >= 1")
    return args


def _levels(args: argparse.Namespace) -> list[int]:
    if args.levels:
        return sorted(set(args.levels))
    out, c = [], 1
    while c <= args.max_concurrency:
        out.append(c)
        c *= 2
    return out


def _model(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from serving.models.registry import default_registry

    reg = default_registry()
    path = args.model_path
    if args.tiny:
        from serving.models.prepare import build_tiny_model

        args.model = "tiny-qwen3"
        path = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny", arch="qwen3"))
    if path:
        reg = reg.with_spec(reg.get(args.model).with_path(path))
    spec = reg.get(args.model)
    try:
        model_dir = str(spec.resolve_path())
    except Exception:  # noqa: BLE001 - a remote server's model may have no local files
        model_dir = ""
    return reg, spec, model_dir


def _driver(name: str, args: argparse.Namespace, reg: Any, spec: Any, model_dir: str) -> Any:
    if name == "vllm":
        from serving.engines.vllm_engine import EngineOptions
        from serving.open import BackendSpec, open_backend

        seqs = args.max_num_seqs or max(64, max(_levels(args)))
        return InProcessDriver(
            open_backend(BackendSpec("vllm", spec.key, engine=EngineOptions(max_num_seqs=seqs)), reg)
        )
    if name == "openai":
        return ServerDriver(spec, reg, base_url=args.base_url, api_key=args.api_key)
    return TransformersDriver(model_dir, spec, dtype=args.dtype, device=args.hf_device)


def _point(
    w: RecordWriter,
    driver: Any,
    workload: Workload,
    case: str,
    c: int,
    prompt_tokens: int,
    max_tokens: int,
    args: argparse.Namespace,
    *,
    product_path: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    n = max(c * args.rounds, args.min_requests)
    reqs = workload.requests(n, prompt_tokens, max_tokens)
    runner = driver.run_backend if product_path else driver.run
    wall, samples = runner(reqs, c)
    figures = summarize(wall, samples)
    params = {
        "backend": driver.name,
        "backend_label": _LABEL[driver.name] + (" via OpenAIBackend" if product_path else ""),
        "workload": workload.kind,
        "concurrency": c,
        "prompt_tokens_target": prompt_tokens,
        "max_tokens": max_tokens,
        **{k: v for k, v in figures.items() if k != "output_tokens_per_s"},
        **extra,
    }
    w.metric(case, "output_tokens_per_s", figures["output_tokens_per_s"], "tokens/s", **params)
    return {"case": case, **params, "output_tokens_per_s": figures["output_tokens_per_s"]}


def _run_backend(
    name: str, args: argparse.Namespace, w: RecordWriter, reg: Any, spec: Any, model_dir: str, counter: Any
) -> list[dict[str, Any]]:
    driver = _driver(name, args, reg, spec, model_dir)
    points: list[dict[str, Any]] = []
    try:
        start_s = driver.start()
        extra = (
            {"dtype": driver.torch_dtype, "device": driver.device, "torch_threads": driver.threads}
            if name == "transformers"
            else {}
        )
        w.metric("startup", "start_time", start_s, "s", backend=name, model=spec.key, **extra)
        work = Workload(spec.key, args.workload, counter)
        driver.run(work.requests(4, args.prompt_tokens, 8), 4)  # warm-up: compile, caches, threads
        tput: list[float] = []
        for c in _levels(args):
            p = _point(
                w, driver, work, "concurrency_sweep", c, args.prompt_tokens, args.max_tokens, args, **extra
            )
            points.append(p)
            tput.append(p["output_tokens_per_s"])
            if args.levels is None and should_stop(tput, args.margin, args.patience):
                break
        levels = [p["concurrency"] for p in points]
        sat = saturation_point(levels, tput, args.margin)
        best = points[tput.index(max(tput))]
        w.metric(
            "saturation",
            "concurrency",
            sat,
            "count",
            backend=name,
            margin=args.margin,
            output_tokens_per_s_at_saturation=tput[levels.index(sat)],
            best_concurrency=best["concurrency"],
            best_output_tokens_per_s=best["output_tokens_per_s"],
            levels_measured=levels,
            headline=name in ("vllm", "openai"),
            label=f"saturation point, {_LABEL[name]}",
            note=f"{best['output_tokens_per_s']:.0f} tokens/s at best; levels {levels}",
            **extra,
        )
        lc = args.length_concurrency or sat
        for pt in args.prompt_lengths:
            for mt in args.output_lengths:
                points.append(_point(w, driver, work, "length_sweep", lc, pt, mt, args, **extra))
        if name != "transformers" and not args.no_json:
            points.append(_json_point(w, driver, spec, counter, sat, args))
    finally:
        driver.close()
    return points


def _json_point(
    w: RecordWriter, driver: Any, spec: Any, counter: Any, c: int, args: argparse.Namespace
) -> dict:
    """JSON-schema requests at the saturation point through the agents' own path."""
    work = Workload(spec.key, "json", counter, first_id=1_000_000)  # no id of the text workload
    p = _point(
        w, driver, work, "json_point", c, args.prompt_tokens, args.json_max_tokens, args, product_path=True
    )
    valid, hit = p["schema_valid_share"], p["prefix_cache_hit_rate"]
    w.metric(
        "json_point",
        "schema_valid_share",
        valid,
        "fraction",
        backend=driver.name,
        concurrency=c,
        requests=p["requests"],
        prefix_cache_hit_rate=hit,
        output_tokens_per_s=p["output_tokens_per_s"],
        headline=True,
        label=f"JSON-schema replies valid, {_LABEL[driver.name]}, {p['requests']} requests at c={c}",
        note=f"prefix-cache hit rate {hit:.0%}" if hit is not None else "",
    )
    return p


def _compare(w: RecordWriter, points: list[dict[str, Any]]) -> None:
    sweep = [p for p in points if p["case"] == "concurrency_sweep"]
    best: dict[str, dict[str, Any]] = {}
    for p in sweep:
        if p["backend"] not in best or p["output_tokens_per_s"] > best[p["backend"]]["output_tokens_per_s"]:
            best[p["backend"]] = p
    ref = best.get("transformers")
    for name in ("vllm", "openai"):
        if name not in best:
            continue
        b = best[name]
        kw: dict[str, Any] = {}
        if ref is not None:
            kw = dict(
                reference=f"transformers generate, best batch ({ref['concurrency']})",
                reference_value=ref["output_tokens_per_s"],
                lower_is_better=False,
                transformers_concurrency=ref["concurrency"],
                transformers_dtype=ref.get("dtype"),
            )
        w.metric(
            "best_vs_transformers",
            "output_tokens_per_s",
            b["output_tokens_per_s"],
            "tokens/s",
            backend=name,
            concurrency=b["concurrency"],
            prompt_tokens=round(b["mean_prompt_tokens"]),
            output_tokens=round(b["mean_output_tokens"]),
            headline=True,
            label=f"{_LABEL[name]}, best concurrency ({b['concurrency']})",
            note=f"~{b['mean_prompt_tokens']:.0f}-token prompts, {b['mean_output_tokens']:.0f} output tokens",
            **kw,
        )
    if ref is not None:
        w.metric(
            "best_vs_transformers",
            "reference_output_tokens_per_s",
            ref["output_tokens_per_s"],
            "tokens/s",
            backend="transformers",
            concurrency=ref["concurrency"],
            dtype=ref.get("dtype"),
        )


def main(argv: list[str] | None = None, writer: RecordWriter | None = None) -> int:
    args = _parse(argv)
    # vLLM logs to stdout by default; keep stdout for the JSON lines (its warnings go to stderr).
    # Restored at the end, so that a caller's later engines and servers log as usual.
    old = os.environ.get("VLLM_CONFIGURE_LOGGING")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    try:
        return _main(args, writer)
    finally:
        if old is None:
            os.environ.pop("VLLM_CONFIGURE_LOGGING", None)
        else:
            os.environ["VLLM_CONFIGURE_LOGGING"] = old


def _main(args: argparse.Namespace, writer: RecordWriter | None) -> int:
    from localfin import env

    env.apply_offline_env()
    w = writer or RecordWriter("serving")
    reg, spec, model_dir = _model(args)
    counter = token_counter(model_dir)
    points: list[dict[str, Any]] = []
    failed = 0
    for name in args.backends:
        try:
            points += _run_backend(name, args, w, reg, spec, model_dir, counter)
        except Exception as exc:  # noqa: BLE001 - one backend failing must not lose the others' figures
            failed += 1
            w.metric("startup", "status", "failed", "", backend=name, error=str(exc)[:500])
            sys.stderr.write(f"serving benchmark: backend {name} failed: {exc}\n")
    _compare(w, points)
    if not args.no_plot:
        from bench.serving.plot import plot_serving

        path = Path(args.plot) if args.plot else env.reports_dir() / "bench-serving.png"
        plot_serving(points, path, title=f"{spec.key} on {os.cpu_count()} CPUs")
        w.metric("plot", "written", str(path), "", path=str(path))
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
