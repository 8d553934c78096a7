"""Statistical kernels behind the promotion gates (numpy and `math` only).

The kernels work on 2-D arrays (rows = independent comparisons, columns =
paired tasks) so the gate (one row) and the calibration benchmark (thousands
of rows) run the very same code.

Sources:
    McNemar, Q. (1947). Note on the sampling error of the difference between
    correlated proportions or percentages. Psychometrika 12(2).
    Clopper, C. J. & Pearson, E. S. (1934). The use of confidence or fiducial
    limits illustrated in the case of the binomial. Biometrika 26(4).
    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap,
    ch. 12.5 (bootstrap-t / studentized intervals).
    Waudby-Smith, I. & Ramdas, A. (2023). Estimating means of bounded random
    variables by betting. JRSS-B 86(1) (aGRAPA betting e-process, sec. 5).
    Ville, J. (1939). Étude critique de la notion de collectif (Ville's
    inequality: P(sup_t K_t >= 1/alpha) <= alpha for a nonnegative
    supermartingale K with K_0 = 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def sign_pvalue_table(max_m: int) -> FloatArray:
    """Exact one-sided sign-test p-values P(X >= k), X ~ Binomial(m, 1/2).

    Args:
        max_m: largest number of non-tied pairs needed.

    Returns:
        Array of shape (max_m + 1, max_m + 2); entry [m, k] is P(X >= k) for
        0 <= k <= m + 1 (entry [m, m + 1] is 0).
    """
    table = np.zeros((max_m + 1, max_m + 2), dtype=np.float64)
    for m in range(max_m + 1):
        tail = 0
        denom = 2**m
        for k in range(m, -1, -1):
            tail += math.comb(m, k)
            table[m, k] = tail / denom
    return table


def sign_test_pvalues(deltas: FloatArray, margin: float) -> FloatArray:
    """Exact one-sided sign test of H0: median(delta) <= margin, per row.

    Ties (delta == margin) are dropped, as in the classical sign test; the
    level is guaranteed for any continuous or discrete distribution whose
    median is at most `margin`.

    Args:
        deltas: shape (rows, n).
        margin: the null median.

    Returns:
        p-values, shape (rows,); 1.0 for a row with no non-tied pairs.
    """
    pos = np.sum(deltas > margin, axis=1)
    neg = np.sum(deltas < margin, axis=1)
    table = sign_pvalue_table(deltas.shape[1])
    out: FloatArray = table[pos + neg, pos]
    return out


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
    table = sign_pvalue_table(n)
    # P(X <= k - 1) = P(X >= n - k + 1) by symmetry; largest k with that <= alpha.
    k = 0
    for cand in range(1, n + 1):
        if table[n, n - cand + 1] <= alpha:
            k = cand
    if k == 0:
        return -math.inf, math.inf
    return float(sorted_deltas[k - 1]), float(sorted_deltas[n - k])


def _binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    total = 0.0
    for j in range(k, n + 1):
        logc = math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
        total += math.exp(logc + j * lp + (n - j) * lq)
    return min(1.0, total)


def _bisect(f: Callable[[float], float], target: float) -> float:
    """Root of the increasing function `f` on [0, 1] where f(p) = target."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(x: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact Clopper–Pearson one-sided bounds for a binomial proportion.

    Args:
        x: successes.
        n: trials (> 0).
        alpha: one-sided level of each bound.

    Returns:
        (lower, upper) with P(p < lower) <= alpha and P(p > upper) <= alpha.
    """
    lower = 0.0 if x == 0 else _bisect(lambda p: _binom_sf(x, n, p), alpha)
    upper = 1.0 if x == n else _bisect(lambda p: _binom_sf(x + 1, n, p), 1.0 - alpha)
    return lower, upper


def resample_moments(
    deltas: FloatArray, n_resamples: int, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """Paired (row-wise) bootstrap means and standard deviations.

    Args:
        deltas: shape (rows, n).
        n_resamples: bootstrap resamples per row (B).
        rng: seeded generator; the draws are the only randomness.

    Returns:
        (means, sds), each shape (rows, B); sds use ddof=1.
    """
    rows, n = deltas.shape
    idx = rng.integers(0, n, size=(rows, n_resamples, n))
    draws = np.take_along_axis(deltas[:, None, :], idx, axis=2)
    return draws.mean(axis=2), draws.std(axis=2, ddof=1)


def mean_and_se(deltas: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Row means and standard errors (sample sd with ddof=1 over sqrt(n)).

    Args:
        deltas: shape (rows, n), n >= 2.

    Returns:
        (mean, se), each shape (rows,).
    """
    se = deltas.std(axis=1, ddof=1) / math.sqrt(deltas.shape[1])
    return deltas.mean(axis=1), se


