"""The tables a pandas user opens directly, computed from a run folder.

Per run folder (written at the end of every experiment and rolling study, and by
``localfin export`` for any folder, older ones included):

* ``equity_curve.csv``: one row per settled test transition: ``step`` and ``decision_date``
  (decided at that session's close), ``session`` (settled at that close), ``pair``,
  ``position`` (the action held), ``w_a`` / ``w_b`` (signed capital in the legs after the fill),
  ``daily_return`` (after costs), ``equity`` (from 1 before the first settlement), ``drawdown``
  (<= 0, against the running peak with the start as a peak), ``cost`` (fees + slippage + borrow);
* ``trades.csv``: one row per trade, a run of transitions holding one pair in one direction
  (:func:`trades`);
* ``llm_usage.csv``: per call type of the run's model calls (training and test): calls, prompt,
  completion and cached tokens, engine seconds, from the journal records of the calls the run
  made (:func:`usage_rows`).

Per experiment and matrix folder: ``runs.csv``, one row per run with its identity, execution
settings, metrics, its metrics re-settled with frictions (:data:`~agent.pairs.market.execution.FRICTIONS`)
and its token totals (:func:`run_row`).

Everything here is computed from the run's tape (:mod:`agent.pairs.market.tape`) through
:func:`agent.pairs.market.execution.resettle`; under the run's own execution settings that gives
the returns of its ``steps.parquet`` (:func:`check_tape` raises where it does not).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from agent.pairs.market.execution import FRICTIONS, ExecutionSettings, Fill, resettle
from agent.pairs.market.metrics import Metrics, compute_metrics, drawdown_curve
from agent.pairs.market.records import StepRecord, read_json
from agent.pairs.market.settlement import ACTIONS, FLAT
from agent.pairs.market.tape import HOLD, Decision, PriceTape
from localfin.errors import InputError
from localfin.files import atomic_target, read_parquet

__all__ = [
    "EQUITY_FILE",
    "TRADES_FILE",
    "USAGE_FILE",
    "RUNS_FILE",
    "FORMATS",
    "EQUITY_COLUMNS",
    "TRADE_COLUMNS",
    "USAGE_COLUMNS",
    "Trade",
    "run_execution",
    "check_tape",
    "fill_metrics",
    "equity_rows",
    "trades",
    "usage_rows",
    "run_row",
    "write_table",
]

EQUITY_FILE, TRADES_FILE, USAGE_FILE, RUNS_FILE = "equity_curve", "trades", "llm_usage", "runs"
FORMATS = ("csv", "parquet")
EQUITY_COLUMNS = (
    "step",
    "decision_date",
    "session",
    "pair",
    "position",
    "w_a",
    "w_b",
    "daily_return",
    "equity",
    "drawdown",
    "cost",
)
USAGE_COLUMNS = (
    "call_type",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "engine_s",
    "source",
)
#: how far the tape's re-settlement may differ from steps.parquet (float reassociation only)
_TOL = 1e-12


def run_execution(doc: Mapping[str, Any]) -> ExecutionSettings:
    """The execution settings a run was settled with, from its ``metrics.json`` document: its
    ``extra.execution``, or for a folder written before those existed the papers' close with
    the cost it recorded (``extra.settings.cost_bps``, else 0)."""
    extra = doc.get("extra") if isinstance(doc.get("extra"), Mapping) else {}
    if isinstance(extra.get("execution"), Mapping):
        return ExecutionSettings.from_dict(extra["execution"])
    settings = extra.get("settings") if isinstance(extra.get("settings"), Mapping) else {}
    return ExecutionSettings(cost_bps=float(settings.get("cost_bps", 0.0) or 0.0))


def check_tape(
    run_dir: str | Path,
    steps: Sequence[StepRecord],
    decisions: Sequence[Decision],
    prices: PriceTape,
    settings: ExecutionSettings,
) -> list[Fill]:
    """Re-settle the tape under the run's own settings and check it gives ``steps``' returns
    (to 1e-12); returns the fills. Raises InputError naming the first step that differs."""
    if len(decisions) != len(steps):
        raise InputError(
            f"{run_dir}: {len(decisions)} decisions for {len(steps)} steps; allowed: one per step"
        )
    fills = resettle(decisions, prices, settings)
    for s, d, f in zip(steps, decisions, fills):
        if s.step != d.step or str(s.date) != d.date or abs(float(s.realized) - f.realized) > _TOL:
            raise InputError(
                f"{run_dir}: the tape does not reproduce steps.parquet at step {s.step} ({s.date}): "
                f"recorded {float(s.realized)!r}, re-settled {f.realized!r} under {settings.label()}"
            )
    return fills


def fill_metrics(
    decisions: Sequence[Decision], fills: Sequence[Fill], *, counterfactual: bool = True
) -> Metrics:
    """Every metric of re-settled ``fills`` (the report's rules: a HOLD run has no action
    metrics; ``counterfactual`` False, e.g. no pair selected: action accuracy undefined)."""
    realized = [f.realized for f in fills]
    pair_actions = all(d.action in ACTIONS for d in decisions)
    return compute_metrics(
        realized,
        actions=[d.action for d in decisions] if pair_actions else None,
        matched=[f.matched for f in fills] if pair_actions and counterfactual else None,
        pairs=[d.pair or None for d in decisions],
    )


def equity_rows(decisions: Sequence[Decision], fills: Sequence[Fill]) -> list[dict[str, Any]]:
    """The ``equity_curve`` rows (module doc)."""
    realized = np.array([f.realized for f in fills], dtype=np.float64)
    equity = np.cumprod(1.0 + realized) if len(realized) else realized
    dd = drawdown_curve(realized) if len(realized) else realized
    hold = [d.action == HOLD for d in decisions]
    return [
        {
            "step": d.step,
            "decision_date": d.date,
            "session": d.settle_date,
            "pair": d.pair or (d.basket if h else ""),
            "position": d.action,
            "w_a": math.nan if h else f.position[0],
            "w_b": math.nan if h else f.position[1],
            "daily_return": f.realized,
            "equity": float(equity[i]),
            "drawdown": float(dd[i]),
            "cost": f.cost,
        }
        for i, (d, f, h) in enumerate(zip(decisions, fills, hold))
    ]


@dataclass(frozen=True)
class Trade:
    """One trade: the transitions holding one pair in one direction, and the transition that
    exits it to FLAT (its closing cost and, under next_open, the overnight move before the exit
    fill belong to the trade it closes). A flip or a switch to another pair starts the next
    trade at once, and its closing cost lands in the new trade's first transition. ``return``
    compounds the transitions' returns after costs, ``gross_return`` before; so the trades'
    returns compound to the run's cumulative return (the transitions outside every trade earn
    exactly 0). Entry and exit prices are the legs' fill prices (the close of the decision
    session, or the next open); a trade still held at the window's end is marked at the last
    close (``open_at_end``). Equal-Weight's basket is one ``HOLD`` trade without leg prices."""

    trade: int
    pair: str
    direction: str
    entry_step: int
    entry_date: str
    entry_fill: str
    exit_step: int
    exit_date: str
    exit_fill: str
    transitions: int
    open_at_end: bool
    w_a: float
    w_b: float
    entry_price_a: float
    entry_price_b: float
    exit_price_a: float
    exit_price_b: float
    gross_return: float
    fees: float
    slippage: float
    borrow: float
    cost: float
    net_return: float


