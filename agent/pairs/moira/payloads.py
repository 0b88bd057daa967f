"""The observations Moira's calls see (paper A.6 payloads), built from data up to the decision
session and masked: every date becomes a step label, and every free text (news, business
descriptions) goes through :func:`agent.pairs.market.masking.mask_text` so that dates, weekdays and
month names inside it become step labels or are removed. Numbers are rounded to fixed
decimals so that the text of a prompt depends only on the data, not on float formatting noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.data.schema import Company, NewsItem
from agent.pairs.market.masking import mask_text
from agent.pairs.market.newsbudget import BudgetCut, estimate_tokens, fit_newest_first
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
    "estimate_tokens",
    "NewsPick",
    "news_text",
    "pick_news",
    "news_payload",
    "news_payloads",
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


def candidate_payload(c: PairCandidate, lifecycle_state: str = "") -> dict[str, Any]:
    """One candidate's statistics; ``lifecycle_state`` only where the agent has one (A.1)."""
    out: dict[str, Any] = {
        "pair": f"{c.ticker_a}/{c.ticker_b}",
        "rank": c.rank,
        "coint_pvalue": sig(c.pvalue, 2),
        "half_life_sessions": num(c.half_life, 1),
        "hedge_ratio": num(c.hedge_ratio, 3),
        "z_long": num(c.z_long, 2),
        "z_trade": num(c.z_trade, 2),
        "return_correlation": num(c.correlation, 2),
    }
    if lifecycle_state:
        out["lifecycle_state"] = lifecycle_state
    return out


def selection_payload(
    step_label: str,
    candidates: Sequence[PairCandidate],
    news: Mapping[str, list[dict[str, str]]] | None = None,
    lifecycle: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The A.6 selection observation: the candidates (with the lifecycle state of those the
    agent knows, ``lifecycle``: ``"A/B"`` -> level) and, when ``news`` is given, every
    candidate leg's recent news (ticker -> :func:`news_payloads` items), once per ticker."""
    states = lifecycle or {}
    out: dict[str, Any] = {
        "current_step": step_label,
        "top5_candidates": [
            candidate_payload(c, states.get(f"{c.ticker_a}/{c.ticker_b}", "")) for c in candidates
        ],
    }
    if news is not None:
        out["recent_news_by_ticker"] = {t: list(items) for t, items in news.items()}
    return out


def news_text(n: NewsItem, full: bool) -> str:
    """An item's text: headline (or the summary when there is none), or with ``full`` the whole
    item (headline and summary; a highlights text whole)."""
    if not full:
        return n.headline if n.headline else n.summary
    if n.headline and n.summary and not n.summary.startswith(n.headline.rstrip(".")):
        return f"{n.headline} -- {n.summary}"
    return n.summary or n.headline


@dataclass(frozen=True)
class NewsPick:
    """The news one prompt shows: per group (a leg or ticker) ``{"step", "text"}`` items,
    newest first, and what the token budget did (``budget.omitted``: items it left out)."""

    groups: list[list[dict[str, str]]]
    budget: BudgetCut


def pick_news(groups: Sequence[Sequence[NewsItem]], cfg: PromptConfig, calendar: Any) -> NewsPick:
    """The news shown for each group of items (one group per leg; oldest first as the view
    returns them), each newest first as ``{"step", "text"}`` with the text masked.

    At most ``news_per_leg`` items a group. With ``news_token_budget`` 0 each text is its
    headline cut to ``headline_max_chars``; otherwise whole items, taken from the groups in
    turn (the newest item of each group, then the next ones), while their estimated tokens fit
    the budget (:func:`agent.pairs.market.newsbudget.fit_newest_first`): the first item that
    does not fit ends the list, so a prompt never shows a cut item or an older item in place of
    a newer one.
    """
    latest = [list(items)[::-1][: cfg.news_per_leg] for items in groups]
    out: list[list[dict[str, str]]] = [[] for _ in groups]
    full = bool(cfg.news_token_budget)
    order = [
        (k, items[depth])
        for depth in range(max((len(x) for x in latest), default=0))
        for k, items in enumerate(latest)
        if depth < len(items)
    ]
    texts = [" ".join(mask_text(news_text(n, full), calendar).split()) for _, n in order]
    if not full:
        texts = [_cut(t, cfg.headline_max_chars) for t in texts]
    fit = fit_newest_first(texts, cfg.news_token_budget)
    for (k, n), text in list(zip(order, texts))[: fit.shown]:
        out[k].append({"step": calendar.label(n.date), "text": text})
    return NewsPick(out, fit)


def news_payloads(
    groups: Sequence[Sequence[NewsItem]], cfg: PromptConfig, calendar: Any
) -> list[list[dict[str, str]]]:
    """The items of :func:`pick_news` (without the budget's account)."""
    return pick_news(groups, cfg, calendar).groups


def news_payload(items: Sequence[NewsItem], cfg: PromptConfig, calendar: Any) -> list[dict[str, str]]:
    """The news of one leg alone (:func:`news_payloads` of one group)."""
    return news_payloads([items], cfg, calendar)[0]


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
    *,
    spread_z: tuple[float, float] = (2.0, 1.0),
) -> dict[str, Any]:
    """The direction call's payload (A.6); ``spread_z``: the far and near |z| of the
    ``spread_state`` words (:func:`agent.pairs.market.view.spread_state_label`)."""
    return {
        "current_step": step_label,
        "active_pair": [pair[0], pair[1]],
        "active_candidate": {
            "spread_state": spread_state_label(state.z_trade, *spread_z),
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
    """The training round's decisions (the latest ``reflection_max_records``; 0: all) with every
    action's PnL, the win rate and mean PnL of the round, and the diagnostic counts (A.6)."""
    shown = list(records)[-cfg.reflection_max_records :] if cfg.reflection_max_records else list(records)
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
                "pnl_flat_pct": 0.0,
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
