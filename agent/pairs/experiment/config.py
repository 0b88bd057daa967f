"""Moira experiment configuration: frozen dataclasses, loaded from TOML.

One experiment = one store, one pool, one training window and one test window, run for every
seed x exposure x variant (each such run is one lockstep program). Every field below has a
default; a TOML file only names what it changes. Validation happens in ``__post_init__`` and
every error names the TOML key and the allowed values. TOML is read with ``tomllib`` and
checked by hand (unknown keys are errors, so a typo never silently falls back to a default).

Layout of a config file (all tables optional except ``[experiment]`` and ``[windows]``)::

    [experiment]   name, store, pool, seeds, exposures, cost_bps
    [windows]      train_start, train_end, test_start, test_end   (YYYY-MM-DD, inclusive)
    [model]        backbone, backend, base_url, temperature, repetition_penalty, thinking,
                   max_num_seqs, kv_cache_gib, chunk_size
    [model.max_tokens]  pair_selection, direction, reflection, break_check, news_verify
    [prompt]       reason_max_chars, principle_max_chars, news_per_leg, news_lookback_sessions,
                   headline_max_chars, description_max_chars, memory_records,
                   reflection_max_records
    [policy]       max_cycles, stop_after_rejections, max_principles, consolidation,
                   carry_pair_memory
    [selection]    fallback, reselection, fixed_pair
    [screen]       any field of agent.pairs.screen.causal.ScreenConfig
    [lifecycle]    any field of agent.pairs.lifecycle.machine.LifecycleConfig
    [[variants]]   name, and any of consolidation / reselection / fixed_pair (per-variant
                   overrides of [policy] / [selection]; default: one variant "full")
    [baselines]    methods (default: all six; [] = none) and per-method tables
                   [baselines.eg_z], [baselines.eg_ddqn], [baselines.finmem] (see
                   agent.pairs.baselines.config): the baselines run on the same store, pool, screen,
                   windows, exposures, seeds and cost, in the same experiment folder
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from agent.pairs.market.settlement import EXPOSURES
from agent.pairs.moira.config import (
    MaxTokens,
    PolicyConfig,
    PromptConfig,
    SelectionConfig,
    Variant,
)
from agent.pairs.screen.causal import ScreenConfig
from localfin.errors import ConfigError

__all__ = [
    "ModelConfig",
    "WindowConfig",
    "ExperimentConfig",
    "load_config",
    "parse_config",
    "config_to_dict",
]

BACKENDS = ("vllm", "openai")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _date(value: Any, key: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(f"{key}={value!r}; allowed: a date YYYY-MM-DD") from None


@dataclass(frozen=True)
class ModelConfig:
    """Which model answers, and how it samples.

    backbone: registry key (``localfin models list``).
    backend: ``vllm`` (in-process engine) or ``openai`` (a running ``vllm serve`` at base_url).
    base_url: the server for ``openai`` (e.g. http://127.0.0.1:8000/v1).
    temperature: sampling temperature of every call (0: greedy; seeds then change nothing).
    repetition_penalty: None = the registry default of the backbone (1.15 for the CPU model).
    thinking: Qwen3 thinking switch (None = the registry default).
    max_num_seqs, kv_cache_gib: engine settings of the in-process backend.
    chunk_size: requests per engine call and per journal transaction (large enough that each
        lockstep round is one engine call).
    """

    backbone: str = "smollm2-135m"
    backend: str = "vllm"
    base_url: str = ""
    temperature: float = 0.0
    repetition_penalty: float | None = None
    thinking: bool | None = None
    max_num_seqs: int = 64
    kv_cache_gib: int | None = None
    chunk_size: int = 256
    max_tokens: MaxTokens = field(default_factory=MaxTokens)

    def __post_init__(self) -> None:
        if not self.backbone:
            raise ConfigError("model.backbone is empty; allowed: a registry key such as smollm2-135m")
        if self.backend not in BACKENDS:
            raise ConfigError(f"model.backend={self.backend!r}; allowed: {', '.join(BACKENDS)}")
        if self.backend == "openai" and not self.base_url:
            raise ConfigError("model.base_url is required when model.backend = 'openai'")
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError(f"model.temperature={self.temperature}; allowed: 0..2")
        if self.repetition_penalty is not None and not 1.0 <= self.repetition_penalty <= 2.0:
            raise ConfigError(f"model.repetition_penalty={self.repetition_penalty}; allowed: 1..2 or unset")
        if self.max_num_seqs < 1:
            raise ConfigError(f"model.max_num_seqs={self.max_num_seqs}; allowed: >= 1")
        if self.kv_cache_gib is not None and self.kv_cache_gib < 1:
            raise ConfigError(f"model.kv_cache_gib={self.kv_cache_gib}; allowed: >= 1 or unset")
        if self.chunk_size < 1:
            raise ConfigError(f"model.chunk_size={self.chunk_size}; allowed: >= 1")


@dataclass(frozen=True)
class WindowConfig:
    """Training and test windows (inclusive calendar dates; sessions come from the store)."""

    train_start: dt.date
    train_end: dt.date
    test_start: dt.date
    test_end: dt.date

    def __post_init__(self) -> None:
        if self.train_start > self.train_end:
            raise ConfigError(f"windows.train_start={self.train_start} is after train_end={self.train_end}")
        if self.test_start > self.test_end:
            raise ConfigError(f"windows.test_start={self.test_start} is after test_end={self.test_end}")
        if self.test_start <= self.train_end:
            raise ConfigError(
                f"windows.test_start={self.test_start} must come after train_end={self.train_end}"
            )


@dataclass(frozen=True)
class ExperimentConfig:
    """A whole experiment. ``store`` is resolved against the config file's folder when relative."""

    name: str
    store: Path
    windows: WindowConfig
    pool: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    exposures: tuple[str, ...] = EXPOSURES
    cost_bps: float = 0.0
    model: ModelConfig = field(default_factory=ModelConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    screen: ScreenConfig = field(default_factory=ScreenConfig)
    lifecycle: Any = None  # agent.pairs.lifecycle.machine.LifecycleConfig (filled in __post_init__)
    variants: tuple[Variant, ...] = (Variant(),)
    baselines: Any = None  # agent.pairs.baselines.config.BaselinesConfig (default: none when built in code)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(f"experiment.name={self.name!r}; allowed: letters, digits, '_', '-', '.'")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(
                f"experiment.seeds={list(self.seeds)}; allowed: distinct integers, at least one"
            )
        for s in self.seeds:
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**31:
                raise ConfigError(f"experiment.seeds entry {s!r}; allowed: integers in 0..2^31-1")
        if not self.exposures or any(e not in EXPOSURES for e in self.exposures):
            raise ConfigError(f"experiment.exposures={list(self.exposures)}; allowed: {', '.join(EXPOSURES)}")
        if len(set(self.exposures)) != len(self.exposures):
            raise ConfigError(f"experiment.exposures={list(self.exposures)} repeats an entry")
        if not (math.isfinite(self.cost_bps) and 0.0 <= self.cost_bps <= 1000.0):
            raise ConfigError(f"experiment.cost_bps={self.cost_bps}; allowed: 0..1000 basis points")
        if len(self.pool) == 1 or len(set(self.pool)) != len(self.pool):
            raise ConfigError(
                f"experiment.pool={list(self.pool)}; allowed: empty (all) or >= 2 distinct tickers"
            )
        names = [v.name for v in self.variants]
        if not names or len(set(names)) != len(names):
            raise ConfigError(f"variants names {names}; allowed: at least one, all distinct")
        if self.lifecycle is None:
            from agent.pairs.lifecycle.machine import LifecycleConfig

            object.__setattr__(self, "lifecycle", LifecycleConfig())
        if self.baselines is None:
            from agent.pairs.baselines.config import BaselinesConfig

            object.__setattr__(self, "baselines", BaselinesConfig(methods=()))

    def run_ids(self) -> list[tuple[str, Variant, str, int]]:
        """``(run_id, variant, exposure, seed)`` of every run, in a fixed order."""
        return [
            (f"{v.name}-{e}-s{s}", v, e, s) for v in self.variants for e in self.exposures for s in self.seeds
        ]


# -- TOML --------------------------------------------------------------------------------------

_TOP = (
    "experiment",
    "windows",
    "model",
    "prompt",
    "policy",
    "selection",
    "screen",
    "lifecycle",
    "variants",
    "baselines",
)


def _check_keys(table: Mapping[str, Any], allowed: tuple[str, ...] | list[str], where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(f'{where}.{k}' for k in unknown)}; allowed: {', '.join(allowed)}"
        )


