"""The ``[baselines]`` table of a Moira experiment: which baselines run beside the agent, and
their settings.

Layout (every key optional)::

    [baselines]
    methods = ["long_short", "short_long", "equal_weight", "eg_z", "eg_ddqn", "finmem"]
    #   default: all six; [] = none
    [baselines.eg_z]              entry_z, exit_z, z_window   (agent.pairs.baselines.eg_z.EGZConfig)
    [baselines.eg_ddqn]           any field of agent.pairs.baselines.eg_ddqn.DDQNConfig
    [baselines.finmem]            any field of agent.pairs.baselines.finmem.run.FinMemConfig except
                                  model / repetition_penalty / thinking (taken from [model], the
                                  one engine answers both); temperature defaults to [model]'s
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

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

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
_FINMEM_FROM_MODEL = ("model", "repetition_penalty", "thinking")


def _egz() -> Any:
    from agent.pairs.baselines.eg_z import EGZConfig

    return EGZConfig()


def _ddqn() -> Any:
    from agent.pairs.baselines.eg_ddqn import DDQNConfig

    return DDQNConfig()


def _finmem() -> Any:
    from agent.pairs.baselines.finmem.run import FinMemConfig

    return FinMemConfig()


@dataclass(frozen=True)
class BaselinesConfig:
    """Which baselines run and with what settings.

    methods: names from :data:`BASELINE_METHODS` (distinct); empty = no baseline.
    eg_z: :class:`~agent.pairs.baselines.eg_z.EGZConfig`.
    eg_ddqn: :class:`~agent.pairs.baselines.eg_ddqn.DDQNConfig`.
    finmem: :class:`~agent.pairs.baselines.finmem.run.FinMemConfig` (its model fields follow ``[model]``).
    """

    methods: tuple[str, ...] = BASELINE_METHODS
    eg_z: Any = field(default_factory=_egz)
    eg_ddqn: Any = field(default_factory=_ddqn)
    finmem: Any = field(default_factory=_finmem)

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
        from agent.pairs.baselines.equal_weight import EqualWeightConfig
        from agent.pairs.baselines.fixed_direction import LONG_SHORT_CONFIG, SHORT_LONG_CONFIG

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


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    from agent.pairs.experiment.config import _coerce as coerce

    return coerce(value, annotation, key)


def _build(cls: type, table: Any, where: str, base: Any = None, skip: tuple[str, ...] = ()) -> Any:
    """``cls`` from a TOML table (nested dataclass fields from nested tables), starting from
    ``base`` (default: the class defaults); errors name the TOML key."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"[{where}] must be a table, got {type(table).__name__}")
    start = base if base is not None else cls()
    allowed = [f.name for f in fields(cls) if f.name not in skip]
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(f'{where}.{k}' for k in unknown)}; allowed: {', '.join(allowed)}"
        )
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in table:
            continue
        current = getattr(start, f.name)
        if dataclasses.is_dataclass(current) and not isinstance(current, type):
            kwargs[f.name] = _build(type(current), table[f.name], f"{where}.{f.name}", current)
        else:
            kwargs[f.name] = _coerce(table[f.name], f.type, f"{where}.{f.name}")
    try:
        return dataclasses.replace(start, **kwargs)
    except ConfigError as exc:
        raise ConfigError(f"[{where}]: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{where}]: {exc}") from exc


def parse_baselines(table: Any, model: Any) -> BaselinesConfig:
    """A :class:`BaselinesConfig` from the ``[baselines]`` TOML table (``{}`` when absent: every
    baseline at its defaults); ``model`` is the experiment's ``ModelConfig``."""
    from agent.pairs.baselines.eg_ddqn import DDQNConfig
    from agent.pairs.baselines.eg_z import EGZConfig
    from agent.pairs.baselines.finmem.run import FinMemConfig

    if not isinstance(table, Mapping):
        raise ConfigError(f"[baselines] must be a table, got {type(table).__name__}")
    allowed = ["methods", "eg_z", "eg_ddqn", "finmem"]
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join('baselines.' + k for k in unknown)}; allowed: {', '.join(allowed)}"
        )
    methods = _coerce(table.get("methods", list(BASELINE_METHODS)), "tuple[str, ...]", "baselines.methods")
    if any(not isinstance(m, str) for m in methods):
        raise ConfigError(
            f"baselines.methods={list(methods)}; allowed: names from {', '.join(BASELINE_METHODS)}"
        )
    eg_z = _build(EGZConfig, table.get("eg_z", {}), "baselines.eg_z")
    ddqn = _build(DDQNConfig, table.get("eg_ddqn", {}), "baselines.eg_ddqn")
    fm_table = table.get("finmem", {})
    fm_base = FinMemConfig(
        model=model.backbone,
        temperature=model.temperature,
        repetition_penalty=model.repetition_penalty,
        thinking=model.thinking,
    )
    if isinstance(fm_table, Mapping) and any(k in fm_table for k in _FINMEM_FROM_MODEL):
        raise ConfigError(
            f"baselines.finmem sets {[k for k in _FINMEM_FROM_MODEL if k in fm_table]}; these follow "
            "[model] (one engine answers the agent and FinMem); allowed: the other FinMemConfig fields"
        )
    finmem = _build(FinMemConfig, fm_table, "baselines.finmem", fm_base, skip=_FINMEM_FROM_MODEL)
    return BaselinesConfig(methods=tuple(methods), eg_z=eg_z, eg_ddqn=ddqn, finmem=finmem)
