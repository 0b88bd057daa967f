"""``localfin export RUN_OR_EXPERIMENT --format csv|parquet --out DIR``: the tables of any run
folder (:mod:`agent.pairs.market.tables`), older ones included, written under ``DIR`` in the
folder layout of the input (the input is never changed).

A folder written before runs recorded their tape (``decisions.parquet`` + ``prices.parquet``)
gets one rebuilt from what it did record and from the market store it ran on:

* the decisions from ``steps.parquet`` (step, session, pair, action); the session each settles
  at is the next session of the pool calendar;
* the leg weights: Moira's from its ``trace.parquet`` (every direction decision records
  ``w_a``/``w_b``); a baseline's ``no_beta`` legs are 0.5 / 0.5 (one share each at the decision's
  closes where its ``settings.no_beta_legs`` is ``equal_shares``), its ``beta`` legs come from the
  rolling beta of the pair's prices (:func:`agent.pairs.baselines.common.pair_betas`, the run's
  ``beta_window``), exactly as the runner sized them; Equal-Weight's basket is the ``held``
  list of its ``metrics.json``;
* the prices from the store: the experiment manifest's ``config.store``, or ``store`` given
  here (a rolling study has no manifest), at the run's ``price_field``.

A rebuilt tape is accepted only if it reproduces the run's ``steps.parquet`` under the run's own
settings (close, its cost) to 1e-12; a store that changed since is an error naming the run.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from agent.data.store import MarketStore
from agent.pairs.market.folders import TablesResult, experiment_of, write_tables
from agent.pairs.market.records import StepRecord, read_json
from agent.pairs.market.settlement import no_beta_weights
from agent.pairs.market.tape import HOLD, Decision, PriceTape, open_on_field
from agent.pairs.screen.causal import ScreenConfig
from localfin.errors import InputError

__all__ = ["export", "rebuild_tape"]


def _manifest_config(run_dir: Path) -> dict[str, Any]:
    p = experiment_of(run_dir) / "manifest.json"
    if not p.is_file():
        return {}
    cfg = read_json(p).get("config")
    return cfg if isinstance(cfg, dict) else {}


def _moira_weights(run_dir: Path) -> dict[int, tuple[float, float]]:
    import pandas as pd

    p = run_dir / "trace.parquet"
    if not p.is_file():
        raise InputError(f"{run_dir}: a Moira run without trace.parquet has no record of its leg weights")
    t = pd.read_parquet(p, columns=["phase", "step", "kind", "decision"])
    t = t[(t["phase"] == "test") & (t["kind"] == "direction")]
    out = {}
    for step, text in zip(t["step"], t["decision"]):
        d = json.loads(text) if text else {}
        if "w_a" in d and "w_b" in d:
            out[int(step)] = (float(d["w_a"]), float(d["w_b"]))
    return out


def _baseline_betas(
    store: MarketStore, pool: tuple[str, ...], pair: str, first: str, end: str, field: str, window: int
) -> dict[str, float]:
    from agent.pairs.baselines.common import load_legs, pair_betas

    a, b = pair.split("/")
    s = load_legs(store, pool, (a, b), dt.date.fromisoformat(first), dt.date.fromisoformat(end), field)
    betas = pair_betas(s, window)
    return {str(d): float(x) for d, x in zip(s.dates, betas)}


def rebuild_tape(
    run_dir: Path, doc: Mapping[str, Any], steps: Sequence[StepRecord], *, store_path: Path | None = None
) -> tuple[list[Decision], PriceTape]:
    """The tape of a run folder written without one (module doc)."""
    extra = doc.get("extra") if isinstance(doc.get("extra"), Mapping) else {}
    cfg = _manifest_config(run_dir)
    path = store_path or (Path(cfg["store"]) if cfg.get("store") else None)
    if path is None or not path.is_file():
        raise InputError(
            f"{run_dir} has no tape and no market store to rebuild it from "
            f"({'store ' + str(path) + ' not found' if path else 'no manifest names one'}); pass --store"
        )
    settings = extra.get("settings") if isinstance(extra.get("settings"), Mapping) else {}
    field = str(
        settings.get("price_field")
        or (cfg.get("screen") or {}).get("price_field")
        or ScreenConfig().price_field
    )
    pool = tuple(extra.get("pool") or cfg.get("pool") or ())
    if not steps:
        raise InputError(f"{run_dir}: steps.parquet has no transition")
    with MarketStore(path, create=False) as store:
        pool = pool or store.tickers()
        cal = [str(d) for d in store.calendar(start=str(steps[0].date), tickers=list(pool))]
        pos = {d: i for i, d in enumerate(cal)}
        dates = [str(s.date) for s in steps]
        if any(d not in pos for d in dates) or pos[dates[-1]] + 1 >= len(cal):
            raise InputError(f"{run_dir}: its sessions are not the store {path}'s pool calendar")
        settle = [cal[pos[d] + 1] for d in dates]
        nan = math.nan
        method, exposure = str(doc.get("method") or ""), str(doc.get("exposure") or "")
        weights: dict[int, tuple[float, float]] = {}
        betas: dict[str, float] = {}
        if doc.get("kind") == "moira":
            weights = _moira_weights(run_dir)
        elif exposure == "beta" and extra.get("pair"):
            window = int(settings.get("beta_window", 20))
            betas = _baseline_betas(store, pool, str(extra["pair"]), dates[0], settle[-1], field, window)
        basket = (
            ",".join((extra.get("equal_weight") or {}).get("held") or []) if method == "equal_weight" else ""
        )
        decisions = []
        for s, day, nxt in zip(steps, dates, settle):
            pair = str(s.pair or "")
            if s.action == HOLD or not pair:
                w = (nan, nan)
            elif doc.get("kind") == "moira":
                w = weights.get(int(s.step), (0.5, 0.5))
            elif exposure == "beta":
                beta = betas.get(day, nan)
                w = (1 / (1 + abs(beta)), beta / (1 + abs(beta))) if math.isfinite(beta) else (nan, nan)
            else:
                w = (0.5, 0.5)
            decisions.append(Decision(int(s.step), day, nxt, pair, str(s.action), w[0], w[1], basket=basket))
        tickers = sorted({t for d in decisions for t in d.tickers()})
        sessions = [*dates, settle[-1]]
        if tickers:
            h = store.prices(tickers, start=sessions[0], end=sessions[-1], field=field)
            o = open_on_field(store, tickers, start=sessions[0], end=sessions[-1], field=field)
            idx = np.searchsorted(h.dates, np.array(sessions, dtype="datetime64[D]"))
            closes, opens = h.values[idx], o.values[idx]
        else:
            closes = opens = np.zeros((len(sessions), 0))
    if (
        doc.get("kind") != "moira"
        and exposure == "no_beta"
        and settings.get("no_beta_legs") == "equal_shares"
    ):
        # one share of each leg at the decision's closes, as the runner sized them
        col = {t: k for k, t in enumerate(tickers)}
        for i, d in enumerate(decisions):
            if d.pair and d.action != HOLD:
                a, b = d.pair.split("/")
                w = no_beta_weights("equal_shares", float(closes[i, col[a]]), float(closes[i, col[b]]))
                decisions[i] = replace(d, w_a=w.w_a, w_b=w.w_b)
    return decisions, PriceTape(tuple(sessions), tuple(tickers), closes, opens)


def export(
    path: str | Path, out: str | Path, *, fmt: str = "csv", store: str | Path | None = None
) -> TablesResult:
    """Write the tables of every run under ``path`` into ``out`` (module doc). Raises when no
    run could be written."""
    src, dst = Path(path).resolve(), Path(out).resolve()
    if dst == src or src in dst.parents:
        raise InputError(f"--out {out} lies inside {path}; allowed: a folder outside the input")
    store_path = Path(store) if store is not None else None
    res = write_tables(
        src,
        out=dst,
        fmt=fmt,
        rebuild=lambda d, doc, steps: rebuild_tape(d, doc, steps, store_path=store_path),
    )
    if not res.rows:
        why = "; ".join(f"{r}: {w}" for r, w in res.skipped[:3]) or "no run folder found"
        raise InputError(f"nothing exported from {path}: {why}")
    return res
