"""Input validation shared by the public kernel wrappers; every error names its argument."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels._jit import IC_AIC, IC_BIC, IC_NONE
from kernels.errors import KernelInputError

__all__ = [
    "MIN_TEST_NOBS",
    "MIN_ROLLING_WINDOW",
    "as_series",
    "as_panel",
    "check_window",
    "parse_autolag",
    "resolve_maxlag",
    "resolve_ends",
]

# Smallest sample for an ADF / Engle-Granger test. From 21 observations on, statsmodels'
# default lag cap (Schwert's 12 (n/100)^(1/4), at most n//2 - ntrend - 1) leaves every
# candidate regression at least one residual degree of freedom (checked for n < 200; the cap
# grows like n^(1/4) beyond); 30 leaves a margin.
MIN_TEST_NOBS = 30
# Smallest window of the rolling moments (hedge ratio, z-score, correlation): a sample
# standard deviation (ddof 1) needs two points and a regression slope with a residual needs three.
MIN_ROLLING_WINDOW = 3


def as_series(values: object, name: str, *, min_len: int = 1, allow_nan: bool = False) -> np.ndarray:
    """``values`` as a contiguous 1-D float64 array, checked for length and (optionally) NaN."""
    try:
        arr = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise KernelInputError(f"{name} must be a 1-D array of floats: {exc}") from exc
    if arr.ndim != 1:
        raise KernelInputError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] < min_len:
        raise KernelInputError(f"{name} needs at least {min_len} values, got {arr.shape[0]}")
    if np.isinf(arr).any():
        raise KernelInputError(
            f"{name} contains +-inf; only finite values (or NaN where allowed) are accepted"
        )
    if not allow_nan and np.isnan(arr).any():
        raise KernelInputError(
            f"{name} contains NaN at index {int(np.flatnonzero(np.isnan(arr))[0])}; "
            "drop or fill missing values first (rolling and pool forms accept NaN and return NaN "
            "for the windows that hold one)"
        )
    return arr


def as_panel(values: object, name: str) -> np.ndarray:
    """A (T, N) float64 price panel (NaN allowed, +-inf not), N >= 2."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise KernelInputError(f"{name} must be a 2-D (T, N) array of floats: {exc}") from exc
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise KernelInputError(f"{name} must be 2-D (T sessions, N >= 2 series), got shape {arr.shape}")
    if np.isinf(arr).any():
        raise KernelInputError(f"{name} contains +-inf; only finite values or NaN are accepted")
    return arr


def check_window(window: object, name: str, minimum: int, length: int) -> int:
    """``window`` as an int in [minimum, length]."""
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)):
        raise KernelInputError(f"{name} must be an int, got {window!r}")
    w = int(window)
    if w < minimum or w > length:
        raise KernelInputError(f"{name} must be in [{minimum}, {length}] (series length), got {w}")
    return w


def parse_autolag(autolag: str | None) -> int:
    """'aic' / 'bic' (any case) or None (fixed lag) as a kernel code."""
    if autolag is None:
        return IC_NONE
    if isinstance(autolag, str) and autolag.lower() in ("aic", "bic"):
        return IC_AIC if autolag.lower() == "aic" else IC_BIC
    raise KernelInputError(f"autolag must be 'aic', 'bic' or None, got {autolag!r}")


def resolve_maxlag(maxlag: int | None, nobs: int, ntrend: int) -> int:
    """Lag cap for an ADF regression on ``nobs`` values with ``ntrend`` deterministic terms.

    Default as statsmodels: ceil(12 (nobs/100)^(1/4)) (Schwert 1989), at most nobs//2 - ntrend - 1.
    An explicit cap must leave a residual degree of freedom in the largest regression:
    maxlag <= (nobs - 3 - ntrend) // 2 (one stricter than statsmodels for even nobs, where
    statsmodels would return a 0/0 statistic).
    """
    if maxlag is None:
        lag = int(np.ceil(12.0 * np.power(nobs / 100.0, 1 / 4.0)))
        return min(nobs // 2 - ntrend - 1, lag)
    if isinstance(maxlag, bool) or not isinstance(maxlag, (int, np.integer)):
        raise KernelInputError(f"maxlag must be an int or None, got {maxlag!r}")
    cap = (nobs - 3 - ntrend) // 2
    if not 0 <= int(maxlag) <= cap:
        raise KernelInputError(f"maxlag must be in [0, {cap}] for {nobs} observations, got {maxlag}")
    return int(maxlag)


def resolve_ends(ends: Sequence[int] | np.ndarray | None, window: int, length: int) -> np.ndarray:
    """Window end indices (inclusive) as int64, each in [window - 1, length - 1]."""
    if ends is None:
        return np.arange(window - 1, length, dtype=np.int64)
    arr = np.asarray(ends)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise KernelInputError(f"ends must be a 1-D sequence of ints, got {ends!r:.80}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < window - 1 or arr.max() > length - 1):
        raise KernelInputError(
            f"ends must lie in [{window - 1}, {length - 1}] (window - 1 .. last index), "
            f"got min {arr.min()} max {arr.max()}"
        )
    return arr
