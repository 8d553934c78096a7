"""Fixed-n promotion gate: does a candidate strategy beat (or safely undercut) the incumbent?

Input is one `PairedResult` per holdout task, scores in [0, 1]. The gate picks
its test from the data and answers a `Verdict` that states its reason, n, the
lift with an interval and the paired cost savings. Every test below keeps its
one-sided level `alpha` for *any* distribution of scores in [0, 1] (pairs
drawn independently from a task population); none assumes normality,
symmetry, or that a median speaks for a mean.

Test selection (score deltas d = candidate - incumbent, margin = `threshold`
in superiority mode, `-tolerance` in non-inferiority mode):

* n < `min_pairs`: refused (minimum-evidence floor).
* all d identical (e.g. all ties): refused, a zero-width interval is no
  evidence of anything (exception: pass/fail pairs that all break the same
  way, e.g. 10 of 10 candidate-only wins, go to the exact McNemar test).
* pass/fail scores (all in {0, 1}): exact McNemar (1947) test, i.e. a
  one-sided binomial test of the b candidate-only wins against the c
  incumbent-only wins (H0: p10 <= p01, i.e. mean d <= 0). The interval on
  the lift p10 - p01 is Clopper–Pearson(b)_lower - Clopper–Pearson(c)_upper
  (Bonferroni, each at alpha/2: exact and conservative). With a non-zero
  margin the decision is that interval's bound against the margin.
* other scores in [0, 1]: a betting test of H0: mean d <= margin
  (Waudby-Smith & Ramdas 2023, JRSS-B 86(1); see `_bounds`). The deltas are
  mapped to x = (d + 1) / 2 in [0, 1] and bet on in a fixed order (sorted by
  task id, then shuffled with `seed`, so the caller's order does not matter);
  promote when the wealth reaches 1/alpha (Ville's inequality). The interval
  inverts the same test. Its price for holding on every bounded shape: small
  samples cannot promote unless the lift is large (at n = 10 no level-5% test
  valid for all [0, 1] scores can promote ten deltas of +0.3, since a null
  with atoms at 0 and 0.65 yields them with probability 0.073).

The former continuous tests failed the skewed bounded null of the "Trust"
issue (deltas +0.02 w.p. 0.98, -0.98 w.p. 0.02, mean 0): the sign test below
20 pairs (a median test) promoted 17.2% at n = 10, bootstrap-t with
Student-t 11.1% at n = 200. `bench/bench_gate.py` measures this gate on that
null and others.

Non-inferiority-and-cheaper is an intersection-union test (Berger 1982,
Technometrics 24(4)): score bound > -tolerance AND cheaper, each at level
alpha, with no multiplicity correction needed. Token costs are unbounded, so
no test of their mean holds for every distribution (Bahadur & Savage 1956);
"cheaper" is the exact sign test of P(saving > 0) > P(saving < 0) (ties
dropped), and its interval bounds the median saving. `cost_savings` still
reports the mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from nightschool.gate._bounds import betting_lower_bound, max_log_wealth, plugin_bets
from nightschool.gate._stats import (
    FloatArray,
    clopper_pearson,
    median_bounds,
    sign_test_pvalue,
)

__all__ = ["GateConfig", "PairedResult", "Verdict", "promotion_gate"]


@dataclass(frozen=True)
class PairedResult:
    """One holdout task played by both strategies.

    Attributes:
        task_id: unique task identifier.
        incumbent_score: incumbent's score in [0, 1] (pass/fail as 0/1, or a
            fraction such as tests passed).
        candidate_score: candidate's score on the same task, in [0, 1].
        incumbent_cost: incumbent's cost in tokens.
        candidate_cost: candidate's cost in tokens.
    """

    task_id: str
    incumbent_score: float
    candidate_score: float
    incumbent_cost: float = 0
    candidate_cost: float = 0


class GateConfig(BaseModel):
    """Settings of `promotion_gate` and `SequentialGate`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["superiority", "noninferiority_cheaper"] = "superiority"
    """`superiority`: lift > threshold; `noninferiority_cheaper`: lift > -tolerance and cheaper."""
    alpha: float = Field(default=0.05, gt=0.0, lt=0.5)
    """One-sided error rate (false promotion probability under the null)."""
    min_pairs: int = Field(default=6, ge=1)
    """Minimum-evidence floor: fewer paired tasks are always refused."""
    tolerance: float = Field(default=0.02, ge=0.0, lt=1.0)
    """Non-inferiority margin, in score units."""
    threshold: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Superiority margin, in score units (0: any real improvement)."""
    n_resamples: int = Field(default=2000, ge=100)
    """Unused since the betting test replaced the bootstrap; kept so old configs load."""
    seed: int = 0
    """Seed of the betting order's shuffle; the verdict is a pure function of (pairs, config)."""
    exact_below: int = Field(default=20, ge=1)
    """Unused since the betting test replaced the sign test; kept so old configs load."""
    max_pairs: int | None = Field(default=None, ge=1)
    """`SequentialGate` only: the most pairs it will see (its bets are tuned for it and it
    stops for futility); `None`: open-ended, anytime-valid bets and no futility stop."""


