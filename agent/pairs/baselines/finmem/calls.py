"""What the FinMem baseline shows the model and how it reads the replies.

* :class:`Observation`: the pair at the close of one session, computed from closes up to that
  session only (an OLS hedge over the last ``hedge_window`` common sessions ending at t, as the
  screen fits it; the long z over that window and the trading z over the last ``z_window``).
* Memory texts: news items, daily price observations, periodic digests and screen facts, each a
  short line with step labels instead of dates; free text (news, business descriptions, model
  replies) goes through :func:`agent.pairs.market.masking.mask_text`.
* Requests: ``finmem_decision`` (action + reason + cited memory ids) and ``finmem_reflection``
  (a lesson on a settled training decision + cited ids), rendered from
  ``agent/prompts/pairs_finmem_*.yaml``. Reply schemas bound every field; the cited ids are an
  enum of the ids shown. ``max_tokens`` 0 means "the longest compact reply the schema allows".
* Parsers never raise: a cut, invalid or off-schema reply is a recorded fallback (FLAT for a
  decision, no lesson for a reflection).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from agent.data.schema import Company, NewsItem
from agent.pairs.baselines.finmem.memory import LAYERS, Retrieved
from agent.pairs.market.settlement import ACTIONS, FLAT
from agent.prompting import Prompt, load_prompt
from serving.chat.types import ChatRequest, ChatResult, Message, Sampling

if TYPE_CHECKING:
    from agent.pairs.baselines.common import PairSeries

__all__ = [
    "DECISION_CALL",
    "CALL_TYPES",
    "REFLECTION_CALL",
    "Observation",
    "observations",
    "CallSettings",
    "Parsed",
    "reply_char_bound",
    "news_text",
    "price_text",
    "digest_text",
    "screen_text",
    "company_lines",
    "query_text",
    "memory_payload",
    "decision_request",
    "parse_decision",
    "reflection_request",
    "parse_reflection",
]

DECISION_CALL = "finmem_decision"
REFLECTION_CALL = "finmem_reflection"
#: FinMem's model calls (their ``call_type`` labels).
CALL_TYPES = (DECISION_CALL, REFLECTION_CALL)


def _prompt(name: str, directory: str = "") -> Prompt:
    return load_prompt(name, directory or None)


def _num(x: float, digits: int) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    v = round(float(x), digits)
    return 0.0 if v == 0 else v


def _signed(x: float, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.{digits}f}{suffix}"


def _cut(text: str, n: int) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= n else t[: max(0, n - 3)].rstrip() + "..."


# -- the pair at a session ------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """The pair at the close of session ``index`` of the series' calendar.

    price_*: closes; change_*: simple return from the previous common session (fraction);
    hedge_ratio: rolling OLS slope of log A on log B; z_long / z_trade: z of today's spread over
    the hedge window / the last ``z_window`` sessions; rel_move_5: log move of A minus log move of
    B over the last ``rel_move_sessions`` common sessions (5 by default; the payload key names
    the count). NaN where history is too short or a leg has no close.
    """

    index: int
    price_a: float
    price_b: float
    change_a: float
    change_b: float
    hedge_ratio: float
    z_long: float
    z_trade: float
    rel_move_5: float
    rel_move_sessions: int = 5

    def to_payload(self) -> dict[str, Any]:
        return {
            "price_a": _num(self.price_a, 2),
            "price_b": _num(self.price_b, 2),
            "change_a_pct": _num(100 * self.change_a, 2),
            "change_b_pct": _num(100 * self.change_b, 2),
            "hedge_ratio": _num(self.hedge_ratio, 3),
            "z_long": _num(self.z_long, 2),
            "z_trade": _num(self.z_trade, 2),
            f"rel_move_{self.rel_move_sessions}_pct": _num(100 * self.rel_move_5, 2),
        }


def observations(
    series: PairSeries,
    indices: Sequence[int],
    *,
    hedge_window: int,
    z_window: int,
    min_sessions: int,
    rel_move_sessions: int = 5,
) -> dict[int, Observation]:
    """:class:`Observation` at each calendar index in ``indices``, each from closes up to it.

    The hedge is the OLS of log A on log B over the last ``hedge_window`` common sessions ending
    at t (fewer when history is shorter, NaN below ``min_sessions``), as the screen fits it."""
    from agent.pairs.baselines.common import priced
    from kernels import ols_hedge, spread_zscore

    ok = priced(series)
    idx = np.flatnonzero(ok)
    la, lb = np.log(series.price_a[ok]), np.log(series.price_b[ok])
    nan = float("nan")
    pos = {int(g): j for j, g in enumerate(idx)}
    out: dict[int, Observation] = {}
    for g in indices:
        j = pos.get(int(g))
        if j is None:
            out[int(g)] = Observation(int(g), *(nan,) * 8, rel_move_sessions)
            continue
        ca = series.price_a[g] / series.price_a[idx[j - 1]] - 1.0 if j >= 1 else nan
        cb = series.price_b[g] / series.price_b[idx[j - 1]] - 1.0 if j >= 1 else nan
        k = rel_move_sessions
        rel = (la[j] - la[j - k]) - (lb[j] - lb[j - k]) if j >= k else nan
        lo = max(0, j - hedge_window + 1)
        beta = zl = zt = nan
        if j + 1 - lo >= max(min_sessions, z_window):
            y, x = la[lo : j + 1], lb[lo : j + 1]
            alpha, beta = ols_hedge(y, x)
            if math.isfinite(beta):
                spread = y - alpha - beta * x
                zl = float(spread_zscore(spread))
                zt = float(spread_zscore(spread, z_window))
        out[int(g)] = Observation(
            int(g),
            float(series.price_a[g]),
            float(series.price_b[g]),
            ca,
            cb,
            float(beta),
            zl,
            zt,
            float(rel),
            rel_move_sessions,
        )
    return out


# -- memory texts ---------------------------------------------------------------------------------


def news_text(item: NewsItem, calendar: Any, max_chars: int) -> str:
    """``TICKER: headline. summary`` with dates masked (the item's own date resolves yearless
    ones), cut to ``max_chars`` (0: whole)."""
    from agent.pairs.market.masking import mask_text

    body = item.headline.strip()
    if item.summary and item.summary.strip() and item.summary.strip() != body:
        body = f"{body.rstrip('.')}. {item.summary.strip()}"
    text = f"{item.ticker}: {mask_text(body, calendar, ref_date=item.date)}"
    return _cut(text, max_chars) if max_chars else " ".join(text.split())


def price_text(label: str, a: str, b: str, obs: Observation) -> str:
    rel = obs.change_a - obs.change_b
    return (
        f"{label} close: {a} {_num(obs.price_a, 2)} ({_signed(100 * obs.change_a, 2, '%')}), "
        f"{b} {_num(obs.price_b, 2)} ({_signed(100 * obs.change_b, 2, '%')}); "
        f"A minus B {_signed(100 * rel, 2, '%')}; spread z {_signed(obs.z_trade)} (trading), "
        f"{_signed(obs.z_long)} (long)"
    )


def digest_text(
    first_label: str, last_label: str, a: str, b: str, start: Observation, end: Observation
) -> str:
    """A periodic summary (FinMem's mid layer holds periodic reports; ours are price digests)."""
    ma = end.price_a / start.price_a - 1.0
    mb = end.price_b / start.price_b - 1.0
    return (
        f"{first_label} to {last_label}: {a} {_signed(100 * ma, 2, '%')}, {b} {_signed(100 * mb, 2, '%')}; "
        f"spread z (trading) from {_signed(start.z_trade)} to {_signed(end.z_trade)}"
    )


def screen_text(label: str, pvalue: float, half_life: float, hedge: float, corr: float, z_long: float) -> str:
    """The screen's facts about the pair (the long layer's durable record, like an annual report)."""
    p = "n/a" if not math.isfinite(pvalue) else f"{pvalue:.2g}"
    return (
        f"pair statistics at {label}: cointegration p-value {p}, spread half-life "
        f"{_signed(half_life, 1).lstrip('+')} sessions, hedge ratio {_signed(hedge, 3).lstrip('+')}, "
        f"return correlation {_signed(corr, 2).lstrip('+')}, long z {_signed(z_long)}"
    )


def company_lines(
    tickers: Sequence[str], companies: Mapping[str, Company], calendar: Any, max_chars: int
) -> list[str]:
    """``TICKER -- Name: business description`` per leg (masked, cut)."""
    from agent.pairs.market.masking import mask_text

    out = []
    for t in tickers:
        c = companies.get(t)
        if c is None:
            out.append(f"{t} -- no business description available")
            continue
        desc = _cut(mask_text(c.description, calendar), max_chars) if c.description else ""
        out.append(f"{t} -- {mask_text(c.name, calendar)}" + (f": {desc}" if desc else ""))
    return out


def query_text(a: str, b: str, obs: Observation, character: str) -> str:
    """What today's retrieval searches with: the pair, today's move and the character."""
    mood = character.replace("_", " ")
    return (
        f"{a} versus {b} pair trade, {mood}: {a} {_signed(100 * obs.change_a, 2, '%')}, "
        f"{b} {_signed(100 * obs.change_b, 2, '%')}, spread z {_signed(obs.z_trade)}"
    )


def memory_payload(
    recalled: Mapping[str, Sequence[Retrieved]], label_of: Any
) -> dict[str, list[dict[str, Any]]]:
    """Recalled items per layer as the prompts show them (id, step label, text)."""
    return {
        layer: [{"id": r.uid, "step": label_of(r.step), "text": r.text} for r in recalled.get(layer, ())]
        for layer in LAYERS
    }


# -- requests ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallSettings:
    """What every request of one run shares (see :class:`agent.pairs.baselines.finmem.run.FinMemConfig`)."""

    model: str
    sampling: Sampling
    max_tokens_decision: int
    max_tokens_reflection: int
    reason_max_chars: int
    reflection_max_chars: int
    cite_max: int
    prompt_dir: str = ""


@dataclass(frozen=True)
class Parsed:
    """A reply's usable content and, when it was not usable, why (``fallback``)."""

    value: dict[str, Any]
    fallback: str | None = None


def _value_bound(s: Mapping[str, Any]) -> int:
    if "enum" in s:
        return max((len(json.dumps(v)) for v in s["enum"]), default=4)
    t = s.get("type")
    if t == "string":
        return 2 + 2 * int(s.get("maxLength", 256))  # quotes + worst-case escapes
    if t == "integer":
        return 20
    if t == "array":
        n = int(s.get("maxItems", 16))
        return 2 + n * (_value_bound(s.get("items", {})) + 1)
    if t == "object":
        props = s.get("properties", {})
        return 2 + sum(len(json.dumps(k)) + 1 + _value_bound(v) + 1 for k, v in props.items())
    return 16


def reply_char_bound(schema: Mapping[str, Any]) -> int:
    """Characters of the longest compact JSON reply ``schema`` allows (a token is >= 1 character)."""
    return _value_bound(schema)


def _bound(prop: dict[str, Any], limit: int) -> None:
    """A string property's maxLength (``limit`` 0: none)."""
    if limit:
        prop["maxLength"] = int(limit)
    else:
        prop.pop("maxLength", None)


def _ids_schema(schema: dict[str, Any], shown: Sequence[int], cite_max: int) -> None:
    prop = schema["properties"]["memory_ids"]
    if shown:
        prop["items"] = {"type": "integer", "enum": sorted(shown)}
        prop["maxItems"] = min(cite_max, len(shown))
    else:
        prop["items"] = {"type": "integer"}
        prop["maxItems"] = 0


def _request(
    s: CallSettings, call_type: str, system: str, user: str, schema: dict[str, Any], budget: int
) -> ChatRequest:
    return ChatRequest(
        model=s.model,
        messages=(Message("system", system), Message("user", user)),
        max_tokens=budget if budget else reply_char_bound(schema) + 8,
        json_schema=schema,
        call_type=call_type,
        **s.sampling.request_fields(),
    )


def _render(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def decision_request(
    s: CallSettings,
    payload: Mapping[str, Any],
    *,
    character: str,
    adaptive: bool,
    company: Sequence[str],
    shown: Sequence[int],
) -> ChatRequest:
    """The daily decision on the pair (payload: current_step, pair, today, memory, ...)."""
    p = _prompt("pairs_finmem_decision", s.prompt_dir)
    system, user = p.render(
        character=character, adaptive=adaptive, company_lines=list(company), payload=_render(payload)
    )
    schema = copy.deepcopy(p.schema)
    _bound(schema["properties"]["reason"], s.reason_max_chars)
    _ids_schema(schema, shown, s.cite_max)
    return _request(s, DECISION_CALL, system, user, schema, s.max_tokens_decision)


def _usable(result: ChatResult) -> str | None:
    if result.finish_reason == "length":
        return "cut at max_tokens"
    if result.finish_reason == "error":
        return f"backend error: {result.parse_error or ''}"[:200]
    if result.parse_error is not None or not isinstance(result.parsed, dict):
        return f"invalid reply: {result.parse_error or 'nothing parsed'}"[:200]
    return None


def _cited(parsed: Mapping[str, Any], shown: Sequence[int]) -> list[int]:
    ids = parsed.get("memory_ids") or []
    known = set(shown)
    return list(dict.fromkeys(int(i) for i in ids if isinstance(i, int) and i in known))


def parse_decision(result: ChatResult, shown: Sequence[int]) -> Parsed:
    """``{"action", "reason", "cited"}``; a fallback holds FLAT and cites nothing."""
    why = _usable(result)
    if why is None and result.parsed.get("action") not in ACTIONS:
        why = f"action {result.parsed.get('action')!r} not one of {', '.join(ACTIONS)}"
    if why:
        return Parsed({"action": FLAT, "reason": "", "cited": []}, why)
    p = result.parsed
    return Parsed({"action": p["action"], "reason": str(p.get("reason", "")), "cited": _cited(p, shown)})


def reflection_request(s: CallSettings, payload: Mapping[str, Any], shown: Sequence[int]) -> ChatRequest:
    """The training reflection on one settled decision."""
    p = _prompt("pairs_finmem_reflection", s.prompt_dir)
    system, user = p.render(payload=_render(payload))
    schema = copy.deepcopy(p.schema)
    _bound(schema["properties"]["reflection"], s.reflection_max_chars)
    _ids_schema(schema, shown, s.cite_max)
    return _request(s, REFLECTION_CALL, system, user, schema, s.max_tokens_reflection)


def parse_reflection(result: ChatResult, shown: Sequence[int]) -> Parsed:
    """``{"reflection", "cited"}``; a fallback (or an empty lesson) has no reflection."""
    why = _usable(result)
    text = str(result.parsed.get("reflection", "")).strip() if why is None else ""
    if why is None and not text:
        why = "empty reflection"
    if why:
        return Parsed({"reflection": "", "cited": []}, why)
    return Parsed({"reflection": text, "cited": _cited(result.parsed, shown)})
