"""Exact tests behind the promotion gates (scipy distributions).

Sources:
    McNemar, Q. (1947). Note on the sampling error of the difference between
    correlated proportions or percentages. Psychometrika 12(2).
    Clopper, C. J. & Pearson, E. S. (1934). The use of confidence or fiducial
    limits illustrated in the case of the binomial. Biometrika 26(4).
    Bahadur, R. R. & Savage, L. J. (1956). The nonexistence of certain
    statistical procedures in nonparametric problems. Ann. Math. Statist.
    27(4) (no test of a mean has power above its level over all
    distributions with a finite mean: unbounded quantities such as token
    costs get a sign test, a claim about direction, never a mean claim).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import stats

FloatArray = npt.NDArray[np.float64]


def sign_test_pvalue(deltas: FloatArray, margin: float) -> float:
    """Exact one-sided sign test of H0: P(delta > margin) <= P(delta < margin).

    Ties (delta == margin) are dropped, as in the classical sign test (and in
    McNemar's test, which is this test on pass/fail deltas with margin 0).
    With b values above and c below the margin the p-value is
    P(X >= b), X ~ Binomial(b + c, 1/2); its level holds for any distribution.

    Args:
        deltas: 1-D sample.
        margin: the null centre.

    Returns:
        The p-value; 1.0 when every value ties the margin.
    """
    b = int(np.sum(deltas > margin))
    c = int(np.sum(deltas < margin))
    if b + c == 0:
        return 1.0
    return float(stats.binom.sf(b - 1, b + c, 0.5))


def median_bounds(sorted_deltas: FloatArray, alpha: float) -> tuple[float, float]:
    """Distribution-free order-statistic bounds on the median (sign-test inversion).

    Each bound holds at one-sided level `alpha` (together a 1 - 2*alpha
    two-sided interval).

    Args:
        sorted_deltas: 1-D sorted sample.
        alpha: one-sided level.

    Returns:
        (lower, upper); infinite where n is too small for any bound.
    """
    n = sorted_deltas.shape[0]
    # Largest k with P(X <= k - 1) <= alpha, X ~ Binomial(n, 1/2).
    k = int(stats.binom.ppf(alpha, n, 0.5))
    if stats.binom.cdf(k, n, 0.5) > alpha:
        k -= 1
    k += 1
    if k <= 0:
        return -math.inf, math.inf
    return float(sorted_deltas[k - 1]), float(sorted_deltas[n - k])


def clopper_pearson(x: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact Clopper–Pearson one-sided bounds for a binomial proportion.

    Args:
        x: successes, 0 <= x <= n.
        n: trials (> 0).
        alpha: one-sided level of each bound.

    Returns:
        (lower, upper) with P(p < lower) <= alpha and P(p > upper) <= alpha.
    """
    lower = 0.0 if x == 0 else float(stats.beta.ppf(alpha, x, n - x + 1))
    upper = 1.0 if x == n else float(stats.beta.ppf(1.0 - alpha, x + 1, n - x))
    return lower, upper
