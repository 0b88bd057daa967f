"""Run the non-LLM baselines on one window and write their run folders.

:func:`run_baseline` runs one baseline for (store, pool, training window, test window, exposure,
seed) and writes ``<out_dir>/runs/<run_id>/steps.parquet`` and ``metrics.json`` (kind
``baseline``, the method name; EG-DDQN also ``training.json``, its training curve) through
:mod:`agent.pairs.market.records`. :func:`run_all` runs every configured baseline under every exposure,
selecting the pair once. The training window only matters to EG-DDQN (the others have nothing to
train); it must end before step 001.

When the screen has no candidate at step 001 the pair baselines hold nothing for the whole window
(FLAT, 0 per transition, ``extra.no_candidate`` true); Equal-Weight needs no pair.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent.data.store import MarketStore
from agent.pairs.baselines.common import (
    PairSeries,
    Selection,
    Window,
    as_window,
    check_exposure,
    load_pair,
    pair_betas,
    select_pair,
    tradable,
)
from agent.pairs.baselines.eg_ddqn import DDQNConfig, train_and_act
from agent.pairs.baselines.eg_z import EGZConfig, egz_actions
from agent.pairs.baselines.equal_weight import EqualWeightConfig, equal_weight_ledger
from agent.pairs.baselines.fixed_direction import (
    LONG_SHORT_CONFIG,
    SHORT_LONG_CONFIG,
    FixedDirectionConfig,
    fixed_actions,
)
from agent.pairs.baselines.ledger import Ledger, flat_records, settle_actions, write_run
from agent.pairs.baselines.plugins import BASELINES, PluginBaselineConfig, plugin_actions
from agent.pairs.market.execution import ExecutionSettings
from agent.pairs.market.metrics import Metrics
from agent.pairs.market.records import write_json
from agent.pairs.market.settlement import EXPOSURES, NO_BETA_LEGS
from agent.pairs.screen.causal import ScreenConfig
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress

__all__ = [
    "BaselineConfig",
    "DEFAULT_BASELINES",
    "RunSettings",
    "BaselineResult",
    "run_baseline",
    "run_all",
    "run_planned",
]

log = logging.getLogger(__name__)

#: A runner config: a built-in rule baseline's, or a plugin baseline's
#: (:mod:`agent.pairs.baselines.plugins`: its positions are settled like the built-ins').
BaselineConfig = FixedDirectionConfig | EqualWeightConfig | EGZConfig | DDQNConfig | PluginBaselineConfig
#: Long-Short, Short-Long, Equal-Weight, EG+Z and EG-DDQN at their defaults.
DEFAULT_BASELINES: tuple[BaselineConfig, ...] = (
    LONG_SHORT_CONFIG,
    SHORT_LONG_CONFIG,
    EqualWeightConfig(),
    EGZConfig(),
    DDQNConfig(),
)


@dataclass(frozen=True)
class RunSettings:
    """What the baselines share with the agent: the screen, the Beta exposure's rolling window
    (sessions: 20), the reading of the No-Beta legs
    (:data:`agent.pairs.market.settlement.NO_BETA_LEGS`) and the execution settings
    (:mod:`agent.pairs.market.execution`: ``execution`` close or next_open, ``cost_bps`` and
    ``slippage_bps`` per unit of turnover, ``borrow_bps_per_year`` for the short leg; default the
    papers': close, no costs)."""

    screen: ScreenConfig = field(default_factory=ScreenConfig)
    beta_window: int = 20
    cost_bps: float = 0.0
    no_beta_legs: str = "equal_shares"
    execution: str = "close"
    slippage_bps: float = 0.0
    borrow_bps_per_year: float = 0.0

    def __post_init__(self) -> None:
        if self.no_beta_legs not in NO_BETA_LEGS:
            raise ConfigError(f"no_beta_legs={self.no_beta_legs!r}; allowed: {', '.join(NO_BETA_LEGS)}")
        if self.beta_window < 3:
            raise ConfigError(f"beta_window={self.beta_window}; allowed: >= 3 sessions")
        if not (math.isfinite(self.cost_bps) and self.cost_bps >= 0):
            raise ConfigError(f"cost_bps={self.cost_bps}; allowed: a finite number >= 0 basis points")
        self.execution_settings()

    def execution_settings(self) -> ExecutionSettings:
        return ExecutionSettings(self.execution, self.cost_bps, self.slippage_bps, self.borrow_bps_per_year)


@dataclass(frozen=True)
class BaselineResult:
    """One finished baseline run (its folder holds the same figures)."""

    run_id: str
    method: str
    exposure: str
    seed: int
    pair: str
    run_dir: Path
    metrics: Metrics
    extra: dict[str, Any]


@dataclass
class _Prepared:
    """A window's selection and pair data, shared by every baseline and exposure."""

    pool: tuple[str, ...]
    train: Window
    test: Window
    selection: Selection
    series: PairSeries | None
    betas: np.ndarray | None


def _pool(pool: Sequence[str]) -> tuple[str, ...]:
    out = tuple(sorted(set(pool)))
    if len(out) < 2 or len(out) != len(pool):
        raise ConfigError(f"pool={list(pool)}; allowed: at least 2 distinct tickers")
    return out


def _prepare(
    store: MarketStore,
    pool: Sequence[str],
    train: Window | tuple[object, object],
    test: Window | tuple[object, object],
    settings: RunSettings,
) -> _Prepared:
    pool_t = _pool(pool)
    train_w, test_w = as_window(train, "train"), as_window(test, "test")
    sel = select_pair(store, pool_t, test_w, settings.screen)
    if train_w.end >= sel.session:
        raise ConfigError(
            f"train window {train_w.label()} must end before step 001 of the test window ({sel.session})"
        )
    if sel.candidate is None:
        log.info("no candidate pair at %s in pool %s: %s", sel.session, list(pool_t), sel.reason)
        return _Prepared(pool_t, train_w, test_w, sel, None, None)
    series = load_pair(store, pool_t, sel, settings.screen.price_field)
    return _Prepared(pool_t, train_w, test_w, sel, series, pair_betas(series, settings.beta_window))


def _train_range(prep: _Prepared) -> tuple[int, int]:
    s = prep.series
    assert s is not None
    first = int(np.searchsorted(s.dates, np.datetime64(prep.train.start, "D"), side="left"))
    last = s.index_of(prep.train.end)
    if last < first:
        raise ConfigError(f"train window {prep.train.label()} holds no session of the pool calendar")
    return first, last


def _base_extra(prep: _Prepared, config: BaselineConfig, settings: RunSettings) -> dict[str, Any]:
    sel = prep.selection
    return {
        "pool": list(prep.pool),
        "test_window": [str(sel.sessions[0]), str(sel.sessions[-1])],
        "n_sessions": len(sel.sessions),
        "train_window": [prep.train.start.isoformat(), prep.train.end.isoformat()],
        **sel.describe(),
        "config": asdict(config),
        "settings": {
            "beta_window": settings.beta_window,
            "cost_bps": settings.cost_bps,
            "no_beta_legs": settings.no_beta_legs,
            "price_field": settings.screen.price_field,
            "screen_lookback": settings.screen.lookback,
        },
        "execution": settings.execution_settings().to_dict(),
    }


def _run_prepared(
    store: MarketStore,
    prep: _Prepared,
    config: BaselineConfig,
    *,
    exposure: str,
    seed: int,
    out_dir: str | Path,
    settings: RunSettings,
    run_id: str | None,
) -> BaselineResult:
    check_exposure(exposure)
    method = config.method
    rid = run_id or f"{method}-{exposure}-seed{seed}"
    extra = _base_extra(prep, config, settings)
    training: dict[str, Any] | None = None
    ledger: Ledger
    if isinstance(config, EqualWeightConfig):
        ledger, facts = equal_weight_ledger(
            store,
            prep.pool,
            prep.selection.sessions,
            settings.screen.price_field,
            settings.execution_settings(),
        )
        extra |= {"equal_weight": facts, "exposure_applies": False}
        extra["pair"] = ""
    elif prep.series is None:
        ledger = flat_records(prep.selection.sessions, "no candidate pair")
    else:
        s, betas = prep.series, prep.betas
        ok = tradable(s, exposure, betas)
        notes: Sequence[str] | None = None
        if isinstance(config, FixedDirectionConfig):
            actions = fixed_actions(s, ok, config)
        elif isinstance(config, EGZConfig):
            actions, notes = egz_actions(s, ok, config)
        elif isinstance(config, DDQNConfig):
            first, last = _train_range(prep)
            res = train_and_act(
                s,
                ok,
                config,
                train_first=first,
                train_last=last,
                exposure=exposure,
                betas=betas,
                seed=seed,
                execution=settings.execution_settings(),
                no_beta_legs=settings.no_beta_legs,
            )
            actions, notes = list(res.actions), list(res.notes)
            training = {"method": method, "seed": seed, "exposure": exposure, "episodes": list(res.curve)}
            training |= res.info
            extra["training"] = {k: v for k, v in res.info.items() if k != "config"} | {
                "file": "training.json"
            }
        elif isinstance(config, PluginBaselineConfig):
            actions, notes = plugin_actions(
                s, ok, config, exposure=exposure, betas=betas, seed=seed, train=_train_range(prep)
            )
            extra["plugin"] = BASELINES.origin(method)
        else:
            raise ConfigError(
                f"config {config!r}; allowed: one of "
                f"{[type(c).__name__ for c in DEFAULT_BASELINES]} or a PluginBaselineConfig"
            )
        ledger = settle_actions(
            s,
            actions,
            exposure,
            betas=betas,
            execution=settings.execution_settings(),
            notes=notes,
            no_beta_legs=settings.no_beta_legs,
        )
    extra |= {"n_missing": ledger.n_missing, "n_no_beta": ledger.n_no_beta}
    metrics = ledger.metrics()
    run_dir = write_run(
        out_dir, rid, method=method, exposure=exposure, seed=seed, ledger=ledger, metrics=metrics, extra=extra
    )
    if training is not None:
        write_json(run_dir / "training.json", training)
    return BaselineResult(rid, method, exposure, seed, extra["pair"], run_dir, metrics, extra)


def run_baseline(
    store: MarketStore,
    config: BaselineConfig,
    *,
    pool: Sequence[str],
    train: Window | tuple[object, object],
    test: Window | tuple[object, object],
    exposure: str,
    out_dir: str | Path,
    seed: int = 0,
    settings: RunSettings | None = None,
    run_id: str | None = None,
) -> BaselineResult:
    """Run one baseline on the test window (pair = the screen's top candidate at step 001) and
    write its run folder under ``out_dir/runs/<run_id>`` (default ``<method>-<exposure>-seed<seed>``)."""
    cfg = settings or RunSettings()
    prep = _prepare(store, pool, train, test, cfg)
    return _run_prepared(
        store, prep, config, exposure=exposure, seed=seed, out_dir=out_dir, settings=cfg, run_id=run_id
    )


def run_all(
    store: MarketStore,
    *,
    pool: Sequence[str],
    train: Window | tuple[object, object],
    test: Window | tuple[object, object],
    out_dir: str | Path,
    exposures: Sequence[str] = EXPOSURES,
    seed: int = 0,
    configs: Sequence[BaselineConfig] = DEFAULT_BASELINES,
    settings: RunSettings | None = None,
    progress: Progress = NULL_PROGRESS,
) -> list[BaselineResult]:
    """Every baseline in ``configs`` under every exposure on one window (the pair selected once);
    run ids ``<method>-<exposure>-seed<seed>``. Method names must be distinct."""
    methods = [c.method for c in configs]
    if len(set(methods)) != len(methods):
        raise ConfigError(f"configs have repeated methods {methods}; allowed: one config per method")
    for e in exposures:
        check_exposure(e)
    cfg = settings or RunSettings()
    prep = _prepare(store, pool, train, test, cfg)
    plan = [(config, exposure, seed, None) for exposure in exposures for config in configs]
    return _run_plan(store, prep, plan, out_dir, cfg, progress, f"baselines {prep.test.label()}")


def run_planned(
    store: MarketStore,
    plan: Sequence[tuple[BaselineConfig, str, int, str]],
    *,
    pool: Sequence[str],
    train: Window | tuple[object, object],
    test: Window | tuple[object, object],
    out_dir: str | Path,
    settings: RunSettings | None = None,
    progress: Progress = NULL_PROGRESS,
) -> list[BaselineResult]:
    """Run ``plan`` (config, exposure, seed, run id) on one window, the pair selected once (what a
    Moira experiment runs beside the agent: :mod:`agent.pairs.experiment.baselines`)."""
    cfg = settings or RunSettings()
    if not plan:
        return []
    prep = _prepare(store, pool, train, test, cfg)
    return _run_plan(store, prep, plan, out_dir, cfg, progress, "baselines")


def _run_plan(
    store: MarketStore,
    prep: _Prepared,
    plan: Sequence[tuple[BaselineConfig, str, int, str | None]],
    out_dir: str | Path,
    cfg: RunSettings,
    progress: Progress,
    label: str,
) -> list[BaselineResult]:
    out: list[BaselineResult] = []
    with progress.task(label, total=len(plan)) as task:
        for config, exposure, seed, run_id in plan:
            out.append(
                _run_prepared(
                    store,
                    prep,
                    config,
                    exposure=exposure,
                    seed=seed,
                    out_dir=out_dir,
                    settings=cfg,
                    run_id=run_id,
                )
            )
            task.advance()
    return out
