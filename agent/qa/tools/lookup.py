"""Grounded data retrieval: ``lookup(symbol, date or range, indicator)`` over the market store.

Indicators (prices are the store's ``close`` unless the indicator names another field):

============= ================================================================================
close, open,  the value on ``date`` (the last session on or before it, said so when earlier);
high, low,    with ``start``/``end`` instead: the sessions of the range (up to 40 listed, else
volume        first, last, min, max and mean)
return        simple return over the period, close(last) / close(first) - 1, in percent
volatility    sample std (ddof 1) of daily log returns over the period, daily and annualised
              (x sqrt(252)), in percent
beta          OLS slope of the symbol's daily log returns on ``other``'s over the period
              (``kernels.ols_hedge``); with ``window`` and ``date`` this is the rolling beta
              of that window ending on that date
hedge_ratio   OLS of log(symbol) on log(other) over the period: beta and alpha
half_life     mean-reversion half-life in sessions of the spread log(symbol) - beta log(other),
              beta from that OLS (``kernels.half_life``)
zscore        z of the last spread value against the period's spread (``kernels.spread_zscore``)
============= ================================================================================

The period is ``[start, end]`` (``end`` defaults to the last session), or the last ``window``
sessions ending on ``date`` (or ``end``); sessions where any needed symbol lacks a price are
dropped (halts, later listings), never filled. Every bad argument, unknown symbol or empty
period is an ``ok=False`` :class:`~agent.qa.tools.base.ToolResult` whose text names the
argument and what is allowed; the numbers a result shows are in its ``numbers``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from agent.data.errors import DataError
from agent.data.store import MarketStore
from agent.qa.tools.base import ToolResult

__all__ = ["LookupTool", "INDICATORS", "PRICE_INDICATORS", "PAIR_INDICATORS"]

PRICE_INDICATORS = ("close", "open", "high", "low", "volume")
PAIR_INDICATORS = ("beta", "hedge_ratio", "half_life", "zscore")
INDICATORS = (*PRICE_INDICATORS, "return", "volatility", *PAIR_INDICATORS)
_SYMBOL = r"^[A-Za-z0-9][A-Za-z0-9.\-]{0,11}$"
_DATE = r"^\d{4}-\d{2}-\d{2}$"
#: most sessions listed one by one (a longer period is summarised)
MAX_LISTED = 40
#: longest ``window`` a call may ask for (sessions)
MAX_WINDOW = 5040


class _BadArgs(ValueError):
    pass


def _date(args: Mapping[str, Any], key: str) -> dt.date | None:
    raw = args.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str) or not re.match(_DATE, raw):
        raise _BadArgs(f"{key}={raw!r}; allowed: a date YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise _BadArgs(f"{key}={raw!r} is not a calendar date") from None


def _r(x: float, nd: int) -> float:
    return float(round(x, nd))


class LookupTool:
    """Market-data lookups for the ReAct loop (Tool protocol).

    Args:
        store: an open :class:`~agent.data.store.MarketStore` (owned by the caller).
    """

    name = "lookup"
    description = (
        "Market data from the local store: symbol, indicator (close, open, high, low, volume, return, "
        "volatility, beta, hedge_ratio, half_life, zscore), date or start/end or window, other symbol "
        "for beta/hedge_ratio/half_life/zscore."
    )
    args_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "symbol": {"type": "string", "pattern": _SYMBOL, "maxLength": 12},
            "indicator": {"type": "string", "enum": list(INDICATORS)},
            "date": {"type": "string", "pattern": _DATE, "maxLength": 10},
            "start": {"type": "string", "pattern": _DATE, "maxLength": 10},
            "end": {"type": "string", "pattern": _DATE, "maxLength": 10},
            "window": {"type": "integer", "minimum": 3, "maximum": MAX_WINDOW},
            "other": {"type": "string", "pattern": _SYMBOL, "maxLength": 12},
        },
        "required": ["symbol", "indicator"],
        "additionalProperties": False,
    }

    def __init__(
        self, store: MarketStore, *, max_listed: int = MAX_LISTED, max_window: int = MAX_WINDOW
    ) -> None:
        self.store = store
        self.max_listed, self.max_window = max_listed, max_window
        if max_window != MAX_WINDOW:
            window = {"type": "integer", "minimum": 3, "maximum": max_window}
            props = {**self.args_schema["properties"], "window": window}
            self.args_schema = {**self.args_schema, "properties": props}

    def close(self) -> None:
        """Nothing to release (the store belongs to the caller)."""

    # -- argument handling ---------------------------------------------------------------
    def _symbol(self, args: Mapping[str, Any], key: str) -> str:
        raw = args.get(key)
        if not isinstance(raw, str) or not re.match(_SYMBOL, raw):
            raise _BadArgs(f"{key}={raw!r}; allowed: a ticker symbol such as {self._known_hint()}")
        sym = raw.upper()
        if sym not in self.store.tickers():
            raise _BadArgs(f"{key}={raw!r} is not in the market store; known: {self._known_hint()}")
        return sym

    def _known_hint(self) -> str:
        known = self.store.tickers()
        return ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")

    def _period(
        self, args: Mapping[str, Any], symbols: list[str], *, min_sessions: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Dates and (T, k) closes of the period, sessions with a missing price dropped."""
        start, end, day = _date(args, "start"), _date(args, "end"), _date(args, "date")
        window = args.get("window")
        if window is not None and (isinstance(window, bool) or not isinstance(window, int)):
            raise _BadArgs(f"window={window!r}; allowed: a whole number 3..{self.max_window}")
        if window is not None and not 3 <= window <= self.max_window:
            raise _BadArgs(f"window={window}; allowed: 3..{self.max_window}")
        if start is not None and window is not None:
            raise _BadArgs("give either start (and end) or window, not both")
        if start is None and window is None:
            raise _BadArgs(
                "give a period: start (and optionally end), or window (sessions ending on date/end)"
            )
        last = end or day
        if start is not None and last is not None and start > last:
            raise _BadArgs(f"start={start} is after end={last}")
        hist = self.store.prices(symbols, start, last)
        values = hist.values
        keep = ~np.isnan(values).any(axis=1)
        dates, values = hist.dates[keep], values[keep]
        if window is not None:
            dates, values = dates[-window:], values[-window:]
        if len(dates) < min_sessions:
            span = self.store.info()
            raise _BadArgs(
                f"{len(dates)} session(s) with prices of {', '.join(symbols)} in the period; this indicator "
                f"needs at least {min_sessions} (store covers {span.calendar_start}..{span.calendar_end})"
            )
        return dates, values

    # -- indicators -------------------------------------------------------------------------
    def _price(self, sym: str, field: str, args: Mapping[str, Any]) -> ToolResult:
        day = _date(args, "date")
        if day is not None and (args.get("start") or args.get("end") or args.get("window")):
            raise _BadArgs("give either date or a period (start/end or window), not both")
        if day is not None:
            bars = self.store.bars(sym, day - dt.timedelta(days=14), day)
            if not bars:
                raise _BadArgs(f"no {sym} session on or within 14 days before {day}")
            bar = bars[-1]
            value = float(getattr(bar, field))
            note = "" if bar.date == day else f" (no session on {day}; last session before it)"
            shown = _r(value, 2) if field != "volume" else value
            return ToolResult(True, f"{sym} {field} on {bar.date}: {shown:g}{note}", numbers=(shown,))
        start, end = _date(args, "start"), _date(args, "end")
        if start is None:
            raise _BadArgs(f"{field} needs date, or start (and optionally end)")
        if end is not None and start > end:
            raise _BadArgs(f"start={start} is after end={end}")
        hist = self.store.prices([sym], start, end, field=field)
        col = hist.column(sym)
        keep = ~np.isnan(col)
        dates, vals = hist.dates[keep], col[keep]
        if len(vals) == 0:
            raise _BadArgs(f"no {sym} sessions in {start}..{end or 'last'}")
        if len(vals) <= self.max_listed:
            rows = [f"{d}: {v:.2f}" if field != "volume" else f"{d}: {v:.0f}" for d, v in zip(dates, vals)]
            nums = tuple(_r(v, 2) for v in vals)
            return ToolResult(True, f"{sym} {field}, {len(vals)} sessions:\n" + "\n".join(rows), numbers=nums)
        stats = {
            "first": vals[0],
            "last": vals[-1],
            "min": vals.min(),
            "max": vals.max(),
            "mean": vals.mean(),
        }
        text = f"{sym} {field}, {len(vals)} sessions {dates[0]}..{dates[-1]}: " + ", ".join(
            f"{k} {v:.2f}" for k, v in stats.items()
        )
        return ToolResult(True, text, numbers=tuple(_r(v, 2) for v in stats.values()))

    def _single(self, sym: str, ind: str, args: Mapping[str, Any]) -> ToolResult:
        dates, vals = self._period(args, [sym], min_sessions=2 if ind == "return" else 3)
        closes = vals[:, 0]
        span = f"{dates[0]}..{dates[-1]} ({len(dates)} sessions)"
        if ind == "return":
            ret = (closes[-1] / closes[0] - 1.0) * 100.0
            text = f"{sym} return {span}: {ret:.4f}% (close {closes[0]:.2f} -> {closes[-1]:.2f})"
            return ToolResult(True, text, numbers=(_r(ret, 4), _r(closes[0], 2), _r(closes[-1], 2)))
        lr = np.diff(np.log(closes))
        daily = float(np.std(lr, ddof=1)) * 100.0
        annual = daily * math.sqrt(252.0)
        text = f"{sym} volatility of daily log returns {span}: daily {daily:.4f}%, annualised {annual:.4f}%"
        return ToolResult(True, text, numbers=(_r(daily, 4), _r(annual, 4)))

    def _pair(self, sym: str, ind: str, args: Mapping[str, Any]) -> ToolResult:
        from kernels import half_life, ols_hedge, spread_zscore
        from kernels.errors import KernelInputError

        if args.get("other") is None:
            raise _BadArgs(f"{ind} needs other (the second symbol)")
        other = self._symbol(args, "other")
        if other == sym:
            raise _BadArgs(f"other={other!r} must differ from symbol")
        dates, vals = self._period(args, [sym, other], min_sessions=4)
        span = f"{dates[0]}..{dates[-1]} ({len(dates)} sessions)"
        try:
            if ind == "beta":
                ry, rx = np.diff(np.log(vals[:, 0])), np.diff(np.log(vals[:, 1]))
                _, beta = ols_hedge(ry, rx)
                text = f"beta of {sym} daily log returns on {other}'s, {span}: {beta:.4f}"
                return ToolResult(True, text, numbers=(_r(beta, 4),))
            ly, lx = np.log(vals[:, 0]), np.log(vals[:, 1])
            alpha, beta = ols_hedge(ly, lx)
            if not math.isfinite(beta):
                raise _BadArgs(f"{other} has a constant price over the period; no hedge ratio")
            spread = ly - beta * lx
            if ind == "hedge_ratio":
                text = (
                    f"OLS log({sym}) = alpha + beta log({other}), {span}: beta {beta:.4f}, alpha {alpha:.4f}"
                )
                return ToolResult(True, text, numbers=(_r(beta, 4), _r(alpha, 4)))
            if ind == "half_life":
                hl = half_life(spread)
                shown = "no mean reversion (infinite)" if math.isinf(hl) else f"{hl:.2f} sessions"
                text = f"half-life of spread log({sym}) - {beta:.4f} log({other}), {span}: {shown}"
                return ToolResult(True, text, numbers=() if math.isinf(hl) else (_r(hl, 2), _r(beta, 4)))
            z = spread_zscore(spread)
            text = (
                f"z of the last spread log({sym}) - {beta:.4f} log({other}) on {dates[-1]}, {span}: {z:.4f}"
            )
            return ToolResult(True, text, numbers=(_r(z, 4), _r(beta, 4)))
        except KernelInputError as exc:
            raise _BadArgs(str(exc)) from None

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        """Run one lookup; never raises for a bad call (``ok=False`` with the reason)."""
        try:
            if not isinstance(args, Mapping):
                raise _BadArgs("arguments must be an object")
            extra = sorted(set(args) - set(self.args_schema["properties"]))
            if extra:
                raise _BadArgs(
                    f"unknown argument(s) {extra}; allowed: {', '.join(self.args_schema['properties'])}"
                )
            ind = args.get("indicator")
            if ind not in INDICATORS:
                raise _BadArgs(f"indicator={ind!r}; allowed: {', '.join(INDICATORS)}")
            sym = self._symbol(args, "symbol")
            if ind in PRICE_INDICATORS:
                return self._price(sym, ind, args)
            if ind in PAIR_INDICATORS:
                return self._pair(sym, ind, args)
            return self._single(sym, ind, args)
        except _BadArgs as exc:
            return ToolResult(False, str(exc), error="bad_args")
        except DataError as exc:
            return ToolResult(False, f"market store error: {exc}", error="exception")
