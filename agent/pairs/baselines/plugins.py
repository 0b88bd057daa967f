"""Pair-trading baselines from installed distributions: the entry-point group ``localfin.baselines``.

A plugin baseline is a :class:`BaselinePlugin`: a name, a one-line description, whether its
result depends on the seed, an optional frozen dataclass of options (read from the experiment's
``[baselines.<name>]`` table, strictly, like the built-in tables) and ``decide``, a function
called once per decision session of the test window with a :class:`PairView` and returning the
position to hold into the next session (``FLAT``, ``LONG_SHORT`` or ``SHORT_LONG``, or a
:class:`Decision` carrying a note for the run's steps).

It runs where the built-in rule baselines run (:func:`agent.pairs.baselines.runner.run_baseline`,
and beside the agent in ``localfin pairs run``): on the same store, pool, screen, windows,
exposures and execution settings, on the pair the screen selects at step 001, and its positions
are settled by the same ledger, so its run folder (``steps.parquet``, ``metrics.json``, kind
``baseline``) and metrics are those of the built-in baselines.

Causal by construction: the :class:`PairView` of session t holds the pair's prices up to and
including t's close and nothing after (read-only arrays), so a plugin cannot see a later price.
A session that is not tradable (a leg without a close, or no rolling beta under the ``beta``
exposure) is held FLAT whatever the plugin decides, as for the built-ins. A baseline that needs
no pair (Equal-Weight) or a model (FinMem) is built in; plugins add pair rules.

A plugin declares, in its ``pyproject.toml``::

    [project.entry-points."localfin.baselines"]
    bollinger = "my_package.baseline:BOLLINGER"

The entry point loads a :class:`BaselinePlugin` (or a callable returning one) whose ``name`` is
the entry point's name. The built-in names are :data:`BUILTIN_BASELINES`; :func:`baseline_names`
lists them with the installed plugins'.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent.pairs.baselines.common import PairSeries
from agent.pairs.market.settlement import FLAT, LONG_SHORT, SHORT_LONG
from localfin.errors import ConfigError
from localfin.plugins import PluginError, PluginRegistry

__all__ = [
    "ACTIONS",
    "BUILTIN_BASELINES",
    "BaselinePlugin",
    "Decision",
    "PairView",
    "PluginBaselineConfig",
    "BASELINES",
    "baseline_names",
    "plugin_baseline",
    "is_seeded",
    "plugin_actions",
]

#: What ``decide`` may return (or put in a :class:`Decision`).
ACTIONS = (FLAT, LONG_SHORT, SHORT_LONG)

#: localfin's own baselines and whether each depends on the seed (in display order).
BUILTIN_BASELINES: dict[str, bool] = {
    "long_short": False,
    "short_long": False,
    "equal_weight": False,
    "eg_z": False,
    "eg_ddqn": True,
    "finmem": True,
}

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@dataclass(frozen=True, eq=False)
class PairView:
    """What a plugin baseline sees when it decides at session t (nothing after t's close).

    Attributes:
        ticker_a, ticker_b: the pair's legs as the screen orients them (LONG_SHORT = long A,
            short B).
        dates: the pool calendar's sessions up to and including t (``datetime64[D]``).
        price_a, price_b: the legs' prices on those sessions (the screen's price field;
            NaN where a leg has none), read-only.
        first: index of step 001 (the test window's first session) in ``dates``.
        train: (first, last) indices of the training window's sessions in ``dates``
            (inclusive; it ends before step 001).
        hedge_ratio, half_life: the screen's at selection (log A = alpha + hedge_ratio log B).
        exposure: ``no_beta`` or ``beta`` (how the runner sizes the legs).
        beta: the rolling hedge ratio at t (NaN when undefined).
        tradable: whether a position may be held from t (when False the runner holds FLAT).
        position: the plugin's own previous decision (FLAT at step 001).
        seed: the run's seed.
        options: the plugin's options (an instance of its ``options`` class, or None).
    """

    ticker_a: str
    ticker_b: str
    dates: np.ndarray
    price_a: np.ndarray
    price_b: np.ndarray
    first: int
    train: tuple[int, int]
    hedge_ratio: float
    half_life: float
    exposure: str
    beta: float
    tradable: bool
    position: str
    seed: int
    options: Any = None

    @property
    def t(self) -> int:
        """Index of the deciding session in ``dates`` (the last one)."""
        return len(self.dates) - 1

    @property
    def step(self) -> int:
        """0 at step 001, 1 at step 002, ..."""
        return self.t - self.first

    @property
    def session(self) -> dt.date:
        """The deciding session."""
        return self.dates[-1].item()

    def spread(self) -> np.ndarray:
        """log A - hedge_ratio log B on every session up to t (NaN where a leg has no price)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(self.price_a) - self.hedge_ratio * np.log(self.price_b)


@dataclass(frozen=True)
class Decision:
    """A position with a note (the run's ``steps.parquet`` keeps the note of every step)."""

    action: str
    note: str = ""


@dataclass(frozen=True)
class BaselinePlugin:
    """What a ``localfin.baselines`` entry point provides.

    Attributes:
        name: the method name configs use (``[baselines] methods``): lowercase letters, digits
            and ``_``, at most 40 characters; the entry point's name.
        decide: ``(view: PairView) -> str | Decision``, called once per decision session, in
            order; it must be deterministic given the view (and the seed in it).
        description: one line for listings.
        seeded: True when the result depends on the seed (run for every seed; otherwise once per
            exposure with the experiment's first seed, as the deterministic built-ins).
        options: a frozen dataclass with a default for every field, read from
            ``[baselines.<name>]``; None: the baseline takes no options.
    """

    name: str
    decide: Callable[[PairView], str | Decision]
    description: str = ""
    seeded: bool = False
    options: type | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"name={self.name!r}; allowed: lowercase letters, digits and _ (a letter first)")
        if not callable(self.decide):
            raise ValueError(f"decide={self.decide!r}; allowed: a callable (view: PairView) -> action")
        if self.options is not None:
            if not (isinstance(self.options, type) and dataclasses.is_dataclass(self.options)):
                raise ValueError(f"options={self.options!r}; allowed: a frozen dataclass type or None")
            try:
                self.options()
            except TypeError as exc:
                name = self.options.__name__
                raise ValueError(f"options {name} needs a default for every field: {exc}") from None

    def default_options(self) -> Any:
        return self.options() if self.options is not None else None


