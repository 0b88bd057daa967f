"""What an experiment did (:class:`ExperimentResult`) and the experiment folder's summary
(``summary.json`` + ``summary.md``): the metrics of every run of the agent, the baselines' table
and the tokens by call type. Numbers go through the one formatter (:mod:`localfin.fmt`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.experiment.backtest import RunOutcome
from agent.pairs.experiment.config import ExperimentConfig
from agent.pairs.market.metrics import (
    LIFECYCLE_STATES,
    RETURN_NOTE,
    ZERO_VARIANCE_MARK,
    ZERO_VARIANCE_NOTE,
    table_sharpe,
)
from agent.pairs.market.records import write_json
from localfin.files import write_text
from localfin.fmt import fmt_num, fmt_pct

__all__ = [
    "ExperimentResult",
    "write_summary",
    "baseline_lines",
    "sharpe_cell",
    "lifecycle_cell",
    "news_cuts",
    "fallbacks_by_call_type",
    "fallback_lines",
]


@dataclass
class ExperimentResult:
    """What :func:`run_experiment` did: folder, per-run metrics documents, timing and calls
    (``model_calls`` sent to the model, ``replayed`` from an earlier run's journal, ``repeated``:
    requests identical to one this run sent, answered by that call)."""

    out_dir: Path
    mode: str
    runs: list[dict[str, Any]]
    wall_s: float
    rounds: int
    model_calls: int
    replayed: int
    engine_start_s: float | None = None
    outcomes: list[RunOutcome] = field(default_factory=list, repr=False)
    baselines: list[dict[str, Any]] = field(default_factory=list)
    repeated: int = 0


def write_summary(out: Path, cfg: ExperimentConfig, res: ExperimentResult, tokens: Sequence[Any]) -> None:
    """The experiment folder's ``summary.json`` and ``summary.md``: every run's metrics, the
    baselines' table, the tokens by call type (of the runs' results and of the journal) and
    the prompt texts used (the packaged set or the user's ``[prompt] dir``)."""
    from agent.pairs.experiment.manifest import prompt_set, prompt_versions, run_prompts

    # the prompts this experiment rendered (FinMem's only when FinMem ran)
    prompts = run_prompts("finmem" in cfg.baselines.methods)

    runs = res.runs
    by_type: dict[str, dict[str, int]] = {}
    for r in [*runs, *res.baselines]:
        for k, v in r["extra"].get("tokens_by_call_type", {}).items():
            t = by_type.setdefault(k, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            for key in t:
                t[key] += v[key]
    doc = {
        "experiment": cfg.name,
        "mode": res.mode,
        "wall_s": round(res.wall_s, 3),
        "engine_start_s": res.engine_start_s,
        "lockstep_rounds": res.rounds,
        "model_calls": res.model_calls,
        "replayed_from_journal": res.replayed,
        "repeated_requests": res.repeated,
        "runs": runs,
        "baselines": res.baselines,
        "tokens_by_call_type_runs": by_type,
        "tokens_by_call_type_engine": [t.__dict__ for t in tokens],
        "prompt_set": prompt_set(cfg.prompt.dir, prompts),
        "news_budget_cuts": news_cuts([*runs, *res.baselines]),
        "prompts": prompt_versions(cfg.prompt.dir, prompts),
        "decoding": cfg.model.decoding,
        "fallbacks_by_call_type": fallbacks_by_call_type(runs),
    }
    write_json(out / "summary.json", doc)
    lines = [
        f"# Moira experiment `{cfg.name}`",
        "",
        f"Model `{cfg.model.backbone}` ({cfg.model.backend}); {len(runs)} runs ({res.mode}); "
        f"train {cfg.windows.train_start}..{cfg.windows.train_end}, test {cfg.windows.test_start}.."
        f"{cfg.windows.test_end}; wall {res.wall_s:.1f} s in {res.rounds} rounds; "
        f"{_calls_text(res)}.",
        "",
        "Prompt texts: "
        + prompt_set(cfg.prompt.dir, prompts)
        + " ("
        + ", ".join(f"{k} v{v['version']} {v['sha256'][:12]}" for k, v in doc["prompts"].items())
        + ").",
        "",
        "| run | initial pair | return (compounded) | Sharpe (SE) | max DD | win rate | CF accuracy "
        "| LS/SL/FLAT | switches | updates | fallbacks (test/train) | short/empty screens "
        "| lifecycle H/W/B/none | re-screens/replacements |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|---|---|",
    ]
    for r in runs:
        m, e = r["metrics"], r["extra"]
        ac = m["action_counts"]
        lines.append(
            f"| {r['run_id']} | {e['initial_pair'] or '-'} | {fmt_pct(m['cumulative_return'])} | "
            f"{sharpe_cell(m)} ({fmt_num(m['sharpe_se'])}) | {fmt_pct(m['max_drawdown'])} | "
            f"{fmt_num(m['win_rate'])} | {fmt_num(m['action_accuracy'])} | "
            f"{ac.get('LONG_SHORT', 0)}/{ac.get('SHORT_LONG', 0)}/{ac.get('FLAT', 0)} | "
            f"{m['pair_switches']} | {e['accepted_policy_updates']} | "
            f"{e['test']['invalid_replies']}/{e['train']['invalid_replies']} | "
            f"{e['screens_short']}/{e['screens_empty']} | {lifecycle_cell(e)} |"
        )
    lines += fallback_lines(doc["fallbacks_by_call_type"], cfg.model.decoding)
    lines += baseline_lines(res.baselines)
    lines += finmem_memory_lines(res.baselines)
    lines += ["", RETURN_NOTE]
    if any(table_sharpe(d["metrics"])[1] for d in [*runs, *res.baselines]):
        lines += ["", ZERO_VARIANCE_NOTE]
    lines += [
        "",
        "Tokens by call type (summed over the results each run received, agent and FinMem; journal "
        "replays included):",
        "",
        "| call type | calls | prompt tokens | completion tokens |",
        "|---|---:|---:|---:|",
    ]
    for k, v in sorted(by_type.items()):
        lines.append(f"| {k} | {v['calls']} | {v['prompt_tokens']} | {v['completion_tokens']} |")
    lines += [
        "",
        "Engine calls by call type (what reached the model, from the journal):",
        "",
        "| call type | calls | prompt tokens | completion tokens | invalid |",
        "|---|---:|---:|---:|---:|",
    ]
    for t in tokens:
        lines.append(
            f"| {t.call_type} | {t.calls} | {t.prompt_tokens} | {t.completion_tokens} | {t.fallbacks} |"
        )
    cuts = news_cuts([*runs, *res.baselines])
    lines += ["", "News budget cuts (prompts whose news `news_token_budget` cut; items left out):", ""]
    if not cuts:
        lines.append(
            "none: every prompt showed all of its news." if cfg.prompt.news_token_budget else "no budget set."
        )
    for k, v in sorted(cuts.items()):
        lines.append(f"- {k}: {v['prompts']} prompts, {v['items_omitted']} items left out")
    write_text(out / "summary.md", "\n".join(lines) + "\n")


def _calls_text(res: ExperimentResult) -> str:
    """``N model calls`` and, where there were any, the requests answered without a call: from an
    earlier run's journal (a rerun, a resume), or by this run's own identical request."""
    text = f"{res.model_calls} model calls"
    if res.replayed:
        text += f", {res.replayed} answered from the journal of an earlier run"
    if res.repeated:
        text += f", {res.repeated} repeating a request of this run (answered by its call)"
    return text


def fallbacks_by_call_type(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per call type and phase (``train``, ``test``): the agent's calls, its fallbacks (replies
    not used) and their kinds (:func:`agent.pairs.moira.stats.fallback_kind`), summed over the
    runs' ``metrics.json`` documents; a training phase shared by several runs
    (``training_shared_with``) counts once."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    seen: set[tuple[str, ...]] = set()
    for r in runs:
        e = r.get("extra", {})
        group = tuple(sorted(e.get("training_shared_with") or [r.get("run_id", "")]))
        phases = ["test"]
        if group not in seen:
            seen.add(group)
            phases.insert(0, "train")
        for phase in phases:
            d = e.get(phase) or {}
            fb = d.get("fallbacks_by_call_type") or {}
            kinds = d.get("fallback_kinds_by_call_type") or {}
            for ct, v in (d.get("tokens_by_call_type") or {}).items():
                t = out.setdefault(ct, {}).setdefault(phase, {"calls": 0, "fallbacks": 0, "kinds": {}})
                t["calls"] += int(v.get("calls", 0))
                t["fallbacks"] += int(fb.get(ct, 0))
                for kind, n in (kinds.get(ct) or {}).items():
                    t["kinds"][kind] = t["kinds"].get(kind, 0) + int(n)
    return out


def fallback_lines(by_type: dict[str, dict[str, dict[str, Any]]], decoding: str) -> list[str]:
    """The fallbacks-per-call-type table of ``summary.md`` (:func:`fallbacks_by_call_type`)."""
    how = {
        "schema": "each reply schema sent as structured outputs",
        "prompt": "JSON asked for in the prompt only, the first JSON object of the final text read",
    }.get(decoding, decoding)
    lines = [
        "",
        f"Fallbacks per call type (decoding `{decoding}`: {how}; a shared training counted once, "
        "a warmup shared by A3's conditions with each; each fallback's reason and reply text are in "
        "the runs' `trace.parquet`):",
        "",
        "| call type | training calls | training fallbacks | test calls | test fallbacks | kinds |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for ct, phases in sorted(by_type.items()):
        tr, te = phases.get("train", {}), phases.get("test", {})
        kinds: dict[str, int] = {}
        for d in (tr, te):
            for k, n in (d.get("kinds") or {}).items():
                kinds[k] = kinds.get(k, 0) + n
        cell = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "-"
        lines.append(
            f"| {ct} | {tr.get('calls', 0)} | {tr.get('fallbacks', 0)} | {te.get('calls', 0)} | "
            f"{te.get('fallbacks', 0)} | {cell} |"
        )
    return lines


def news_cuts(docs: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per call type, the prompts whose news the budget cut and the items it left out, summed
    over the ``metrics.json`` documents of the agent (training and test) and FinMem."""
    out: dict[str, dict[str, int]] = {}
    for r in docs:
        e = r.get("extra", {})
        parts = [e.get("train", {}), e.get("test", {}), e]
        for part in parts:
            for k, v in (part.get("news_budget_cuts") or {}).items():
                t = out.setdefault(k, {"prompts": 0, "items_omitted": 0})
                t["prompts"] += int(v["prompts"])
                t["items_omitted"] += int(v["items_omitted"])
    return out


def sharpe_cell(metrics: Any) -> str:
    """The Sharpe ratio a table shows (:func:`agent.pairs.market.metrics.table_sharpe`: 0.00 with
    its mark for a run whose every return is zero; ``n/a`` where undefined otherwise)."""
    value, flat = table_sharpe(metrics)
    return fmt_num(value) + (ZERO_VARIANCE_MARK if flat else "")


def lifecycle_cell(extra: dict[str, Any]) -> str:
    """``H/W/B/none % | re-screens/replacements`` of a run's ``extra.lifecycle`` (n/a without)."""
    life = extra.get("lifecycle") or {}
    shares = life.get("state_shares") or {}
    cell = "/".join(fmt_pct(shares.get(k), 0, signed=False) for k in LIFECYCLE_STATES) if shares else "n/a"
    counts = f"{life['rescreens']}/{life['replacements']}" if "rescreens" in life else "n/a"
    return f"{cell} | {counts}"


def baseline_lines(docs: Sequence[dict[str, Any]]) -> list[str]:
    """The baselines' table of ``summary.md``."""
    if not docs:
        return []
    lines = [
        "",
        "Baselines (same store, pool, screen, windows, exposures and cost; kind `baseline`):",
        "",
        "| run | method | pair | return (compounded) | Sharpe (SE) | max DD | win rate | LS/SL/FLAT "
        "| model calls "
        "| fallbacks | cut at max_tokens |",
        "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for d in docs:
        m, e = d["metrics"], d.get("extra", {})
        ac = m.get("action_counts", {})
        calls = sum(v.get("calls", 0) for v in e.get("tokens_by_call_type", {}).values())
        fbs = e.get("fallbacks") if isinstance(e.get("fallbacks"), dict) else {}
        fb, cut = fbs.get("total", 0), fbs.get("cut_at_max_tokens", 0 if calls else "-")
        lines.append(
            f"| {d['run_id']} | {d.get('method', '')} | {e.get('pair') or '-'} | "
            f"{fmt_pct(m.get('cumulative_return'))} | "
            f"{sharpe_cell(m)} ({fmt_num(m.get('sharpe_se'))}) | "
            f"{fmt_pct(m.get('max_drawdown'))} | {fmt_num(m.get('win_rate'))} | "
            f"{ac.get('LONG_SHORT', 0)}/{ac.get('SHORT_LONG', 0)}/{ac.get('FLAT', 0)} | "
            f"{calls} | {fb} | {cut} |"
        )
    return lines


def finmem_memory_lines(docs: Sequence[dict[str, Any]]) -> list[str]:
    """What FinMem's memory layers were filled from (its runs share one window, so once), and
    the note of a store without filings for the pair."""
    fm = next((d for d in docs if d.get("method") == "finmem" and d.get("extra", {}).get("filings")), None)
    if fm is None:
        return []
    f = fm["extra"]["filings"]
    cut = f"cut to {f['max_chars']:,} characters" if f.get("max_chars") else "whole"
    section = {
        "mda": "management discussion",
        "risk": "risk factors",
        "both": "management discussion and risk factors",
    }
    lines = [
        "",
        f"FinMem's memory: short holds the news of both legs; mid {f.get('10-Q', 0)} quarterly report(s) "
        f"(10-Q) and long {f.get('10-K', 0)} annual report(s) (10-K) of the pair entered over the run, each "
        f"its {section.get(f.get('section', 'mda'), f.get('section'))} ({cut}), from the first session after "
        "its filing date; reflection holds the decisions' lessons and reasons.",
    ]
    if f.get("note"):
        lines.append(f"FinMem: {f['note']}.")
    return lines
