"""What each model call's payload drew from, recorded while the run builds it
(``runs/<run_id>/provenance.parquet``; ``localfin audit`` reads it, :mod:`agent.pairs.experiment.audit`).

One row per request, written at the moment its payload is built: the decision session, the
latest session of every price series put into the payload (the spread state's session, the
screen's window end, the settlement sessions of the counterfactual records shown), the latest
date of every news item put into it, and for a pair selection the screen's window end. The dates
come from the data objects themselves (a :class:`~agent.pairs.market.view.PairState`'s index, a
screen's last session, a news item's date), not from the session the caller meant to ask for, so
a payload builder that reads one session too far leaves its trace here. The row carries the
request key (the journal's key of the exact request), which ties it to the trace and the journal.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from serving.chat.types import ChatRequest

__all__ = ["PROVENANCE_FILE", "ProvenanceRow", "ProvenanceLog", "read_provenance"]

PROVENANCE_FILE = "provenance.parquet"


@dataclass(frozen=True)
class ProvenanceRow:
    """One model call's sources.

    decision_date: the session the call decides at (ISO); price_series / news_items: how many
    price series and news items the payload holds; price_max_date / news_max_date: the latest
    date among them ("" when none); screen_end: the last session of the screen's price window
    (selections only, else "").
    """

    run_id: str
    seq: int
    phase: str
    round: int
    step: int
    decision_date: str
    call_type: str
    request_key: str
    price_series: int
    price_max_date: str
    news_items: int
    news_max_date: str
    screen_end: str = ""


def _iso(d: dt.date | None) -> str:
    return d.isoformat() if d is not None else ""


def _max(dates: Iterable[dt.date]) -> tuple[int, dt.date | None]:
    seen = [d for d in dates if d is not None]
    return len(seen), (max(seen) if seen else None)


class ProvenanceLog:
    """The append-only provenance rows of one run."""

    def __init__(self, run_id: str, rewrite: Callable[[ChatRequest], ChatRequest] | None = None) -> None:
        self.run_id = run_id
        self.rows: list[ProvenanceRow] = []
        #: the request as the model sees it (an anonymized run's aliases): the key recorded is its key
        self.rewrite = rewrite

    def record(
        self,
        request: ChatRequest,
        *,
        phase: str,
        round: int,
        step: int,
        decision_date: dt.date,
        prices: Iterable[dt.date] = (),
        news: Iterable[dt.date] = (),
        screen_end: dt.date | None = None,
    ) -> ProvenanceRow:
        """One row for ``request``: ``prices`` the latest session of each price series in its
        payload, ``news`` the date of each news item in it."""
        n_prices, last_price = _max(prices)
        n_news, last_news = _max(news)
        row = ProvenanceRow(
            run_id=self.run_id,
            seq=len(self.rows),
            phase=phase,
            round=round,
            step=step,
            decision_date=_iso(decision_date),
            call_type=request.call_type,
            request_key=(self.rewrite(request) if self.rewrite else request).key(),
            price_series=n_prices,
            price_max_date=_iso(last_price),
            news_items=n_news,
            news_max_date=_iso(last_news),
            screen_end=_iso(screen_end),
        )
        self.rows.append(row)
        return row

    def to_dicts(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self.rows]

    def write(self, path: str | Path) -> Path:
        """Write the rows as Parquet (temp file, then rename)."""
        from agent.pairs.market.records import write_rows

        return write_rows(path, self.rows, ProvenanceRow)


def read_provenance(path: str | Path) -> Any:
    """The rows as a pandas DataFrame (a torn file: a DamagedFileError naming it)."""
    from localfin.files import read_parquet

    return read_parquet(path)
