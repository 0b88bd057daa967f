"""The Moira agent's own settings: its model calls (:data:`CALL_KINDS`), their completion budgets,
what its prompts show, its policy memory and its pair selection, and the variants (ablations A3,
A4) an experiment runs. Every error names the TOML key of the experiment config that sets it
(:mod:`agent.pairs.experiment.config`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace

from agent.pairs.market.descriptions import DESCRIPTION_FILTERS
from agent.pairs.moira.principles import RULES
from localfin.errors import ConfigError

__all__ = [
    "CALL_KINDS",
    "BLOCK_ORDERS",
    "DIRECTION_NEWS",
    "DIRECTION_RULES",
    "DECODINGS",
    "PRINCIPLE_RULES",
    "CONSOLIDATION_FIELDS",
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
#: The news the direction prompt carries (``[prompt] direction_news``): each leg's latest item
#: (paper A.2) or every item of the lookback window under the news budget.
DIRECTION_NEWS = ("latest", "window")
#: How the agent's replies are decoded and read (``[model] decoding``): ``schema`` = the reply
#: schema goes to the engine as structured outputs (decoding is constrained to it); ``prompt`` =
#: the paper's way (Appendix A asks for JSON in the prompt text; Appendix C: only the final
#: answer, after any reasoning, is parsed): no structured outputs, the first JSON object of the
#: final text is read and checked against the same schema, the training reflection replies in
#: the paper's text form (a reflection, then a ``Principles:`` line and one principle a line),
#: and a reply that does not parse is a recorded fallback with its text.
DECODINGS = ("schema", "prompt")
#: What the principle validator's ``direction`` rule rejects (:class:`PolicyConfig`).
DIRECTION_RULES = ("recommendation", "any_recommendation", "any_mention")
#: The rules of the principle validator a config may switch on or off (``empty`` always applies).
PRINCIPLE_RULES = tuple(r for r in RULES if r != "empty")
#: Fields of :class:`PolicyConfig` that act only after the shared warmup (its round and its
#: reflection do not depend on them), so runs differing only in these share one warmup.
CONSOLIDATION_FIELDS = (
    "max_cycles",
    "stop_after_rejections",
    "max_principles",
    "consolidation",
    "carry_pair_memory",
    "warmup_floor",
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


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
    """How much each prompt shows, and which prompt texts (the defaults are compact, for the CPU
    model's 8k context; the reproduction configs set the paper's values: no reply-length bound,
    whole descriptions, paper-scale news).

    reason_max_chars: maxLength of every free-text reason of the agent's replies (pair
        selection, direction, break check, news verification); 0 = no bound, as the paper
        states none (the call's ``max_tokens`` must then be set: an auto budget needs a bound).
    principle_max_chars: maxLength of one training principle (0 = no bound; same rule), also the
        longest principle the validator keeps.
    principle_min_chars: minLength of one training principle in the reflection's reply schema
        (0 = no bound; the paper states none), also the shortest principle the validator keeps
        (the ``too_short`` rule), so a reply parsed without the schema meets the same bound.
    reflection_max_chars: maxLength of the reflection text of the training reflection (0 = no
        bound; same rule).
    news_per_leg: latest news items shown per leg (direction prompt; per ticker in the
        selection prompt), newest first.
    news_lookback_sessions: sessions back (including today) from which news is shown to pair
        selection and direction: each prompt shows the latest items available in that span
        (paper A.2: "latest available news").
    direction_news: the news the direction prompt carries: ``latest`` (paper A.2, "latest
        available news", "relative news between Asset A and Asset B": each leg's newest item
        within ``news_lookback_sessions``) or ``window`` (up to ``news_per_leg`` items a leg from
        the whole lookback, newest first, under ``news_token_budget``). The break check keeps
        its own window (``[lifecycle] news_window_days``, A.4's seven days).
    headline_max_chars: with ``news_token_budget`` 0, each news item is its headline (a
        highlights text: the first sentence) cut to this many characters (the CPU size).
    news_token_budget: 0 = the compact news above (and the lifecycle calls' compact news
        summary of ``[lifecycle]``); > 0 = whole items (a highlights summary whole, a news
        item's headline and summary), newest first, until their estimated tokens (characters
        / 3, rounded up: no tokenizer needed, long for English text) reach this
        budget per prompt: the item that does not fit and every older one are left out, and the
        run counts each prompt the budget cut. The same budget bounds the news of pair
        selection, direction, the break check, the news verification and FinMem's decision.
    block_order: order of the blocks appended to the system prompt: ``paper`` (A.6: company
        context, pair-quality memory, learned principles) or ``memory_last`` (the principles
        before the memory).
    description_max_chars: a company's business description is cut to this many characters
        (0: no description; 5000, the largest, keeps every real description whole).
    description_filter: what is taken out of a business description before it is cut, one of
        ``financial_results`` (paper A.1, "undated financial results are excluded"): every
        sentence that states a financial result (market capitalization; revenue, sales, income,
        earnings, profit, assets, dividends with a figure) or ``none``: the description as the
        companies file has it.
    memory_records: settled counterfactual records shown to the direction call (paper: 3).
    pair_quality_min_held: a pair of the pair-quality memory held for fewer settled steps than
        this is shown as ``new`` (no verdict yet).
    pair_quality_reverting, pair_quality_weak: the share of its held steps on which the spread
        moved toward its mean at or above which a pair is shown as ``reverting``, and below which
        as ``weak`` (``mixed`` between them).
    spread_far_z, spread_near_z: the trading-window z at or beyond which the direction payload's
        ``spread_state`` words say "far above/below its mean", and "above/below its mean"
        (``near its mean`` inside; paper A.2 names the spread state without thresholds).
    reflection_max_records: most recent decisions shown to the training reflection (0 = every
        decision of the round, as the paper's payload).
    dir: a folder of the user's own prompt files (``<name>.yaml`` of the same format as
        ``agent/prompts/``: same template variables and reply-schema fields, checked when the
        config is loaded); a prompt without a file there uses the packaged one. A relative path
        is resolved against the config file's folder. Empty: the packaged prompts.
    """

    reason_max_chars: int = 120
    principle_max_chars: int = 160
    principle_min_chars: int = 20
    reflection_max_chars: int = 400
    news_per_leg: int = 3
    news_lookback_sessions: int = 3
    direction_news: str = "window"
    headline_max_chars: int = 140
    news_token_budget: int = 0
    block_order: str = "paper"
    description_max_chars: int = 240
    description_filter: str = "financial_results"
    memory_records: int = 3
    reflection_max_records: int = 30
    pair_quality_min_held: int = 3
    pair_quality_reverting: float = 0.55
    pair_quality_weak: float = 0.45
    spread_far_z: float = 2.0
    spread_near_z: float = 1.0
    dir: str = ""

    def __post_init__(self) -> None:
        bounds = {
            "reason_max_chars": (20, 4000),
            "principle_max_chars": (40, 4000),
            "reflection_max_chars": (20, 4000),
            "news_per_leg": (0, 50),
            "news_lookback_sessions": (1, 60),
            "headline_max_chars": (20, 2000),
            "news_token_budget": (0, 100_000),
            "description_max_chars": (0, 5000),
            "memory_records": (0, 20),
            "reflection_max_records": (0, 500),
            "principle_min_chars": (0, 4000),
            "pair_quality_min_held": (1, 500),
        }
        #: 0 = no bound (the paper's reply fields state none)
        unbounded = ("reason_max_chars", "principle_max_chars", "reflection_max_chars")
        for name, (lo, hi) in bounds.items():
            v = getattr(self, name)
            zero = name in unbounded and v == 0
            if isinstance(v, bool) or not isinstance(v, int) or not (lo <= v <= hi or zero):
                extra = " or 0 (no bound)" if name in unbounded else ""
                raise ConfigError(f"prompt.{name}={v!r}; allowed: an integer in {lo}..{hi}{extra}")
        if self.principle_max_chars and self.principle_min_chars > self.principle_max_chars:
            raise ConfigError(
                f"prompt.principle_min_chars={self.principle_min_chars}; allowed: at most "
                f"prompt.principle_max_chars={self.principle_max_chars} (or 0, no bound)"
            )
        shares = (self.pair_quality_weak, self.pair_quality_reverting)
        if not all(_number(x) for x in shares) or not 0.0 <= shares[0] <= shares[1] <= 1.0:
            raise ConfigError(
                f"prompt.pair_quality_weak={shares[0]!r}, pair_quality_reverting={shares[1]!r}; allowed: "
                "0 <= pair_quality_weak <= pair_quality_reverting <= 1"
            )
        zs = (self.spread_near_z, self.spread_far_z)
        if not all(_number(x) for x in zs) or not 0.0 < zs[0] <= zs[1] <= 50.0:
            raise ConfigError(
                f"prompt.spread_near_z={zs[0]!r}, spread_far_z={zs[1]!r}; allowed: "
                "0 < spread_near_z <= spread_far_z <= 50"
            )
        if not isinstance(self.dir, str):
            raise ConfigError(f"prompt.dir={self.dir!r}; allowed: a folder path or empty")
        if self.description_filter not in DESCRIPTION_FILTERS:
            allowed = ", ".join(DESCRIPTION_FILTERS)
            raise ConfigError(f"prompt.description_filter={self.description_filter!r}; allowed: {allowed}")
        if self.block_order not in BLOCK_ORDERS:
            raise ConfigError(f"prompt.block_order={self.block_order!r}; allowed: {', '.join(BLOCK_ORDERS)}")
        if self.direction_news not in DIRECTION_NEWS:
            allowed = ", ".join(DIRECTION_NEWS)
            raise ConfigError(f"prompt.direction_news={self.direction_news!r}; allowed: {allowed}")


@dataclass(frozen=True)
class PolicyConfig:
    """Policy memory (training).

    max_cycles: replay cycles after the warmup round (paper: at most 8).
    stop_after_rejections: stop after this many rejected candidates in a row (2).
    max_principles: most principles kept in a candidate set (the oldest are dropped first).
    consolidation: replay-gated consolidation after warmup (False = ablation A3: the warmup
        reflection's valid principles are used as they are, without replay).
    warmup_floor: the warmup reflection's valid principles are the initial policy memory that
        consolidation starts from and never rolls back below (paper §4.3.3, D.1: both A3
        conditions share the warmup and its initial reflection memory): the first replay
        measures them and is kept whatever its return, later candidates must beat it. False:
        they are the first candidate, gated against the warmup round's return like any other,
        so consolidation can end with no principle at all.
    carry_pair_memory: the test window starts with the pair-quality memory of the accepted
        training round (False: it starts empty).
    reflection_feedback: the reflection payload also carries the accepted principles and what
        the previous cycle's proposals came to (kept, rolled back, or the rule they broke).
        False (the paper's A.6 payload: decisions, win rate, mean PnL, counterfactual counts):
        a cycle whose reflection gave no valid principle replays nothing, so the next
        reflection is the same request and, journaled, gets the same reply.
    direction_rule: what the ``direction`` rule of the principle validator rejects, one of
        ``any_recommendation`` (the default, A.3 read
        strictly: "a specific LONG_SHORT/SHORT_LONG recommendation" under a condition too, so a
        principle naming either direction; and the ban covers the reflection text: a reply
        whose reflection names a ticker, company, pair, date or step, or recommends a
        direction, is rejected as a whole), ``recommendation`` (a lenient reading: a principle
        that recommends LONG_SHORT or SHORT_LONG as a fixed choice, i.e. names a direction in a
        sentence that states no condition; "Choose SHORT_LONG when the spread is far above its
        mean" is kept) or ``any_mention`` (a principle naming either direction; the reflection
        text unchecked).
    principle_min_words: the fewest words a kept principle has (the validator's ``too_short``
        rule, with ``prompt.principle_min_chars``).
    principle_rules: the validator's rules that apply (``empty`` always does): the paper's A.3
        names tickers, pairs, dates, steps and fixed directions; the others are ours.
    train_exposure: the sizing of every training round, whatever the run's own exposure
        (Appendix C: "Policy-memory training uses No-Beta sizing").
    """

    max_cycles: int = 8
    stop_after_rejections: int = 2
    max_principles: int = 6
    consolidation: bool = True
    warmup_floor: bool = True
    carry_pair_memory: bool = True
    reflection_feedback: bool = False
    direction_rule: str = "any_recommendation"
    principle_min_words: int = 4
    principle_rules: tuple[str, ...] = PRINCIPLE_RULES
    train_exposure: str = "no_beta"

    def __post_init__(self) -> None:
        if not 0 <= self.max_cycles <= 50:
            raise ConfigError(f"policy.max_cycles={self.max_cycles}; allowed: 0..50")
        if not 1 <= self.stop_after_rejections <= 50:
            raise ConfigError(f"policy.stop_after_rejections={self.stop_after_rejections}; allowed: 1..50")
        if not 1 <= self.max_principles <= 20:
            raise ConfigError(f"policy.max_principles={self.max_principles}; allowed: 1..20")
        if self.direction_rule not in DIRECTION_RULES:
            raise ConfigError(
                f"policy.direction_rule={self.direction_rule!r}; allowed: {', '.join(DIRECTION_RULES)}"
            )
        if isinstance(self.principle_min_words, bool) or not 0 <= self.principle_min_words <= 100:
            raise ConfigError(f"policy.principle_min_words={self.principle_min_words!r}; allowed: 0..100")
        if self.train_exposure not in ("no_beta", "beta"):
            raise ConfigError(f"policy.train_exposure={self.train_exposure!r}; allowed: no_beta, beta")
        bad = [r for r in self.principle_rules if r not in PRINCIPLE_RULES]
        if bad or len(set(self.principle_rules)) != len(self.principle_rules):
            raise ConfigError(
                f"policy.principle_rules={list(self.principle_rules)}; allowed: distinct names of "
                f"{', '.join(PRINCIPLE_RULES)}"
            )

    def warmup_part(self) -> PolicyConfig:
        """These settings with every :data:`CONSOLIDATION_FIELDS` entry at its default: what the
        shared warmup (its round and its reflection) depends on."""
        base = PolicyConfig()
        return replace(self, **{n: getattr(base, n) for n in CONSOLIDATION_FIELDS})


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
