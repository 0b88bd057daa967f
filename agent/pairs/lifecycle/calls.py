"""The two model calls of the lifecycle news path: requests, reply parsers and verdicts.

* ``news_verify`` (:func:`build_news_verify_request`, :func:`parse_news_verify`): only for a
  candidate event of the keyword matcher; reply per the Moira paper's A.5 (event type, whether
  it affects the pair, severity, reasoning).
* ``break_check`` (:func:`build_break_check_request`, :func:`parse_break_check`): at a
  validation boundary; payload per A.6 (:func:`agent.pairs.lifecycle.machine.break_check_payload`),
  reply per A.4.

Prompts are ``agent/prompts/pairs_news_verify.yaml`` and ``pairs_break.yaml`` (or the user's
files of the same format in ``prompt_dir``: :func:`agent.prompting.load_prompt`); the payload is
the JSON user message; ``reason_max_chars`` sets the reason's maxLength (0: none; None: the
prompt file's); ``constrained`` False sends the schema only to check the reply (the paper's
decoding: the first JSON object of the final text is read, ``[model] decoding = "prompt"``).
Builders take masked texts and refuse a payload in which
:func:`agent.pairs.market.masking.contains_calendar_leak` finds a date (an :class:`InputError` naming
the field): masking is the caller's job and this is its guard. Parsers never raise on a bad
reply: an invalid, schema-violating or cut reply gives a verdict with ``fallback=True`` and
the reason; the state machine gives it no weight (the current state is kept) and the trace
records it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agent.pairs.lifecycle.config import BREAK, HEALTHY, LEVELS, WARNING, LifecycleConfig, level_max
from agent.pairs.lifecycle.news import CandidateEvent
from agent.pairs.market.masking import contains_calendar_leak
from agent.prompting import load_prompt
from localfin.errors import InputError
from serving.chat.types import ChatRequest, ChatResult, Message, Sampling

__all__ = [
    "NewsVerification",
    "BreakAssessment",
    "EVENT_TYPES",
    "SEVERITIES",
    "SENTIMENTS",
    "SYMMETRIES",
    "SIGNALS",
    "MONITORING_EVENTS",
    "BREAK_PAYLOAD_KEYS",
    "build_news_verify_request",
    "parse_news_verify",
    "build_break_check_request",
    "parse_break_check",
    "reply_char_bound",
    "budget",
    "reply_schema",
]

#: The sampling of a request built without one: greedy (``seed`` is per request).
_GREEDY = Sampling(temperature=0.0)

#: Event labels a verification reply may use (the prompt asks for a short free label, as the
#: paper's ``event_type``; these are the keyword categories and the usual answers).
EVENT_TYPES = (
    "acquisition",
    "merger",
    "take_private",
    "bankruptcy",
    "going_concern",
    "delisting",
    "trading_halt",
    "fraud",
    "restatement",
    "regulatory_action",
    "earnings_shock",
    "routine_mention",
    "other_company",
    "other",
)
SEVERITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
SENTIMENTS = ("strong_positive", "positive", "neutral", "negative", "strong_negative")
SYMMETRIES = ("same_strong_direction", "asymmetric", "mixed_or_neutral")
SIGNALS = ("stable", "weakening", "broken_candidate")
#: ``monitoring_event_type`` of the break_check payload.
MONITORING_EVENTS = ("scheduled_validation", "critical_news_candidate")
#: Fields of the break_check payload (paper A.6), in order.
BREAK_PAYLOAD_KEYS = (
    "current_step",
    "pair",
    "statistical_deterioration",
    "statistical_status",
    "recent_rolling_correlation",
    "half_life_days",
    "adf_pvalue",
    "cointegration_pvalue",
    "current_spread_z",
    "spread_volatility_ratio",
    "code_news_break_level",
    "past_week_news_summary",
    "monitoring_event_type",
    "days_since_last_break_validation",
)


# --- verdicts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NewsVerification:
    """The verdict of one ``news_verify`` call on a candidate event received at session ``t``.

    ``fallback`` True: the reply was unusable (``fallback_reason`` says why); the verdict then
    counts for nothing (the lifecycle state is kept) and is only recorded.
    """

    t: int
    ticker: str
    category: str
    event_type: str = "other"
    affects_pair_relationship: bool = False
    severity: str = "LOW"
    reasoning: str = ""
    fallback: bool = False
    fallback_reason: str = ""

    def level(self, config: LifecycleConfig) -> str:
        """BREAK for a verified critical event, WARNING for a relevant lesser one, else HEALTHY."""
        if self.fallback or not self.affects_pair_relationship:
            return HEALTHY
        if self.severity in config.break_severities:
            return BREAK
        return WARNING if self.severity in config.warning_severities else HEALTHY

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_STRONG_FLOOR = (
    {
        ("strong_positive", "strong_positive"),
        ("strong_negative", "strong_negative"),
    }
    | {("strong_positive", o) for o in ("neutral", "negative", "strong_negative")}
    | {("strong_negative", o) for o in ("neutral", "positive", "strong_positive")}
)


@dataclass(frozen=True)
class BreakAssessment:
    """The verdict of one ``break_check`` call at the boundary session ``t`` (fields of A.4)."""

    t: int
    semantic_relationship_signal: str = "stable"
    leg_a_financial_sentiment: str = "neutral"
    leg_b_financial_sentiment: str = "neutral"
    sentiment_symmetry: str = "mixed_or_neutral"
    news_break_level: str = HEALTHY
    is_relationship_break_signal: bool = False
    reason: str = ""
    fallback: bool = False
    fallback_reason: str = ""

    @property
    def effective_level(self) -> str:
        """The reply's level raised to the floors the prompt states, enforced in code.

        A strong sentiment on one leg that the other leg does not share in strength (or both
        strong the same way) is at least WARNING; ``broken_candidate`` is at least WARNING.
        A fallback carries no evidence: HEALTHY.
        """
        if self.fallback:
            return HEALTHY
        pair = (self.leg_a_financial_sentiment, self.leg_b_financial_sentiment)
        floor = WARNING if pair in _STRONG_FLOOR or pair[::-1] in _STRONG_FLOOR else HEALTHY
        if self.semantic_relationship_signal == "broken_candidate":
            floor = WARNING
        return level_max(self.news_break_level, floor)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"effective_level": self.effective_level}


# --- requests -------------------------------------------------------------------------------


def _check_masked(payload: Mapping[str, Any], call: str) -> None:
    def walk(value: Any, path: str) -> None:
        if isinstance(value, str):
            leaks = contains_calendar_leak(value)
            if leaks:
                raise InputError(
                    f"{call} payload field {path!r} contains calendar text {leaks[:3]}; mask it with "
                    "agent.pairs.market.masking.mask_text first"
                )
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(value, (list, tuple)):
            for k, v in enumerate(value):
                walk(v, f"{path}[{k}]")

    walk(payload, "")


#: The free-text reason field of each call's reply.
_REASON_FIELD = {"news_verify": "reasoning", "break_check": "reason"}
_PROMPT_OF = {"news_verify": "pairs_news_verify", "break_check": "pairs_break"}


def reply_schema(
    call_type: str, *, prompt_dir: str = "", reason_max_chars: int | None = None
) -> dict[str, Any]:
    """The reply schema of ``news_verify`` or ``break_check`` requests: the prompt file's, with
    the reason's maxLength set to ``reason_max_chars`` (0: no bound; None: the file's)."""
    if call_type not in _PROMPT_OF:
        raise InputError(f"call_type={call_type!r}; allowed: news_verify, break_check")
    schema = copy.deepcopy(load_prompt(_PROMPT_OF[call_type], prompt_dir or None).schema or {})
    if reason_max_chars is not None:
        prop = schema["properties"][_REASON_FIELD[call_type]]
        if reason_max_chars:
            prop["maxLength"] = int(reason_max_chars)
        else:
            prop.pop("maxLength", None)
    return schema


def _request(
    call_type: str,
    payload: Mapping[str, Any],
    *,
    model: str,
    max_tokens: int,
    seed: int | None,
    sampling: Sampling | None,
    prompt_dir: str = "",
    reason_max_chars: int | None = None,
    constrained: bool = True,
) -> ChatRequest:

    _check_masked(payload, call_type)
    prompt = load_prompt(_PROMPT_OF[call_type], prompt_dir or None)
    blob = json.dumps(payload, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)
    system, user = prompt.render(payload_json=blob)
    return ChatRequest(
        model=model,
        messages=(Message("system", system), Message("user", user)),
        max_tokens=max_tokens,
        json_schema=reply_schema(call_type, prompt_dir=prompt_dir, reason_max_chars=reason_max_chars),
        call_type=call_type,
        constrained=constrained,
        **{**(sampling or _GREEDY).request_fields(), "seed": seed},
    )


def build_news_verify_request(
    *,
    model: str,
    max_tokens: int,
    seed: int | None,
    current_step: str,
    pair: tuple[str, str],
    candidate: Mapping[str, str],
    past_week_news: str,
    sampling: Sampling | None = None,
    prompt_dir: str = "",
    reason_max_chars: int | None = None,
    constrained: bool = True,
) -> ChatRequest:
    """The ``news_verify`` request (prompt ``pairs_news_verify``) for one candidate event.

    candidate: :meth:`CandidateEvent.to_payload` (masked); past_week_news: the masked block of
    :func:`summarize_news`. Payload (JSON user message): current_step, pair, candidate_event,
    past_week_news_summary. Raises :class:`InputError` if any text still holds a date.
    prompt_dir / reason_max_chars: the prompt files and the reasoning's bound (module docstring).
    """
    payload = {
        "current_step": current_step,
        "pair": list(pair),
        "candidate_event": dict(candidate),
        "past_week_news_summary": past_week_news,
    }
    return _request(
        "news_verify",
        payload,
        model=model,
        max_tokens=max_tokens,
        seed=seed,
        sampling=sampling,
        prompt_dir=prompt_dir,
        reason_max_chars=reason_max_chars,
        constrained=constrained,
    )


def build_break_check_request(
    *,
    model: str,
    max_tokens: int,
    seed: int | None,
    payload: Mapping[str, Any],
    sampling: Sampling | None = None,
    prompt_dir: str = "",
    reason_max_chars: int | None = None,
    constrained: bool = True,
) -> ChatRequest:
    """The ``break_check`` request (prompt ``pairs_break``) for a validation boundary.

    payload: :func:`agent.pairs.lifecycle.machine.break_check_payload` (the A.6 fields, news masked).
    Raises :class:`InputError` if any text still holds a date. prompt_dir / reason_max_chars:
    the prompt files and the reason's bound (module docstring).
    """
    missing = [k for k in BREAK_PAYLOAD_KEYS if k not in payload]
    if missing:
        raise InputError(f"break_check payload lacks {', '.join(missing)}")
    return _request(
        "break_check",
        payload,
        model=model,
        max_tokens=max_tokens,
        seed=seed,
        sampling=sampling,
        prompt_dir=prompt_dir,
        reason_max_chars=reason_max_chars,
        constrained=constrained,
    )


# --- parsers --------------------------------------------------------------------------------


def _reply(result: ChatResult, call_type: str) -> tuple[dict[str, Any] | None, str]:
    if result.call_type != call_type:
        raise InputError(f"expected a {call_type} result, got call_type={result.call_type!r}")
    if result.finish_reason == "length":
        return None, "reply cut at max_tokens (finish_reason=length)"
    if result.is_fallback:
        return None, result.parse_error or f"finish_reason={result.finish_reason}"
    if not isinstance(result.parsed, dict):
        return None, "reply is not a JSON object (was the request sent without its schema?)"
    return result.parsed, ""


def _enum(d: Mapping[str, Any], key: str, allowed: Sequence[str]) -> str:
    v = d.get(key)
    if v not in allowed:
        raise ValueError(f"{key}={v!r} not in {list(allowed)}")
    return v


def _flag(d: Mapping[str, Any], key: str) -> bool:
    v = d.get(key)
    if not isinstance(v, bool):
        raise ValueError(f"{key}={v!r} is not true/false")
    return v


def _label(d: Mapping[str, Any], key: str) -> str:
    """A short free label (the paper's ``event_type``): lower case, words joined by ``_``."""
    v = d.get(key, "")
    if not isinstance(v, str):
        raise ValueError(f"{key} is not a string")
    return "_".join(v.lower().replace("-", " ").split())[:60] or "other"


def _text(d: Mapping[str, Any], key: str, limit: int = 400) -> str:
    v = d.get(key, "")
    if not isinstance(v, str):
        raise ValueError(f"{key} is not a string")
    return v[:limit]


def parse_news_verify(result: ChatResult, event: CandidateEvent, t: int) -> NewsVerification:
    """A :class:`NewsVerification` from a ``news_verify`` result; a flagged fallback when unusable."""
    data, why = _reply(result, "news_verify")
    if data is not None:
        try:
            return NewsVerification(
                t,
                event.ticker,
                event.category,
                _label(data, "event_type"),
                _flag(data, "affects_pair_relationship"),
                _enum(data, "severity", SEVERITIES),
                _text(data, "reasoning"),
            )
        except ValueError as exc:
            why = f"invalid field: {exc}"
    return NewsVerification(t, event.ticker, event.category, fallback=True, fallback_reason=why[:300])


def parse_break_check(result: ChatResult, t: int) -> BreakAssessment:
    """A :class:`BreakAssessment` from a ``break_check`` result; a flagged fallback when unusable."""
    data, why = _reply(result, "break_check")
    if data is not None:
        try:
            return BreakAssessment(
                t,
                _enum(data, "semantic_relationship_signal", SIGNALS),
                _enum(data, "leg_a_financial_sentiment", SENTIMENTS),
                _enum(data, "leg_b_financial_sentiment", SENTIMENTS),
                _enum(data, "sentiment_symmetry", SYMMETRIES),
                _enum(data, "news_break_level", LEVELS),
                _flag(data, "is_relationship_break_signal"),
                _text(data, "reason"),
            )
        except ValueError as exc:
            why = f"invalid field: {exc}"
    return BreakAssessment(t, fallback=True, fallback_reason=why[:300])


def reply_char_bound(schema: Mapping[str, Any]) -> int:
    """Longest compact JSON text (characters) a reply satisfying ``schema`` can have, assuming
    no escaped characters; set ``max_tokens`` at least this high (a token can be one character).

    Handles the bounded subset our reply schemas use: objects with listed properties, strings
    with ``enum`` or ``maxLength``, booleans, integers/numbers with min and max, bounded arrays.
    """
    kind = schema.get("type")
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if kind == "object":
        props = schema.get("properties", {})
        inner = sum(len(json.dumps(k)) + 2 + reply_char_bound(v) for k, v in props.items())
        return 2 + inner + 2 * max(0, len(props) - 1)
    if kind == "string":
        if "maxLength" not in schema:
            raise InputError("reply_char_bound: a string without maxLength is unbounded")
        return int(schema["maxLength"]) + 2
    if kind == "boolean":
        return 5
    if kind in ("integer", "number"):
        if "minimum" not in schema or "maximum" not in schema:
            raise InputError("reply_char_bound: a number without minimum and maximum is unbounded")
        width = max(len(str(schema["minimum"])), len(str(schema["maximum"])))
        return width if kind == "integer" else width + 18
    if kind == "array":
        if "maxItems" not in schema:
            raise InputError("reply_char_bound: an array without maxItems is unbounded")
        n = int(schema["maxItems"])
        return 2 + n * reply_char_bound(schema["items"]) + 2 * max(0, n - 1)
    raise InputError(f"reply_char_bound: unsupported schema type {kind!r}")


def budget(configured: int, schema: Mapping[str, Any]) -> int:
    """``configured`` tokens, or for 0 (auto) the schema's longest reply in characters + 8."""
    return configured if configured else reply_char_bound(schema) + 8
