"""The observations Moira's calls see (paper A.6 payloads), built from data up to the decision
session and masked: every date becomes a step label, and every free text (news, business
descriptions) goes through :func:`agent.pairs.market.masking.mask_text` so that dates, weekdays and
month names inside it become step labels or are removed. Numbers are rounded to fixed
decimals so that the text of a prompt depends only on the data, not on float formatting noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from agent.data.schema import Company, NewsItem
from agent.pairs.market.masking import mask_text
from agent.pairs.market.view import PairState, spread_state_label
from agent.pairs.moira.config import PromptConfig
from agent.pairs.moira.memory import CounterfactualRecord, reflection_summary
from agent.pairs.screen.causal import PairCandidate

__all__ = [
    "num",
    "sig",
    "pct",
    "company_lines",
    "candidate_payload",
    "selection_payload",
    "news_payload",
    "direction_payload",
    "memory_payload",
    "reflection_payload",
]


def num(x: float, digits: int = 4) -> float | None:
    """``x`` rounded (None for NaN/inf, which JSON cannot carry)."""
    if x is None or not math.isfinite(x):
        return None
    v = round(float(x), digits)
    return 0.0 if v == 0 else v


def sig(x: float, digits: int = 2) -> float | None:
    """``x`` to ``digits`` significant digits (p-values span many orders of magnitude)."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{float(x):.{digits}g}")


def pct(x: float, digits: int = 3) -> float | None:
    """A fraction as a rounded percentage."""
    return num(100.0 * x, digits) if x is not None and math.isfinite(x) else None


def _cut(text: str, n: int) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= n else t[: max(0, n - 3)].rstrip() + "..."


def company_lines(
    tickers: Sequence[str], companies: Mapping[str, Company], cfg: PromptConfig, calendar: Any
) -> list[str]:
    """``TICKER -- Name: business description`` per ticker (masked, cut to the configured size)."""

    out = []
    for t in dict.fromkeys(tickers):
        c = companies.get(t)
        name = c.name if c else t
        desc = mask_text(c.description, calendar) if c and c.description else ""
        desc = _cut(desc, cfg.description_max_chars) if cfg.description_max_chars else ""
        out.append(f"{t} -- {mask_text(name, calendar)}" + (f": {desc}" if desc else ""))
    return out


def candidate_payload(c: PairCandidate) -> dict[str, Any]:
    return {
        "pair": f"{c.ticker_a}/{c.ticker_b}",
        "rank": c.rank,
        "coint_pvalue": sig(c.pvalue, 2),
        "half_life_sessions": num(c.half_life, 1),
        "hedge_ratio": num(c.hedge_ratio, 3),
        "z_long": num(c.z_long, 2),
        "z_trade": num(c.z_trade, 2),
        "return_correlation": num(c.correlation, 2),
    }


def selection_payload(step_label: str, candidates: Sequence[PairCandidate]) -> dict[str, Any]:
    return {"current_step": step_label, "top5_candidates": [candidate_payload(c) for c in candidates]}


def news_payload(items: Sequence[NewsItem], cfg: PromptConfig, calendar: Any) -> list[dict[str, str]]:
    """The latest ``news_per_leg`` items, newest first, each with its step label and masked text."""

    out = []
    for n in list(items)[::-1][: cfg.news_per_leg]:
        text = n.headline if n.headline else n.summary
        out.append(
            {"step": calendar.label(n.date), "text": _cut(mask_text(text, calendar), cfg.headline_max_chars)}
        )
    return out


def memory_payload(records: Sequence[CounterfactualRecord], step_label: Any) -> list[dict[str, Any]]:
    """Settled counterfactual records as the direction prompt shows them (returns in percent)."""
    return [
        {
            "step": step_label(r.step),
            "action": r.action,
            "pnl_long_short_pct": pct(r.ret_long_short),
            "pnl_short_long_pct": pct(r.ret_short_long),
            "pnl_flat_pct": 0.0,
            "best_action": r.best,
            "matched_best": r.matched,
            "lesson": r.lesson,
        }
        for r in records
    ]


def direction_payload(
    step_label: str,
    pair: tuple[str, str],
    state: PairState,
    news_a: list[dict[str, str]],
    news_b: list[dict[str, str]],
    lifecycle_state: str,
    memory: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "current_step": step_label,
        "active_pair": [pair[0], pair[1]],
        "active_candidate": {
            "spread_state": spread_state_label(state.z_trade),
            "z_long": num(state.z_long, 2),
            "z_trade": num(state.z_trade, 2),
            "hedge_ratio": num(state.beta, 3),
            "price_a": num(state.price_a, 2),
            "price_b": num(state.price_b, 2),
            "delta_a": num(state.delta_a, 2),
            "delta_b": num(state.delta_b, 2),
            "change_a_pct": pct(state.change_a, 2),
            "change_b_pct": pct(state.change_b, 2),
            "news_a": news_a,
            "news_b": news_b,
        },
        "lifecycle_state": lifecycle_state,
        "past_3_days_direction_memory": memory,
    }


def reflection_payload(
    step_label: str, records: Sequence[CounterfactualRecord], cfg: PromptConfig, label_of: Any
) -> dict[str, Any]:
    """The training round's decisions (the latest ``reflection_max_records``) with every action's
    PnL, the win rate and mean PnL of the round, and the diagnostic counts."""
    shown = list(records)[-cfg.reflection_max_records :]
    held = [r for r in records if r.action != "FLAT"]
    wins = sum(1 for r in held if r.realized > 0)
    avg = sum(r.realized for r in records) / len(records) if records else 0.0
    return {
        "current_step": step_label,
        "decisions": [
            {
                "step": label_of(r.step),
                "action": r.action,
                "pnl_long_short_pct": pct(r.ret_long_short),
                "pnl_short_long_pct": pct(r.ret_short_long),
                "best_action": r.best,
                "z_trade": num(r.z_trade, 2),
                "rel_change_pct": pct(r.rel_change, 2),
            }
            for r in shown
        ],
        "win_rate": num(wins / len(held), 3) if held else None,
        "avg_pnl_pct": pct(avg),
        "counterfactual_summary": reflection_summary(records),
    }