def bootstrap_t_bounds(
    deltas: FloatArray, means: FloatArray, sds: FloatArray, alpha: float
) -> tuple[FloatArray, FloatArray]:
    """Studentized (bootstrap-t) one-sided bounds for the mean, per row.

    t* = (mean* - mean) / (sd* / sqrt(n)); lower = mean - q_{1-alpha}(t*) * se,
    upper = mean - q_alpha(t*) * se (Efron & Tibshirani 1993, sec. 12.5).
    A resample with sd* = 0 gets t* = ±inf (or 0), which widens the bound
    instead of being dropped. Quantiles use the conservative (B + 1) order statistics.

    Args:
        deltas: shape (rows, n), the observed paired deltas.
        means: bootstrap means from `resample_moments`, shape (rows, B).
        sds: bootstrap sds, shape (rows, B).
        alpha: one-sided level of each bound.

    Returns:
        (lower, upper), each shape (rows,).
    """
    n = deltas.shape[1]
    mean, se = mean_and_se(deltas)
    diff = means - mean[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = np.where(sds > 0, diff * math.sqrt(n) / sds, np.sign(diff) * np.inf)
    t_star = np.nan_to_num(t_star, nan=0.0)
    t_star.sort(axis=1)
    b = t_star.shape[1]
    # (B + 1) order-statistic convention (Davison & Hinkley 1997, sec. 5.2.3).
    hi_idx = min(b - 1, math.ceil((1 - alpha) * (b + 1)) - 1)
    lo_idx = max(0, math.floor(alpha * (b + 1)) - 1)
    with np.errstate(invalid="ignore"):
        lower = mean - t_star[:, hi_idx] * se
        upper = mean - t_star[:, lo_idx] * se
    lower = np.where(np.isnan(lower), -np.inf, lower)
    upper = np.where(np.isnan(upper), np.inf, upper)
    return lower, upper


def student_t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t distribution with `df` degrees of freedom.

    Cornish-Fisher expansion around the normal quantile (Hill 1970, CACM 13(10),
    algorithm 396, terms to 1/df^4); absolute error below 1e-4 for df >= 10
    at the usual tail probabilities, which is all the gate uses it for (n >= 20).

    Args:
        p: probability in (0, 1).
        df: degrees of freedom, >= 1.

    Raises:
        ValueError: p outside (0, 1) or df < 1.
    """
    if not 0.0 < p < 1.0 or df < 1:
        raise ValueError(f"need 0 < p < 1 and df >= 1, got p={p}, df={df}")
    z = NormalDist().inv_cdf(p)
    v = float(df)
    z3, z5, z7, z9 = z**3, z**5, z**7, z**9
    return (
        z
        + (z3 + z) / (4 * v)
        + (5 * z5 + 16 * z3 + 3 * z) / (96 * v**2)
        + (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v**3)
        + (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v**4)
    )


def student_t_bounds(deltas: FloatArray, alpha: float) -> tuple[FloatArray, FloatArray]:
    """One-sided Student-t bounds for the mean of each row: mean ± t_{1-alpha, n-1}·se.

    Args:
        deltas: shape (rows, n), n >= 2.
        alpha: one-sided level of each bound.

    Returns:
        (lower, upper), each shape (rows,).
    """
    mean, se = mean_and_se(deltas)
    t = student_t_quantile(1.0 - alpha, deltas.shape[1] - 1)
    return mean - t * se, mean + t * se


def betting_log_wealth(deltas: FloatArray, margin: float, max_bet: float = 0.75) -> FloatArray:
    """Log-wealth paths of a one-sided aGRAPA betting e-process, per row.

    Tests H0: E[delta_t | past] <= margin for deltas in [-1, 1]. The deltas
    are mapped to x = (delta + 1) / 2 in [0, 1], m = (margin + 1) / 2, and
    the wealth is K_t = prod_i (1 + lambda_i (x_i - m)) with the predictable
    bet lambda_i = (mu_{i-1} - m) / (var_{i-1} + (mu_{i-1} - m)^2) clipped to
    [0, max_bet / m] (Waudby-Smith & Ramdas 2023, sec. 5.4, "aGRAPA"; the
    running mean and variance start from the priors 1/2 and 1/4). Under H0
    K is a nonnegative supermartingale, so by Ville (1939)
    P(exists t: K_t >= 1/alpha) <= alpha: checking after every pair is safe.

    Args:
        deltas: shape (rows, T), values in [-1, 1].
        margin: null mean in (-1, 1).
        max_bet: fraction of the maximal safe bet 1/m (< 1 keeps K_t > 0); 0.75 as in
            Waudby-Smith & Ramdas. Measured by `bench/bench_gate.py`-style streams it
            beat 0.5 by ~20% fewer pairs on continuous deltas (the cap binds there).

    Returns:
        log K_t, shape (rows, T).
    """
    x = (deltas + 1.0) / 2.0
    m = (margin + 1.0) / 2.0
    rows, horizon = x.shape
    s1 = np.full(rows, 0.5)  # prior pseudo-observation for the mean
    s2 = np.full(rows, 0.25 + 0.25)  # sum of squares consistent with var 1/4
    count = 1.0
    logk = np.zeros(rows)
    out = np.empty((rows, horizon))
    cap = max_bet / m
    for t in range(horizon):
        mu = s1 / count
        var = np.maximum(s2 / count - mu**2, 1e-6)
        lam = np.clip((mu - m) / (var + (mu - m) ** 2), 0.0, cap)
        logk = logk + np.log1p(lam * (x[:, t] - m))
        out[:, t] = logk
        s1 = s1 + x[:, t]
        s2 = s2 + x[:, t] ** 2
        count += 1.0
    return out
