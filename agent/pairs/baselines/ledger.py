"""Settling a baseline's actions on its pair and writing the run folder, through the shared
settlement, metrics and records code (so agent and baselines are scored by the same arithmetic:
:class:`agent.pairs.market.execution.Book` under the run's execution settings). The run folder
also gets the tape (``decisions.parquet``, ``prices.parquet``: :mod:`agent.pairs.market.tape`).

Gap rule (documented in :mod:`agent.pairs.baselines.common`): a policy must return FLAT on a
session that is not tradable; the transition from it is settled by
:func:`agent.pairs.market.settlement.settle`, which earns 0 for every action when a leg lacks a close at t
or t+1 and flags it missing (note ``missing price``). Under the ``beta`` exposure a session
without a rolling beta earns 0 for every action (note ``no beta``): there is no hedge to size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.pairs.baselines.common import PairSeries, check_exposure, tradable
from agent.pairs.market.execution import PAPER, Book, ExecutionSettings
from agent.pairs.market.metrics import Metrics, compute_metrics
from agent.pairs.market.records import StepRecord, run_summary, write_json, write_steps
from agent.pairs.market.settlement import (
    ACTIONS,
    FLAT,
    LONG_SHORT,
    SHORT_LONG,
    LegWeights,
    leg_weights,
    no_beta_weights,
)
from agent.pairs.market.tape import (
    DECISIONS_FILE,
    PRICES_FILE,
    Decision,
    PriceTape,
    write_decisions,
    write_prices,
)
from localfin.errors import ConfigError, LocalfinError

__all__ = ["Ledger", "settle_actions", "flat_records", "write_run"]

_NAN = float("nan")


@dataclass(frozen=True)
class Ledger:
    """Settled transitions of one run: records (one per transition) and counters.

    ``pair_actions``: the records hold pair actions (False for Equal-Weight, whose rows are pool
    returns: win rate then counts every transition and the action metrics are empty);
    ``counterfactual``: the per-action returns are those of a held pair (False when no pair was
    selected: action accuracy is then undefined, not 100%)."""

    records: tuple[StepRecord, ...]
    n_missing: int
    n_no_beta: int
    pair_actions: bool = True
    counterfactual: bool = True
    #: the tape: one recorded decision per record, and the prices they settle on
    decisions: tuple[Decision, ...] = ()
    prices: PriceTape | None = None

    @property
    def returns(self) -> np.ndarray:
        return np.array([r.realized for r in self.records], dtype=np.float64)

    def metrics(self) -> Metrics:
        recs = self.records
        return compute_metrics(
            self.returns,
            actions=[r.action for r in recs] if self.pair_actions else None,
            matched=[bool(r.matched) for r in recs] if self.pair_actions and self.counterfactual else None,
            pairs=[r.pair or None for r in recs],
        )


def settle_actions(
    series: PairSeries,
    actions: Sequence[str],
    exposure: str,
    *,
    betas: np.ndarray | None = None,
    execution: ExecutionSettings = PAPER,
    notes: Sequence[str] | None = None,
    no_beta_legs: str = "dollar_neutral",
) -> Ledger:
    """Settle ``actions`` (one per transition: decided at step 001 .. the second-to-last session).

    ``betas`` (from :func:`agent.pairs.baselines.common.pair_betas`) size the legs under ``beta``;
    ``no_beta_legs`` the reading of No-Beta (:func:`agent.pairs.market.settlement.no_beta_weights`);
    ``execution``: fills and costs; ``notes`` (one per transition, e.g. the signal) go into each
    record's note. Raises if a policy holds a position on a session that is not tradable (a
    policy bug).
    """
    check_exposure(exposure)
    n = series.n_sessions - 1
    if len(actions) != n:
        raise ConfigError(f"{len(actions)} actions for {n} transitions; allowed: exactly one per transition")
    if notes is not None and len(notes) != n:
        raise ConfigError(f"{len(notes)} notes for {n} transitions; allowed: exactly one per transition")
    ok = tradable(series, exposure, betas)
    f = series.first
    legs = (series.ticker_a, series.ticker_b)
    book = Book(execution, series.quote)
    recs: list[StepRecord] = []
    decisions: list[Decision] = []
    equity = 1.0
    n_missing = n_no_beta = 0
    for i, action in enumerate(actions):
        if action not in ACTIONS:
            raise ConfigError(f"action {i + 1}={action!r}; allowed: {', '.join(ACTIONS)}")
        t = f + i
        if action != FLAT and not ok[t]:
            raise LocalfinError(f"policy held {action} at step {i + 1} ({series.dates[t]}), not tradable")
        weights: LegWeights | None
        if exposure == "no_beta":
            weights = no_beta_weights(no_beta_legs, series.price_a[t], series.price_b[t])
        else:
            beta = float(betas[t]) if betas is not None else _NAN
            weights = leg_weights("beta", beta) if math.isfinite(beta) else None
        note = notes[i] if notes is not None else ""
        s = book.settle(t, legs, action, weights)
        if weights is None:
            note = "; ".join(x for x in (note, "no beta") if x)
            n_no_beta += 1
        elif s.missing:
            note = "; ".join(x for x in (note, "missing price") if x)
            n_missing += 1
        decisions.append(
            Decision(
                step=i + 1,
                date=str(series.dates[t]),
                settle_date=str(series.dates[t + 1]),
                pair=series.pair,
                action=action,
                w_a=weights.w_a if weights is not None else _NAN,
                w_b=weights.w_b if weights is not None else _NAN,
            )
        )
        equity *= 1.0 + s.realized
        recs.append(
            StepRecord(
                step=i + 1,
                date=str(series.dates[t]),
                pair=series.pair,
                action=action,
                ret_long_short=float(s.returns[LONG_SHORT]),
                ret_short_long=float(s.returns[SHORT_LONG]),
                realized=float(s.realized),
                equity=equity,
                best=s.best,
                matched=bool(s.matched),
                note=note,
            )
        )
    return Ledger(tuple(recs), n_missing, n_no_beta, decisions=tuple(decisions), prices=series.price_tape())


def flat_records(sessions: np.ndarray, note: str) -> Ledger:
    """A run that holds nothing (no pair was selected): FLAT, 0 on every transition."""
    recs = tuple(
        StepRecord(i + 1, str(sessions[i]), "", FLAT, 0.0, 0.0, 0.0, 1.0, FLAT, True, note=note)
        for i in range(len(sessions) - 1)
    )
    decisions = tuple(
        Decision(i + 1, str(sessions[i]), str(sessions[i + 1]), "", FLAT, _NAN, _NAN)
        for i in range(len(sessions) - 1)
    )
    none = np.zeros((len(sessions), 0))
    empty = PriceTape(tuple(str(d) for d in sessions), (), none, none)
    return Ledger(recs, 0, 0, counterfactual=False, decisions=decisions, prices=empty)


def write_run(
    out_dir: str | Path,
    run_id: str,
    *,
    method: str,
    exposure: str,
    seed: int,
    ledger: Ledger,
    metrics: Metrics,
    extra: Mapping[str, Any],
) -> Path:
    """Write ``runs/<run_id>/steps.parquet`` and ``metrics.json`` (kind ``baseline``) under ``out_dir``."""
    if not run_id or any(c in run_id for c in "/\\") or run_id in (".", ".."):
        raise ConfigError(f"run_id={run_id!r}; allowed: a non-empty folder name without slashes")
    run_dir = Path(out_dir) / "runs" / run_id
    write_steps(run_dir / "steps.parquet", ledger.records)
    if ledger.decisions and ledger.prices is not None:
        write_decisions(run_dir / DECISIONS_FILE, ledger.decisions)
        write_prices(run_dir / PRICES_FILE, ledger.prices)
    doc = run_summary(
        run_id=run_id,
        kind="baseline",
        method=method,
        exposure=exposure,
        seed=seed,
        metrics=metrics,
        extra=extra,
    )
    write_json(run_dir / "metrics.json", doc)
    return run_dir
