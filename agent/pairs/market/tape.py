"""A run's tape: the decisions it made and the prices they were settled on (run-folder files
``decisions.parquet`` and ``prices.parquet``, beside ``steps.parquet``).

With :func:`agent.pairs.market.execution.resettle` the tape is all it takes to settle the run
again under other execution settings (the report's "with frictions" row) and to write its
trades and equity curve, without the market store and without a model call.

``decisions.parquet``: one row per test transition (:class:`Decision`): the step and session it
was decided at, the session it settles at, the pair (``A/B``, empty when none was held), the
action, the leg weights (NaN when no position could be sized: no pair, no hedge ratio), the
request key of the model call that chose the action (empty for rule baselines and FLAT steps
without a call: the link to ``trace.parquet`` and the journal, for an audit of what each call's
payload drew from), and for Equal-Weight's ``HOLD`` rows the basket of tickers bought.

``prices.parquet``: ``date``, ``ticker``, ``close`` (the run's settlement price, the screen's
``price_field``), ``open`` (on the same scale: the open times ``price_field / close`` of its row,
so an adjusted close gets an adjusted open; NaN where the store has none) for every ticker a
decision names, on every session of the test window.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from agent.pairs.market.settlement import LegWeights
from localfin.errors import InputError
from localfin.files import atomic_target, read_parquet

__all__ = [
    "HOLD",
    "Quote",
    "DECISIONS_FILE",
    "PRICES_FILE",
    "Decision",
    "PriceTape",
    "write_decisions",
    "read_decisions",
    "write_prices",
    "read_prices",
    "has_tape",
    "open_on_field",
]

#: The action of a long-only basket held without rebalancing (Equal-Weight).
HOLD = "HOLD"
DECISIONS_FILE = "decisions.parquet"
PRICES_FILE = "prices.parquet"


@dataclass(frozen=True)
class Quote:
    """One leg's prices over a transition from session t to t+1: the close of t, the open of
    t+1 (on the settlement price's scale) and the close of t+1 (NaN where there is none)."""

    close0: float
    open1: float
    close1: float


@dataclass(frozen=True)
class Decision:
    """One recorded decision: taken at the close of ``date`` (step ``step``), settled at the
    close of ``settle_date``. ``w_a``/``w_b``: LONG_SHORT's capital weights (NaN: not sized)."""

    step: int
    date: str
    settle_date: str
    pair: str
    action: str
    w_a: float
    w_b: float
    request_key: str = ""
    basket: str = ""

    def legs(self) -> tuple[str, str] | None:
        if not self.pair:
            return None
        a, _, b = self.pair.partition("/")
        return (a, b)

    def weights(self) -> LegWeights | None:
        if not (math.isfinite(self.w_a) and math.isfinite(self.w_b)):
            return None
        return LegWeights(float(self.w_a), float(self.w_b))

    def tickers(self) -> tuple[str, ...]:
        """The tickers the decision holds (its pair's legs, or a HOLD row's basket)."""
        if self.basket:
            return tuple(self.basket.split(","))
        legs = self.legs()
        return legs if legs else ()


def _write(path: Path, frame: Any) -> Path:
    with atomic_target(path) as tmp:
        frame.to_parquet(tmp, index=False)
    return path


def write_decisions(path: str | Path, decisions: Sequence[Decision]) -> Path:
    import pandas as pd

    cols = [f.name for f in fields(Decision)]
    return _write(Path(path), pd.DataFrame([asdict(d) for d in decisions], columns=cols))


def read_decisions(path: str | Path) -> list[Decision]:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no decisions file at {p}")
    frame = read_parquet(p)
    names = [f.name for f in fields(Decision)]
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise InputError(f"{p} lacks columns {missing}")
    out = []
    for row in frame.to_dict("records"):
        out.append(
            Decision(
                int(row["step"]),
                str(row["date"]),
                str(row["settle_date"]),
                str(row["pair"] or ""),
                str(row["action"]),
                float(row["w_a"]),
                float(row["w_b"]),
                str(row["request_key"] or ""),
                str(row["basket"] or ""),
            )
        )
    return out


@dataclass(frozen=True)
class PriceTape:
    """Closes and opens of some tickers on some sessions (NaN where absent)."""

    dates: tuple[str, ...]
    tickers: tuple[str, ...]
    closes: np.ndarray
    opens: np.ndarray

    def __post_init__(self) -> None:
        shape = (len(self.dates), len(self.tickers))
        if self.closes.shape != shape or self.opens.shape != shape:
            raise InputError(
                f"price tape: closes {self.closes.shape}, opens {self.opens.shape}; allowed: {shape}"
            )
        object.__setattr__(self, "_row", {d: i for i, d in enumerate(self.dates)})
        object.__setattr__(self, "_col", {t: k for k, t in enumerate(self.tickers)})

    def _at(self, table: np.ndarray, ticker: str, day: str) -> float:
        try:
            return float(table[self._row[day], self._col[ticker]])  # type: ignore[attr-defined]
        except KeyError:
            raise InputError(f"the price tape has no row for {ticker} on {day}") from None

    def close(self, ticker: str, day: str) -> float:
        return self._at(self.closes, ticker, day)

    def open(self, ticker: str, day: str) -> float:
        return self._at(self.opens, ticker, day)

    def quote(self, ticker: str, day: str, next_day: str) -> Quote:
        """The ticker's :class:`Quote` from ``day`` to ``next_day``."""
        return Quote(self.close(ticker, day), self.open(ticker, next_day), self.close(ticker, next_day))

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, float, float]]) -> PriceTape:
        """From (date, ticker, close, open) rows."""
        rows = list(rows)
        dates = tuple(sorted({r[0] for r in rows}))
        tickers = tuple(sorted({r[1] for r in rows}))
        ri = {d: i for i, d in enumerate(dates)}
        ci = {t: k for k, t in enumerate(tickers)}
        closes = np.full((len(dates), len(tickers)), np.nan)
        opens = np.full((len(dates), len(tickers)), np.nan)
        for d, t, c, o in rows:
            closes[ri[d], ci[t]] = c
            opens[ri[d], ci[t]] = o
        return cls(dates, tickers, closes, opens)


