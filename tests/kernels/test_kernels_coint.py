"""Engle-Granger and ADF kernels against their numpy twins and against statsmodels."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from kernels_synth import make_pair

from kernels import (
    KernelInputError,
    adf,
    eg_crit_values,
    engle_granger,
    engle_granger_pairs,
    rolling_engle_granger,
    rolling_engle_granger_pairs,
)
from kernels.reference import adf_reference, eg_reference, rolling_eg_pairs_reference

sm = pytest.importorskip("statsmodels.tsa.stattools")
TOL = 1e-9


def sm_coint(
    y: np.ndarray, x: np.ndarray, maxlag: int | None, autolag: str | None
) -> tuple[float, float, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.coint(y, x, trend="c", maxlag=maxlag, autolag=autolag)
    return float(res[0]), float(res[1]), np.asarray(res[2])


def sm_adf(x: np.ndarray, regression: str, maxlag: int | None, autolag: str | None) -> object:
    autolag_sm = autolag.upper() if autolag else None
    return sm.adfuller(x, maxlag=maxlag, regression=regression, autolag=autolag_sm, result_object=True)


def assert_eg_matches(y: np.ndarray, x: np.ndarray, maxlag: int | None, autolag: str | None) -> None:
    ours = engle_granger(y, x, maxlag=maxlag, autolag=autolag)
    stat, pvalue, crit = sm_coint(y, x, maxlag, autolag)
    assert abs(ours.stat - stat) <= TOL, (ours, stat)
    assert abs(ours.pvalue - pvalue) <= TOL, (ours, pvalue)
    np.testing.assert_allclose(ours.crit_values, crit, rtol=0, atol=1e-12)
    if y.shape[0] > 500:  # the lstsq twin is slow on long windows; small ones cover it
        return
    twin = eg_reference(y, x, maxlag=maxlag, autolag=autolag)
    assert ours.lag == twin[2]
    np.testing.assert_allclose(
        [ours.stat, ours.pvalue, ours.beta, ours.alpha],
        [twin[0], twin[1], twin[3], twin[4]],
        rtol=1e-10,
        atol=1e-12,
    )


CASES = [
    # (n, coint, ar, maxlag, autolag)
    (40, True, 0.0, None, "aic"),
    (60, False, 0.6, None, "aic"),
    (120, True, 0.8, None, "aic"),
    (250, True, 0.0, None, "aic"),
    (250, False, 0.0, None, "aic"),
    (250, True, 0.7, 5, None),
    (500, True, 0.9, None, "bic"),
    (1000, False, 0.5, None, "aic"),
    (1000, True, 0.0, 0, None),
    (2520, True, 0.6, None, "aic"),
    (2520, False, 0.0, None, "aic"),
    (2520, True, 0.0, 12, None),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_eg_matches_statsmodels_synthetic(case: int) -> None:
    n, coint, ar, maxlag, autolag = CASES[case]
    rng = np.random.default_rng(100 + case)
    for _ in range(3 if n <= 1000 else 2):
        y, x = make_pair(rng, n, coint=coint, ar=ar)
        assert_eg_matches(y, x, maxlag, autolag)


def test_eg_small_matches_reference() -> None:
    # Runs under NUMBA_DISABLE_JIT too (see test_kernels_nojit.py): small windows only.
    rng = np.random.default_rng(7)
    for n, coint, autolag, maxlag in [
        (30, True, "aic", None),
        (45, False, "aic", None),
        (60, True, None, 3),
        (80, True, "bic", 6),
    ]:
        y, x = make_pair(rng, n, coint=coint, ar=0.5)
        ours = engle_granger(y, x, maxlag=maxlag, autolag=autolag)
        twin = eg_reference(y, x, maxlag=maxlag, autolag=autolag)
        assert ours.lag == twin[2]
        np.testing.assert_allclose(
            [ours.stat, ours.pvalue, ours.beta, ours.alpha],
            [twin[0], twin[1], twin[3], twin[4]],
            rtol=1e-10,
            atol=1e-12,
        )
        assert ours.nobs == n and ours.crit_values == eg_crit_values(n)


def test_eg_chooses_more_than_lag_zero_sometimes() -> None:
    # Guards the lag-selection comparison: the synthetic cases must exercise lags > 0.
    rng = np.random.default_rng(3)
    lags = {engle_granger(*make_pair(rng, 500, coint=True, ar=0.9)).lag for _ in range(6)}
    assert max(lags) > 0


@pytest.mark.parametrize("window", [250, 1000, 2520])
def test_eg_matches_statsmodels_real(real_log_prices: object, window: int) -> None:
    frame = real_log_prices
    pairs = [("KO", "PEP"), ("XOM", "CVX"), ("PG", "CPB"), ("COP", "APA"), ("K", "SJM")]
    rng = np.random.default_rng(window)
    for a, b in pairs:
        both = frame[[a, b]].dropna().to_numpy()
        end = int(rng.integers(window, both.shape[0] + 1))
        y, x = both[end - window : end, 0], both[end - window : end, 1]
        assert_eg_matches(y, x, None, "aic")
        assert_eg_matches(x, y, 4, None)


@pytest.mark.slow
def test_eg_matches_statsmodels_real_sweep(real_log_prices: object) -> None:
    # Every pair of the 14 tickers, three window lengths, several ends, AIC and fixed lags.
    frame = real_log_prices
    rng = np.random.default_rng(2024)
    names = list(frame.columns)
    for window in (120, 750, 2520):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                both = frame[[a, b]].dropna().to_numpy()
                for end in rng.integers(window, both.shape[0] + 1, size=2):
                    y, x = both[end - window : end, 0], both[end - window : end, 1]
                    assert_eg_matches(y, x, None, "aic")
                    assert_eg_matches(y, x, 2, None)


@pytest.mark.parametrize("regression", ["c", "n"])
@pytest.mark.parametrize(
    ("n", "maxlag", "autolag"),
    [(60, None, "aic"), (400, None, "aic"), (400, 3, None), (2520, None, "aic"), (1000, None, "bic")],
)
def test_adf_matches_statsmodels(regression: str, n: int, maxlag: int | None, autolag: str | None) -> None:
    rng = np.random.default_rng(n + (maxlag or 0))
    for series in (
        make_pair(rng, n, coint=True, ar=0.7)[0],
        make_pair(rng, n, coint=True)[0] - make_pair(rng, n, coint=True)[1],
    ):
        ours = adf(series, regression=regression, maxlag=maxlag, autolag=autolag)
        ref = sm_adf(series, regression, maxlag, autolag)
        assert abs(ours.stat - ref.statistic) <= TOL
        assert abs(ours.pvalue - ref.pvalue) <= TOL
        assert (ours.lag, ours.nobs) == (ref.lags, ref.nobs)
        np.testing.assert_allclose(
            ours.crit_values, [ref.critical_values[k] for k in ("1%", "5%", "10%")], atol=1e-12
        )


def test_adf_real_prices_with_constant(real_log_prices: object) -> None:
    # Raw price levels far from zero: the constant case must stay accurate (centred Gram).
    prices = np.exp(real_log_prices["KO"].dropna().to_numpy()[-1500:]) + 1000.0
    ours = adf(prices, regression="c")
    ref = sm_adf(prices, "c", None, "aic")
    assert abs(ours.stat - ref.statistic) <= TOL and ours.lag == ref.lags


def test_adf_small_matches_reference() -> None:
    rng = np.random.default_rng(11)
    for regression in ("c", "n"):
        for n, maxlag, autolag in [(30, None, "aic"), (50, 4, None), (70, None, "bic")]:
            series = make_pair(rng, n, coint=True, ar=0.6)[0]
            ours = adf(series, regression=regression, maxlag=maxlag, autolag=autolag)
            twin = adf_reference(series, regression=regression, maxlag=maxlag, autolag=autolag)
            assert (ours.lag, ours.nobs) == (twin[3], twin[4])
            np.testing.assert_allclose(
                [ours.stat, ours.pvalue, *ours.crit_values], [twin[0], twin[1], *twin[2]], rtol=1e-10
            )


def test_pool_and_rolling_forms_equal_single_calls_small() -> None:
    rng = np.random.default_rng(5)
    n, window = 90, 40
    pool = np.column_stack(
        [make_pair(rng, n, coint=True)[0], *make_pair(rng, n, coint=True), make_pair(rng, n, coint=False)[0]]
    )
    ends = np.array([39, 52, 89])
    res = rolling_engle_granger_pairs(pool, window, ends=ends)
    twin = rolling_eg_pairs_reference(pool, window, ends)
    assert res.stat.shape == (3, 6) and list(zip(res.i, res.j))[:3] == [(0, 1), (0, 2), (0, 3)]
    np.testing.assert_array_equal(res.lag, twin["lag"])
    for name in ("stat", "pvalue", "beta", "alpha"):
        np.testing.assert_allclose(getattr(res, name), twin[name], rtol=1e-10, atol=1e-12)
    one = rolling_engle_granger(pool[:, 1], pool[:, 3], window, ends=ends)
    np.testing.assert_array_equal(one.stat, res.stat[:, 4])
    pairs = engle_granger_pairs(pool[-window:])
    np.testing.assert_allclose(pairs.stat, res.stat[-1], rtol=1e-12)
    single = engle_granger(pool[-window:, 2], pool[-window:, 3])
    assert single.stat == pytest.approx(pairs.stat[5], rel=1e-12)


def test_rescreen_parallel_path_matches_serial() -> None:
    # Enough cells to take the prange kernel; equal to one-window calls (serial kernel).
    rng = np.random.default_rng(8)
    pool = np.column_stack([make_pair(rng, 400, coint=c)[0] for c in (True, False, True, True, False)])
    res = rolling_engle_granger_pairs(pool, 300, ends=np.arange(299, 400, 20))
    assert res.stat.size >= 32
    for e, end in enumerate(res.end):
        single = engle_granger_pairs(pool[end - 299 : end + 1])
        np.testing.assert_array_equal(res.stat[e], single.stat)
        np.testing.assert_array_equal(res.lag[e], single.lag)


def test_collinear_pair_is_nan_where_statsmodels_says_minus_inf() -> None:
    rng = np.random.default_rng(2)
    x = 4.6 + np.cumsum(rng.normal(0, 0.01, 300))
    y = 0.5 + 1.3 * x
    stat, pvalue, _ = sm_coint(y, x, None, "aic")
    assert stat == -math.inf and pvalue == 0.0
    ours = engle_granger(y, x)
    assert math.isnan(ours.stat) and math.isnan(ours.pvalue) and ours.lag == -1
    assert ours.beta == pytest.approx(1.3) and ours.alpha == pytest.approx(0.5)


def test_constant_leg_and_nan_windows_give_nan() -> None:
    rng = np.random.default_rng(4)
    y, x = make_pair(rng, 120, coint=True)
    flat = np.full(120, 4.2)
    res = engle_granger(y, flat)
    assert math.isnan(res.stat) and math.isnan(res.beta) and res.lag == -1
    assert math.isnan(adf(flat).stat)
    y_gap = y.copy()
    y_gap[70] = np.nan
    roll = rolling_engle_granger(y_gap, x, 40, ends=[60, 69, 70, 109, 110, 119])
    # windows ending at 70 and 109 hold index 70; the one ending at 110 starts at 71
    assert np.isfinite(roll.stat[[0, 1, 4, 5]]).all()
    assert np.isnan(roll.stat[2:4]).all() and (roll.lag[2:4] == -1).all() and np.isnan(roll.beta[2:4]).all()
    assert roll.stat[5] == engle_granger(y[80:120], x[80:120]).stat


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda y, x: engle_granger(y, x[:-1]), "same length"),
        (lambda y, x: engle_granger(y[:20], x[:20]), "y needs at least 30"),
        (
            lambda y, x: engle_granger(np.where(np.arange(y.size) == 3, np.nan, y), x),
            "y contains NaN at index 3",
        ),
        (lambda y, x: engle_granger(y, x, autolag="t-stat"), "autolag must be"),
        (lambda y, x: engle_granger(y, x, maxlag=60), "maxlag must be in [0, 48]"),
        (lambda y, x: rolling_engle_granger(y, x, 10), "window must be in [30, 100]"),
        (lambda y, x: rolling_engle_granger(y, x, 40, ends=[5]), "ends must lie in [39, 99]"),
        (lambda y, x: rolling_engle_granger_pairs(y, 40), "prices2d must be 2-D"),
        (lambda y, x: adf(y, regression="ct"), "regression must be 'c'"),
    ],
)
def test_invalid_inputs_name_the_argument(call: object, needle: str) -> None:
    y, x = make_pair(np.random.default_rng(0), 100, coint=True)
    with pytest.raises(KernelInputError) as info:
        call(y, x)  # type: ignore[operator]
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)