def _table(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"[{key}] must be a table, got {type(value).__name__}")
    return dict(value)


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Check a TOML value against a dataclass field annotation (as text, since the modules use
    ``from __future__ import annotations``)."""
    ann = str(annotation).replace(" ", "")
    optional = "None" in ann.split("|")
    base = [a for a in ann.split("|") if a != "None"]
    kind = base[0] if base else "Any"
    if value is None and optional:
        return None
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{key}={value!r}; allowed: true or false")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}={value!r}; allowed: an integer")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}={value!r}; allowed: a number")
        return float(value)
    if kind == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{key}={value!r}; allowed: a string")
        return value
    if kind.startswith("tuple["):
        if not isinstance(value, list):
            raise ConfigError(f"{key}={value!r}; allowed: an array")
        return _tuples(value)
    return value


def _tuples(value: Any) -> Any:
    """TOML arrays as tuples, nested ones too (the configs are frozen and hashable)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _build(cls: type, table: Mapping[str, Any], where: str, **fixed: Any) -> Any:
    """``cls(**table)`` with unknown keys and wrong types reported by their TOML key."""
    names = [f.name for f in fields(cls) if f.name not in fixed]
    _check_keys(table, names, where)
    ann = {f.name: f.type for f in fields(cls)}
    kwargs = {k: _coerce(v, ann[k], f"{where}.{k}") for k, v in table.items()}
    try:
        return cls(**kwargs, **fixed)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{where}]: {exc}") from exc