@dataclass(frozen=True)
class Verdict:
    """A gate's decision and its evidence.

    Attributes:
        promote: whether the candidate replaces the incumbent.
        reason: one sentence saying why.
        n: paired tasks considered.
        test: which test decided (`floor`, `zero-width`, `mcnemar-exact`,
            `betting`, `betting-eprocess`).
        lift: mean(candidate_score - incumbent_score).
        ci_low: lower bound on the lift (one-sided level alpha; nan if none).
        ci_high: upper bound on the lift (one-sided level alpha; nan if none).
        p_value: exact (McNemar) or e-value-based (betting: min(1, 1/max wealth))
            p-value where the test has one.
        cost_savings: mean(incumbent_cost - candidate_cost), tokens per task.
        cost_ci_low: lower bound on the median saving (nan if not computed).
        cost_ci_high: upper bound on the median saving (nan if not computed).
    """

    promote: bool
    reason: str
    n: int
    test: str
    lift: float
    ci_low: float
    ci_high: float
    p_value: float | None
    cost_savings: float
    cost_ci_low: float = math.nan
    cost_ci_high: float = math.nan

    def summary(self) -> str:
        """One line: decision, test, n, lift [interval], savings [interval], reason."""
        word = "PROMOTE" if self.promote else "keep incumbent"
        p = "" if self.p_value is None else f" p={self.p_value:.4g}"
        return (
            f"{word} ({self.test}, n={self.n}{p}): lift {self.lift:+.4f} "
            f"[{self.ci_low:+.4f}, {self.ci_high:+.4f}], cost savings "
            f"{self.cost_savings:+.1f} [{self.cost_ci_low:+.1f}, {self.cost_ci_high:+.1f}] "
            f"tokens/task; {self.reason}"
        )


def validate_pairs(pairs: Sequence[PairedResult]) -> None:
    """Reject duplicate task ids, non-finite numbers and scores outside [0, 1].

    Raises:
        ValueError: on a duplicate `task_id`, a NaN/inf score or cost, or a
            score outside [0, 1].
    """
    seen: set[str] = set()
    for pair in pairs:
        if pair.task_id in seen:
            raise ValueError(f"duplicate task_id {pair.task_id!r}")
        seen.add(pair.task_id)
        values = [pair.incumbent_score, pair.candidate_score]
        values += [pair.incumbent_cost, pair.candidate_cost]
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"non-finite score or cost for task {pair.task_id!r}")
        for s in (pair.incumbent_score, pair.candidate_score):
            if not 0.0 <= s <= 1.0:
                raise ValueError(f"score {s} of task {pair.task_id!r} outside [0, 1]")


@dataclass(frozen=True)
class _Bound:
    test: str
    low: float
    high: float
    p_value: float | None
    passes: bool


def _mcnemar(deltas: FloatArray, lift: float, margin: float, alpha: float) -> _Bound:
    n = deltas.shape[0]
    b = int(np.sum(deltas > 0))
    c = int(np.sum(deltas < 0))
    p = sign_test_pvalue(deltas, 0.0)
    b_lo, b_hi = clopper_pearson(b, n, alpha / 2)
    c_lo, c_hi = clopper_pearson(c, n, alpha / 2)
    low, high = b_lo - c_hi, b_hi - c_lo
    passes = p <= alpha and lift > 0.0 if margin == 0.0 else low > margin
    return _Bound("mcnemar-exact", low, high, p, passes)


def betting_order(pairs: Sequence[PairedResult], seed: int) -> list[int]:
    """Indices of `pairs` in the order the betting test bets on them.

    Sorted by task id (so the caller's order does not matter), then shuffled
    with `seed`: a data-independent order, which keeps iid pairs iid.
    """
    by_id = sorted(range(len(pairs)), key=lambda i: pairs[i].task_id)
    shuffle = np.random.default_rng(seed).permutation(len(pairs))
    return [by_id[int(j)] for j in shuffle]


