"""Anytime-valid sequential promotion gate (betting e-process).

`SequentialGate.update` takes one paired result at a time and answers a
`Verdict` the moment the evidence suffices, else `None` (keep going). The
evidence is the wealth of a one-sided aGRAPA betting e-process for the mean
score delta (Waudby-Smith & Ramdas 2023, "Estimating means of bounded random
variables by betting"); promotion happens when the wealth reaches 1/alpha.
By Ville's inequality (Ville 1939) the chance that this ever happens under
H0: mean delta <= threshold is at most alpha, however often one peeks — the
same guarantee confidence sequences give (Howard et al. 2021, "Time-uniform,
nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49(2)).
"""

from __future__ import annotations

import math

import numpy as np

from nightschool.evolution._stats import betting_log_wealth
from nightschool.evolution.gate import GateConfig, PairedResult, Verdict, validate_pairs

__all__ = ["SequentialGate"]


class SequentialGate:
    """Sequential superiority gate; safe to check after every pair.

    Scores must lie in [0, 1] (so deltas lie in [-1, 1]). Only
    `mode="superiority"` is supported: the cost savings are unbounded token
    counts, which a betting e-process cannot bet on without a bound.

    Args:
        config: gate settings; `alpha`, `threshold` and `min_pairs` are used
            (no promotion before `min_pairs` pairs; that cannot raise the
            error rate).

    Raises:
        ValueError: at construction for `mode="noninferiority_cheaper"`.
    """

    def __init__(self, config: GateConfig | None = None) -> None:
        self.config = config or GateConfig()
        if self.config.mode != "superiority":
            raise ValueError("SequentialGate supports mode='superiority' only")
        self._pairs: list[PairedResult] = []
        self._max_log_wealth = 0.0
        self.verdict: Verdict | None = None

    @property
    def n(self) -> int:
        """Paired tasks seen so far."""
        return len(self._pairs)

    def update(self, pair: PairedResult) -> Verdict | None:
        """Add one paired result; return a promoting `Verdict` once the e-value >= 1/alpha.

        After a verdict, further updates return the same verdict.

        Raises:
            ValueError: on a duplicate task id, a non-finite value or a score outside [0, 1].
        """
        if self.verdict is not None:
            return self.verdict
        for s in (pair.incumbent_score, pair.candidate_score):
            if not 0.0 <= s <= 1.0:
                raise ValueError(f"score {s} of task {pair.task_id!r} outside [0, 1]")
        validate_pairs([*self._pairs, pair])
        self._pairs.append(pair)
        deltas = np.array(
            [[p.candidate_score - p.incumbent_score for p in self._pairs]], dtype=np.float64
        )
        log_k = float(betting_log_wealth(deltas, self.config.threshold)[0, -1])
        self._max_log_wealth = max(self._max_log_wealth, log_k)
        if self.n < self.config.min_pairs or log_k < math.log(1.0 / self.config.alpha):
            return None
        savings = [p.incumbent_cost - p.candidate_cost for p in self._pairs]
        self.verdict = Verdict(
            promote=True,
            reason=(
                f"e-value {math.exp(log_k):.1f} >= 1/alpha = {1 / self.config.alpha:g} "
                "(Ville's inequality; anytime-valid)"
            ),
            n=self.n,
            test="betting-eprocess",
            lift=float(deltas.mean()),
            ci_low=math.nan,
            ci_high=math.nan,
            p_value=min(1.0, math.exp(-self._max_log_wealth)),
            cost_savings=float(np.mean(savings)),
        )
        return self.verdict

    def conclude(self) -> Verdict:
        """The verdict when the pairs run out: the promoting one, or a refusal.

        Returns:
            `self.verdict` if the e-process crossed 1/alpha; otherwise a
            non-promoting `Verdict` with n, the mean lift, the anytime-valid
            p-value min(1, 1/max wealth) and the mean cost savings.
        """
        if self.verdict is not None:
            return self.verdict
        deltas = [p.candidate_score - p.incumbent_score for p in self._pairs]
        savings = [p.incumbent_cost - p.candidate_cost for p in self._pairs]
        best = math.exp(self._max_log_wealth)
        floor = f"; floor {self.config.min_pairs} pairs" if self.n < self.config.min_pairs else ""
        return Verdict(
            promote=False,
            reason=(
                f"e-value peaked at {best:.2f} < 1/alpha = {1 / self.config.alpha:g} "
                f"after {self.n} pairs{floor}"
            ),
            n=self.n,
            test="betting-eprocess",
            lift=float(np.mean(deltas)) if deltas else 0.0,
            ci_low=math.nan,
            ci_high=math.nan,
            p_value=min(1.0, 1.0 / best),
            cost_savings=float(np.mean(savings)) if savings else 0.0,
        )