TRADE_COLUMNS = tuple(f for f in Trade.__dataclass_fields__)


def _fill_price(prices: PriceTape, ticker: str, d: Decision, next_open: bool) -> tuple[str, float]:
    if next_open:
        return d.settle_date, prices.open(ticker, d.settle_date)
    return d.date, prices.close(ticker, d.date)


def _trade(
    k: int,
    rows: list[int],
    exit_at: int | None,
    decisions: Sequence[Decision],
    fills: Sequence[Fill],
    prices: PriceTape,
    settings: ExecutionSettings,
) -> Trade:
    first, last = decisions[rows[0]], decisions[rows[-1]]
    nan = math.nan
    fs = [fills[i] for i in rows]
    net = math.prod(1.0 + f.realized for f in fs) - 1.0
    gross = math.prod(1.0 + f.realized + f.cost for f in fs) - 1.0
    fill_name = "open" if settings.next_open else "close"
    legs = first.legs()
    if first.action == HOLD or legs is None:
        entry_date = first.settle_date if settings.next_open else first.date
        pa = pb = qa = qb = nan
        exit_date, exit_fill, exit_step = last.settle_date, "close", last.step + 1
    else:
        entry_date, pa = _fill_price(prices, legs[0], first, settings.next_open)
        _, pb = _fill_price(prices, legs[1], first, settings.next_open)
        if exit_at is None:
            exit_date, exit_fill, exit_step = last.settle_date, "close", last.step + 1
            qa, qb = prices.close(legs[0], exit_date), prices.close(legs[1], exit_date)
        else:
            d = decisions[exit_at]
            exit_date, qa = _fill_price(prices, legs[0], d, settings.next_open)
            _, qb = _fill_price(prices, legs[1], d, settings.next_open)
            exit_fill, exit_step = fill_name, d.step
    w = fills[rows[0]].position
    return Trade(
        trade=k,
        pair=first.pair or first.basket,
        direction=first.action,
        entry_step=first.step,
        entry_date=entry_date,
        entry_fill=fill_name,
        exit_step=exit_step,
        exit_date=exit_date,
        exit_fill=exit_fill,
        transitions=len(rows),
        open_at_end=exit_at is None,
        w_a=nan if first.action == HOLD else w[0],
        w_b=nan if first.action == HOLD else w[1],
        entry_price_a=pa,
        entry_price_b=pb,
        exit_price_a=qa,
        exit_price_b=qb,
        gross_return=gross,
        fees=math.fsum(f.fees for f in fs),
        slippage=math.fsum(f.slippage for f in fs),
        borrow=math.fsum(f.borrow for f in fs),
        cost=math.fsum(f.cost for f in fs),
        net_return=net,
    )


