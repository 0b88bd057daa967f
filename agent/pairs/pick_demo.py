"""The CPU demo, as far as the landed issues reach: a seeded synthetic market in a store, the
causal pair screen at its last session, and a journaled batch of schema-constrained pair picks
from the real CPU model, with a token and latency report (``report.md`` + ``report.json``).

Self-contained on purpose: ``localfin demo`` calls :func:`run_pick_demo` only, so the Moira
backtest can replace this module without touching the CLI. A rerun reuses the store and
replays every answered call from the journal.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress

if TYPE_CHECKING:
    from agent.data.store import MarketStore
    from serving.registry import Registry
    from serving.vllm_engine import VLLMBackend

__all__ = ["DemoReport", "run_pick_demo", "MAX_REQUESTS"]

log = logging.getLogger(__name__)

#: Most requests one demo batch may hold (the CPU engine answers 8 in seconds).
MAX_REQUESTS = 256


@dataclass(frozen=True)
class DemoReport:
    """What the demo wrote: the Markdown report, its JSON twin, and the summary in it."""

    markdown: Path
    json: Path
    summary: dict[str, Any]

    def headline(self) -> list[str]:
        """A few lines for the terminal: validity, picks, tokens, where the journal is."""
        s = self.summary
        return [
            f"model {s['model']}: {s['valid_json']}/{s['requests']} valid JSON replies, "
            f"{s['picks_in_candidate_table']} picks in the candidate table; picks {s['picks']}",
            f"{s['model_calls']} model calls, {s['replayed_from_journal']} replayed from the journal; "
            f"tokens: prompt {s['prompt_tokens']}, completion {s['completion_tokens']}",
        ]


def _market(out_dir: Path, progress: Progress) -> MarketStore:
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from agent.data.synthetic import SyntheticConfig, generate_market, write_market

    store_path = out_dir / "market.sqlite"
    if store_path.exists():
        return MarketStore(store_path, create=False)
    with progress.task("synthetic market: generate and import"):
        files = write_market(generate_market(SyntheticConfig()), out_dir / "market")
        tmp = out_dir / "market.sqlite.tmp"
        tmp.unlink(missing_ok=True)
        store = MarketStore(tmp)
        import_files(store, prices=[files["prices"]], news=[files["news"]], companies=[files["companies"]])
        store.close()
        tmp.replace(store_path)
    return MarketStore(store_path, create=False)


def run_pick_demo(
    *,
    model: str,
    out_dir: str | Path,
    registry: Registry | None = None,
    n_requests: int = 8,
    engine: VLLMBackend | None = None,
    progress: Progress = NULL_PROGRESS,
) -> DemoReport:
    """Run the demo into ``out_dir`` and return what it wrote.

    ``engine``: an already started vLLM backend for ``model`` (tests share one); by default a
    new one is started and closed here, and only when the journal lacks an answer.
    """
    from agent.pairs.screen import screen_store
    from agent.prompting import load_prompt
    from serving.journal import Journal, JournaledBackend
    from serving.registry import default_registry
    from serving.types import ChatRequest
    from serving.vllm_engine import VLLMBackend

    if not 1 <= n_requests <= MAX_REQUESTS:
        raise ConfigError(f"n_requests={n_requests}; allowed: 1..{MAX_REQUESTS}")
    registry = registry or default_registry()
    spec = registry.get(model)
    if engine is None:
        spec.resolve_path()  # no weights: fail now with the way to prepare them, not after the screen
    out_dir = Path(out_dir)
    own_engine = engine is None
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    store = _market(out_dir, progress)
    try:
        last = store.info().calendar_end
        with progress.task(f"pair screen at {last}"):
            screen = screen_store(store, last)
    finally:
        store.close()
    t_screen = time.perf_counter() - t0

    prompt = load_prompt("demo_pair_pick")
    system, user = prompt.render(candidates=screen.candidates)
    labels = [f"{c.ticker_a}/{c.ticker_b}" for c in screen.candidates]
    schema = copy.deepcopy(prompt.schema or {})
    schema["properties"]["pair"]["enum"] = labels
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
    try:
        with Journal(out_dir / "journal.sqlite", run_id="demo") as journal:
            backend = JournaledBackend(engine, journal, chunk_size=n_requests)
            if len(journal.get_many([r.key() for r in reqs])) < len(reqs):
                with progress.task(f"starting the vLLM engine ({model})"):
                    engine.start()
            t1 = time.perf_counter()
            with progress.task("schema-constrained pair picks", total=len(reqs)) as task:
                results = backend.chat(reqs)
                task.update(completed=len(results))
            t_chat = time.perf_counter() - t1
            tokens = journal.token_summary(run_id="demo")
    finally:
        if own_engine:
            engine.close()

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
    json_path = out_dir / "report.json"
    json_path.write_text(json.dumps(summary, indent=2, default=str))
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
        f"Journal: {out_dir / 'journal.sqlite'} (rerun replays it); details: {json_path}",
    ]
    md_path = out_dir / "report.md"
    md_path.write_text("\n".join(lines) + "\n")
    log.info("demo report written to %s", md_path)
    return DemoReport(md_path, json_path, summary)
