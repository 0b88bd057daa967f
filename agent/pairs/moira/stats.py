"""Counters of one Moira run phase: model calls, tokens and fallbacks by call type, screens with
fewer candidates than asked for, lifecycle outcomes. They feed ``metrics.json`` (``extra``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from serving.chat.types import ChatResult

__all__ = ["FALLBACK_KINDS", "fallback_kind", "PhaseStats"]

#: What made a reply unusable, coarsely (:func:`fallback_kind`).
FALLBACK_KINDS = ("cut", "no_json", "invalid_json", "schema", "value", "error")


def fallback_kind(reason: str) -> str:
    """The kind of a fallback reason: ``cut`` (cut at max_tokens), ``no_json`` (no JSON object,
    or no principles block, in the reply), ``invalid_json`` (JSON that does not decode),
    ``schema`` (JSON against the reply schema), ``value`` (a valid reply with an unusable value:
    a pair that is not a candidate, an action not in the list) or ``error`` (the backend failed
    the request)."""
    r = reason.lower()
    if "max_tokens" in r or "finish_reason=length" in r:
        return "cut"
    if r.startswith("backend error") or "finish_reason=error" in r:
        return "error"
    if "no json object" in r or "principles:" in r or "nothing parsed" in r:
        return "no_json"
    if "invalid json" in r:
        return "invalid_json"
    if "schema violation" in r or "schema is invalid" in r:
        return "schema"
    return "value"


@dataclass
class PhaseStats:
    """Mutable tallies of one phase (``train`` or ``test``) of one run.

    calls / prompt_tokens / completion_tokens: by call type, summed over the results this run
    received (journal replays included: the tokens the run consumed, not the engine's work).
    fallbacks: replies not usable, by call type (a reply cut at max_tokens included).
    screens: selection screens run; short_screen_dates / empty_screen_dates: the dates whose
    screen gave fewer than ``top_k`` / no candidates. no_pair_steps: decisions taken without a
    held pair (FLAT, no call). Lifecycle: warning_days, break_days (daily state), boundaries,
    boundary_breaks, replacements, news_verifications. beta_fallbacks: Beta steps sized
    No-Beta because no 20-session hedge ratio existed. news_cuts / news_omitted: by call type,
    the prompts whose news the ``news_token_budget`` cut and the items it left out of them.
    fallback_kinds: by (call type, :func:`fallback_kind`), what made the fallbacks unusable.
    """

    calls: Counter = field(default_factory=Counter)
    prompt_tokens: Counter = field(default_factory=Counter)
    completion_tokens: Counter = field(default_factory=Counter)
    fallbacks: Counter = field(default_factory=Counter)
    screens: int = 0
    short_screen_dates: list[str] = field(default_factory=list)
    empty_screen_dates: list[str] = field(default_factory=list)
    no_pair_steps: int = 0
    warning_days: int = 0
    break_days: int = 0
    boundaries: int = 0
    boundary_breaks: int = 0
    rescreens: int = 0
    replacements: int = 0
    news_verifications: int = 0
    beta_fallbacks: int = 0
    news_cuts: Counter = field(default_factory=Counter)
    news_omitted: Counter = field(default_factory=Counter)
    fallback_kinds: Counter = field(default_factory=Counter)

    def count_news(self, call_type: str, omitted: int) -> None:
        """One prompt of ``call_type`` whose news budget left ``omitted`` items out (0: none)."""
        if omitted:
            self.news_cuts[call_type] += 1
            self.news_omitted[call_type] += int(omitted)

    def count_call(self, result: ChatResult, fallback: str | None) -> None:
        ct = result.call_type
        self.calls[ct] += 1
        self.prompt_tokens[ct] += int(result.usage.prompt_tokens)
        self.completion_tokens[ct] += int(result.usage.completion_tokens)
        if fallback:
            self.fallbacks[ct] += 1
            self.fallback_kinds[(ct, fallback_kind(fallback))] += 1

    def merge(self, other: PhaseStats) -> None:
        for name in (
            "calls",
            "prompt_tokens",
            "completion_tokens",
            "fallbacks",
            "news_cuts",
            "news_omitted",
            "fallback_kinds",
        ):
            getattr(self, name).update(getattr(other, name))
        for name in (
            "screens",
            "no_pair_steps",
            "warning_days",
            "break_days",
            "boundaries",
            "boundary_breaks",
            "rescreens",
            "replacements",
            "news_verifications",
            "beta_fallbacks",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.short_screen_dates += other.short_screen_dates
        self.empty_screen_dates += other.empty_screen_dates

    def to_dict(self) -> dict[str, Any]:
        kinds = sorted(set(self.calls) | set(self.fallbacks))
        return {
            "tokens_by_call_type": {
                k: {
                    "calls": int(self.calls[k]),
                    "prompt_tokens": int(self.prompt_tokens[k]),
                    "completion_tokens": int(self.completion_tokens[k]),
                }
                for k in kinds
            },
            "calls": int(sum(self.calls.values())),
            "prompt_tokens": int(sum(self.prompt_tokens.values())),
            "completion_tokens": int(sum(self.completion_tokens.values())),
            "fallbacks_by_call_type": {k: int(self.fallbacks[k]) for k in kinds if self.fallbacks[k]},
            "fallback_kinds_by_call_type": {
                k: {
                    kind: int(self.fallback_kinds[(k, kind)])
                    for kind in FALLBACK_KINDS
                    if self.fallback_kinds[(k, kind)]
                }
                for k in kinds
                if self.fallbacks[k]
            },
            "invalid_replies": int(sum(self.fallbacks.values())),
            "screens": self.screens,
            "screens_short": len(self.short_screen_dates),
            "screens_empty": len(self.empty_screen_dates),
            "short_screen_dates": list(self.short_screen_dates),
            "empty_screen_dates": list(self.empty_screen_dates),
            "no_pair_steps": self.no_pair_steps,
            "warning_days": self.warning_days,
            "break_days": self.break_days,
            "boundaries": self.boundaries,
            "boundary_breaks": self.boundary_breaks,
            "rescreens": self.rescreens,
            "replacements": self.replacements,
            "news_verifications": self.news_verifications,
            "beta_fallbacks": self.beta_fallbacks,
            "news_budget_cuts": {
                k: {"prompts": int(self.news_cuts[k]), "items_omitted": int(self.news_omitted[k])}
                for k in sorted(self.news_cuts)
            },
        }
