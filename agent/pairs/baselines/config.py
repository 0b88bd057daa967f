"""The ``[baselines]`` table of a Moira experiment: which baselines run beside the agent, and
their settings.

Layout (every key optional)::

    [baselines]
    methods = ["long_short", "short_long", "equal_weight", "eg_z", "eg_ddqn", "finmem"]
    #   default: all six; [] = none
    [baselines.eg_z]              entry_z, exit_z, z_window   (agent.pairs.baselines.eg_z.EGZConfig)
    [baselines.eg_ddqn]           any field of agent.pairs.baselines.eg_ddqn.DDQNConfig
    [baselines.finmem]            any field of agent.pairs.baselines.finmem.run.FinMemConfig; the
                                  model and sampling fields (model, temperature, top_p,
                                  repetition_penalty, thinking, server_default) default to
                                  [model]'s, the budgets max_tokens_decision / _reflection to
                                  [model.max_tokens]' direction / reflection, the news and
                                  prompt fields (news_token_budget, news_per_leg,
                                  description_max_chars, prompt_dir) to [prompt]'s
                                  (news_token_budget, news_per_leg, description_max_chars, dir);
                                  `model = KEY` fixes FinMem's backbone (the paper's single
                                  FinMem row)
    [baselines.finmem.character]  mode, lookback, threshold
    [baselines.finmem.memory]     access_boost, cleanup_*, w_* and the layer tables
    [baselines.finmem.memory.short] (mid, long, reflection): any field of LayerConfig

A table of a method that is not listed in ``methods`` is still validated (so a typo is an error
either way) but not used. Unknown keys are errors that name the allowed keys.

Seeds (decision recorded here): the deterministic baselines (Long-Short, Short-Long,
Equal-Weight, EG+Z) run once per exposure with the experiment's first seed (a seed changes
nothing in them); EG-DDQN and FinMem run for every seed x exposure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.baselines.eg_ddqn import DDQNConfig
from agent.pairs.baselines.eg_z import EGZConfig
from agent.pairs.baselines.equal_weight import EqualWeightConfig
from agent.pairs.baselines.finmem.run import FinMemConfig
from agent.pairs.baselines.fixed_direction import LONG_SHORT_CONFIG, SHORT_LONG_CONFIG
from localfin import configfile as cf
from localfin.errors import ConfigError

__all__ = [
    "BASELINE_METHODS",
    "SEEDED_METHODS",
    "BaselinesConfig",
    "parse_baselines",
    "baseline_run_id",
]

#: Every baseline an experiment can run (SPEC §2), in display order.
BASELINE_METHODS = ("long_short", "short_long", "equal_weight", "eg_z", "eg_ddqn", "finmem")
#: Baselines whose result depends on the seed (run for every seed); the others run once per exposure.
SEEDED_METHODS = ("eg_ddqn", "finmem")
#: FinMem fields that default to the experiment's ``[model]`` (the table may set them).
FINMEM_FROM_MODEL = ("model", "temperature", "top_p", "repetition_penalty", "thinking", "server_default")


@dataclass(frozen=True)
class BaselinesConfig:
    """Which baselines run and with what settings.

    methods: names from :data:`BASELINE_METHODS` (distinct); empty = no baseline.
    eg_z: :class:`~agent.pairs.baselines.eg_z.EGZConfig`.
    eg_ddqn: :class:`~agent.pairs.baselines.eg_ddqn.DDQNConfig`.
    finmem: :class:`~agent.pairs.baselines.finmem.run.FinMemConfig` (its model fields follow ``[model]``).
    """

    methods: tuple[str, ...] = BASELINE_METHODS
    eg_z: EGZConfig = field(default_factory=EGZConfig)
    eg_ddqn: DDQNConfig = field(default_factory=DDQNConfig)
    finmem: FinMemConfig = field(default_factory=FinMemConfig)

    def __post_init__(self) -> None:
        bad = [m for m in self.methods if m not in BASELINE_METHODS]
        if bad:
            raise ConfigError(f"baselines.methods has {bad}; allowed: {', '.join(BASELINE_METHODS)}")
        if len(set(self.methods)) != len(self.methods):
            raise ConfigError(f"baselines.methods={list(self.methods)} repeats an entry")

    def ordered(self) -> tuple[str, ...]:
        """The configured methods in :data:`BASELINE_METHODS` order."""
        return tuple(m for m in BASELINE_METHODS if m in self.methods)

    def rule_configs(self) -> list[Any]:
        """The runner configs of the configured non-LLM methods (in display order)."""
        by_name = {
            "long_short": LONG_SHORT_CONFIG,
            "short_long": SHORT_LONG_CONFIG,
            "equal_weight": EqualWeightConfig(),
            "eg_z": self.eg_z,
            "eg_ddqn": self.eg_ddqn,
        }
        return [by_name[m] for m in self.ordered() if m in by_name]


def baseline_run_id(method: str, exposure: str, seed: int) -> str:
    """Run folder name of a baseline inside an experiment (the agent's are
    ``<variant>-<exposure>-s<seed>``); deterministic methods carry no seed."""
    if method in SEEDED_METHODS:
        return f"{method}-{exposure}-s{seed}"
    return f"{method}-{exposure}"


def parse_baselines(
    table: Any, model: Any, *, file: str | Path | None = None, prompt: Any = None
) -> BaselinesConfig:
    """A :class:`BaselinesConfig` from the ``[baselines]`` TOML table (``{}`` when absent: every
    baseline at its defaults); ``model`` is the experiment's ``ModelConfig``: FinMem's backbone,
    sampling and completion budgets start from it (``[model.max_tokens]``' ``direction`` for the
    decision, ``reflection`` for the reflection); ``prompt`` (the experiment's ``PromptConfig``,
    None: FinMem's own defaults) gives FinMem the same news budget, news count, descriptions and
    prompt folder as the agent. The table may set any of them."""
    shared = (
        {
            "news_token_budget": prompt.news_token_budget,
            "news_per_leg": prompt.news_per_leg,
            "description_max_chars": prompt.description_max_chars,
            "prompt_dir": prompt.dir,
        }
        if prompt is not None
        else {}
    )
    fm_base = FinMemConfig(
        **shared,
        model=model.backbone,
        temperature=model.temperature,
        top_p=model.top_p,
        repetition_penalty=model.repetition_penalty,
        thinking=model.thinking,
        server_default=model.server_default,
        max_tokens_decision=model.max_tokens.direction,
        max_tokens_reflection=model.max_tokens.reflection,
    )
    base = BaselinesConfig(finmem=fm_base)
    return cf.load(BaselinesConfig, table, key="baselines", file=file, base=base)
