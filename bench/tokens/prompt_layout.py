"""Prompt layout benchmark: the prefix cache under the paper's block order (A.6: company context,
pair-quality memory, learned principles) against ``memory_last`` (principles before the memory,
which changes every step), on the same engine, data and window.

The block order matters only when there are principles, and the CPU model rarely gets one past
the replay gate, so the benchmark runs the agent's test window itself
(:func:`agent.pairs.moira.episode.run_window`, the code a run uses: selection, lifecycle,
direction on the real engine) on the demo's synthetic market with :data:`PRINCIPLES` as the
accepted principles, once per ``prompt.block_order``, each with a fresh journal and the engine's
prefix cache emptied first. From each journal: the direction calls' prompt tokens, the share the
engine served from its prefix cache, and the prompt tokens it had to compute (records in the
:mod:`bench.records` format).

    python -m bench.tokens.prompt_layout [--model smollm2-135m] [--test-end 2022-09-30]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["HELP", "PRINCIPLES", "main", "parser", "cache_figures"]

#: Three transferable principles of the kind the training reflection proposes (ours; no ticker,
#: date or fixed direction), standing in for an accepted policy memory.
PRINCIPLES = (
    "When the trading-window z-score is beyond two, trade toward the mean unless today's move "
    "widens the spread.",
    "Choose FLAT only when the spread is near its mean and the news of the two legs points both ways.",
    "After a wrong-side loss, check whether the price delta confirmed the spread signal before "
    "repeating that side.",
)


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


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """The prefix cache under the paper's prompt block order (company context, pair-quality memory, learned
principles) against principles before the memory (memory_last).

Runs Moira's test window on the demo's synthetic market with a fixed set of accepted principles,
once per block order, each with a fresh journal and an emptied prefix cache, and reports the
direction calls' prompt tokens, the share the engine served from its prefix cache and the prompt
tokens it had to compute.

    localfin bench prompt-layout --model smollm2-135m --test-end 2022-09-30
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    from bench._args import BenchParser

    ap = BenchParser(
        prog="localfin bench prompt-layout",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--model", default="smollm2-135m", help="registry key")
    ap.add_argument("--out", default=None, help="folder for the experiment folders (default: temp)")
    ap.add_argument("--test-end", default=None, help="override windows.test_end (YYYY-MM-DD)")
    ap.add_argument(
        "--block-size",
        type=int,
        default=None,
        help="KV-cache block (tokens), the prefix cache's granularity (default: vLLM's; 128 on the CPU)",
    )
    return ap


def main(argv: list[str] | None = None, writer: object = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)

    import os

    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")

    from agent.data.store import MarketStore
    from agent.pairs.experiment.config import parse_config
    from agent.pairs.experiment.demo import demo_document, synthetic_store
    from agent.pairs.market.view import MarketView
    from agent.pairs.moira.calls import CallSettings
    from agent.pairs.moira.config import BLOCK_ORDERS
    from agent.pairs.moira.episode import RunContext, WindowSpec, run_window
    from agent.pairs.moira.trace import TraceLog
    from bench.records import RecordWriter
    from localfin import configfile as cf
    from localfin import env
    from serving.chat.lockstep import run_lockstep
    from serving.journal import Journal, JournaledBackend
    from serving.open import open_backend

    env.apply_offline_env()
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="prompt-layout-"))
    root.mkdir(parents=True, exist_ok=True)
    synthetic_store(root)
    w = writer or RecordWriter("prompt_layout")
    figures: dict[str, dict[str, float]] = {}
    over: dict[str, Any] = {"model": {"temperature": 0.0}}
    if args.test_end:
        over["windows"] = {"test_end": args.test_end}
    cfg = parse_config(cf.merge(demo_document(args.model), over), base_dir=root)
    with MarketStore(cfg.store, create=False) as store:
        view = MarketView(store, cfg.pool, cfg.screen, end=cfg.windows.test_end)
    sessions = tuple(view.sessions(cfg.windows.test_start, cfg.windows.test_end))
    spec = cfg.model.backend_spec()
    if args.block_size:
        spec = dataclasses.replace(spec, engine=dataclasses.replace(spec.engine, block_size=args.block_size))
    engine = open_backend(spec)
    try:
        engine.start()
        for order in BLOCK_ORDERS:
            prompt = dataclasses.replace(cfg.prompt, block_order=order)
            ctx = RunContext(
                run_id=order,
                view=view,
                settings=CallSettings(
                    cfg.model.backbone, cfg.model.sampling(0), cfg.model.max_tokens, prompt
                ),
                prompt=prompt,
                selection=cfg.variants[0].selection,
                lifecycle=cfg.lifecycle,
                cost_bps=cfg.cost_bps,
                trace=TraceLog(order),
            )
            engine.reset_prefix_cache()
            out = root / order
            out.mkdir(exist_ok=True)
            journal = Journal(out / "journal.sqlite", run_id=order)
            try:
                spec = WindowSpec("test", 0, sessions, "no_beta", PRINCIPLES)
                run_lockstep([run_window(ctx, spec)], JournaledBackend(engine, journal))
                f = cache_figures(journal.records())
            finally:
                journal.close()
            figures[order] = f
            for metric in ("prompt_tokens", "cached_tokens", "uncached_tokens"):
                w.metric(order, metric, f[metric], "tokens", model=args.model, calls=f["calls"])
            w.metric(
                order,
                "prefix_cache_hit_rate",
                f["hit_rate"],
                "fraction",
                principles=len(PRINCIPLES),
                block_size=args.block_size or "default",
            )
    finally:
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