@dataclass(frozen=True)
class PluginBaselineConfig:
    """The runner's config of a plugin baseline: its method name and option values."""

    method: str
    options: Any = None


def _check(name: str, value: Any) -> BaselinePlugin | None:
    if not isinstance(value, BaselinePlugin) and callable(value):
        value = value()
    if not isinstance(value, BaselinePlugin):
        raise TypeError(
            f"loads {type(value).__name__}; allowed: a BaselinePlugin (agent.pairs.baselines.plugins)"
        )
    if value.name != name:
        raise ValueError(f"its name is {value.name!r}; allowed: the entry point's name {name!r}")
    return value


#: Every baseline: localfin's own (entry None: run by :mod:`agent.pairs.baselines.runner` and
#: :mod:`agent.pairs.experiment.baselines`) and the installed plugins'.
BASELINES: PluginRegistry[BaselinePlugin | None] = PluginRegistry(
    "baseline", "localfin.baselines", dict.fromkeys(BUILTIN_BASELINES), _check
)


def baseline_names() -> list[str]:
    """Every baseline name: the built-ins in display order, then the plugins' (by name)."""
    return BASELINES.names()


def plugin_baseline(name: str) -> BaselinePlugin | None:
    """The plugin of baseline ``name`` (None for a built-in); unknown: a ConfigError naming the
    known ones."""
    return BASELINES.get(name)


def is_seeded(name: str) -> bool:
    """Whether baseline ``name`` runs for every seed."""
    if name in BUILTIN_BASELINES:
        return BUILTIN_BASELINES[name]
    plugin = plugin_baseline(name)
    return bool(plugin is not None and plugin.seeded)


def _frozen(values: np.ndarray, stop: int) -> np.ndarray:
    view = values[:stop]
    view.flags.writeable = False
    return view


def plugin_actions(
    series: PairSeries,
    ok: np.ndarray,
    config: PluginBaselineConfig,
    *,
    exposure: str,
    betas: np.ndarray | None,
    seed: int,
    train: tuple[int, int],
) -> tuple[list[str], list[str]]:
    """The plugin's action at every decision session of the test window (FLAT where not
    tradable) and a note per step. A plugin that raises, or returns something other than an
    action, is a :class:`~localfin.plugins.PluginError` naming it and the session."""
    plugin = plugin_baseline(config.method)
    if plugin is None:
        raise ConfigError(f"baseline {config.method!r} is built in, not a plugin's")
    where = BASELINES.origin(config.method)
    position = FLAT
    actions: list[str] = []
    notes: list[str] = []
    for i in range(series.n_sessions - 1):
        t = series.first + i
        beta = float(betas[t]) if betas is not None else float("nan")
        view = PairView(
            series.ticker_a,
            series.ticker_b,
            _frozen(series.dates, t + 1),
            _frozen(series.price_a, t + 1),
            _frozen(series.price_b, t + 1),
            series.first,
            train,
            series.hedge_ratio,
            series.half_life,
            exposure,
            beta,
            bool(ok[t]),
            position,
            seed,
            config.options,
        )
        day = series.dates[t].item()
        try:
            out = plugin.decide(view)
        except Exception as exc:  # third-party code: one error naming the plugin and the step
            raise PluginError(
                f"baseline {config.method!r} ({where}) failed at {day} (step {i + 1:03d}): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        decision = out if isinstance(out, Decision) else Decision(out)
        if decision.action not in ACTIONS:
            raise PluginError(
                f"baseline {config.method!r} ({where}) returned {decision.action!r} at {day}; "
                f"allowed: {', '.join(ACTIONS)}"
            )
        position = decision.action
        actions.append(position if ok[t] else FLAT)
        notes.append(str(decision.note))
    return actions, notes
