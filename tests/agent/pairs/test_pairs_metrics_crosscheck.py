"""Our backtest metrics (agent.pairs.market.metrics) against empyrical-reloaded, the library quants
use, on the same daily returns: where the definitions agree the figures agree to 1e-12; where
they differ (docs/moira_runs.md, "Metrics and their conventions") the difference is pinned here so that a
change on either side is noticed. The Sharpe ratio's standard error (Lo 2002) has no empyrical
counterpart and is checked against its formula."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agent.pairs.market import metrics as ours

ep = pytest.importorskip("empyrical", reason="empyrical-reloaded is a test dependency (the dev extra)")

TOL = 1e-12


def _series() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    flat = rng.normal(0.0004, 0.01, 250)
    flat[rng.random(250) < 0.4] = 0.0  # FLAT days of a pair strategy earn exactly 0
    return {
        "normal": rng.normal(0.0005, 0.012, 252),
        "fat tails": rng.standard_t(3, 500) * 0.008,
        "with flat days": flat,
        "short": np.array([0.01, -0.02, 0.005]),
        "losing": -np.abs(rng.normal(0.001, 0.004, 60)),
    }


def _real_pair_returns(shared_data) -> np.ndarray:
    """KO/PEP dollar-neutral long-short daily returns (adjusted closes) over 2019-2020, from the
    released price file: a real series with real fat tails and the March 2020 crash."""
    frame = pd.read_csv(
        shared_data / "prices" / "staples_energy_daily_2003_2023.csv", usecols=["date", "ticker", "adj_close"]
    )
    frame = frame[frame["ticker"].isin(["KO", "PEP"]) & frame["date"].between("2019-01-01", "2020-12-31")]
    wide = frame.pivot(index="date", columns="ticker", values="adj_close").sort_index()
    r = wide.pct_change().dropna()
    return (0.5 * r["KO"] - 0.5 * r["PEP"]).to_numpy()


def _agree(r: np.ndarray) -> None:
    assert ours.cumulative_return(r) == pytest.approx(ep.cum_returns_final(r), abs=TOL)
    assert ours.sharpe(r) == pytest.approx(ep.sharpe_ratio(r, risk_free=0.0, period="daily"), abs=TOL)
    assert ours.annual_volatility(r) == pytest.approx(ep.annual_volatility(r, period="daily"), abs=TOL)
    assert ours.sortino(r) == pytest.approx(ep.sortino_ratio(r, required_return=0.0, period="daily"), abs=TOL)
    assert ours.max_drawdown(r) == pytest.approx(ep.max_drawdown(r), abs=TOL)
    assert ours.annual_return(r) == pytest.approx(ep.annual_return(r, period="daily"), rel=TOL, abs=TOL)
    assert ours.calmar(r) == pytest.approx(ep.calmar_ratio(r, period="daily"), rel=TOL, abs=TOL)
    # the drawdown curves too (both count the initial equity as a peak)
    assert np.allclose(ours.drawdown_curve(r), np.asarray(ep.stats.drawdown_series(r)), rtol=0, atol=TOL)
    assert np.allclose(ours.equity_curve(r) - 1.0, ep.cum_returns(r), rtol=0, atol=TOL)


@pytest.mark.parametrize("name", list(_series()))
def test_where_the_definitions_agree_the_figures_agree(name: str) -> None:
    _agree(_series()[name])


def test_on_real_pair_returns(shared_data) -> None:
    r = _real_pair_returns(shared_data)
    assert len(r) == 504 and r.min() < -0.02  # the file's 2019-2020 sessions, the crash inside
    _agree(r)


def test_where_the_definitions_differ() -> None:
    r = _series()["normal"]
    # a risk-free rate: empyrical's is per period (daily) and subtracted from every return; ours
    # is always 0 (the papers report excess-free Sharpe ratios)
    rf_daily = 0.02 / 252
    excess = ep.sharpe_ratio(r, risk_free=rf_daily)
    assert excess == pytest.approx(ours.sharpe(r - rf_daily), abs=TOL) and excess < ours.sharpe(r)
    # Sortino without a losing day: empyrical inf, ours undefined (n/a)
    gains = np.abs(r) + 1e-4
    assert math.isinf(ep.sortino_ratio(gains)) and math.isnan(ours.sortino(gains))
    # constant returns: empyrical's Sharpe is inf, ours undefined (std 0)
    const = np.full(10, 0.001)
    assert not math.isfinite(ep.sharpe_ratio(const)) and math.isnan(ours.sharpe(const))
    # one return: empyrical's Sortino needs two, ours is defined (its downside is that return)
    assert math.isnan(ep.sortino_ratio(np.array([-0.01]))) and ours.sortino([-0.01]) == pytest.approx(
        -math.sqrt(252)
    )
    # missing values: empyrical skips NaN, ours refuses them (a missing price settles to 0)
    with pytest.raises(Exception, match="finite"):
        ours.sharpe([0.01, math.nan, 0.02])
    # empyrical's annual_return is the CAGR, ours too (annual_return); the tables' headline is the
    # cumulative return of the window, which the papers report
    assert ep.annual_return(r) == pytest.approx(
        (1 + ours.cumulative_return(r)) ** (252 / len(r)) - 1, abs=TOL
    )
    # Calmar of a curve that never fell below its start: both undefined
    assert math.isnan(ep.calmar_ratio(gains)) and math.isnan(ours.calmar(gains))
    # no return: CAGR undefined (empyrical: NaN too)
    assert math.isnan(ours.annual_return([])) and math.isnan(ep.annual_return(np.array([])))


def test_the_annualised_return_and_calmar_of_a_known_curve() -> None:
    """Two sessions of +1 % then one of -1 %: cumulative 1.01^2 * 0.99 - 1, compounded to 252
    sessions; the drawdown is the last session's 1 %."""
    r = [0.01, 0.01, -0.01]
    cagr = (1.01 * 1.01 * 0.99) ** (252 / 3) - 1
    assert ours.annual_return(r) == pytest.approx(cagr, rel=1e-12)
    assert ours.max_drawdown(r) == pytest.approx(-0.01)
    assert ours.calmar(r) == pytest.approx(cagr / 0.01, rel=1e-12)
    m = ours.compute_metrics(r)
    assert (m.annual_return, m.calmar) == (ours.annual_return(r), ours.calmar(r))


def test_the_sharpe_standard_error_is_lo_2002() -> None:
    r = _series()["normal"]
    sr = np.mean(r) / np.std(r, ddof=1)
    assert ours.sharpe_se(r) == pytest.approx(math.sqrt(252 * (1 + sr * sr / 2) / len(r)), abs=TOL)
