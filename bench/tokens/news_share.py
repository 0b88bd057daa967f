"""How much of each Moira and FinMem prompt is news, at another config's prompt settings, on the
decisions of a finished experiment.

The experiment folder's runs are replayed call by call: every run's program (the agent's runs and
FinMem's) is driven again on the same store and windows, each call answered by the reply its run
journaled at that position (the model's own replies, read from ``journal.sqlite`` in the order of
the run's trace), so the runs take the same decisions and hold the same pairs; only the prompt
settings change: ``[prompt]``, ``[model.max_tokens]`` and FinMem's reply bounds of ``--settings``
(e.g. a GPU reproduction config: whole descriptions, 4,096 tokens of news per prompt). Every
request built is measured: prompt tokens (system and user message) and the tokens of the news
in it (selection: every candidate leg's items; direction: both legs' items; break check and
verification: the past week's block and the candidate event; FinMem: the recalled news items),
by the project's estimate (characters / 3) and, with ``--tokenizer``, by a real tokenizer.

    python -m bench.tokens.news_share --experiment RUN_DIR \\
        --settings agent/reproduce/configs/moira_table3_main.toml \\
        --tokenizer ~/.cache/localfin/models/smollm2-135m

Prints one JSON line per call type (calls; mean and max prompt tokens; mean and max news tokens;
news share of all prompt tokens and the largest share of one prompt). ``--selection-sessions
START:END`` adds the pair-selection prompt of every session in that span at the same settings
(the screen's top five and their legs' news), for a span the run made no selection in.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench._args import BenchParser, run_main

__all__ = ["HELP", "main", "parser", "news_texts", "measure", "selection_sessions"]


def news_texts(call_type: str, payload: Mapping[str, Any], pair: Sequence[str] = ()) -> list[str]:
    """The news texts of one request's JSON payload (module docstring)."""
    out: list[str] = []
    if call_type == "pair_selection":
        for items in (payload.get("recent_news_by_ticker") or {}).values():
            out += [x.get("text", "") for x in items]
    elif call_type == "direction":
        cand = payload.get("active_candidate") or {}
        out += [x.get("text", "") for x in (cand.get("news_a") or []) + (cand.get("news_b") or [])]
    elif call_type in ("break_check", "news_verify"):
        week = payload.get("past_week_news_summary") or ""
        if week and week != "no news":
            out.append(week)
        ev = payload.get("candidate_event") or {}
        out += [ev.get("headline", ""), ev.get("text", "")] if ev else []
    elif call_type in ("finmem_decision", "finmem_reflection"):
        memory = payload.get("memory") or payload.get("memory_then") or {}
        legs = tuple(f"{t}: " for t in pair)
        for items in memory.values():
            out += [x["text"] for x in items if legs and str(x.get("text", "")).startswith(legs)]
    return [t for t in out if t]


class _Replay:
    """A backend that answers each request with the next journaled result of one run (its
    position in the run's calls), checking the call type; it keeps every request it was sent."""

    name = "replay"

    def __init__(self, results: Iterable[Any]) -> None:
        self.queue = deque(results)
        self.requests: list[Any] = []

    def chat(self, requests: Sequence[Any]) -> list[Any]:
        out = []
        for r in requests:
            if not self.queue:
                raise RuntimeError(f"replay ran out of journaled results at a {r.call_type} call")
            res = self.queue.popleft()
            if res.call_type != r.call_type:
                raise RuntimeError(f"replay: the run journaled {res.call_type} where {r.call_type} comes now")
            out.append(replace(res, request_key=r.key()))
            self.requests.append(r)
        return out

    def close(self) -> None:
        return None


def _settings_doc(path: Path) -> dict[str, Any]:
    """The prompt-related tables of ``path`` (a reproduction config or an experiment file)."""
    from localfin import configfile as cf

    doc = cf.read_toml(path, "settings")
    model = dict(doc.get("model") or {})
    fm = dict((doc.get("baselines") or {}).get("finmem") or {})
    return {
        "prompt": dict(doc.get("prompt") or {}),
        "max_tokens": dict(model.get("max_tokens") or {}),
        "finmem": {k: fm[k] for k in ("reason_max_chars", "reflection_max_chars") if k in fm},
    }


def _config(run_dir: Path, settings: Mapping[str, Any]) -> Any:
    from agent.pairs.experiment.config import parse_config
    from localfin import configfile as cf

    doc = cf.read_toml(run_dir / "config.toml", "experiment")
    doc["prompt"] = {**dict(doc.get("prompt") or {}), **settings["prompt"]}
    doc["prompt"].pop("dir", None)
    model = dict(doc.get("model") or {})
    model["max_tokens"] = {**dict(model.get("max_tokens") or {}), **settings["max_tokens"]}
    doc["model"] = model
    base = dict(doc.get("baselines") or {})
    base["finmem"] = {**dict(base.get("finmem") or {}), **settings["finmem"]}
    doc["baselines"] = base
    return parse_config(doc, base_dir=run_dir)


