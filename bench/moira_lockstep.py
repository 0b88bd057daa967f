"""Moira lockstep benchmark: the demo experiment (2 seeds x 2 exposures) with every run in
lockstep (each round's calls of all runs in one engine batch) against the same runs one after
another, in one process on the same engine.

Both modes start from a fresh journal (nothing replayed from an earlier mode); the engine is
started before either is timed. Lockstep runs first, so the sequential reference runs on a warm
prefix cache: the ratio is conservative. Prints JSON lines (one per mode, then the ratio).

    localfin bench moira-lockstep                      # the demo experiment on smollm2-135m
    localfin bench moira-lockstep --test-end 2022-09-02  # a shorter test window
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]


def _emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    from bench._args import BenchParser

    ap = BenchParser(
        prog="localfin bench moira-lockstep",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--model", default="smollm2-135m", help="registry key")
    ap.add_argument("--out", default=None, help="folder for the two experiment folders (default: temp)")
    ap.add_argument("--test-end", default=None, help="override windows.test_end (YYYY-MM-DD)")
    ap.add_argument("--max-cycles", type=int, default=None, help="override policy.max_cycles")
    args = ap.parse_args(argv)
    if args.max_cycles is not None and args.max_cycles < 0:
        ap.error(f"--max-cycles={args.max_cycles}; allowed: >= 0")

    import os

    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    import dataclasses
    import re
    import tomllib

    from agent.pairs.baseline_config import BaselinesConfig
    from agent.pairs.config import parse_config
    from agent.pairs.demo import demo_config_text, synthetic_store
    from agent.pairs.experiment import run_experiment
    from localfin import env
    from serving.vllm_engine import EngineOptions, VLLMBackend

    env.apply_offline_env()
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="moira-lockstep-"))
    root.mkdir(parents=True, exist_ok=True)
    synthetic_store(root)
    text = demo_config_text(args.model)
    if args.test_end:
        text = re.sub(r'(?m)^test_end = "[^"]*"', f'test_end = "{args.test_end}"', text)
    if args.max_cycles is not None:
        text = re.sub(r"(?m)^max_cycles = \d+", f"max_cycles = {args.max_cycles}", text)
    cfg = parse_config(tomllib.loads(text), base_dir=root)
    cfg = dataclasses.replace(cfg, baselines=BaselinesConfig(methods=()))  # the agent's runs only
    engine = VLLMBackend(args.model, options=EngineOptions(max_num_seqs=cfg.model.max_num_seqs))
    t0 = time.perf_counter()
    engine.start()
    _emit(
        {"bench": "moira_lockstep", "model": args.model, "engine_start_s": round(time.perf_counter() - t0, 2)}
    )
    walls = {}
    try:
        for mode in ("lockstep", "sequential"):
            out = root / mode
            res = run_experiment(cfg, out, config_text=text, backend=engine, sequential=mode == "sequential")
            walls[mode] = res.wall_s
            _emit(
                {
                    "mode": mode,
                    "runs": len(res.runs),
                    "wall_s": round(res.wall_s, 2),
                    "rounds": res.rounds,
                    "model_calls": res.model_calls,
                    "replayed": res.replayed,
                    "invalid_replies": sum(r["extra"]["fallbacks_total"] for r in res.runs),
                    "returns": {r["run_id"]: r["metrics"]["cumulative_return"] for r in res.runs},
                    "folder": str(out),
                }
            )
    finally:
        engine.close()
    _emit({"speedup_lockstep_vs_sequential": round(walls["sequential"] / walls["lockstep"], 3)})
    return 0


if __name__ == "__main__":  # pragma: no cover
    from bench._args import run_main

    run_main(main)
