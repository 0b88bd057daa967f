"""Rolling hedge ratio, z-scores, correlation, half-life and volatility ratio against twins."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernels_synth import make_pair

from kernels import (
    KernelInputError,
    half_life,
    ols_hedge,
    rolling_corr,
    rolling_hedge_ratio,
    rolling_zscore,
    spread_vol_ratio,
    spread_zscore,
)
from kernels.reference import (
    half_life_reference,
    rolling_corr_reference,
    rolling_hedge_reference,
    rolling_zscore_reference,
)


def _series(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return make_pair(np.random.default_rng(seed), n, coint=True)


@pytest.mark.parametrize("window", [3, 20, 61])
def test_rolling_hedge_equals_exact_twin_small(window: int) -> None:
    y, x = _series(window, 400)
    alpha, beta = rolling_hedge_ratio(y, x, window)
    ref_alpha, ref_beta = rolling_hedge_reference(y, x, window)
    assert np.isnan(beta[: window - 1]).all() and np.isfinite(beta[window - 1 :]).all()
    np.testing.assert_allclose(beta, ref_beta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(alpha, ref_alpha, rtol=1e-9, atol=1e-11)
    a_last, b_last = ols_hedge(y[-window:], x[-window:])
    assert (a_last, b_last) == pytest.approx((alpha[-1], beta[-1]), rel=1e-9)


def test_rolling_hedge_is_stable_far_from_zero_and_after_outliers() -> None:
    # Prices near 1e6 with tiny moves, and a 1e4-times outlier: O(1) updates drift unless
    # they are refreshed; the result must still match the exact refit.
    rng = np.random.default_rng(9)
    n, window = 3000, 20
    x = 1e6 + np.cumsum(rng.normal(0, 0.5, n))
    y = 3.0 + 0.7 * x + rng.normal(0, 0.3, n)
    x[1500] += 5e4
    _, beta = rolling_hedge_ratio(y, x, window)
    _, ref_beta = rolling_hedge_reference(y, x, window)
    np.testing.assert_allclose(beta, ref_beta, rtol=1e-8, atol=1e-12)


def test_rolling_forms_handle_nan_and_constant_windows() -> None:
    y, x = _series(1, 200)
    y[50] = np.nan
    x[120:160] = 4.5  # a flat stretch of x: slope undefined, x returns undefined
    window = 20
    _, beta = rolling_hedge_ratio(y, x, window)
    _, ref_beta = rolling_hedge_reference(y, x, window)
    np.testing.assert_array_equal(np.isnan(beta), np.isnan(ref_beta))
    assert np.isnan(beta[50:70]).all() and np.isfinite(beta[70:120]).all()
    assert np.isnan(beta[139:160]).all() and np.isfinite(beta[160:]).all()
    np.testing.assert_allclose(beta, ref_beta, rtol=1e-9, atol=1e-12)
    z = rolling_zscore(x, window)
    np.testing.assert_allclose(z, rolling_zscore_reference(x, window), rtol=1e-9, atol=1e-12)
    assert np.isnan(z[139:160]).all()
    r = rolling_corr(y, x, window)
    np.testing.assert_allclose(r, rolling_corr_reference(y, x, window), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("window", [5, 20, 250])
def test_rolling_zscore_and_corr_equal_twins(window: int) -> None:
    y, x = _series(window + 1, 600)
    spread = y - 1.1 * x
    z = rolling_zscore(spread, window)
    np.testing.assert_allclose(z, rolling_zscore_reference(spread, window), rtol=1e-9, atol=1e-12)
    assert z[-1] == pytest.approx(spread_zscore(spread, window), rel=1e-9)
    ry, rx = np.diff(y), np.diff(x)
    r = rolling_corr(ry, rx, window)
    np.testing.assert_allclose(r, rolling_corr_reference(ry, rx, window), rtol=1e-9, atol=1e-12)
    assert np.nanmax(np.abs(r)) <= 1.0


def test_rolling_matches_pandas() -> None:
    pd = pytest.importorskip("pandas")
    y, x = _series(3, 500)
    sy, sx = pd.Series(y), pd.Series(x)
    _, beta = rolling_hedge_ratio(y, x, 20)
    np.testing.assert_allclose(beta, (sy.rolling(20).cov(sx) / sx.rolling(20).var()).to_numpy(), rtol=1e-7)
    z = rolling_zscore(y, 30)
    np.testing.assert_allclose(z, ((sy - sy.rolling(30).mean()) / sy.rolling(30).std()).to_numpy(), rtol=1e-7)


def test_half_life_equals_twin_and_follows_its_rules() -> None:
    rng = np.random.default_rng(12)
    phi = 0.9
    s = np.zeros(2000)
    for t in range(1, s.size):
        s[t] = phi * s[t - 1] + rng.normal(0, 0.01)
    hl = half_life(s)
    assert hl == pytest.approx(half_life_reference(s), rel=1e-10)
    assert hl == pytest.approx(-math.log(2) / (phi - 1), rel=0.25)  # ~6.6 sessions
    trending = np.arange(50.0) ** 1.5  # changes grow with the level: slope > 0
    assert half_life(trending) == math.inf == half_life_reference(trending)
    assert math.isnan(half_life(np.full(10, 2.0)))
    with pytest.raises(KernelInputError, match="spread contains NaN"):
        half_life(np.array([1.0, np.nan, 2.0, 3.0]))


def test_spread_zscore_and_vol_ratio() -> None:
    s = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 10.0])
    tail = s[-4:]
    assert spread_zscore(s, 4) == pytest.approx((10.0 - tail.mean()) / tail.std(ddof=1))
    assert spread_zscore(s) == pytest.approx((10.0 - s.mean()) / s.std(ddof=1))
    assert math.isnan(spread_zscore(np.ones(5)))
    calm = np.concatenate([np.cumsum(np.tile([0.01, -0.01], 100)), np.cumsum(np.tile([0.05, -0.05], 10))])
    d = np.diff(calm)
    assert spread_vol_ratio(calm, 20) == pytest.approx(d[-20:].std(ddof=1) / d.std(ddof=1))
    assert spread_vol_ratio(calm, 20, 100) == pytest.approx(d[-20:].std(ddof=1) / d[-100:].std(ddof=1))
    assert spread_vol_ratio(calm, 20) > 2.0
    assert math.isnan(spread_vol_ratio(np.arange(30.0), 5))


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: rolling_hedge_ratio(np.ones(10), np.ones(9), 3), "same length"),
        (lambda: rolling_hedge_ratio(np.arange(10.0), np.arange(10.0), 2), "window must be in [3, 10]"),
        (lambda: rolling_zscore(np.arange(10.0), 11), "window must be in [3, 10]"),
        (lambda: rolling_corr(np.arange(10.0), np.arange(10.0)[:, None], 3), "b must be 1-D"),
        (lambda: spread_zscore(np.array([1.0, np.inf, 2.0])), "spread contains +-inf"),
        (lambda: spread_vol_ratio(np.arange(10.0), 1), "recent must be in [2, 9]"),
        (lambda: ols_hedge(np.arange(5.0), np.arange(5.0) * np.nan), "x contains NaN"),
        (lambda: rolling_zscore(np.arange(10.0), 3.5), "window must be an int"),  # type: ignore[arg-type]
    ],
)
def test_invalid_inputs_name_the_argument(call: object, needle: str) -> None:
    with pytest.raises(KernelInputError) as info:
        call()  # type: ignore[operator]
    assert needle in str(info.value)
