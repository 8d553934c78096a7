"""The dream loop: self-play cycles aimed at the frontier.

One cycle: pick a cluster (frontier tracker, or the user's choice) → render a
template challenge at the cluster's tier → solve it in the sandbox → store the
trajectory and the frontier run in one transaction.

Interrupt safety: nothing is written until the solve finishes, and the two
writes share one transaction, so Ctrl-C leaves the interrupted cycle out
entirely. Infrastructure faults are stored as `unknown` trajectories with the
fault named and no frontier run, then raised so the caller can stop.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nightschool.challenges import CLUSTERS, TIERS, Challenge, render, templates
from nightschool.errors import ChallengeFaultError, UserError
from nightschool.selfplay.frontier import FrontierTracker, SeedPick
from nightschool.selfplay.solver import Solver
from nightschool.store import Store
from nightschool.trajectory import new_id

if TYPE_CHECKING:
    from nightschool.selfplay.lessons import ExtractionOutcome, LessonExtractor


@dataclass(frozen=True)
class CycleResult:
    """What one dream cycle did.

    Attributes:
        cluster, tier, template, seed: the challenge that was practised.
        pick: how the cluster was chosen.
        passed: the solver passed the validator.
        attempts: attempts used.
        trajectory_id: id of the stored trajectory.
        duration_s: wall-clock seconds for the cycle.
        infrastructure_error: fault text if the cycle ended on one, else None.
        lessons_shown: ids of playbook lessons shown to the solver.
        lesson: what lesson extraction did (None when extraction is off).
    """

    cluster: str
    tier: str
    template: str
    seed: int
    pick: SeedPick
    passed: bool
    attempts: int
    trajectory_id: str
    duration_s: float
    infrastructure_error: str | None = None
    lessons_shown: tuple[str, ...] = ()
    lesson: ExtractionOutcome | None = None


class DreamLoop:
    """Runs self-play cycles and records them.

    Args:
        store: the open database.
        solver: the solver (model + sandbox).
        tracker: the frontier tracker over the same store.
        rng: source of cluster, template and challenge-seed choices; seed it for
            a reproducible run.
        session_id: recorded on every trajectory of this run.
        extractor: turns failed or struggled cycles into verified lessons; None
            skips lesson extraction.
    """

    def __init__(
        self,
        store: Store,
        solver: Solver,
        tracker: FrontierTracker,
        *,
        rng: random.Random | None = None,
        session_id: str | None = None,
        extractor: LessonExtractor | None = None,
    ) -> None:
        self.extractor = extractor
        self.store = store
        self.solver = solver
        self.tracker = tracker
        self.rng = rng or random.Random()
        self.session_id = session_id or f"dream-{new_id()[:12]}"

    def choose(self, *, cluster: str | None = None, tier: str | None = None) -> SeedPick:
        """Decide where the next cycle practises, honouring user overrides.

        Raises:
            UserError: unknown cluster or tier.
        """
        if cluster is not None and cluster not in CLUSTERS:
            raise UserError(f"unknown cluster {cluster!r}; choose one of {', '.join(CLUSTERS)}")
        if tier is not None and tier not in TIERS:
            raise UserError(f"unknown tier {tier!r}; choose one of {', '.join(TIERS)}")
        if cluster is None:
            pick = self.tracker.pick_seed(self.rng)
        else:
            pick = SeedPick(
                cluster, self.tracker.difficulty_tier(cluster), "user", "chosen with --cluster"
            )
        if tier is not None:
            pick = SeedPick(pick.cluster, tier, pick.mode, f"{pick.reason}; tier from --tier")
        return pick

    def next_challenge(self, pick: SeedPick) -> Challenge:
        """Render a random template of the picked cluster at the picked tier."""
        template = self.rng.choice(templates(pick.cluster))
        return render(template.name, pick.tier, self.rng.randrange(1_000_000))

    def run_cycle(
        self,
        *,
        cluster: str | None = None,
        tier: str | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> CycleResult:
        """Run one cycle and store its trajectory (and frontier run when it counts).

        Raises:
            UserError: bad cluster or tier.
            InfrastructureError: the model server or sandbox failed; the
                trajectory was stored as `unknown` before raising.
        """
        started = time.perf_counter()
        pick = self.choose(cluster=cluster, tier=tier)
        challenge = self.next_challenge(pick)
        notify = on_event or (lambda _msg: None)
        notify(f"{challenge.template} · {challenge.tier}")
        result = self.solver.solve(challenge, session_id=self.session_id, on_event=on_event)
        trajectory = result.trajectory.model_copy(
            update={
                "extra": {
                    **result.trajectory.extra,
                    "pick_mode": pick.mode,
                    "pick_reason": pick.reason,
                }
            }
        )
        shown = [str(i) for i in trajectory.extra.get("lessons_shown", [])]
        with self.store.transaction():
            stored = self.store.append_trajectory(trajectory)
            if result.infrastructure_error is None:
                self.tracker.record_run(
                    cluster=challenge.cluster,
                    template=challenge.template,
                    tier=challenge.tier,
                    seed=challenge.seed,
                    challenge_hash=challenge.challenge_hash,
                    passed=result.passed,
                    attempts=result.attempts,
                    tool_errors=result.tool_errors,
                    trajectory_id=stored.id,
                )
                if shown and self.solver.playbook is not None:
                    self.solver.playbook.record_exposure(
                        shown, stored.id, stored.extra.get("lesson_scores")
                    )
                    self.solver.playbook.record_outcome(stored.id, result.passed)
        lesson = None
        if self.extractor is not None and result.infrastructure_error is None:
            notify("extracting a lesson")
            lesson = self.extractor.extract(challenge, result, session_id=self.session_id)
        cycle = CycleResult(
            cluster=challenge.cluster,
            tier=challenge.tier,
            template=challenge.template,
            seed=challenge.seed,
            pick=pick,
            passed=result.passed,
            attempts=result.attempts,
            trajectory_id=stored.id,
            duration_s=time.perf_counter() - started,
            infrastructure_error=stored.infrastructure_error,
            lessons_shown=tuple(shown),
            lesson=lesson,
        )
        if result.infrastructure_error is not None and not isinstance(
            result.infrastructure_error, ChallengeFaultError
        ):
            raise result.infrastructure_error
        return cycle

    def run(
        self,
        cycles: int,
        *,
        cluster: str | None = None,
        tier: str | None = None,
        on_cycle: Callable[[int, CycleResult], None] | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> Sequence[CycleResult]:
        """Run `cycles` cycles back to back; see `run_cycle` for errors.

        A broken challenge (`ChallengeFaultError`) is recorded and skipped; any
        other infrastructure error stops the run.
        """
        if cycles < 1:
            raise UserError("--cycles must be at least 1")
        results: list[CycleResult] = []
        for index in range(cycles):
            cycle = self.run_cycle(cluster=cluster, tier=tier, on_event=on_event)
            results.append(cycle)
            if on_cycle is not None:
                on_cycle(index, cycle)
        return results


def summarize(results: Sequence[CycleResult], tracker: FrontierTracker) -> list[dict[str, object]]:
    """Per-cluster summary rows: runs, passes, mean attempts, current tier.

    Returns:
        One dict per cluster that ran, in cluster order, with keys `cluster`,
        `runs`, `passes`, `attempts` (mean attempts per counted run), `tier`
        (the tier unlocked now) and `infra_errors`.
    """
    rows: list[dict[str, object]] = []
    for cluster in CLUSTERS:
        mine = [r for r in results if r.cluster == cluster]
        if not mine:
            continue
        counted = [r for r in mine if r.infrastructure_error is None]
        rows.append(
            {
                "cluster": cluster,
                "runs": len(mine),
                "passes": sum(r.passed for r in mine),
                "attempts": (sum(r.attempts for r in counted) / len(counted)) if counted else 0.0,
                "tier": tracker.difficulty_tier(cluster),
                "infra_errors": len(mine) - len(counted),
            }
        )
    return rows
