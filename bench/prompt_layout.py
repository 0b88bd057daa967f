"""Prompt layout benchmark: the prefix cache under the paper's block order (A.6: company context,
pair-quality memory, learned principles) against ``memory_last`` (principles before the memory,
which changes every step), on the same engine, data and runs.

One short experiment (the demo's synthetic market, one run, greedy, the A3 variant so that the
warmup's valid principles are in every test prompt without replay cycles) runs once per
``prompt.block_order``, each in a fresh folder with the engine's prefix cache emptied first.
From each journal: the direction calls' prompt tokens, the share the engine served from its
prefix cache, and the prompt tokens it had to compute (records in the :mod:`bench.records`
format).

    python -m bench.prompt_layout [--model smollm2-135m] [--test-end 2022-09-30]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["main", "cache_figures"]


def cache_figures(records: list[dict[str, Any]], call_type: str = "direction") -> dict[str, float]:
    """Prompt, cached and uncached tokens of ``call_type`` in journal records, and the hit rate."""
    prompt = cached = calls = 0
    for r in records:
        if r["request"].get("call_type") != call_type:
            continue
        u = r["result"]["usage"]
        prompt += int(u["prompt_tokens"])
        cached += int(u["cached_tokens"])
        calls += 1
    return {
        "calls": calls,
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "uncached_tokens": prompt - cached,
        "hit_rate": cached / prompt if prompt else 0.0,
    }


def main(argv: list[str] | None = None, writer: object = None) -> int:
    from bench._args import BenchParser

    ap = BenchParser(
        prog="python -m bench.prompt_layout",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--model", default="smollm2-135m", help="registry key")
    ap.add_argument("--out", default=None, help="folder for the experiment folders (default: temp)")
    ap.add_argument("--test-end", default=None, help="override windows.test_end (YYYY-MM-DD)")
    args = ap.parse_args(argv)

    import os

    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")

    from agent.pairs.experiment.config import parse_config
    from agent.pairs.experiment.demo import demo_document, synthetic_store
    from agent.pairs.experiment.run import run_experiment
    from agent.pairs.moira.config import BLOCK_ORDERS
    from bench.records import RecordWriter
    from localfin import configfile as cf
    from localfin import env
    from serving.journal import Journal
    from serving.open import model_facts, open_backend

    env.apply_offline_env()
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="prompt-layout-"))
    root.mkdir(parents=True, exist_ok=True)
    synthetic_store(root)
    w = writer or RecordWriter("prompt_layout")
    figures: dict[str, dict[str, float]] = {}
    engine = None
    try:
        for order in BLOCK_ORDERS:
            over: dict[str, Any] = {
                "experiment": {"seeds": [0], "exposures": ["no_beta"]},
                "model": {"temperature": 0.0},
                "prompt": {"block_order": order},
                "variants": [{"name": "a3", "consolidation": False}],
                "baselines": {"methods": []},
            }
            if args.test_end:
                over["windows"] = {"test_end": args.test_end}
            doc = cf.merge(demo_document(args.model), over)
            cfg = parse_config(doc, base_dir=root)
            if engine is None:
                engine = open_backend(cfg.model.backend_spec())
                engine.start()
            engine.reset_prefix_cache()
            out = root / order
            facts = model_facts(args.model)
            res = run_experiment(cfg, out, config_text=cf.dumps(doc), backend=engine, model=facts)
            with Journal(out / "journal.sqlite") as j:
                f = cache_figures(j.records())
            principles = len(res.outcomes[0].policy.principles) if res.outcomes else 0
            figures[order] = f
            for metric in ("prompt_tokens", "cached_tokens", "uncached_tokens"):
                w.metric(order, metric, f[metric], "tokens", model=args.model, calls=f["calls"])
            w.metric(order, "prefix_cache_hit_rate", f["hit_rate"], "fraction", principles=principles)
    finally:
        if engine is not None:
            engine.close()
    paper, last = figures["paper"], figures["memory_last"]
    w.metric(
        "memory_last",
        "uncached_prompt_tokens",
        last["uncached_tokens"],
        "tokens",
        reference="paper block order (A.6)",
        reference_value=paper["uncached_tokens"],
        lower_is_better=True,
        headline=True,
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    from bench._args import run_main

    run_main(main)
