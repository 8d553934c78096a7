"""The dream loop: self-play cycles aimed at the frontier.

One cycle: pick a cluster (frontier tracker, or the user's choice) → render a
template challenge at the cluster's tier → recall lessons and skills for it
(`nightschool.lessons.skills.recall`) → solve it in the sandbox → store the
trajectory and the frontier run in one transaction → a passing solution
becomes a skill, a failed or struggled one a candidate lesson; either is kept
as `verified` only when a controlled comparison through the promotion gate
says it helps (`nightschool.lessons.verify`).

Interrupt safety: nothing is written until the solve finishes, and the two
writes share one transaction, so an interrupt during the solve leaves the
cycle out entirely. A user turn (`Preempted`) after that write, in the
follow-up (keeping a skill, extracting a lesson), leaves the cycle stored with
its real verdict: `CycleCutShort` carries it to the caller, which counts it.
Infrastructure faults are stored as `unknown` trajectories with the
fault named and no frontier run, then raised so the caller can stop.

With `verify_share` the comparisons are held to that share of the run's time
(`nightschool.dream.budget`): a candidate that does not fit waits
(`nightschool.dream.queue`, kept across runs) and is verified after a later
cycle, or by a later run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nightschool.challenges import CLUSTERS, TIERS, Challenge, render, templates
from nightschool.dream.budget import VerificationBudget, earlier_dreams, record_dream_time
from nightschool.dream.frontier import FrontierTracker, SeedPick
from nightschool.dream.queue import PendingLesson, VerificationQueue
from nightschool.errors import ChallengeFaultError, UserError
from nightschool.llm.preempt import Preempted
from nightschool.solver.core import Solver, SolveResult
from nightschool.store import Store
from nightschool.trajectory import Outcome, new_id

SKILLS_K = 2
"""Skills shown per challenge at most (within the worked-examples token budget)."""

if TYPE_CHECKING:
    from nightschool.dream.sources import CurriculumSources
    from nightschool.lessons.extraction import ExtractionOutcome, LessonExtractor
    from nightschool.lessons.verify import PairedVerifier

DREAM_SEED_LIMIT = 1_000_000
"""Challenge seeds the dream renders lie in [0, this); verification and the
learning curve's held-out sets use seeds far above it, so they never overlap."""


