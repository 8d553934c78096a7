"""Sequential promotion gate (betting e-process), safe to check after every pair.

`SequentialGate.update` takes one paired result at a time and answers a
`Verdict` the moment it can decide, else `None` (keep going). The evidence is
the wealth of a one-sided betting e-process for the mean score delta, bet on
x = (d + 1) / 2 in [0, 1] with the predictable plug-in bets of Waudby-Smith &
Ramdas (2023, "Estimating means of bounded random variables by betting",
JRSS-B 86(1)); see `_bounds`. Promotion happens when the wealth reaches
1/alpha. By Ville's inequality (Ville 1939) the chance that this ever happens
under H0: mean delta <= threshold is at most alpha for any distribution of
scores in [0, 1], however often one peeks — the guarantee confidence
sequences give (Howard et al. 2021, Ann. Statist. 49(2)).

With `GateConfig.max_pairs = N` the design is a truncated test: the bets are
tuned for N / 2 pairs (`HORIZON_FRACTION`), and the gate stops early for
futility (keeping the incumbent) once the projected wealth cannot plausibly
reach 1/alpha by N (`FUTILITY_Z`, from `FUTILITY_START`). Stopping to keep the
incumbent never raises the false-promotion rate. Without `max_pairs` the bets
are the open-ended (anytime) plug-in and the gate only ever stops to promote.
`bench/bench_gate.py` measures both against the fixed-n gate.
"""

from __future__ import annotations

import math

from nightschool.gate._bounds import BettingProcess
from nightschool.gate.promotion import GateConfig, PairedResult, Verdict, validate_pairs

__all__ = ["SequentialGate"]

HORIZON_FRACTION = 0.5
"""Bets are tuned for max_pairs * this many pairs. Measured by `bench/bench_gate.py`-style
streams (lifts 0.1 and 0.2, binary and continuous): 0.3 to 0.7 changed the expected pairs
at 80% power by under 5%; 1.0 (the fixed-n tuning) cost up to 10% more pairs."""
FUTILITY_Z = 2.0
"""Futility stop when log K_t + (N - t) (g + z s / sqrt(t)) < log(1/alpha), g and s the
mean and sd of the log-wealth increments so far. Measured: z = 2 cut the expected pairs
at 80% power by 5 to 15% against no futility stop; z = 0.5 or 1 lost too much binary power."""
FUTILITY_START = 0.2
"""No futility stop before max(10, max_pairs * this) pairs."""


class SequentialGate:
    """Sequential superiority gate for scores in [0, 1]; safe to check after every pair.

    Only `mode="superiority"` is supported: the cost savings are unbounded token
    counts, which a betting e-process cannot bet on without a bound.

    Args:
        config: gate settings; `alpha`, `threshold`, `min_pairs` and `max_pairs`
            are used (no promotion before `min_pairs` pairs; that cannot raise
            the error rate).

    Raises:
        ValueError: at construction for `mode="noninferiority_cheaper"`.
    """

    def __init__(self, config: GateConfig | None = None) -> None:
        self.config = config or GateConfig()
        if self.config.mode != "superiority":
            raise ValueError("SequentialGate supports mode='superiority' only")
        limit = self.config.max_pairs
        horizon = None if limit is None else max(1.0, HORIZON_FRACTION * limit)
        self._process = BettingProcess(
            (self.config.threshold + 1.0) / 2.0, self.config.alpha, horizon
        )
        self._ids: set[str] = set()
        self._lift_sum = 0.0
        self._saving_sum = 0.0
        self.verdict: Verdict | None = None

    @property
    def n(self) -> int:
        """Paired tasks seen so far."""
        return len(self._ids)

    def update(self, pair: PairedResult) -> Verdict | None:
        """Add one paired result; return a `Verdict` once the gate decides, else `None`.

        The verdict promotes once the e-value reaches 1/alpha (after at least
        `min_pairs` pairs). With `max_pairs` set it may also be a refusal: at
        `max_pairs` pairs, or earlier for futility. After a verdict, further
        updates return the same verdict.

        Raises:
            ValueError: on a duplicate task id, a non-finite value or a score outside [0, 1].
        """
        if self.verdict is not None:
            return self.verdict
        validate_pairs([pair])
        if pair.task_id in self._ids:
            raise ValueError(f"duplicate task_id {pair.task_id!r}")
        self._ids.add(pair.task_id)
        delta = pair.candidate_score - pair.incumbent_score
        self._lift_sum += delta
        self._saving_sum += pair.incumbent_cost - pair.candidate_cost
        log_k = self._process.add(min(1.0, max(0.0, (delta + 1.0) / 2.0)))
        cfg = self.config
        if self.n >= cfg.min_pairs and log_k >= math.log(1.0 / cfg.alpha):
            reason = (
                f"e-value {math.exp(log_k):.1f} >= 1/alpha = {1 / cfg.alpha:g} "
                "(Ville's inequality; anytime-valid)"
            )
            self.verdict = self._verdict(True, reason)
        elif cfg.max_pairs is not None and self.n >= cfg.max_pairs:
            self.verdict = self._verdict(False, self._short(f"reached max_pairs={cfg.max_pairs}"))
        elif cfg.max_pairs is not None and self._futile(cfg.max_pairs):
            self.verdict = self._verdict(False, self._short("futility stop"))
        return self.verdict

    def _futile(self, limit: int) -> bool:
        if self.n < max(10, math.ceil(FUTILITY_START * limit)):
            return False
        return self._process.hopeless(limit, FUTILITY_Z)

    def _short(self, why: str) -> str:
        best = math.exp(self._process.max_log_wealth)
        floor = f"; floor {self.config.min_pairs} pairs" if self.n < self.config.min_pairs else ""
        return (
            f"{why}: e-value peaked at {best:.2f} < 1/alpha = {1 / self.config.alpha:g} "
            f"after {self.n} pairs{floor}"
        )

    def _verdict(self, promote: bool, reason: str) -> Verdict:
        n = self.n
        return Verdict(
            promote=promote,
            reason=reason,
            n=n,
            test="betting-eprocess",
            lift=self._lift_sum / n if n else 0.0,
            ci_low=math.nan,
            ci_high=math.nan,
            p_value=min(1.0, math.exp(-self._process.max_log_wealth)),
            cost_savings=self._saving_sum / n if n else 0.0,
        )

    def conclude(self) -> Verdict:
        """The verdict when the pairs run out: the gate's verdict, or a refusal.

        Returns:
            `self.verdict` if the gate decided; otherwise a non-promoting
            `Verdict` with n, the mean lift, the anytime-valid p-value
            min(1, 1/max wealth) and the mean cost savings.
        """
        if self.verdict is not None:
            return self.verdict
        return self._verdict(False, self._short("no decision"))
