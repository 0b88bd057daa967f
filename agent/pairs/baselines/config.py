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
                                  repetition_penalty, thinking, server_default, decoding,
                                  max_model_len) default to [model]'s, the budgets
                                  max_tokens_decision / _reflection to
                                  [model.max_tokens]' direction / reflection, the news and
                                  prompt fields (news_token_budget, news_per_leg,
                                  description_max_chars, prompt_dir) to [prompt]'s
                                  (news_token_budget, news_per_leg, description_max_chars, dir);
                                  `model = KEY` fixes FinMem's backbone (the paper's single
                                  FinMem row)
    [baselines.finmem.character]  mode, lookback, threshold
    [baselines.finmem.memory]     access_boost, cleanup_*, w_* and the layer tables
    [baselines.finmem.memory.short] (mid, long, reflection): any field of LayerConfig
    [baselines.<plugin>]          the options of an installed plugin baseline (its ``options``
                                  class: agent.pairs.baselines.plugins.BaselinePlugin)

``methods`` may also name the baselines of installed plugins (entry-point group
``localfin.baselines``, :mod:`agent.pairs.baselines.plugins`); they run after the built-ins, in
the order listed.

A table of a method that is not listed in ``methods`` is still validated (so a typo is an error
either way) but not used. Unknown keys are errors that name the allowed keys.

Seeds (decision recorded here): the deterministic baselines (Long-Short, Short-Long,
Equal-Weight, EG+Z) run once per exposure with the experiment's first seed (a seed changes
nothing in them); EG-DDQN and FinMem run for every seed x exposure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from agent.pairs.baselines.eg_ddqn import DDQNConfig
from agent.pairs.baselines.eg_z import EGZConfig
from agent.pairs.baselines.equal_weight import EqualWeightConfig
from agent.pairs.baselines.finmem.run import FinMemConfig
from agent.pairs.baselines.fixed_direction import LONG_SHORT_CONFIG, SHORT_LONG_CONFIG
from agent.pairs.baselines.plugins import (
    BUILTIN_BASELINES,
    PluginBaselineConfig,
    baseline_names,
    is_seeded,
    plugin_baseline,
)
from localfin import configfile as cf
from localfin.errors import ConfigError

__all__ = [
    "BASELINE_METHODS",
    "SEEDED_METHODS",
    "BaselinesConfig",
    "parse_baselines",
    "baseline_run_id",
    "is_seeded",
]

#: localfin's own baselines, in display order; installed plugins may add more
#: (:func:`agent.pairs.baselines.plugins.baseline_names`).
BASELINE_METHODS = tuple(BUILTIN_BASELINES)
#: Built-in baselines whose result depends on the seed (run for every seed); the others run once
#: per exposure (a plugin says so itself: :func:`is_seeded`).
SEEDED_METHODS = tuple(m for m, seeded in BUILTIN_BASELINES.items() if seeded)
#: FinMem fields that default to the experiment's ``[model]`` (the table may set them).
FINMEM_FROM_MODEL = (
    "model",
    "temperature",
    "top_p",
    "repetition_penalty",
    "thinking",
    "server_default",
    "decoding",
    "max_model_len",
)


