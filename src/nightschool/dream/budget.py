"""Verification's share of dream time: a budget, and the candidates that wait for it.

A dream cycle's controlled comparison (`nightschool.lessons.verify`) costs
about two single-attempt solves even at the gate's floor, while the cycle
itself costs one attempt (a first-try pass) to three plus a lesson extraction
(a failure). On the frontier's curriculum verification took 33% of dream time
over 24 cycles and 40% over 8 (`bench/bench_throughput.py --parts dream
--cluster ''`, session 31), against issue 27's target of 25%.

`VerificationBudget(share)` holds verification to `share` of dream time,
this run's and, through the `verification_ledger` table, that of earlier runs
within a day (`LEDGER_WINDOW_S`), so that short runs share one budget. Before
a comparison starts, the budget asks whether its expected cost still fits;
when it does not, the candidate waits
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
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nightschool.store import Store

__all__ = [
    "LEDGER_WINDOW_S",
    "PRIOR_COMPARISON_S",
    "Ledger",
    "VerificationBudget",
    "earlier_dreams",
    "record_dream_time",
]

PRIOR_COMPARISON_S = 15.0
"""Expected seconds of one comparison before any was timed in this run: measured
340 s over 23 comparisons (14.8 s) on the curriculum, Qwen2.5-Coder-1.5B, 2 cores
(`bench/results/throughput/dream-curriculum24-prior-qwen2.5-coder-1.5b.json`)."""


LEDGER_WINDOW_S = 86_400.0
"""Earlier dreams count toward a run's budget for this long after they ran (a day).
A run of the default 3 cycles lasts 30-300 s, less than the 45 s of practice
that make room for a first 15 s comparison at a 25% share, so a budget that
started from nothing in every run would leave the candidates of every short
run waiting (`nightschool dream` twice in a fresh home on Qwen2.5-Coder-1.5B:
3 fast cycles in 30 s verified nothing). Within the window the share holds over
all dreaming; older time neither lends room nor owes it."""


@dataclass(frozen=True)
class Ledger:
    """Dream and verification time of earlier runs (`verification_ledger`, migration m014).

    Attributes:
        elapsed_s: seconds of dreaming (cycles and their comparisons).
        spent_s: of those, seconds of comparisons.
        comparisons: comparisons timed.
    """

    elapsed_s: float = 0.0
    spent_s: float = 0.0
    comparisons: int = 0


def earlier_dreams(store: Store, *, window_s: float = LEDGER_WINDOW_S) -> Ledger:
    """The ledger's sums over rows written in the last `window_s` seconds (epoch clock)."""
    [(elapsed, spent, comparisons)] = store.query(
        "SELECT COALESCE(SUM(elapsed_s), 0), COALESCE(SUM(verification_s), 0), "
        "COALESCE(SUM(comparisons), 0) FROM verification_ledger WHERE ended_at >= ?",
        (time.time() - window_s,),
    )
    return Ledger(float(elapsed), float(spent), int(comparisons))


def record_dream_time(store: Store, session_id: str, part: Ledger) -> None:
    """Append a stretch of this run's dreaming to the ledger (nothing when it is empty)."""
    if part.elapsed_s <= 0 and part.comparisons == 0:
        return
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO verification_ledger (ended_at, session_id, elapsed_s, verification_s, "
            "comparisons) VALUES (?, ?, ?, ?, ?)",
            (time.time(), session_id, max(0.0, part.elapsed_s), part.spent_s, part.comparisons),
        )


class VerificationBudget:
    """Holds verification to a share of dream time: this run's and earlier runs' (`earlier`).

    Args:
        share: the largest fraction of the run's time verification may take,
            in (0, 1]; 1 never makes a candidate wait.
        clock: seconds, monotonic (`time.perf_counter`; a fake one in tests).
        earlier: dreaming of earlier runs within `LEDGER_WINDOW_S`
            (`earlier_dreams`); it counts as if this run had begun with it.

    Raises:
        ValueError: `share` outside (0, 1].
    """

    def __init__(
        self,
        share: float,
        *,
        clock: Callable[[], float] = time.perf_counter,
        earlier: Ledger = Ledger(),
    ) -> None:
        if not 0.0 < share <= 1.0:
            raise ValueError(f"verification share must be in (0, 1], got {share}")
        self.share = share
        self.earlier = earlier
        self._clock = clock
        self._started: float | None = None
        self.spent_s = 0.0
        """Seconds spent in comparisons so far in this run."""
        self.comparisons = 0
        """Comparisons timed so far in this run."""
        self._recorded = Ledger()

    def start(self) -> None:
        """Start the run's clock (the first call only; later calls change nothing)."""
        if self._started is None:
            self._started = self._clock()

    @property
    def elapsed_s(self) -> float:
        """Seconds since `start` (0 before it)."""
        return 0.0 if self._started is None else self._clock() - self._started

    def total(self) -> Ledger:
        """This run's dreaming so far plus `earlier`'s: what the share is held over."""
        return Ledger(
            self.elapsed_s + self.earlier.elapsed_s,
            self.spent_s + self.earlier.spent_s,
            self.comparisons + self.earlier.comparisons,
        )

    @property
    def expected_s(self) -> float:
        """Expected seconds of the next comparison (mean so far, else `PRIOR_COMPARISON_S`).

        The mean is over this run's comparisons and `earlier`'s.
        """
        total = self.total()
        return total.spent_s / total.comparisons if total.comparisons else PRIOR_COMPARISON_S

    def allows(self) -> bool:
        """Whether a comparison of the expected cost fits: spent + c <= share * (elapsed + c).

        `spent` and `elapsed` are `total()`'s: this run's and `earlier`'s.
        """
        cost, total = self.expected_s, self.total()
        return total.spent_s + cost <= self.share * (total.elapsed_s + cost) + 1e-9

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

    def unrecorded(self) -> Ledger:
        """This run's dreaming since the last call (the whole run at the first).

        What the dream loop appends to the ledger after a cycle (`record_dream_time`).
        """
        now = Ledger(self.elapsed_s, self.spent_s, self.comparisons)
        done, self._recorded = self._recorded, now
        return Ledger(
            now.elapsed_s - done.elapsed_s,
            now.spent_s - done.spent_s,
            now.comparisons - done.comparisons,
        )

    def why_wait(self) -> str:
        """Why a new candidate waits: no room, or older candidates go first (one sentence)."""
        if self.allows():
            return "older waiting candidates are verified first (skills before lessons)"
        total = self.total()
        return (
            f"a comparison (about {self.expected_s:.0f} s) would take verification past "
            f"{self.share:.0%} of dream time ({total.spent_s:.0f} s of {total.elapsed_s:.0f} s "
            "so far)"
        )
