"""The NYSE calendar against the sessions of real prices and against hand-checked dates."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agent.reproduce.nyse import count_sessions, easter, is_session, nyse_holidays, sessions

D = dt.date.fromisoformat


def test_easter_known_dates() -> None:
    known = {
        2005: "2005-03-27",
        2008: "2008-03-23",
        2011: "2011-04-24",
        2019: "2019-04-21",
        2025: "2025-04-20",
    }
    assert {y: easter(y).isoformat() for y in known} == known


def test_observance_rules() -> None:
    # Saturday New Year (2022): no Friday holiday in the old year; Sunday New Year (2023) -> Monday
    assert is_session(D("2021-12-31")) and not is_session(D("2023-01-02"))
    # Juneteenth only from 2022; on a Saturday in 2027 -> Friday 18 June
    assert is_session(D("2021-06-18")) and not is_session(D("2022-06-20"))
    assert D("2027-06-18") in nyse_holidays(2027)
    # Independence Day on a Saturday (2026) -> Friday 3 July; Christmas on a Sunday (2022) -> Monday
    assert not is_session(D("2026-07-03")) and not is_session(D("2022-12-26"))
    # the 2025-01-09 closure (President Carter) is what makes the paper's 27 training sessions
    assert not is_session(D("2025-01-09"))


def test_matches_real_sessions_2003_2023(real_store: Path) -> None:
    """Every session of the real data (2003-10-30..2023-10-27, over 5,000 sessions) and no other
    weekday is an NYSE session by our rules."""
    from agent.data.store import MarketStore

    with MarketStore(real_store, create=False) as s:
        cal = [d.item() for d in s.calendar(tickers=["KO", "PEP", "PG", "XOM"])]
    assert len(cal) > 5000
    mine = sessions(cal[0], cal[-1])
    assert sorted(set(cal) - set(mine)) == [] and sorted(set(mine) - set(cal)) == []


@pytest.mark.parametrize(
    ("start", "end", "n"),
    [("2019-01-01", "2019-12-31", 252), ("2020-01-01", "2020-12-31", 253), ("2012-10-26", "2012-10-31", 2)],
)
def test_counts_agree_with_store(real_store: Path, start: str, end: str, n: int) -> None:
    from agent.data.store import MarketStore

    with MarketStore(real_store, create=False) as s:
        assert len(s.calendar(start, end, ["KO"])) == n
    assert count_sessions(D(start), D(end)) == n
