"""The past week's news of the break check and the news verification (paper A.4 "PAST-7-DAY
NEWS", A.5/A.6 ``past_week_news_summary``): ``news_window_days`` calendar days, the session's
own day included, weekends and holidays counted; ``news_window_days = 0`` counts
``news_window`` sessions instead."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from agent.pairs.lifecycle.config import LifecycleConfig
from agent.pairs.lifecycle.monitor import PairMonitor
from localfin.errors import ConfigError

# NYSE sessions of 2025-04-14 .. 05-02 (Good Friday 04-18 closed)
SESSIONS = [dt.date(2025, 4, d) for d in (14, 15, 16, 17, 21, 22, 23, 24, 25, 28, 29, 30)] + [
    dt.date(2025, 5, 1),
    dt.date(2025, 5, 2),
]


def _start(cfg: LifecycleConfig, day: dt.date) -> dt.date:
    me = SimpleNamespace(ctx=SimpleNamespace(lifecycle=cfg, view=SimpleNamespace(dates=SESSIONS)))
    return PairMonitor.past_news_start(me, SESSIONS.index(day))


def test_seven_calendar_days_by_default():
    cfg = LifecycleConfig()
    assert cfg.news_window_days == 7
    # Monday 04-28: Tuesday 04-22 .. Monday (the weekend counted), 5 sessions
    assert _start(cfg, dt.date(2025, 4, 28)) == dt.date(2025, 4, 22)
    # Tuesday 04-22 after Good Friday: Wednesday 04-16 .. Tuesday holds 4 sessions
    start = _start(cfg, dt.date(2025, 4, 22))
    assert start == dt.date(2025, 4, 16)
    assert sum(start <= d <= dt.date(2025, 4, 22) for d in SESSIONS) == 4


def test_zero_days_counts_sessions_as_before():
    cfg = LifecycleConfig(news_window_days=0, news_window=7)
    # seven sessions back from Tuesday 04-22, today included: 04-14
    assert _start(cfg, dt.date(2025, 4, 22)) == dt.date(2025, 4, 14)
    assert _start(cfg, dt.date(2025, 4, 15)) == dt.date(2025, 4, 14)  # clipped at the first session


@pytest.mark.parametrize("bad", [-1, 400, 2.5, True])
def test_a_bad_window_names_the_field_and_its_unit(bad):
    with pytest.raises(ConfigError, match=r"news_window_days=.*calendar days"):
        LifecycleConfig(news_window_days=bad)