def write_prices(path: str | Path, tape: PriceTape) -> Path:
    import pandas as pd

    rows = [
        (d, t, float(tape.closes[i, k]), float(tape.opens[i, k]))
        for i, d in enumerate(tape.dates)
        for k, t in enumerate(tape.tickers)
    ]
    frame = pd.DataFrame(rows, columns=["date", "ticker", "close", "open"])
    return _write(Path(path), frame)


def read_prices(path: str | Path) -> PriceTape:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no prices file at {p}")
    frame = read_parquet(p)
    missing = [c for c in ("date", "ticker", "close", "open") if c not in frame.columns]
    if missing:
        raise InputError(f"{p} lacks columns {missing}")
    return PriceTape.from_rows(
        (str(d), str(t), float(c), float(o))
        for d, t, c, o in zip(frame["date"], frame["ticker"], frame["close"], frame["open"])
    )


def has_tape(run_dir: str | Path) -> bool:
    d = Path(run_dir)
    return (d / DECISIONS_FILE).is_file() and (d / PRICES_FILE).is_file()


def open_on_field(
    store: Any, tickers: Sequence[str], *, end: dt.date | str, field: str, start: dt.date | str | None = None
) -> Any:
    """Opens of ``tickers`` on the scale of ``field`` (``close`` or ``adj_close``): the open times
    ``field / close`` of the same row; NaN where a row has no open. Returns a PriceHistory on
    the same calendar as ``store.prices(tickers, start, end, field=field)``."""
    from agent.data.schema import PriceHistory

    opens = store.prices(tickers, start, end, field="open")
    if field == "open" or field == "close":
        return opens
    ref = store.prices(tickers, start, end, field=field)
    close = store.prices(tickers, start, end, field="close")
    with np.errstate(invalid="ignore", divide="ignore"):
        values = opens.values * (ref.values / close.values)
    return PriceHistory(opens.dates, opens.tickers, values, "open")
