"""The CPU demo, as far as the landed issues reach: synthetic market, causal screen, and a
schema-constrained, journaled batch of pair picks from the real CPU model, with a token and
latency report. The pair-trading backtest and the QA demo join it when the agents land."""

from __future__ import annotations

import copy
import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from serving.registry import Registry

if TYPE_CHECKING:
    from serving.vllm_engine import VLLMBackend

__all__ = ["run_demo"]

log = logging.getLogger(__name__)


def _market(out_dir: Path):
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from agent.data.synthetic import SyntheticConfig, generate_market, write_market

    store_path = out_dir / "market.sqlite"
    if store_path.exists():
        return MarketStore(store_path, create=False)
    files = write_market(generate_market(SyntheticConfig()), out_dir / "market")
    tmp = out_dir / "market.sqlite.tmp"
    tmp.unlink(missing_ok=True)
    store = MarketStore(tmp)
    import_files(store, prices=[files["prices"]], news=[files["news"]], companies=[files["companies"]])
    store.close()
    tmp.replace(store_path)
    return MarketStore(store_path, create=False)


def run_demo(
    *, model: str, out_dir: Path, registry: Registry, n_requests: int = 8, engine: VLLMBackend | None = None
) -> Path:
    """Run the demo and return the path of the Markdown report it wrote in ``out_dir``.

    ``engine``: an already started vLLM backend for ``model`` (tests share one); by default a
    new one is started and closed here.
    """
    from agent.pairs.screen import screen_store
    from agent.prompting import load_prompt
    from serving.journal import Journal, JournaledBackend
    from serving.types import ChatRequest
    from serving.vllm_engine import VLLMBackend

    own_engine = engine is None
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    store = _market(out_dir)
    last = store.info().calendar_end
    screen = screen_store(store, last)
    store.close()
    t_screen = time.perf_counter() - t0

    prompt = load_prompt("demo_pair_pick")
    system, user = prompt.render(candidates=screen.candidates)
    labels = [f"{c.ticker_a}/{c.ticker_b}" for c in screen.candidates]
    schema = copy.deepcopy(prompt.schema)
    schema["properties"]["pair"]["enum"] = labels
    spec = registry.get(model)
    reqs = [
        ChatRequest.simple(
            model,
            user,
            system=system,
            max_tokens=200,
            json_schema=schema,
            temperature=0.0 if i == 0 else 0.7,
            seed=i,
            call_type="demo",
        )
        for i in range(n_requests)
    ]
    if engine is None:
        engine = VLLMBackend(model, registry=registry)
    with Journal(out_dir / "journal.sqlite", run_id="demo") as journal:
        backend = JournaledBackend(engine, journal, chunk_size=n_requests)
        if journal.count(run_id="demo") < len(reqs):
            engine.start()
        t1 = time.perf_counter()
        results = backend.chat(reqs)
        t_chat = time.perf_counter() - t1
        if own_engine:
            engine.close()
        tokens = journal.token_summary(run_id="demo")

    valid = [r for r in results if not r.is_fallback]
    picks = Counter(r.parsed["pair"] for r in valid)
    in_table = sum(n for p, n in picks.items() if p in labels)
    summary = {
        "model": model,
        "revision": results[0].revision if results else "",
        "selection_date": str(screen.session),
        "pool": list(screen.pool),
        "candidates": [c.__dict__ for c in screen.candidates],
        "requests": len(reqs),
        "valid_json": len(valid),
        "fallbacks": len(reqs) - len(valid),
        "picks_in_candidate_table": in_table,
        "picks": dict(picks.most_common()),
        "replayed_from_journal": backend.replayed,
        "model_calls": backend.called,
        "engine_start_s": engine.engine_start_s,
        "chat_wall_s": round(t_chat, 3),
        "screen_wall_s": round(t_screen, 3),
        "prompt_tokens": sum(r.usage.prompt_tokens for r in results),
        "completion_tokens": sum(r.usage.completion_tokens for r in results),
        "cached_tokens": sum(r.usage.cached_tokens for r in results),
        "tokens_by_call_type": [t.__dict__ for t in tokens],
        "first_reply": results[0].text if results else "",
    }
    (out_dir / "report.json").write_text(json.dumps(summary, indent=2, default=str))
    lines = [
        f"# localfin CPU demo ({spec.display_name})",
        "",
        f"Synthetic market: {len(screen.pool)} tickers; screen at {screen.session} "
        f"(data up to that session only), {len(screen.pairs)} pairs tested in {t_screen:.1f} s.",
        "",
        "| rank | pair | p-value | hedge ratio | half-life (sessions) | z long | z 20d |",
        "|---:|---|---:|---:|---:|---:|---:|",
        *[
            f"| {c.rank} | {c.ticker_a}/{c.ticker_b} | {c.pvalue:.2e} | {c.hedge_ratio:.3f} | "
            f"{c.half_life:.1f} | {c.z_long:.2f} | {c.z_trade:.2f} |"
            for c in screen.candidates
        ],
        "",
        f"Model: `{model}` (revision {summary['revision']}), real vLLM engine, "
        f"{len(reqs)} schema-constrained requests in one batch "
        f"({backend.called} model calls, {backend.replayed} replayed from the journal).",
        f"- valid JSON: {len(valid)}/{len(reqs)}; fallbacks recorded: {len(reqs) - len(valid)}",
        f"- picks inside the candidate table: {in_table}/{len(valid)}; picks: {summary['picks']}",
        f"- tokens: prompt {summary['prompt_tokens']}, completion {summary['completion_tokens']}, "
        f"cached {summary['cached_tokens']}",
        f"- engine start: {engine.engine_start_s or 0:.1f} s; batch wall time: {t_chat:.2f} s",
        f"- first (greedy) reply: `{summary['first_reply']}`",
        "",
        f"Journal: {out_dir / 'journal.sqlite'} (rerun replays it); details: {out_dir / 'report.json'}",
    ]
    report = out_dir / "report.md"
    report.write_text("\n".join(lines) + "\n")
    log.info("demo report written to %s", report)
    return report
