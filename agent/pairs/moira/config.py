"""The Moira agent's own settings: its model calls (:data:`CALL_KINDS`), their completion budgets,
what its prompts show, its policy memory and its pair selection, and the variants (ablations A3,
A4) an experiment runs. Every error names the TOML key of the experiment config that sets it
(:mod:`agent.pairs.experiment.config`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from localfin.errors import ConfigError

__all__ = [
    "CALL_KINDS",
    "BLOCK_ORDERS",
    "MaxTokens",
    "PromptConfig",
    "PolicyConfig",
    "SelectionConfig",
    "Variant",
]

#: The model calls of Moira (their ``call_type`` labels): the agent owns these names.
CALL_KINDS = ("pair_selection", "direction", "reflection", "break_check", "news_verify")
SELECTION_FALLBACKS = ("keep", "top_candidate")
#: Orders of the system prompt's appended blocks: ``paper`` = A.6 (company context, pair-quality
#: memory, learned principles); ``memory_last`` = company context, principles, memory (the
#: memory changes every step, so the engine's prefix cache covers the principles too).
BLOCK_ORDERS = ("paper", "memory_last")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PAIR = re.compile(r"^[A-Z0-9.\-]{1,10}/[A-Z0-9.\-]{1,10}$")


@dataclass(frozen=True)
class MaxTokens:
    """Completion budget (tokens) per call type; 0 = auto: the longest reply the call's bounded
    schema admits (in characters, since a token can be one character) plus 8, so a reply can
    never be cut (the CPU default: decoding stops at the closing brace anyway). A reply cut at
    the budget is a recorded fallback. The GPU configs give the paper's 16,384 to every call
    (room for a thinking model's reasoning).

    pair_selection: of the pair-selection call; direction: of the daily direction call;
    reflection: of the counterfactual reflection; break_check: of the lifecycle break check;
    news_verify: of the news verification call.
    """

    pair_selection: int = 0
    direction: int = 0
    reflection: int = 0
    break_check: int = 0
    news_verify: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or 16 <= v <= 131_072):
                raise ConfigError(
                    f"model.max_tokens.{f.name}={v!r}; allowed: 0 (auto) or an integer in 16..131072"
                )

    def for_call(self, call_type: str) -> int:
        """The configured budget (0 = auto, resolved by the request builder)."""
        if call_type not in CALL_KINDS:
            raise ConfigError(f"call_type={call_type!r}; allowed: {', '.join(CALL_KINDS)}")
        return int(getattr(self, call_type))


@dataclass(frozen=True)
class PromptConfig:
    """How much each prompt shows (compact for the CPU model's 8k context).

    reason_max_chars: maxLength of the reason fields of the selection and direction replies.
    principle_max_chars: maxLength of one training principle.
    reflection_max_chars: maxLength of the reflection text of the training reflection.
    news_per_leg: latest news items shown per leg (direction prompt; per ticker in the
        selection prompt), newest first.
    news_lookback_sessions: sessions back (including today) from which news is shown.
    headline_max_chars: with ``news_token_budget`` 0, each news item is its headline (a
        highlights text: the first sentence) cut to this many characters (the CPU size).
    news_token_budget: 0 = the headline cut above; > 0 = full texts (a highlights summary
        whole, a news item's headline and summary) of the latest items, both legs (every
        candidate's legs in the selection prompt) taken in turn, newest first, until their
        estimated tokens (:func:`agent.pairs.moira.payloads.estimate_tokens`) reach this
        budget per prompt; the item that crosses it is cut to the rest (paper-scale news).
    block_order: order of the blocks appended to the system prompt (:data:`BLOCK_ORDERS`;
        ``paper`` = A.6).
    description_max_chars: a company's business description is cut to this many characters.
    memory_records: settled counterfactual records shown to the direction call (paper: 3).
    reflection_max_records: most recent decisions shown to the training reflection.
    """

    reason_max_chars: int = 120
    principle_max_chars: int = 160
    reflection_max_chars: int = 400
    news_per_leg: int = 3
    news_lookback_sessions: int = 3
    headline_max_chars: int = 140
    news_token_budget: int = 0
    block_order: str = "paper"
    description_max_chars: int = 240
    memory_records: int = 3
    reflection_max_records: int = 30

    def __post_init__(self) -> None:
        bounds = {
            "reason_max_chars": (20, 4000),
            "principle_max_chars": (40, 1000),
            "reflection_max_chars": (20, 4000),
            "news_per_leg": (0, 50),
            "news_lookback_sessions": (1, 60),
            "headline_max_chars": (20, 2000),
            "news_token_budget": (0, 100_000),
            "description_max_chars": (0, 5000),
            "memory_records": (0, 20),
            "reflection_max_records": (1, 500),
        }
        for name, (lo, hi) in bounds.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"prompt.{name}={v!r}; allowed: an integer in {lo}..{hi}")
        if self.block_order not in BLOCK_ORDERS:
            raise ConfigError(f"prompt.block_order={self.block_order!r}; allowed: {', '.join(BLOCK_ORDERS)}")


@dataclass(frozen=True)
class PolicyConfig:
    """Policy memory (training).

    max_cycles: replay cycles after the warmup round (paper: at most 8).
    stop_after_rejections: stop after this many rejected candidates in a row (2).
    max_principles: most principles kept in a candidate set (the oldest are dropped first).
    consolidation: replay-gated consolidation after warmup (False = ablation A3: the warmup
        reflection's valid principles are used as they are, without replay).
    carry_pair_memory: the test window starts with the pair-quality memory of the accepted
        training round (False: it starts empty).
    """

    max_cycles: int = 8
    stop_after_rejections: int = 2
    max_principles: int = 6
    consolidation: bool = True
    carry_pair_memory: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.max_cycles <= 50:
            raise ConfigError(f"policy.max_cycles={self.max_cycles}; allowed: 0..50")
        if not 1 <= self.stop_after_rejections <= 50:
            raise ConfigError(f"policy.stop_after_rejections={self.stop_after_rejections}; allowed: 1..50")
        if not 1 <= self.max_principles <= 20:
            raise ConfigError(f"policy.max_principles={self.max_principles}; allowed: 1..20")


@dataclass(frozen=True)
class SelectionConfig:
    """Pair selection and replacement.

    fallback: what an invalid pair-selection reply does: ``keep`` the current state (no pair at
        the start: retry at the next boundary) or take the screen's ``top_candidate``.
    reselection: lifecycle BREAK at a boundary replaces the pair (False = ablation A4; the
        boundary retry while no pair is held stays on).
    fixed_pair: ``"A/B"`` = skip the first selection call and start from this pair (A4 uses
        the full run's initial pair); empty = the model selects.
    """

    fallback: str = "keep"
    reselection: bool = True
    fixed_pair: str = ""

    def __post_init__(self) -> None:
        if self.fallback not in SELECTION_FALLBACKS:
            raise ConfigError(
                f"selection.fallback={self.fallback!r}; allowed: {', '.join(SELECTION_FALLBACKS)}"
            )
        if self.fixed_pair and not _PAIR.match(self.fixed_pair):
            raise ConfigError(f"selection.fixed_pair={self.fixed_pair!r}; allowed: 'A/B' tickers or empty")


@dataclass(frozen=True)
class Variant:
    """One configuration of the agent inside an experiment (A3/A4 switches).

    name: the variant's name (in run ids: ``<variant>-<exposure>-s<seed>``).
    policy, selection: its ``[policy]`` and ``[selection]`` settings.
    """

    name: str = "full"
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    selection: SelectionConfig = field(default_factory=SelectionConfig)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(f"variants.name={self.name!r}; allowed: letters, digits, '_', '-', '.'")
