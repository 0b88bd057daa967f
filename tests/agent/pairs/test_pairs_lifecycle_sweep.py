"""The lifecycle threshold sweep (``localfin pairs lifecycle-sweep``): its breach rule equals the
factors' own under any thresholds, its rates by hand on a built holding, and on the real shared
staples prices (one year of month-ends) its rates move the way the thresholds say."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pytest

from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig
from agent.pairs.lifecycle.config import LifecycleConfig
from agent.pairs.lifecycle.factors import pair_factors
from agent.pairs.lifecycle.sweep import (
    Holding,
    breaches,
    collect_holdings,
    evaluate,
    grid_configs,
)
from agent.pairs.screen.causal import ScreenConfig, read_prices, screen_pairs
from agent.pairs.screen.evaluate import month_end_sessions
from localfin.errors import ConfigError

STAPLES = ("KO", "PEP", "PG", "MDLZ", "CPB", "CAG", "K", "HRL", "SJM", "TSN")


@pytest.fixture(scope="module")
def staples_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    f = shared_data / "prices" / "staples_energy_daily_2003_2023.csv"
    if not f.is_file():
        pytest.skip(f"absent: {f}")
    path = tmp_path_factory.mktemp("staples") / "real.sqlite"
    with MarketStore(path) as s:
        import_files(s, prices=[f], config=ImportConfig(pool=STAPLES))
    return path


@pytest.fixture(scope="module")
def holdings(staples_store: Path) -> list[Holding]:
    with MarketStore(staples_store, create=False) as db:
        days = month_end_sessions(db.calendar(tickers=list(STAPLES)), [2012])
        return collect_holdings(db, "staples", STAPLES, days, top=5, hold=75)


def test_breach_rule_equals_the_factors_own_on_real_pairs(staples_store, holdings):
    """Recompute a few holdings' sessions with pair_factors under other thresholds: the sweep's
    vectorised rule on the stored values flags exactly the same factors."""
    other = dataclasses.replace(
        LifecycleConfig(), corr_min=0.45, half_life_max=40.0, adf_pvalue_max=0.2, z_abs_max=2.0
    )
    with MarketStore(staples_store, create=False) as db:
        history = read_prices(db, STAPLES, end=dt.date(2013, 12, 31), config=ScreenConfig())
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.log(history.values)
    col = {t: k for k, t in enumerate(history.tickers)}
    pos = {d.item(): i for i, d in enumerate(history.dates)}
    checked = flagged = 0
    for h in holdings[:10]:
        a, b = h.pair.split("/")
        res = screen_pairs(history, h.date, config=ScreenConfig())
        p = next(x for x in res.pairs if (x.ticker_a, x.ticker_b) == (a, b))
        g0 = pos[h.date]
        for k in (0, 22, 50, h.n_sessions - 1):
            for cfg in (LifecycleConfig(), other):
                rep = pair_factors(logp[:, col[a]], logp[:, col[b]], g0 + 1 + k, p.hedge_ratio, p.alpha, cfg)
                mine = breaches(h.values[k : k + 1], h.available[k : k + 1], cfg)[0]
                assert list(mine) == [f.breached for f in rep.factors], (h.pair, k)
                checked += 1
                flagged += int(mine.sum())
    assert checked == 80 and flagged > 0  # some breaches happened: the comparison can fail


def _holding(n_breached: list[int]) -> Holding:
    """A holding whose session k breaches its first n_breached[k] factors (bands of the defaults)."""
    ok = [0.9, 10.0, 0.01, 0.01, 0.0, 1.0]  # healthy values
    bad = [0.0, 500.0, 0.9, 0.9, 5.0, 9.0]  # each breaches its default band
    vals = np.array([[bad[j] if j < n else ok[j] for j in range(6)] for n in n_breached])
    return Holding("t", dt.date(2020, 1, 31), "A/B", 1, vals, np.ones_like(vals, dtype=bool))


def test_rates_by_hand():
    cfg = LifecycleConfig(validation_period=4, break_share=0.5)
    # held 12 sessions: cycle 1 = [3, 0, 2, 0] (1 BREAK session: kept), cycle 2 = [3, 3, 1, 0]
    # (2 of 4 BREAK: replaced at session 8); the rest is never held
    rates = evaluate([_holding([3, 0, 2, 0, 3, 3, 1, 0, 3, 3, 3, 3])], cfg)
    assert (rates.sessions, rates.boundaries, rates.replaced_at) == (8, 2, {8: 1})
    assert rates.share_break == pytest.approx(3 / 8) and rates.share_warning == pytest.approx(1 / 8)
    assert rates.replace_rate == pytest.approx(1 / 2) and rates.holdings_replaced == 1.0
    # never replaced: every boundary kept, all 12 sessions counted
    kept = evaluate([_holding([0, 2] * 6)], cfg)
    assert (kept.sessions, kept.boundaries, kept.replace_rate, kept.share_warning) == (12, 3, 0.0, 0.5)
    # unavailable factors never breach
    h = _holding([6] * 4)
    quiet = dataclasses.replace(h, available=np.zeros_like(h.available))
    assert evaluate([quiet], cfg).share_break == 0.0
    # a half-life without mean reversion always breaches, whatever the band
    inf = np.array([[0.9, math.inf, 0.01, 0.01, 0.0, 1.0]])
    assert list(breaches(inf, np.ones_like(inf, dtype=bool), LifecycleConfig(half_life_max=1e9))[0]) == [
        False,
        True,
        False,
        False,
        False,
        False,
    ]


def test_grid_changes_one_threshold_at_a_time():
    configs = dict(grid_configs(LifecycleConfig(), {"corr_min": [0.1, 0.3], "break_factors": [4]}))
    assert list(configs) == ["defaults", "corr_min=0.1", "break_factors=4"]  # 0.3 is the default
    assert configs["break_factors=4"].break_factors == 4 and configs["corr_min=0.1"].break_factors == 3
    with pytest.raises(ConfigError, match="allowed: corr_min"):
        grid_configs(LifecycleConfig(), {"corr_window": [10]})
    with pytest.raises(ConfigError, match="warning_factors"):
        grid_configs(LifecycleConfig(), {"break_factors": [1]})


def test_stricter_thresholds_break_more_on_real_pairs(holdings):
    base = evaluate(holdings, LifecycleConfig())
    assert base.holdings == 60 and base.boundaries > 100
    for name, strict, loose in (
        ("corr_min", 0.5, 0.1),
        ("z_abs_max", 2.0, 3.5),
        ("coint_pvalue_max", 0.2, 0.7),
        ("break_factors", 2, 4),
    ):
        s = evaluate(holdings, dataclasses.replace(LifecycleConfig(), **{name: strict}))
        lo = evaluate(holdings, dataclasses.replace(LifecycleConfig(), **{name: loose}))
        assert s.replace_rate >= base.replace_rate >= lo.replace_rate, name
        if name != "break_factors":  # a factor band: more sessions at WARNING or worse
            assert s.share_break + s.share_warning > lo.share_break + lo.share_warning, name
    assert evaluate(holdings, dataclasses.replace(LifecycleConfig(), break_factors=2)).replace_rate > (
        evaluate(holdings, dataclasses.replace(LifecycleConfig(), break_factors=4)).replace_rate
    )


def test_cli_writes_the_table_and_json(staples_store, tmp_path, cli):
    out = tmp_path / "sweep.json"
    pool = "staples=" + ",".join(STAPLES)
    res = cli(
        *("pairs", "lifecycle-sweep", "--store", staples_store, "--years", "2012", "--pool", pool),
        *("--top", "2", "--vary", "break_share=0.2,0.5", "--out", out),
    )
    assert res.code == 0, res.err
    rows = json.loads(out.read_text())
    assert [r["setting"] for r in rows] == ["defaults", "break_share=0.2", "break_share=0.5"]
    assert all(r["holdings"] == 24 for r in rows)
    assert "| staples | defaults | 24 |" in res.out
    bad = cli("pairs", "lifecycle-sweep", "--years", "2012", "--pool", pool, "--vary", "x")
    assert bad.code == 2 and "--vary 'x'" in bad.err