def trades(
    decisions: Sequence[Decision], fills: Sequence[Fill], prices: PriceTape, settings: ExecutionSettings
) -> list[Trade]:
    """The run's trades (:class:`Trade` says how transitions are grouped)."""
    if not decisions:
        return []
    if all(d.action == HOLD for d in decisions):
        return [_trade(1, list(range(len(decisions))), None, decisions, fills, prices, settings)]
    out: list[Trade] = []
    rows: list[int] = []
    key: tuple[str, str] | None = None
    for i, (d, f) in enumerate(zip(decisions, fills)):
        held = (d.pair, d.action) if f.position != (0.0, 0.0) and d.action != FLAT else None
        if key is not None and held == key:
            rows.append(i)
            continue
        if key is not None:
            if held is None:  # the exit to FLAT belongs to the trade it closes
                rows.append(i)
            out.append(_trade(len(out) + 1, rows, i, decisions, fills, prices, settings))
        key, rows = held, ([i] if held is not None else [])
    if key is not None:
        out.append(_trade(len(out) + 1, rows, None, decisions, fills, prices, settings))
    return out


def _journal_of(run_dir: Path) -> Path:
    return (
        run_dir.parent.parent / "journal.sqlite"
        if run_dir.parent.name == "runs"
        else run_dir / "journal.sqlite"
    )


def _call_keys(run_dir: Path) -> list[tuple[str, str]] | None:
    """(call type, request key) of every model call the run made, from its trace (Moira) or
    memory trace (FinMem); None when the folder records none (a rule baseline, an old folder)."""
    trace = run_dir / "trace.parquet"
    if trace.is_file():
        t = read_parquet(trace, columns=["call_type", "request_key"])
        t = t[t["request_key"].astype(str) != ""]
        return list(zip(t["call_type"].astype(str), t["request_key"].astype(str)))
    mem = run_dir / "memory_trace.json"
    if mem.is_file():
        calls = read_json(mem).get("calls")
        if isinstance(calls, list):
            return [(str(c["call_type"]), str(c["request_key"])) for c in calls if isinstance(c, Mapping)]
    return None