def _tokens(text: str, tok: Any) -> int:
    if tok is None:
        return -(-len(text) // 3)
    return len(tok(text, add_special_tokens=False)["input_ids"])


def measure(
    run_dir: Path,
    settings_path: Path,
    tokenizer: Any = None,
    runs: Sequence[str] = (),
    embedder: Any = None,
) -> list[dict[str, Any]]:
    """Replay the runs of ``run_dir`` at ``settings_path``'s prompt settings and measure every
    request (module docstring); returns one row per call type. ``embedder``: FinMem's, as the
    experiment ran it (default: the bank's MiniLM)."""
    import pandas as pd

    from agent.data.store import MarketStore
    from agent.pairs.experiment import baselines as eb
    from agent.pairs.experiment.backtest import RunSpec, moira_program
    from agent.pairs.market.view import MarketView
    from serving.chat.lockstep import run_one
    from serving.chat.types import ChatResult
    from serving.journal import Journal

    cfg = _config(run_dir, _settings_doc(settings_path))
    with Journal(run_dir / "journal.sqlite") as j:
        by_key = {r["result"]["request_key"]: ChatResult.from_dict(r["result"]) for r in j.records()}
    sent: list[tuple[Any, tuple[str, ...]]] = []
    with MarketStore(cfg.store, create=False) as store:
        view = MarketView(store, cfg.pool, cfg.screen, end=cfg.windows.test_end)
        for rid, variant, exposure, seed in cfg.run_ids():
            if runs and rid not in runs:
                continue
            trace = pd.read_parquet(run_dir / "runs" / rid / "trace.parquet").sort_values("seq")
            keys = [k for k in trace["request_key"] if k]
            backend = _Replay(by_key[k] for k in keys)
            run_one(moira_program(RunSpec(rid, variant, exposure, seed), cfg, view), backend)
            sent += [(r, ()) for r in backend.requests]
        for rid, prog in eb.finmem_programs(store, cfg, view.pool, embedder):
            if runs and rid not in runs:
                continue
            doc = json.loads((run_dir / "runs" / rid / "memory_trace.json").read_text(encoding="utf-8"))
            backend = _Replay(by_key[c["request_key"]] for c in doc["calls"])
            run_one(prog, backend)
            sent += [(r, ()) for r in backend.requests]
    rows: dict[str, dict[str, list[float]]] = {}
    for req, legs in sent:
        text = "\n".join(m.content for m in req.messages)
        try:
            payload = json.loads(req.messages[-1].content)
        except ValueError:
            payload = {}
        news = news_texts(req.call_type, payload, legs or _pair_of(payload))
        p, n = _tokens(text, tokenizer), sum(_tokens(t, tokenizer) for t in news)
        r = rows.setdefault(req.call_type, {"prompt": [], "news": []})
        r["prompt"].append(p)
        r["news"].append(n)
    out = []
    for call, r in sorted(rows.items()):
        out.append(
            {
                "call_type": call,
                "calls": len(r["prompt"]),
                "prompt_tokens_mean": round(statistics.mean(r["prompt"]), 1),
                "prompt_tokens_max": max(r["prompt"]),
                "news_tokens_mean": round(statistics.mean(r["news"]), 1),
                "news_tokens_max": max(r["news"]),
                "news_share": round(sum(r["news"]) / sum(r["prompt"]), 4) if sum(r["prompt"]) else 0.0,
                "news_share_max": round(max(n / p for n, p in zip(r["news"], r["prompt"]) if p), 4),
                "calls_with_news": sum(1 for n in r["news"] if n),
                # the prompts that showed news (a window's sessions without news dilute the share)
                "prompt_tokens_mean_with_news": _mean([p for p, n in zip(r["prompt"], r["news"]) if n]),
                "news_tokens_mean_with_news": _mean([n for n in r["news"] if n]),
                "news_share_with_news": _share(r),
            }
        )
    return out


def selection_sessions(
    run_dir: Path, settings_path: Path, start: str, end: str, tokenizer: Any = None
) -> dict[str, Any]:
    """The pair-selection prompt of every session from ``start`` to ``end`` (ISO dates) at
    ``settings_path``'s prompt settings, on ``run_dir``'s store and pool, measured as
    :func:`measure` measures a request."""
    import datetime as dt

    from agent.data.store import MarketStore
    from agent.pairs.market.masking import StepCalendar
    from agent.pairs.market.view import MarketView
    from agent.pairs.moira import calls, payloads

    cfg = _config(run_dir, _settings_doc(settings_path))
    w = cfg.windows
    rows: list[tuple[int, int, int]] = []
    with MarketStore(cfg.store, create=False) as store:
        view = MarketView(store, cfg.pool, cfg.screen, end=w.test_end)
        test = view.sessions(w.test_start, w.test_end)
        cal = StepCalendar.from_sessions(test)
        settings = calls.CallSettings(
            cfg.model.backbone, cfg.model.sampling(0), cfg.model.max_tokens, cfg.prompt
        )
        lo, hi = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
        for i, day in enumerate(test):
            if not lo <= day <= hi:
                continue
            cands = list(view.screen(day).candidates)
            tickers = list(dict.fromkeys(t for c in cands for t in (c.ticker_a, c.ticker_b)))
            g = view.index(day)
            first = view.dates[max(0, g - cfg.prompt.news_lookback_sessions + 1)]
            pick = payloads.pick_news([view.news_until(t, first, g) for t in tickers], cfg.prompt, cal)
            req = calls.selection_request(
                settings,
                payloads.selection_payload(cal.label_at(i), cands, dict(zip(tickers, pick.groups))),
                [f"{c.ticker_a}/{c.ticker_b}" for c in cands],
                payloads.company_lines(tickers, view.companies, cfg.prompt, cal),
                [],
            )
            text = "\n".join(m.content for m in req.messages)
            news = [x["text"] for group in pick.groups for x in group]
            rows.append(
                (_tokens(text, tokenizer), sum(_tokens(t, tokenizer) for t in news), pick.budget.omitted)
            )
    if not rows:
        raise ValueError(f"no session of the test window in {start}..{end}")
    prompt, news = [r[0] for r in rows], [r[1] for r in rows]
    return {
        "call_type": f"pair_selection (sessions {start}..{end})",
        "calls": len(rows),
        "prompt_tokens_mean": _mean(prompt),
        "prompt_tokens_max": max(prompt),
        "news_tokens_mean": _mean(news),
        "news_tokens_max": max(news),
        "news_share": round(sum(news) / sum(prompt), 4),
        "calls_with_news": sum(1 for n in news if n),
        "budget_cut": sum(1 for r in rows if r[2]),
    }


def _mean(xs: Sequence[float]) -> float | None:
    return round(statistics.mean(xs), 1) if xs else None


def _share(r: Mapping[str, list[float]]) -> float | None:
    pairs = [(p, n) for p, n in zip(r["prompt"], r["news"]) if n]
    return round(sum(n for _, n in pairs) / sum(p for p, _ in pairs), 4) if pairs else None


def _pair_of(payload: Mapping[str, Any]) -> tuple[str, ...]:
    pair = payload.get("pair")
    if isinstance(pair, Mapping):
        return (str(pair.get("A", "")), str(pair.get("B", "")))
    return tuple(pair) if isinstance(pair, list) else ()


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """How much of each Moira and FinMem prompt is news, at another config's prompt settings, on the
decisions of a finished experiment.

Replays the experiment's runs call by call (each call answered by the reply its run journaled, so
the runs take the same decisions) with the [prompt] and [model.max_tokens] settings of --settings,
and measures every request: prompt tokens and the tokens of the news in it, by the estimate
(characters / 3) or, with --tokenizer, by a real tokenizer. One JSON line per call type;
--selection-sessions adds the pair-selection prompts of a span the run made no selection in.

    localfin bench moira-news-share --experiment RUN_DIR --settings GPU_CONFIG.toml
    localfin bench moira-news-share --experiment RUN_DIR --settings GPU_CONFIG.toml --tokenizer DIR
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench moira-news-share", description=HELP)
    ap.add_argument("--experiment", required=True, help="a finished experiment folder (localfin pairs run)")
    ap.add_argument("--settings", required=True, help="a config whose [prompt] settings the prompts use")
    ap.add_argument("--tokenizer", default="", help="a Hugging Face tokenizer folder (default: the estimate)")
    ap.add_argument("--runs", default="", help="comma-separated run ids (default: all)")
    ap.add_argument(
        "--selection-sessions", default="", help="START:END (ISO dates): also every selection prompt there"
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    tok = None
    if args.tokenizer:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(Path(args.tokenizer).expanduser())
    runs = tuple(x for x in args.runs.split(",") if x)
    rows = measure(Path(args.experiment), Path(args.settings), tok, runs)
    if args.selection_sessions:
        start, _, end = args.selection_sessions.partition(":")
        rows.append(selection_sessions(Path(args.experiment), Path(args.settings), start, end, tok))
    for row in rows:
        row["tokens"] = "tokenizer " + args.tokenizer if tok is not None else "estimate: chars / 3"
        sys.stdout.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
