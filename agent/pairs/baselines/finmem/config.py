"""The FinMem baseline's settings (``[baselines.finmem]`` of an experiment)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from agent.pairs.baselines.finmem.calls import DECODINGS
from agent.pairs.baselines.finmem.memory import CharacterConfig, MemoryConfig
from agent.pairs.baselines.finmem.texts import FILING_SECTIONS
from agent.pairs.market.settlement import EXPOSURES
from localfin.errors import ConfigError
from serving.chat.types import Sampling

__all__ = ["PRIOR_FILINGS", "FinMemConfig"]

#: Which filings filed before the first session enter memory: ``none`` (FinMem's data pipeline
#: keeps the filings dated within the run) or ``latest`` (also each leg's latest 10-Q and 10-K
#: filed before it, entering at the first session).
PRIOR_FILINGS = ("none", "latest")


@dataclass(frozen=True)
class FinMemConfig:
    """The FinMem-style baseline.

    memory: layered memory (``[baselines.finmem.memory]``).
    character: risk character (``[baselines.finmem.character]``).
    model: registry key of the backbone (the backend must serve it). In an experiment it is the
        run's backbone unless ``[baselines.finmem] model`` fixes one (the paper's single FinMem
        row on one model, whatever the agent's backbone).
    base_url: the server of a fixed FinMem model when ``[model] backend`` is ``openai``.
    temperature: sampling temperature (0: greedy; None: unset, greedy unless server_default);
    top_p: None = unset; repetition_penalty: None = the registry's; thinking: Qwen3-style
    thinking switch (None: the model's default); server_default: leave the unset sampling fields
    to the engine (the model's generation config).
    max_tokens_decision, max_tokens_reflection: completion budgets in tokens (0: the longest
        compact reply the schema allows, + 8, which a thinking model's reasoning overruns;
        None: in an experiment, ``[model.max_tokens]``'s ``direction`` and ``reflection``, so a
        GPU config's 16,384 reaches FinMem too; on its own, 0).
    reason_max_chars, reflection_max_chars: maxLength of the decision's reason and the lesson
        (0: no bound; the call's budget must then be set: max_tokens_decision /
        max_tokens_reflection, or in an experiment ``[model.max_tokens]``).
    cite_max: most memory ids a reply may cite.
    news_per_leg: news items per leg and session stored (newest first; 0: no news; in an
        experiment ``[prompt] news_per_leg`` unless this table sets it).
    news_max_chars: length of a stored news line in compact mode (``news_token_budget`` 0);
        description_max_chars: of a business description (in an experiment ``[prompt]``'s
        unless this table sets it).
    news_token_budget: 0 = compact news lines (``news_max_chars``); > 0 = news items stored
        whole, and each decision shows its recalled news items newest first while their
        estimated tokens fit this budget (the rest are left out and counted,
        ``news_budget_cuts``): the per-prompt budget of the agent's prompts (in an experiment
        ``[prompt] news_token_budget`` unless this table sets it).
    prompt_dir: a folder of the user's prompt files (``pairs_finmem_decision.yaml``,
        ``pairs_finmem_reflection.yaml`` of the packaged format; in an experiment ``[prompt] dir``);
        empty: the packaged ones.
    hedge_window: sessions of the OLS hedge behind the observation's z-scores, ending at the
        session (the screen's lookback, 2,520; fewer when history is shorter);
    hedge_min_sessions: fewest common sessions for that hedge (below: no z is shown);
    z_window: sessions of the trading-window z (20).
    rel_move_sessions: common sessions of the observation's relative move of A against B (the
        payload's ``rel_move_<n>_pct``; 5).
    momentum_sessions: sessions over which the payload's momentum compares the legs' moves
        (FinMem: three days).
    filing_section: what of a filing its memory item holds: ``mda`` (the management
        discussion, what FinMem's data pipeline extracts: 10-K item 7, 10-Q part I item 2),
        ``risk`` (the risk factors) or ``both``.
    filing_max_chars: a filing's item is cut to this many characters (0: whole, as FinMem's
        pipeline stores it; the default 600 is sized for the CPU model's 8,192-token context,
        where six whole reports cannot fit); the context check (``max_model_len``) refuses a
        prompt that does not fit.
    prior_filings: ``none`` (the filings dated within the run, FinMem's pipeline) or ``latest``
        (also each leg's latest 10-Q and 10-K filed before the first session, entering then).
    reasks: a reply that fails validation is asked again this many times (FinMem: once); the
        re-asks count as calls of their call type.
    decoding: ``schema`` (the reply schema constrains decoding) or ``prompt`` (the JSON is asked
        for in the prompt and the reply validated against the schema, as FinMem's guard does);
        None: in an experiment ``[model] decoding``, on its own ``schema``.
    max_model_len: the context FinMem's model is served with (tokens; None: the registry
        entry's, in an experiment ``[model] max_model_len`` when FinMem runs on the backbone):
        every request is checked against it before it is sent.
    train_reflection: run the reflection call on settled training decisions (FinMem's training).
    test_reflection: also run it in the test window (FinMem does not; costs one call per session).
    train_exposure: sizing of the training settlements (Moira trains with No-Beta).
    """

    memory: MemoryConfig = field(default_factory=MemoryConfig)
    character: CharacterConfig = field(default_factory=CharacterConfig)
    model: str = "smollm2-135m"
    base_url: str = ""
    temperature: float | None = 0.0
    top_p: float | None = None
    repetition_penalty: float | None = None
    thinking: bool | None = None
    server_default: bool = False
    max_tokens_decision: int | None = None
    max_tokens_reflection: int | None = None
    reason_max_chars: int = 120
    reflection_max_chars: int = 200
    cite_max: int = 3
    news_per_leg: int = 3
    news_max_chars: int = 160
    description_max_chars: int = 240
    news_token_budget: int = 0
    prompt_dir: str = ""
    hedge_window: int = 2520
    hedge_min_sessions: int = 60
    z_window: int = 20
    rel_move_sessions: int = 5
    momentum_sessions: int = 3
    filing_section: str = "mda"
    filing_max_chars: int = 600
    prior_filings: str = "none"
    reasks: int = 1
    decoding: str | None = None
    max_model_len: int | None = None
    train_reflection: bool = True
    test_reflection: bool = False
    train_exposure: str = "no_beta"

    def __post_init__(self) -> None:
        if not isinstance(self.memory, MemoryConfig):
            raise ConfigError(f"memory must be a MemoryConfig, got {type(self.memory).__name__}")
        if not isinstance(self.character, CharacterConfig):
            raise ConfigError(f"character must be a CharacterConfig, got {type(self.character).__name__}")
        if not self.model:
            raise ConfigError("model must be a registry key (e.g. 'smollm2-135m'), got an empty string")
        if self.temperature is not None and not (
            math.isfinite(self.temperature) and 0.0 <= self.temperature <= 5.0
        ):
            raise ConfigError(f"temperature={self.temperature}; allowed: 0..5 or unset")
        for name in ("max_tokens_decision", "max_tokens_reflection"):
            v = getattr(self, name)
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or 16 <= v <= 131_072)
            ):
                raise ConfigError(f"{name}={v!r}; allowed: 0 (the schema's size), 16..131072, or unset")
        for name in ("reason_max_chars", "reflection_max_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or 10 <= v <= 4000):
                raise ConfigError(f"{name}={v!r}; allowed: 0 (no bound) or an integer in 10..4000")
        for name, lo, hi in (
            ("cite_max", 0, 20),
            ("news_per_leg", 0, 50),
            ("news_max_chars", 20, 4000),
            ("description_max_chars", 0, 5000),
            ("news_token_budget", 0, 100_000),
            ("z_window", 3, 1000),
            ("rel_move_sessions", 1, 250),
            ("hedge_min_sessions", 3, 5000),
            ("momentum_sessions", 1, 250),
            ("filing_max_chars", 0, 2_000_000),
            ("reasks", 0, 5),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"{name}={v!r}; allowed: an integer in {lo}..{hi}")
        if isinstance(self.hedge_window, bool) or not self.z_window <= self.hedge_window <= 5000:
            raise ConfigError(
                f"hedge_window={self.hedge_window}; allowed: z_window={self.z_window}..5000 sessions"
            )
        for name, budget in (
            ("reason_max_chars", "max_tokens_decision"),
            ("reflection_max_chars", "max_tokens_reflection"),
        ):
            if getattr(self, name) == 0 and not getattr(self, budget):
                raise ConfigError(
                    f"{name}=0 (no bound) needs an explicit {budget} (an automatic budget is the "
                    "longest reply the schema allows, and an unbounded reason has none)"
                )
        if self.filing_section not in FILING_SECTIONS:
            raise ConfigError(
                f"filing_section={self.filing_section!r}; allowed: {', '.join(FILING_SECTIONS)}"
            )
        if self.prior_filings not in PRIOR_FILINGS:
            raise ConfigError(f"prior_filings={self.prior_filings!r}; allowed: {', '.join(PRIOR_FILINGS)}")
        if self.decoding is not None and self.decoding not in DECODINGS:
            raise ConfigError(f"decoding={self.decoding!r}; allowed: {', '.join(DECODINGS)} or unset")
        if self.max_model_len is not None and (
            isinstance(self.max_model_len, bool)
            or not isinstance(self.max_model_len, int)
            or not 256 <= self.max_model_len <= 10_000_000
        ):
            raise ConfigError(f"max_model_len={self.max_model_len!r}; allowed: 256..10000000 tokens or unset")
        if self.train_exposure not in EXPOSURES:
            raise ConfigError(f"train_exposure={self.train_exposure!r}; allowed: {', '.join(EXPOSURES)}")

    def sampling(self, seed: int) -> Sampling:
        """The sampling of every call of a FinMem run with ``seed``."""
        return Sampling.of(self, seed)