def usage_rows(run_dir: str | Path, doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``llm_usage`` rows of a run, one per call type plus ``total`` (none for a run that
    called no model).

    Source ``journal``: the run's calls (every row of its trace with a request key, training
    and test; a request shared with another run, such as the identical training calls of the
    two exposures, counts in both) looked up in the experiment's ``journal.sqlite``; engine
    seconds are each call's share of the engine call that answered it
    (:meth:`serving.journal.Journal.call_usage`). Source ``metrics.json``: a folder without
    call keys or journal (written before they were recorded) gives its ``tokens_by_call_type``,
    engine seconds unknown (NaN)."""
    d = Path(run_dir)
    keys = _call_keys(d)
    journal = _journal_of(d)
    rows: dict[str, dict[str, Any]] = {}
    if keys is not None and journal.is_file() and keys:
        from serving.journal import Journal

        with Journal(journal) as j:
            found = j.call_usage(k for _, k in keys)
        for ct, k in keys:
            u = found.get(k)
            if u is None:
                raise InputError(f"{d}: call {k[:12]}... ({ct}) is not in {journal}")
            r = rows.setdefault(
                ct, dict.fromkeys(USAGE_COLUMNS[1:6], 0) | {"call_type": ct, "source": "journal"}
            )
            r["calls"] += 1
            r["prompt_tokens"] += u.prompt_tokens
            r["completion_tokens"] += u.completion_tokens
            r["cached_tokens"] += u.cached_tokens
            r["engine_s"] += u.engine_s
    else:
        extra = doc.get("extra") if isinstance(doc.get("extra"), Mapping) else {}
        by_type = extra.get("tokens_by_call_type")
        for ct, v in (by_type or {}).items():
            if not isinstance(v, Mapping):
                continue
            rows[str(ct)] = {
                "call_type": str(ct),
                "calls": int(v.get("calls", 0)),
                "prompt_tokens": int(v.get("prompt_tokens", 0)),
                "completion_tokens": int(v.get("completion_tokens", 0)),
                "cached_tokens": int(v["cached_tokens"]) if "cached_tokens" in v else math.nan,
                "engine_s": math.nan,
                "source": "metrics.json",
            }
    out = [rows[k] for k in sorted(rows)]
    if out:
        total = {"call_type": "total", "source": out[0]["source"]}
        for c in USAGE_COLUMNS[1:6]:
            vals = [r[c] for r in out]
            total[c] = (
                math.fsum(vals) if c == "engine_s" or any(isinstance(v, float) for v in vals) else sum(vals)
            )
        out.append(total)
    return out


#: the scalar metrics of a run (the fields of Metrics that are numbers, not tables of counts)
_METRICS = tuple(f.name for f in fields(Metrics) if "dict" not in str(f.type))


def run_row(
    run_dir: str | Path,
    doc: Mapping[str, Any],
    decisions: Sequence[Decision],
    prices: PriceTape,
    fills: Sequence[Fill],
    *,
    group: str = ".",
    backbone: str = "",
    frictions: ExecutionSettings = FRICTIONS,
) -> dict[str, Any]:
    """One ``runs`` row: identity, the run's execution settings, its metrics (from
    ``metrics.json``), the same decisions re-settled under ``frictions`` (``frictions_*``),
    the costs it paid, and its model calls and tokens."""
    extra = doc.get("extra") if isinstance(doc.get("extra"), Mapping) else {}
    metrics = doc.get("metrics") if isinstance(doc.get("metrics"), Mapping) else {}
    ex = run_execution(doc)
    counterfactual = not bool(extra.get("no_candidate", False))
    fr_fills = resettle(decisions, prices, frictions)
    fr = fill_metrics(decisions, fr_fills, counterfactual=counterfactual)
    counts = metrics.get("action_counts") if isinstance(metrics.get("action_counts"), Mapping) else {}
    tokens = extra.get("tokens_by_call_type") if isinstance(extra.get("tokens_by_call_type"), Mapping) else {}
    row: dict[str, Any] = {
        "group": group,
        "run_id": str(doc.get("run_id") or Path(run_dir).name),
        "kind": str(doc.get("kind") or ""),
        "method": str(doc.get("method") or ""),
        "variant": str(extra.get("variant") or ""),
        "exposure": str(doc.get("exposure") or ""),
        "seed": doc.get("seed"),
        "backbone": backbone,
        "pair": str(extra.get("pair") or extra.get("initial_pair") or ""),
        "first_decision": decisions[0].date if decisions else "",
        "last_session": decisions[-1].settle_date if decisions else "",
        **{f"run_{k}": v for k, v in ex.to_dict().items()},
    }
    for k in _METRICS:
        v = metrics.get(k)
        row[k] = math.nan if v is None else v
    for a in ACTIONS:
        row[f"n_{a.lower()}"] = int(counts.get(a, 0))
    row["costs_paid"] = math.fsum(f.cost for f in fills)
    row["frictions"] = frictions.label()
    for k in _METRICS:
        row[f"frictions_{k}"] = getattr(fr, k)
    row["frictions_costs_paid"] = math.fsum(f.cost for f in fr_fills)
    row["model_calls"] = sum(int(v.get("calls", 0)) for v in tokens.values() if isinstance(v, Mapping))
    row["prompt_tokens"] = sum(
        int(v.get("prompt_tokens", 0)) for v in tokens.values() if isinstance(v, Mapping)
    )
    row["completion_tokens"] = sum(
        int(v.get("completion_tokens", 0)) for v in tokens.values() if isinstance(v, Mapping)
    )
    return row


def write_table(
    rows: Sequence[Mapping[str, Any]] | Sequence[Any], columns: Sequence[str], path: Path, fmt: str
) -> Path:
    """Write ``rows`` (dicts or dataclasses) as ``path`` + ``.csv`` or ``.parquet`` (atomically);
    NaN is an empty CSV field."""
    import pandas as pd

    if fmt not in FORMATS:
        raise InputError(f"format={fmt!r}; allowed: {', '.join(FORMATS)}")
    recs = [asdict(r) if not isinstance(r, Mapping) else dict(r) for r in rows]
    frame = pd.DataFrame(recs, columns=list(columns))
    out = path.with_name(path.name + f".{fmt}")
    with atomic_target(out) as tmp:
        if fmt == "csv":
            frame.to_csv(tmp, index=False, float_format="%.17g")
        else:
            frame.to_parquet(tmp, index=False)
    return out