@dataclass(frozen=True)
class SkillOutcome:
    """What became of a passing cycle's solution.

    Attributes:
        status: `written`, `reinforced`, `rejected` or `skipped`.
        skill_id: the skill written or reinforced, if any.
        verified: True when the controlled comparison promoted it.
        reason: one line saying why.
        comparison: the verification record, when one ran.
    """

    status: str
    skill_id: str | None = None
    verified: bool = False
    reason: str = ""
    comparison: dict[str, Any] | None = None
    waits: bool = False
    """The comparison waits for the verification budget (`DreamLoop(verify_share=...)`)."""
    earlier: bool = False
    """An earlier dream wrote the skill and left it waiting; this run ran its comparison."""


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
        skills_shown: ids of skills shown under `### WORKED EXAMPLES`.
        skill: what became of a passing solution (None when skills are off or
            the cycle failed).
        source: where the challenge came from: `template`, `journal`,
            `generated` or `rotation` (`nightschool.dream.sources`).
        skipped: why the cycle was not attempted, or None when it ran: the
            budget router's `stop` (no model call, no verdict). A skipped
            cycle is stored as an `unknown` trajectory (`extra["skipped"]`)
            with no frontier run, exposure, skill or lesson; it is neither a
            pass nor a failure of the agent.
        cut_short: the follow-up a user turn stopped after the trajectory was
            stored (`keeping the skill` or `lesson extraction`), else None. The
            verdict stands; idle time verifies the skill and reflects on the
            failure later.
        caught_up: comparisons of candidates that waited for the verification
            budget (this cycle's own too) and ran after this cycle, in the
            order they ran.
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
    skills_shown: tuple[str, ...] = ()
    skill: SkillOutcome | None = None
    source: str = "template"
    skipped: str | None = None
    cut_short: str | None = None
    caught_up: tuple[SkillOutcome | ExtractionOutcome, ...] = ()


class CycleCutShort(Preempted):
    """A user turn stopped a cycle after its trajectory and frontier run were stored.

    The solve had finished, so the stored verdict is real and the cycle counts
    as run: `cycle` is its result (`cycle.cut_short` names the follow-up that
    was stopped). A `Preempted` before that write is raised as it is, and
    nothing of the cycle is stored.
    """

    def __init__(self, cycle: CycleResult) -> None:
        verdict = "passed" if cycle.passed else "failed"
        super().__init__(
            f"after its {verdict} trajectory {cycle.trajectory_id[:12]} was stored, "
            f"during {cycle.cut_short}"
        )
        self.cycle = cycle


def not_attempted(result: SolveResult) -> str | None:
    """Why a solve made no attempt without a fault (the router's `stop`), else None."""
    if result.attempts > 0 or result.infrastructure_error is not None:
        return None
    routed = result.trajectory.extra.get("router")
    decision = routed.get("decision") if isinstance(routed, dict) else None
    if decision == "stop":
        return "the budget router said stop (predicted unsolvable at this budget)"
    return f"no attempt was made (router decision {decision!r})"


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
        skills: learn skills from passing solutions and show retrieved skills
            (needs the solver's playbook).
        lessons: show retrieved lessons to the solver (needs the playbook).
        verifier: runs the controlled comparison for new skills; None stores
            them unverified.
        exclude_templates: templates never practised (a held-out set's).
        sources: routes cycles to journal mining and generated challenges when
            the template bank has nothing left to teach
            (`nightschool.dream.sources`); None: template bank only. A
            cycle with `--cluster` or `--tier` always uses the bank.
        verify_share: hold verification to this share of the run's wall-clock
            time (`nightschool.dream.budget`): a candidate whose comparison
            does not fit waits (`nightschool.dream.queue`: kept in the store,
            so a later run verifies what this one leaves), and waiting ones
            are verified after later cycles, skills before lessons, each
            oldest first; the first cycle starts with the candidates earlier
            runs left. None verifies every candidate at once and loads none.

    Raises:
        ValueError: `verify_share` outside (0, 1].
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
        skills: bool = True,
        lessons: bool = True,
        verifier: PairedVerifier | None = None,
        exclude_templates: Collection[str] = (),
        sources: CurriculumSources | None = None,
        verify_share: float | None = None,
    ) -> None:
        self.budget = None if verify_share is None else VerificationBudget(verify_share)
        self.waiting = VerificationQueue(store, exclude_templates=exclude_templates)
        """Candidates whose comparison waits for the budget (loaded by the first cycle)."""
        self.resumed: tuple[int, int] | None = None
        """(candidates earlier runs left waiting, old lesson candidates dropped), once loaded."""
        self.sources = sources
        self.extractor = extractor
        self.skills = skills
        self.lessons = lessons
        self.verifier = verifier
        self.exclude_templates = frozenset(exclude_templates)
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
        """Render a random template of the picked cluster at the picked tier.

        Templates in `exclude_templates` are never picked.

        Raises:
            UserError: every template of the cluster is excluded.
        """
        allowed = [t for t in templates(pick.cluster) if t.name not in self.exclude_templates]
        if not allowed:
            raise UserError(f"every template of cluster {pick.cluster} is excluded")
        template = self.rng.choice(allowed)
        return render(template.name, pick.tier, self.rng.randrange(DREAM_SEED_LIMIT))

    def run_cycle(
        self,
        *,
        cluster: str | None = None,
        tier: str | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> CycleResult:
        """Run one cycle and store its trajectory (and frontier run when it counts).

        A cycle the budget router stops (`stop`: zero attempts) is skipped:
        stored as `unknown` with `extra["skipped"]`, no frontier run, and
        `CycleResult.skipped` says why.

        Raises:
            UserError: bad cluster or tier.
            InfrastructureError: the model server or sandbox failed; the
                trajectory was stored as `unknown` before raising.
            CycleCutShort: a user turn stopped the follow-up after the
                trajectory was stored; it carries the cycle's result.
            Preempted: a user turn stopped the cycle before anything was stored.
        """
        started = time.perf_counter()
        if self.budget is not None:
            self.budget.start()
            if self.resumed is None:
                self.budget.earlier = earlier_dreams(self.store)
                verifies_skills = self.skills and self.verifier is not None
                self.resumed = self.waiting.load(
                    self.solver.playbook if verifies_skills else None,
                    lessons=self.extractor is not None,
                )
        pick = self.choose(cluster=cluster, tier=tier)
        notify = on_event or (lambda _msg: None)
        source, source_reason = "template", ""
        sourced = None
        if self.sources is not None and cluster is None and tier is None:
            sourced = self.sources.choose(pick, self.tracker, on_event=notify)
            source, source_reason = sourced.source, sourced.reason
        if sourced is not None and sourced.challenge is not None:
            challenge = sourced.challenge
        else:
            challenge = self.next_challenge(pick)
        bank = challenge.source == "template"
        notify(f"{challenge.template} · {challenge.tier}")
        # function-local: start-up time (lessons.skills loads the playbook and numpy, ~300 ms;
        # exports and prompts import this module for DREAM_SEED_LIMIT)
        from nightschool.lessons.skills import recall

        memory = self.solver.playbook
        shown_memory = recall(
            memory,
            challenge,
            lessons_k=self.solver.config.lessons_k if self.lessons else 0,
            skills_k=SKILLS_K if self.skills else 0,
            exclude_templates=self.exclude_templates,
            exemplars_k=memory.config.exemplars_k if memory is not None and self.skills else 0,
        )
        result = self.solver.solve(
            challenge,
            session_id=self.session_id,
            on_event=on_event,
            lessons=shown_memory.lessons,
            skills=shown_memory.skill_sections,
            skill_ids=shown_memory.skill_ids,
        )
        skipped = not_attempted(result)
        extra = {
            **result.trajectory.extra,
            "pick_mode": pick.mode,
            "pick_reason": pick.reason,
            "challenge_source": source,
            "source_reason": source_reason,
        }
        update: dict[str, Any] = {"extra": extra}
        if skipped is not None:  # no attempt, no verdict: not the agent's failure
            extra["skipped"] = skipped
            update.update(outcome=Outcome.UNKNOWN, failure_reason=None)
        trajectory = result.trajectory.model_copy(update=update)
        lesson_ids = [str(i) for i in trajectory.extra.get("lessons_shown", [])]
        shown = lesson_ids + shown_memory.skill_ids
        with self.store.transaction():
            stored = self.store.append_trajectory(trajectory)
            if result.infrastructure_error is None and skipped is None:
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
                if shown and memory is not None:
                    memory.record_exposure(shown, stored.id)
                    memory.record_outcome(stored.id, result.passed)
        skill: SkillOutcome | None = None
        lesson: ExtractionOutcome | None = None
        caught_up: list[SkillOutcome | ExtractionOutcome] = []
        step: str | None = None  # the follow-up under way
        preempted: Preempted | None = None
        try:  # the cycle is stored: a user turn from here on cuts only its follow-up short
            if (
                self.skills
                and memory is not None
                and result.passed
                and result.infrastructure_error is None
            ):
                step = "keeping the skill"
                notify("keeping the solution as a skill")
                skill = self._learn_skill(challenge, result, stored.id, notify, verify=bank)
            # Verification renders fresh seeds of the challenge's template, which a
            # generated challenge does not have: no verified lessons from those yet.
            ran = result.infrastructure_error is None and skipped is None
            if self.extractor is not None and ran and bank:
                step = "lesson extraction"
                notify("extracting a lesson")
                lesson = self._lesson(challenge, result)
            if self.waiting and result.infrastructure_error is None:
                step = "verifying waiting candidates"
                self._catch_up(caught_up, notify)
            step = None
        except Preempted as exc:
            preempted = exc
        if self.budget is not None:
            record_dream_time(self.store, self.session_id, self.budget.unrecorded())
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
            lessons_shown=tuple(lesson_ids),
            lesson=lesson,
            skills_shown=tuple(shown_memory.skill_ids),
            skill=skill,
            source=source,
            skipped=skipped,
            cut_short=step,
            caught_up=tuple(caught_up),
        )
        if preempted is not None:
            raise CycleCutShort(cycle) from preempted
        if result.infrastructure_error is not None and not isinstance(
            result.infrastructure_error, ChallengeFaultError
        ):
            raise result.infrastructure_error
        return cycle

    def _learn_skill(
        self,
        challenge: Challenge,
        result: SolveResult,
        trajectory_id: str,
        notify: Callable[[str], None],
        *,
        verify: bool = True,
    ) -> SkillOutcome:
        """Store a passing solution as a skill, then verify it when it is new.

        `verify=False` (a generated challenge: no template to render fresh
        seeds from) keeps it unverified; it is recalled only for its own
        challenge, as every skill is only for its own template.
        """
        # function-local: start-up time (see run_cycle)
        from nightschool.lessons.skills import learn_skill, passing_code

        memory = self.solver.playbook
        code = passing_code(result.trajectory.tool_calls)
        if memory is None or code is None:
            return SkillOutcome("skipped", reason="no passing code on the trajectory")
        learned = learn_skill(memory, challenge, code, source_trajectory_id=trajectory_id)
        if (
            learned.status != "written"
            or learned.lesson_id is None
            or self.verifier is None
            or not verify
        ):
            return SkillOutcome(learned.status, learned.lesson_id, reason=learned.reason)
        if self._must_wait("skill"):
            self.waiting.add_skill(learned.lesson_id, challenge)
            return SkillOutcome(
                "written", learned.lesson_id, reason=self._wait_reason(), waits=True
            )
        return self._verify_skill(learned.lesson_id, challenge.prompt, notify)

    def _verify_skill(
        self, skill_id: str, exclude_prompt: str, notify: Callable[[str], None]
    ) -> SkillOutcome:
        """Run a stored skill's comparison and store its verdict (`SkillMemory.set_verified`)."""
        from nightschool.lessons.skills import verify_skill  # function-local: see run_cycle

        memory = self.solver.playbook
        skill = memory.get(skill_id) if memory is not None else None
        if memory is None or skill is None or self.verifier is None:
            return SkillOutcome("skipped", reason="the new skill vanished before verification")
        with self._timed():
            verification = verify_skill(
                self.verifier, skill, exclude_prompt=exclude_prompt, on_event=notify
            )
        record = verification.record()
        if verification.infrastructure_error is not None:
            memory.set_verified(skill.id, False, record)
            return SkillOutcome(
                "written", skill.id, False, "verification stopped by a fault", record
            )
        memory.set_verified(skill.id, verification.helps, record)
        reason = record["verdict"] or "no verdict"
        return SkillOutcome("written", skill.id, verification.helps, str(reason), record)

    def _lesson(self, challenge: Challenge, result: SolveResult) -> ExtractionOutcome:
        """Extract a lesson from the cycle; verify it now, or let it wait for the budget."""
        extractor = self.extractor
        assert extractor is not None  # the caller checked
        if self.budget is None or (result.passed and result.attempts == 1):
            return extractor.extract(challenge, result, session_id=self.session_id)
        proposed = extractor.propose(challenge, result)
        if proposed.status != "proposed" or proposed.candidate is None:
            return proposed
        pending = PendingLesson.of(challenge, proposed.candidate, result)
        if self._must_wait("lesson"):
            self.waiting.add_lesson(pending)
            return replace(proposed, status="waiting", reason=self._wait_reason())
        with self._timed():
            return self._settle(pending)

    def _catch_up(
        self, done: list[SkillOutcome | ExtractionOutcome], notify: Callable[[str], None]
    ) -> None:
        """Verify waiting candidates while the budget allows; append to `done`.

        Skills go first, then lessons, each oldest first (`queue.WAIT_ORDER`). A
        candidate leaves the queue only when its comparison finished, so a
        user turn (`Preempted`) or a fault leaves it waiting.
        """
        while self.budget is not None and self.budget.allows():
            item = self.waiting.next()
            if item is None:
                return
            notify(f"verifying a waiting {item.kind} from {item.template}")
            if item.skill_id is not None:
                verified = self._verify_skill(item.skill_id, item.exclude_prompt, notify)
                done.append(replace(verified, earlier=item.earlier))
            elif item.lesson is not None:
                with self._timed():
                    done.append(self._settle(item.lesson))
            self.waiting.done(item)

    def _settle(self, pending: PendingLesson) -> ExtractionOutcome:
        """Run a waiting lesson's comparison (`LessonExtractor.settle`)."""
        assert self.extractor is not None  # lessons wait (and load) only with an extractor
        return self.extractor.settle(
            pending.challenge,
            pending.candidate,
            passed=pending.passed,
            attempts=pending.attempts,
            trajectory_id=pending.trajectory_id,
        )

    def _must_wait(self, kind: str) -> bool:
        """Whether a new candidate of `kind` waits: the budget says no, or one goes before it."""
        if self.budget is None:
            return False
        return self.waiting.ahead_of(kind) or not self.budget.allows()

    def _timed(self) -> AbstractContextManager[None]:
        """The budget's clock around a comparison (nothing without a budget)."""
        return nullcontext() if self.budget is None else self.budget.timed()

    def _wait_reason(self) -> str:
        assert self.budget is not None  # only asked once `_must_wait` said so
        return self.budget.why_wait()

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
        (the tier unlocked now), `infra_errors` and `skipped` (cycles the
        router stopped: not runs, so neither passes nor failures).
    """
    rows: list[dict[str, object]] = []
    for cluster in CLUSTERS:
        every = [r for r in results if r.cluster == cluster]
        mine = [r for r in every if r.skipped is None]
        if not every:
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
                "skipped": len(every) - len(mine),
            }
        )
    return rows