@dataclass(frozen=True)
class BaselinesConfig:
    """Which baselines run and with what settings.

    methods: the baselines to run, built-in or an installed plugin's, each named once; empty =
        no baseline.
    eg_z: the EG+Z baseline's settings (``[baselines.eg_z]``).
    eg_ddqn: the EG-DDQN baseline's settings (``[baselines.eg_ddqn]``).
    finmem: the FinMem baseline's settings (``[baselines.finmem]``; its model fields follow
        ``[model]``).
    plugin_options: (name, options) of the plugin baselines whose ``[baselines.<name>]`` table the
        file has (filled by :func:`parse_baselines`; a plugin not named here runs at its defaults).
    """

    methods: tuple[str, ...] = BASELINE_METHODS
    eg_z: EGZConfig = field(default_factory=EGZConfig)
    eg_ddqn: DDQNConfig = field(default_factory=DDQNConfig)
    finmem: FinMemConfig = field(default_factory=FinMemConfig)
    plugin_options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        bad = [m for m in self.methods if m not in BASELINE_METHODS]
        if bad:
            known = baseline_names()  # the installed plugins' too (read only when needed)
            bad = [m for m in bad if m not in known]
            if bad:
                raise ConfigError(f"baselines.methods has {bad}; allowed: {', '.join(known)}")
        if len(set(self.methods)) != len(self.methods):
            raise ConfigError(f"baselines.methods={list(self.methods)} repeats an entry")

    def ordered(self) -> tuple[str, ...]:
        """The configured methods: the built-ins in :data:`BASELINE_METHODS` order, then the
        plugins' in the order listed."""
        builtin = tuple(m for m in BASELINE_METHODS if m in self.methods)
        return builtin + tuple(m for m in self.methods if m not in BASELINE_METHODS)

    def options_of(self, method: str) -> Any:
        """A plugin baseline's options: from its table, else its defaults."""
        given = dict(self.plugin_options)
        if method in given:
            return given[method]
        plugin = plugin_baseline(method)
        return plugin.default_options() if plugin is not None else None

    def rule_configs(self) -> list[Any]:
        """The runner configs of the configured non-LLM methods (in :meth:`ordered` order)."""
        by_name = {
            "long_short": LONG_SHORT_CONFIG,
            "short_long": SHORT_LONG_CONFIG,
            "equal_weight": EqualWeightConfig(),
            "eg_z": self.eg_z,
            "eg_ddqn": self.eg_ddqn,
        }
        out: list[Any] = []
        for m in self.ordered():
            if m in by_name:
                out.append(by_name[m])
            elif m not in BASELINE_METHODS:
                out.append(PluginBaselineConfig(m, self.options_of(m)))
        return out


def baseline_run_id(method: str, exposure: str, seed: int) -> str:
    """Run folder name of a baseline inside an experiment (the agent's are
    ``<variant>-<exposure>-s<seed>``); deterministic methods carry no seed."""
    if is_seeded(method):
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
        decoding=model.decoding,
        max_model_len=getattr(model, "max_model_len", None),
        max_tokens_decision=model.max_tokens.direction,
        max_tokens_reflection=model.max_tokens.reflection,
    )
    base = BaselinesConfig(finmem=fm_base)
    table, options = _plugin_tables(table, file)
    cfg = cf.load(BaselinesConfig, table, key="baselines", file=file, base=base)
    return replace(cfg, plugin_options=options) if options else cfg


def _plugin_tables(table: Any, file: str | Path | None) -> tuple[Any, tuple[tuple[str, Any], ...]]:
    """``table`` without its plugin baselines' tables, and those tables read into each plugin's
    ``options`` class (strictly: unknown keys and wrong types name the key)."""
    if not isinstance(table, dict):
        return table, ()
    if "plugin_options" in table:
        raise cf.key_error(
            "baselines.plugin_options",
            "not a key of the file; give a plugin baseline's options as [baselines.<name>]",
            file=file,
        )
    own = {f.name for f in fields(BaselinesConfig)}
    extra = [k for k in table if k not in own]
    if not extra:
        return table, ()
    known = baseline_names()
    rest = dict(table)
    options = []
    for name in extra:
        plugin = plugin_baseline(name) if name in known and name not in BUILTIN_BASELINES else None
        if plugin is None:
            continue  # left to the loader: an unknown key, named with the allowed ones
        body = rest.pop(name)
        if plugin.options is None:
            if body:
                raise cf.key_error(f"baselines.{name}", "this plugin baseline takes no options", file=file)
            continue
        options.append((name, cf.load(plugin.options, body, key=f"baselines.{name}", file=file)))
    return rest, tuple(options)
