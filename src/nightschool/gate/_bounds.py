"""Betting bounds for the mean of scores in [0, 1], valid for any distribution.

The promotion gates map a paired delta d = candidate - incumbent in [-1, 1]
to x = (d + 1) / 2 in [0, 1] and bet against H0: E[x] <= m. The wealth

    K_t(m) = prod_{i <= t} (1 + lambda_i(m) * (x_i - m)),  lambda_i(m) in [0, cap / m],

is a nonnegative supermartingale with K_0 = 1 under H0 whenever each bet
lambda_i depends only on x_1 .. x_{i-1} ("predictable"). Ville's inequality
(Ville 1939) then gives P(exists t: K_t(m) >= 1/alpha) <= alpha, so rejecting
at the first such t is a level-alpha test at a fixed n, after every pair, or
at a stopping time, for *any* distribution on [0, 1] with mean <= m: no
normality, symmetry or median assumption. Inverting the test over m gives a
lower confidence bound for the mean (K_t(m) falls as m grows, so the bound is
found by bisection).

Bets are the predictable plug-in of Waudby-Smith & Ramdas (2023):
lambda_t = sqrt(2 log(1/alpha) / (h * var_{t-1})), clipped to [0, cap / m],
with the running mean and variance started from the priors 1/2 and 1/4.
`h` is the horizon: the sample size for a fixed-n bound, a planned stopping
time for the sequential gate, or t log(1 + t) for an open-ended
(anytime) e-process.

Sources:
    Waudby-Smith, I. & Ramdas, A. (2023). Estimating means of bounded random
    variables by betting. JRSS-B 86(1): the betting confidence sets ("hedged
    capital", Theorem 3; one-sided here) and the predictable plug-in bets.
    Ville, J. (1939). Étude critique de la notion de collectif.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

CAP = 0.75
"""Largest bet as a fraction of the safe maximum 1/m (Waudby-Smith & Ramdas use 1/2 or 3/4)."""
_BISECT_STEPS = 40


def plugin_bets(x: FloatArray, alpha: float, horizon: float | None) -> FloatArray:
    """Uncapped predictable plug-in bets for a sequence in [0, 1].

    Args:
        x: 1-D values in [0, 1], in the order they are bet on.
        alpha: one-sided level in (0, 1).
        horizon: sample size the bets are tuned for (> 0); `None` tunes bet t
            for t log(1 + t), the open-ended (anytime) choice.

    Returns:
        lambda_t >= 0, same shape as `x`; bet t uses only x[:t].
    """
    n = x.shape[0]
    count = np.arange(1, n + 1, dtype=np.float64)  # prior counts as one observation
    mean = (0.5 + np.cumsum(x)) / (count + 1.0)
    dev2 = (x - mean) ** 2
    var = (0.25 + np.concatenate(([0.0], np.cumsum(dev2)[:-1]))) / count
    scale = count * np.log1p(count) if horizon is None else np.full(n, float(horizon))
    bets: FloatArray = np.sqrt(2.0 * math.log(1.0 / alpha) / (scale * var))
    return bets


def max_log_wealth(x: FloatArray, m: float, bets: FloatArray, cap: float = CAP) -> float:
    """max_t log K_t(m) of the capped bets; 0 before any pair.

    Args:
        x: 1-D values in [0, 1].
        m: null mean in (0, 1).
        bets: uncapped bets from `plugin_bets`, same shape as `x`.
        cap: largest bet as a fraction of 1/m, in (0, 1).

    Returns:
        The running maximum of the log-wealth (>= 0; K_0 = 1).
    """
    lam = np.minimum(bets, cap / m)
    path = np.cumsum(np.log1p(lam * (x - m)))
    return max(0.0, float(path.max())) if path.size else 0.0


def betting_lower_bound(x: FloatArray, alpha: float, cap: float = CAP) -> float:
    """One-sided level-alpha lower confidence bound for the mean of x in [0, 1].

    inf {m : max_t K_t(m) < 1/alpha} with bets tuned for n = len(x); valid
    for any distribution on [0, 1] and iid (or conditionally mean-stationary)
    draws in the given order.

    Args:
        x: 1-D values in [0, 1].
        alpha: one-sided level in (0, 1).
        cap: largest bet as a fraction of 1/m.

    Returns:
        The bound in [0, 1] (0 when nothing can be rejected), to within 1e-12.
    """
    bets = plugin_bets(x, alpha, x.shape[0])
    target = math.log(1.0 / alpha)
    lo, hi = 0.0, 1.0
    if max_log_wealth(x, 1e-12, bets, cap) < target:
        return 0.0
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2
        if max_log_wealth(x, mid, bets, cap) >= target:
            lo = mid
        else:
            hi = mid
    return lo


class BettingProcess:
    """Incremental one-sided betting e-process for H0: E[x] <= m, x in [0, 1].

    Each `add` costs O(1); the log-wealth after t values equals
    `max_log_wealth`'s path with `plugin_bets(x, alpha, horizon)`.

    Args:
        m: null mean in (0, 1).
        alpha: level the bets are tuned for, in (0, 1).
        horizon: planned number of values (> 0), or `None` for open-ended bets.
        cap: largest bet as a fraction of 1/m.
    """

    def __init__(self, m: float, alpha: float, horizon: float | None, cap: float = CAP) -> None:
        self.m = m
        self.horizon = horizon
        self.max_bet = cap / m
        self._log_inv_alpha = math.log(1.0 / alpha)
        self._sum = 0.0
        self._dev2 = 0.0
        self.t = 0
        self.log_wealth = 0.0
        self.max_log_wealth = 0.0
        self.increments = 0.0  # sum of squared log-wealth increments (futility projection)

    def add(self, x: float) -> float:
        """Bet on one value in [0, 1]; return the new log-wealth."""
        t = self.t + 1
        var = (0.25 + self._dev2) / t
        scale = t * math.log1p(t) if self.horizon is None else self.horizon
        lam = min(math.sqrt(2.0 * self._log_inv_alpha / (scale * var)), self.max_bet)
        step = math.log1p(lam * (x - self.m))
        self.log_wealth += step
        self.increments += step * step
        self.max_log_wealth = max(self.max_log_wealth, self.log_wealth)
        self._sum += x
        self._dev2 += (x - (0.5 + self._sum) / (t + 1)) ** 2
        self.t = t
        return self.log_wealth

    def hopeless(self, max_t: int, z: float) -> bool:
        """Whether reaching 1/alpha by `max_t` values looks out of reach.

        Projects the log-wealth linearly: log K_t + (max_t - t) * (g + z * s / sqrt(t))
        < log(1/alpha), where g and s are the mean and sd of the increments
        so far (an optimistic growth rate, z standard errors above the
        observed one). A stop for futility only keeps the incumbent, so it
        cannot raise the false-promotion rate; it costs some power, which
        `bench/bench_gate.py` measures.
        """
        if self.t == 0:
            return False
        g = self.log_wealth / self.t
        s = math.sqrt(max(self.increments / self.t - g * g, 0.0))
        reach = self.log_wealth + (max_t - self.t) * (g + z * s / math.sqrt(self.t))
        return reach < self._log_inv_alpha