def _betting(x: FloatArray, margin: float, alpha: float) -> _Bound:
    """Betting test of mean d <= margin on x = (d + 1) / 2, and its bounds on the lift."""
    m = (margin + 1.0) / 2.0
    log_k = max_log_wealth(x, m, plugin_bets(x, alpha, x.shape[0]))
    low = 2.0 * betting_lower_bound(x, alpha) - 1.0
    high = 1.0 - 2.0 * betting_lower_bound(1.0 - x, alpha)
    passes = log_k >= math.log(1.0 / alpha)
    return _Bound("betting", low, high, min(1.0, math.exp(-log_k)), passes)


def _cost_bound(savings: FloatArray, alpha: float) -> _Bound:
    if np.all(savings == savings[0]):
        s = float(savings[0])
        return _Bound("constant", s, s, None, s > 0.0)
    p = sign_test_pvalue(savings, 0.0)
    low, high = median_bounds(np.sort(savings), alpha)
    return _Bound("sign-exact", low, high, p, p <= alpha)


def promotion_gate(pairs: Sequence[PairedResult], config: GateConfig | None = None) -> Verdict:
    """Decide whether the candidate should replace the incumbent.

    Args:
        pairs: one result per distinct holdout task, scores in [0, 1]; not mutated.
        config: gate settings; default `GateConfig()` (superiority, alpha 0.05).

    Returns:
        A `Verdict`; a pure function of (pairs as a set, config).

    Raises:
        ValueError: on duplicate task ids, non-finite scores/costs or scores
            outside [0, 1].
    """
    config = config or GateConfig()
    validate_pairs(pairs)
    n = len(pairs)
    order = betting_order(pairs, config.seed)
    deltas = np.array(
        [pairs[i].candidate_score - pairs[i].incumbent_score for i in order], dtype=np.float64
    )
    savings = np.array([p.incumbent_cost - p.candidate_cost for p in pairs], dtype=np.float64)
    lift = float(deltas.mean()) if n else 0.0
    saving = float(savings.mean()) if n else 0.0

    def refuse(test: str, reason: str) -> Verdict:
        return Verdict(False, reason, n, test, lift, math.nan, math.nan, None, saving)

    if n < config.min_pairs:
        return refuse("floor", f"minimum-evidence floor: {n} < {config.min_pairs} paired tasks")
    scores = [s for p in pairs for s in (p.incumbent_score, p.candidate_score)]
    binary = all(s in (0.0, 1.0) for s in scores)
    superiority = config.mode == "superiority"
    # Identical deltas give a zero-width interval, except pass/fail pairs that
    # all break the same way (b = n or c = n), where McNemar is still exact, and
    # pass/fail pairs that all agree under non-inferiority: McNemar with no
    # discordant pair still bounds the loss exactly (Clopper-Pearson: below
    # 1 - (alpha/2)^(1/n), under a 0.02 tolerance from 183 pairs on).
    exact_ties = binary and (deltas[0] != 0.0 or not superiority)
    if np.all(deltas == deltas[0]) and not exact_ties:
        return refuse("zero-width", "zero-width interval: no evidence of variation")

    margin = config.threshold if superiority else -config.tolerance
    if binary:
        bound = _mcnemar(deltas, lift, margin, config.alpha)
    else:
        bound = _betting(np.clip((deltas + 1.0) / 2.0, 0.0, 1.0), margin, config.alpha)
    cost = _cost_bound(savings, config.alpha)

    if superiority:
        promote = bound.passes
        reason = (
            f"lift clears the superiority margin {margin:g} at alpha={config.alpha:g}"
            if promote
            else f"lift not shown above {margin:g} at alpha={config.alpha:g}"
        )
    else:
        promote = bound.passes and cost.passes
        if promote:
            reason = "non-inferior within tolerance and cheaper (intersection-union test)"
        elif not bound.passes:
            reason = f"non-inferiority not shown (tolerance {config.tolerance:g})"
        else:
            reason = "cheaper not shown (exact sign test on the paired savings)"
    return Verdict(
        promote=promote,
        reason=reason,
        n=n,
        test=bound.test,
        lift=lift,
        ci_low=bound.low,
        ci_high=bound.high,
        p_value=bound.p_value,
        cost_savings=saving,
        cost_ci_low=cost.low,
        cost_ci_high=cost.high,
    )
