"""Moira lockstep benchmark: the demo experiment (2 seeds x 2 exposures) with every run in
lockstep (each round's calls of all runs in one engine batch) against the same runs one after
another, in one process on the same engine.

It measures through :func:`bench.agents.measure.measure_modes`, the code path of ``localfin bench
agent``'s Moira part (one warmed-up engine, start-up outside the timed runs, the prefix cache
emptied before each mode, fresh journals, records in the :mod:`bench.records` format); only the
experiment differs: the whole demo experiment (optionally with a shorter test window or fewer
replay cycles) instead of the bench agent's shortened one.

    localfin bench moira-lockstep                      # the demo experiment on smollm2-135m
    localfin bench moira-lockstep --test-end 2022-09-02  # a shorter test window
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

__all__ = ["HELP", "main", "parser"]


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """The Moira demo experiment (2 seeds x 2 exposures) with every run in lock-step against the same runs
one after another, on one engine.

Measured as localfin bench agent measures Moira (one warmed-up engine, start-up outside the timed
runs, the prefix cache emptied before each mode, fresh journals), on the whole demo experiment,
optionally with a shorter test window or fewer replay cycles.

    localfin bench moira-lockstep                        # the demo experiment on smollm2-135m
    localfin bench moira-lockstep --test-end 2022-09-02  # a shorter test window
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    from bench._args import BenchParser

    ap = BenchParser(
        prog="localfin bench moira-lockstep",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--model", default="smollm2-135m", help="registry key")
    ap.add_argument("--out", default=None, help="folder for the two experiment folders (default: temp)")
    ap.add_argument("--test-end", default=None, help="override windows.test_end (YYYY-MM-DD)")
    ap.add_argument("--max-cycles", type=int, default=None, help="override policy.max_cycles")
    return ap


def main(argv: list[str] | None = None, writer: object = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.max_cycles is not None and args.max_cycles < 0:
        ap.error(f"--max-cycles={args.max_cycles}; allowed: >= 0")

    import os

    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")

    from agent.pairs.experiment.config import parse_config
    from agent.pairs.experiment.demo import demo_document, synthetic_store
    from agent.pairs.experiment.run import run_experiment
    from bench.agents.measure import measure_modes, warm_up
    from bench.agents.runs import BenchRun
    from bench.records import RecordWriter
    from localfin import configfile as cf
    from localfin import env
    from serving.open import model_facts, open_backend

    env.apply_offline_env()
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="moira-lockstep-"))
    root.mkdir(parents=True, exist_ok=True)
    synthetic_store(root)
    over: dict[str, object] = {"baselines": {"methods": []}}  # the agent's runs only
    if args.test_end:
        over["windows"] = {"test_end": args.test_end}
    if args.max_cycles is not None:
        over["policy"] = {"max_cycles": args.max_cycles}
    doc = cf.merge(demo_document(args.model), over)
    text = cf.dumps(doc)
    cfg = parse_config(doc, base_dir=root)
    n_runs = len(list(cfg.run_ids()))
    facts = model_facts(args.model)

    def entry(kind: str, model: str, mode: str, size: int, out_dir: Path, *, backend: object) -> BenchRun:
        out = root / mode  # kept: the two experiment folders
        res = run_experiment(
            cfg, out, config_text=text, backend=backend, model=facts, sequential=mode == "sequential"
        )
        units = sum(int(r["metrics"]["n_transitions"]) for r in res.runs)
        return BenchRun(out / "journal.sqlite", units, res.wall_s, res)

    w = writer or RecordWriter("agent")
    engine = open_backend(cfg.model.backend_spec())
    try:
        w.metric("engine", "start_time", engine.start(), "s", model=args.model, backend="vllm")
        w.metric("engine", "warm_up_time", warm_up(engine, args.model), "s", model=args.model)
        ok = measure_modes("moira", entry, w, model=args.model, size=n_runs, shared={"backend": engine})
    finally:
        engine.close()
    w.metric(
        "moira",
        "folders",
        str(root),
        "",
        lockstep=str(root / "lockstep"),
        sequential=str(root / "sequential"),
    )
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    from bench._args import run_main

    run_main(main)