def parse_config(data: Mapping[str, Any], *, base_dir: Path | None = None) -> ExperimentConfig:
    """An :class:`ExperimentConfig` from a parsed TOML document (relative ``store`` paths are
    resolved against ``base_dir``)."""
    from agent.pairs.baselines.config import parse_baselines
    from agent.pairs.lifecycle.machine import LifecycleConfig

    _check_keys(data, _TOP, "<top>")
    exp = _table(data, "experiment")
    _check_keys(exp, ["name", "store", "pool", "seeds", "exposures", "cost_bps"], "experiment")
    if "name" not in exp:
        raise ConfigError("experiment.name is required")
    win = _table(data, "windows")
    keys = ["train_start", "train_end", "test_start", "test_end"]
    _check_keys(win, keys, "windows")
    missing = [k for k in keys if k not in win]
    if missing:
        raise ConfigError(f"missing key(s) {', '.join('windows.' + k for k in missing)}")
    windows = WindowConfig(**{k: _date(win[k], f"windows.{k}") for k in keys})

    model_t = _table(data, "model")
    mt = model_t.pop("max_tokens", {})
    if not isinstance(mt, Mapping):
        raise ConfigError("[model.max_tokens] must be a table")
    max_tokens = _build(MaxTokens, mt, "model.max_tokens")
    model = _build(ModelConfig, model_t, "model", max_tokens=max_tokens)
    prompt = _build(PromptConfig, _table(data, "prompt"), "prompt")
    policy = _build(PolicyConfig, _table(data, "policy"), "policy")
    selection = _build(SelectionConfig, _table(data, "selection"), "selection")
    screen = _build(ScreenConfig, _table(data, "screen"), "screen")
    lifecycle = _build(LifecycleConfig, _table(data, "lifecycle"), "lifecycle")

    raw_variants = data.get("variants", [])
    if not isinstance(raw_variants, list):
        raise ConfigError("[[variants]] must be an array of tables")
    variants = []
    pol_keys = ("consolidation", "max_cycles", "stop_after_rejections", "max_principles", "carry_pair_memory")
    sel_keys = ("reselection", "fixed_pair", "fallback")
    for k, raw in enumerate(raw_variants):
        if not isinstance(raw, Mapping):
            raise ConfigError(f"variants[{k}] must be a table")
        _check_keys(raw, ["name", *pol_keys, *sel_keys], f"variants[{k}]")
        if "name" not in raw:
            raise ConfigError(f"variants[{k}].name is required")
        pol = {key: raw[key] for key in pol_keys if key in raw}
        sel = {key: raw[key] for key in sel_keys if key in raw}
        variants.append(
            Variant(
                name=_coerce(raw["name"], "str", f"variants[{k}].name"),
                policy=replace(
                    policy,
                    **{
                        key: _coerce(v, _ann(PolicyConfig, key), f"variants[{k}].{key}")
                        for key, v in pol.items()
                    },
                ),
                selection=replace(
                    selection,
                    **{
                        key: _coerce(v, _ann(SelectionConfig, key), f"variants[{k}].{key}")
                        for key, v in sel.items()
                    },
                ),
            )
        )
    if not variants:
        variants = [Variant("full", policy, selection)]

    store_raw = exp.get("store")
    if store_raw is None:
        from localfin import env

        store = env.default_store_path()
    else:
        store = Path(_coerce(store_raw, "str", "experiment.store")).expanduser()
        if not store.is_absolute() and base_dir is not None:
            store = base_dir / store
    pool = _coerce(exp.get("pool", []), "tuple[str, ...]", "experiment.pool")
    if any(not isinstance(t, str) or not t for t in pool):
        raise ConfigError(f"experiment.pool={list(pool)}; allowed: ticker strings")
    seeds = _coerce(exp.get("seeds", [0]), "tuple[int, ...]", "experiment.seeds")
    exposures = _coerce(exp.get("exposures", list(EXPOSURES)), "tuple[str, ...]", "experiment.exposures")
    return ExperimentConfig(
        name=_coerce(exp["name"], "str", "experiment.name"),
        store=store,
        windows=windows,
        pool=tuple(pool),
        seeds=tuple(seeds),
        exposures=tuple(exposures),
        cost_bps=_coerce(exp.get("cost_bps", 0.0), "float", "experiment.cost_bps"),
        model=model,
        prompt=prompt,
        screen=screen,
        lifecycle=lifecycle,
        variants=tuple(variants),
        baselines=parse_baselines(data.get("baselines", {}), model),
    )


def _ann(cls: type, name: str) -> Any:
    return {f.name: f.type for f in fields(cls)}[name]


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate an experiment TOML file."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {p} is not valid TOML: {exc}") from exc
    return parse_config(data, base_dir=p.resolve().parent)


def config_to_dict(cfg: ExperimentConfig) -> dict[str, Any]:
    """A JSON-ready dict of the resolved config (for the manifest and the run records)."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (dt.date, Path)):
            return str(value)
        return value

    return plain(cfg)
