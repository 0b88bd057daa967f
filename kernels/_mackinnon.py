"""MacKinnon response-surface coefficients for unit-root and Engle-Granger tests.

Published facts, not code: the p-value surfaces are MacKinnon (1994), "Approximate asymptotic
distribution functions for unit-root and cointegration tests", JBES 12(2), 167-176 (tables 3
and 4: tau-star / tau-min / tau-max cut-offs and the small-p and large-p polynomial
coefficients). The finite-sample critical values are MacKinnon (2010), "Critical values for
cointegration tests", Queen's Economics Dept. Working Paper 1227, table 2 (constant case); the
no-constant rows come from MacKinnon (1996), as the 2010 paper does not update them. The numbers
were transcribed from statsmodels 0.15.0 ``statsmodels/tsa/adfvalues.py``, which tabulates the
same papers, with its scaling already applied (small-p: 1, 1, 1e-2; large-p: 1, 1e-1, 1e-1,
1e-2) so that each polynomial is in plain ascending powers of the statistic.

Only the cases this package uses are kept: ADF without constant (N = 1, "n"), ADF with
constant (N = 1, "c") and Engle-Granger with constant on two series (N = 2, "c").

Each ``PVALUE_*`` tuple is (tau_star, tau_min, tau_max, s0, s1, s2, l0, l1, l2, l3): for
tau_min <= t <= tau_star the p-value is Phi(s0 + s1 t + s2 t^2), for tau_star < t <= tau_max it
is Phi(l0 + l1 t + l2 t^2 + l3 t^3), below tau_min it is 0 and above tau_max it is 1.
Each ``CRIT_*`` tuple holds, for the 1 %, 5 % and 10 % levels in turn, four coefficients
(b0, b1, b2, b3) of the critical value b0 + b1/T + b2/T^2 + b3/T^3 at sample size T.
"""

from __future__ import annotations

import math

__all__ = [
    "PVALUE_N1",
    "PVALUE_C1",
    "PVALUE_C2",
    "CRIT_N1",
    "CRIT_C1",
    "CRIT_C2",
    "mackinnon_pvalue",
    "mackinnon_crit",
]

PVALUE_N1 = (
    -1.04,
    -19.04,
    math.inf,
    0.6344,
    1.2378,
    3.2496e-2,
    0.4797,
    9.3557e-1,
    -0.6999e-1,
    3.3066e-2,
)
PVALUE_C1 = (
    -1.61,
    -18.83,
    2.74,
    2.1659,
    1.4412,
    3.8269e-2,
    1.7339,
    9.3202e-1,
    -1.2745e-1,
    -1.0368e-2,
)
PVALUE_C2 = (
    -2.62,
    -18.86,
    0.92,
    2.92,
    1.5012,
    3.9796e-2,
    2.1945,
    6.4695e-1,
    -2.9198e-1,
    -4.2377e-2,
)

CRIT_N1 = (
    -2.56574,
    -2.2358,
    -3.627,
    0.0,
    -1.94100,
    -0.2686,
    -3.365,
    31.223,
    -1.61682,
    0.2656,
    -2.714,
    25.364,
)
CRIT_C1 = (
    -3.43035,
    -6.5393,
    -16.786,
    -79.433,
    -2.86154,
    -2.8903,
    -4.234,
    -40.040,
    -2.56677,
    -1.5384,
    -2.809,
    0.0,
)
CRIT_C2 = (
    -3.89644,
    -10.9519,
    -33.527,
    0.0,
    -3.33613,
    -6.1101,
    -6.823,
    0.0,
    -3.04445,
    -4.2412,
    -2.720,
    0.0,
)


def mackinnon_pvalue(stat: float, coef: tuple[float, ...]) -> float:
    """Approximate p-value of a (A)DF / Engle-Granger t statistic from one ``PVALUE_*`` table.

    NaN in, NaN out; -inf gives 0.0.
    """
    if math.isnan(stat):
        return math.nan
    if stat > coef[2]:
        return 1.0
    if stat < coef[1]:
        return 0.0
    if stat <= coef[0]:
        z = coef[3] + stat * (coef[4] + stat * coef[5])
    else:
        z = coef[6] + stat * (coef[7] + stat * (coef[8] + stat * coef[9]))
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def mackinnon_crit(nobs: int, coef: tuple[float, ...]) -> tuple[float, float, float]:
    """1 %, 5 % and 10 % critical values at sample size ``nobs`` from one ``CRIT_*`` table."""
    inv = 1.0 / nobs
    out = []
    for level in range(3):
        b0, b1, b2, b3 = coef[4 * level : 4 * level + 4]
        out.append(b0 + inv * (b1 + inv * (b2 + inv * b3)))
    return (out[0], out[1], out[2])
