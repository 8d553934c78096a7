"""Verification's share of dream time: a budget, and the candidates that wait for it.

A dream cycle's controlled comparison (`nightschool.lessons.verify`) costs
about two single-attempt solves even at the gate's floor, while the cycle
itself costs one attempt (a first-try pass) to three plus a lesson extraction
(a failure). On the frontier's curriculum verification took 33% of dream time
over 24 cycles and 40% over 8 (`bench/bench_throughput.py --parts dream
--cluster ''`, session 31), against issue 27's target of 25%.

`VerificationBudget(share)` holds verification to `share` of the run's
wall-clock time: before a comparison starts, the budget asks whether its
expected cost still fits; when it does not, the candidate waits
(`nightschool.dream.queue`) and the dream loop verifies waiting candidates
after later cycles, once the practice time has made room: skills first, then
lessons, each oldest first. What still waits when the run ends is kept (a
skill stored unverified, as every skill is before its comparison; a lesson
candidate in `pending_lessons`, never shown) and verified by a later run.

Nothing is ever verified on weaker evidence: a comparison that runs is the
same comparison; the budget only decides when it runs, or that it does not
run in this dream.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["PRIOR_COMPARISON_S", "VerificationBudget"]

PRIOR_COMPARISON_S = 15.0
"""Expected seconds of one comparison before any was timed in this run: measured
340 s over 23 comparisons (14.8 s) on the curriculum, Qwen2.5-Coder-1.5B, 2 cores
(`bench/results/throughput/dream-curriculum24-prior-qwen2.5-coder-1.5b.json`)."""


class VerificationBudget:
    """Holds verification to a share of a run's wall-clock time.

    Args:
        share: the largest fraction of the run's time verification may take,
            in (0, 1]; 1 never makes a candidate wait.
        clock: seconds, monotonic (`time.perf_counter`; a fake one in tests).

    Raises:
        ValueError: `share` outside (0, 1].
    """

    def __init__(self, share: float, *, clock: Callable[[], float] = time.perf_counter) -> None:
        if not 0.0 < share <= 1.0:
            raise ValueError(f"verification share must be in (0, 1], got {share}")
        self.share = share
        self._clock = clock
        self._started: float | None = None
        self.spent_s = 0.0
        """Seconds spent in comparisons so far."""
        self.comparisons = 0
        """Comparisons timed so far."""

    def start(self) -> None:
        """Start the run's clock (the first call only; later calls change nothing)."""
        if self._started is None:
            self._started = self._clock()

    @property
    def elapsed_s(self) -> float:
        """Seconds since `start` (0 before it)."""
        return 0.0 if self._started is None else self._clock() - self._started

    @property
    def expected_s(self) -> float:
        """Expected seconds of the next comparison: this run's mean, else `PRIOR_COMPARISON_S`."""
        return self.spent_s / self.comparisons if self.comparisons else PRIOR_COMPARISON_S

    def allows(self) -> bool:
        """Whether a comparison of the expected cost fits: spent + c <= share * (elapsed + c)."""
        cost = self.expected_s
        return self.spent_s + cost <= self.share * (self.elapsed_s + cost) + 1e-9

    @contextmanager
    def timed(self) -> Iterator[None]:
        """Charge the wall-clock time of the block to verification (also when it raises)."""
        begun = self._clock()
        try:
            yield
        finally:
            self.spent_s += self._clock() - begun
            self.comparisons += 1

    def used_share(self) -> float:
        """Verification's share of the run's time so far (0 before any time has passed)."""
        elapsed = self.elapsed_s
        return self.spent_s / elapsed if elapsed > 0 else 0.0
