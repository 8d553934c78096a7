"""Controlled verification: does a lesson or skill help, measured with a control arm?

The same `k` fresh renderings of a template (new seeds, never the challenge the
candidate came from) are solved twice — with only the candidate shown, and
with nothing shown — and the paired pass/fail results go through the
promotion gate (`nightschool.strategies.promotion_gate`: exact McNemar for
pass/fail pairs, one-sided alpha 5%). The candidate is `verified` only when the
gate promotes. This replaces the prior system's single noisy re-run of the
same challenge without a control arm (seed 000 `_verify_lesson_helpful`),
which could not tell a helpful lesson from sampling luck.

Cost, in model calls: at most `k` for the control arm plus at most `k` for the
candidate arm; each arm solves with a single attempt (pass@1). The control
arm's result on a rendering does not depend on the candidate, so it is solved
once and reused by every later comparison on that rendering: within a run
(cached per template, tier and seed) and across runs (read back from the
store's control trajectories whose `control_key` matches: the same model,
solver settings, system prompt and rendering, `control_key`). Reused controls
also let curtailment stop earlier, before any solve.

Curtailment: before each rendering the verifier asks the gate whether it could
still promote if every unknown outcome went the candidate's way (an unsolved
control fails, an unsolved candidate passes). When even that best case is
refused, the comparison stops: the full run could only have been refused too,
so the verdict is the same and the remaining solves are saved. With k = 6 and
pass/fail pairs, the second rendering that is not a candidate-only win ends
it (5 wins and no loss are needed). Measured on the 0.5B model, a failed
dream cycle's lesson verification took 12 solves (about 6.5 minutes) before.

Deferral: a rendering is a candidate-only win only when the candidate passes
and the control fails, so one arm's result can settle that it is not one (a
failing candidate, a passing control). Each rendering solves first the arm
likelier to settle it (the candidate while the template's estimated pass rate
is at most 1/2: a rendering then costs 1 + P(pass) solves instead of 2), and
the other arm only when the verdict could depend on it (`_settle`). A lesson
from a failed cycle, on a template the model mostly fails, is then refused
after two candidate solves instead of two controls and two candidates.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nightschool.challenges import Challenge, render
from nightschool.errors import ChallengeFaultError
from nightschool.gate import GateConfig, PairedResult, Verdict, promotion_gate
from nightschool.lessons._task_key import prompt_sha
from nightschool.playbook import RetrievedLesson
from nightschool.solver.core import SYSTEM_PROMPT, Solver, SolveResult
from nightschool.store import Store
from nightschool.trajectory import Outcome, Trajectory

VERIFY_SEED_BASE = 500_000_000
"""Verification renders seeds from here up; the dream renders seeds below 1,000,000
and the learning curve's held-out sets start at 1,000,000,000, so the three never meet."""

DEFAULT_K = 6
"""Fresh renderings per comparison: the gate's minimum-evidence floor (6 pairs).
With pass/fail pairs the exact McNemar test then promotes only on 5 or more
candidate-only wins and none the other way (p = 1/32): a strong, honest bar."""


ORDERS = ("adaptive", "control-first")
"""`PairedVerifier`'s orders of the arms within a rendering."""


@dataclass(frozen=True)
class Arm:
    """One arm's results, per seed (True: passed), with its cost in tokens."""

    passed: dict[int, bool] = field(default_factory=dict)
    tokens: dict[int, int] = field(default_factory=dict)
    trajectory_ids: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Verification:
    """The paired comparison behind a `verified` flag.

    Attributes:
        template, tier: where the renderings came from.
        seeds: the fresh seeds, in order.
        with_candidate, without: pass/fail per seed solved in that arm (a seed
            left unsolved by curtailment or a broken rendering is absent).
        verdict: the promotion gate's decision on the pairs (candidate vs control).
        duration_s: wall-clock seconds spent.
        curtailed: renderings left unsolved because the gate could no longer
            promote (0: every rendering was solved).
        infrastructure_error: set when a fault stopped the comparison (no verdict
            is then trusted: `helps` is False).
        deferred: renderings solved in one arm only, because that arm's result
            already made them no candidate-only win (the control passed or the
            candidate failed) and the verdict could not depend on the other.
    """

    template: str
    tier: str
    seeds: tuple[int, ...]
    with_candidate: dict[int, bool]
    without: dict[int, bool]
    verdict: Verdict | None
    duration_s: float
    infrastructure_error: str | None = None
    curtailed: int = 0
    deferred: int = 0

    @property
    def helps(self) -> bool:
        """True when the gate promoted the candidate over the control arm."""
        return self.verdict is not None and self.verdict.promote

    def record(self) -> dict[str, Any]:
        """JSON-able record of the comparison (stored on the lesson or skill)."""
        verdict = self.verdict
        return {
            "method": "paired-fresh-renderings",
            "template": self.template,
            "tier": self.tier,
            "k": len(self.seeds),
            "seeds": list(self.seeds),
            "with": [_flag(self.with_candidate.get(s)) for s in self.seeds],
            "without": [_flag(self.without.get(s)) for s in self.seeds],
            "solved": len(self.with_candidate.keys() & self.without.keys()),
            "solved_with": len(self.with_candidate),
            "solved_without": len(self.without),
            "deferred": self.deferred,
            "passes_with": sum(self.with_candidate.values()),
            "passes_without": sum(self.without.values()),
            "promote": self.helps,
            "test": verdict.test if verdict else None,
            "lift": round(verdict.lift, 4) if verdict else None,
            "ci_low": _finite(verdict.ci_low) if verdict else None,
            "p_value": verdict.p_value if verdict else None,
            "verdict": verdict.summary() if verdict else None,
            "duration_s": round(self.duration_s, 2),
            "curtailed": self.curtailed,
            "infrastructure_error": self.infrastructure_error,
        }


def evidence(record: dict[str, Any]) -> str:
    """`Verification.record()` in words: `2/6 with it vs 0/6 without`, and why fewer were solved.

    Each arm's count is over the renderings solved in that arm; when
    curtailment stopped early (the gate could no longer promote) or a
    rendering was solved in one arm only (already no candidate-only win), the
    sentence says so instead of dividing by `k` as if all had been solved.
    Records written before arms were deferred have no per-arm counts: both
    are `solved` there.
    """
    k = record.get("k")
    solved = record.get("solved", k)
    text = (
        f"{record.get('passes_with')}/{record.get('solved_with', solved)} with it vs "
        f"{record.get('passes_without')}/{record.get('solved_without', solved)} without"
    )
    if record.get("deferred"):
        text += f"; {record['deferred']} solved in one arm only: not a win either way"
    if record.get("curtailed"):
        looked = k - record["curtailed"] if isinstance(k, int) else solved
        text += f"; stopped after {looked} of {k}: the gate could no longer promote"
    return text


def _flag(passed: bool | None) -> int | None:
    """1 passed, 0 failed, None not solved (curtailed, or a broken rendering)."""
    return None if passed is None else int(passed)


def _finite(value: float) -> float | None:
    return None if value != value or value in (float("inf"), float("-inf")) else round(value, 4)


class PairedVerifier:
    """Runs controlled verifications with one single-attempt solver.

    Args:
        solver: the solver whose model and sandbox are used; its config is
            copied with `max_attempts=1` (pass@1 arms) and no playbook.
        store: where the arms' trajectories are recorded (`task_kind`
            `verification`, never reflected on or mined); None records nothing.
        k: fresh renderings per comparison (at least the gate's floor of 6 to
            ever promote).
        gate: the gate's settings; None is `GateConfig()` (superiority, alpha 5%).
        session_id: recorded on the arms' trajectories.
        order: `adaptive` (each rendering's likelier deciding arm first, the
            other only when the verdict can depend on it: `_play`) or
            `control-first` (the order before: every rendering's control, then
            its candidate; more solves, every control cached for later runs).

    Raises:
        ValueError: an unknown `order`.
    """

    def __init__(
        self,
        solver: Solver,
        *,
        store: Store | None = None,
        k: int = DEFAULT_K,
        gate: GateConfig | None = None,
        session_id: str = "",
        order: str = "adaptive",
    ) -> None:
        if order not in ORDERS:
            raise ValueError(f"unknown verification order {order!r}: one of {', '.join(ORDERS)}")
        self.order = order
        self.solver = solver.single_attempt()
        self.store = store
        self.k = k
        self.gate = gate or GateConfig()
        self.session_id = session_id
        self._control: dict[tuple[str, str, int], tuple[bool, int, str]] = {}
        self._stored: dict[str, dict[str, tuple[bool, int, str]]] = {}  # cluster -> key -> result

    def seeds(
        self, template: str, tier: str, exclude_hash: str = "", exclude_prompt: str = ""
    ) -> list[tuple[int, Challenge]]:
        """Up to `k` fresh renderings of `template` at `tier` (deterministic per template and tier).

        Renderings whose hash is `exclude_hash` (the candidate's own challenge)
        or whose task text equals `exclude_prompt` (the same task as the solver
        sees it) are skipped; after `50 * k` draws, fewer than `k` may be returned.
        """
        rng = random.Random(f"verify:{template}:{tier}")
        banned = prompt_sha(exclude_prompt) if exclude_prompt else None
        out: dict[int, Challenge] = {}
        for _ in range(50 * self.k):
            if len(out) >= self.k:
                break
            seed = VERIFY_SEED_BASE + rng.randrange(100_000_000)
            challenge = render(template, tier, seed)
            if challenge.challenge_hash == exclude_hash or seed in out:
                continue
            if banned is not None and prompt_sha(challenge.prompt) == banned:
                continue
            out[seed] = challenge
        return list(out.items())

    def compare(
        self,
        template: str,
        tier: str,
        *,
        lessons: Sequence[RetrievedLesson] = (),
        skills: Sequence[str] = (),
        skill_ids: Sequence[str] = (),
        exclude_hash: str = "",
        exclude_prompt: str = "",
        on_event: Callable[[str], None] | None = None,
    ) -> Verification:
        """Solve `k` fresh renderings with and without the candidate; gate the pairs.

        Args:
            template: the template to render.
            tier: the tier to render at.
            lessons: the candidate lesson(s) shown in the candidate arm.
            skills: the candidate's rendered `### WORKED EXAMPLES` section(s).
            skill_ids: ids of the skills in `skills` (recorded).
            exclude_hash: the candidate's own challenge, never rendered here.
            exclude_prompt: the candidate's task text; renderings with the same
                text are skipped (a skill would be an exact copy of them).
            on_event: progress callback.

        Returns:
            The `Verification`. An infrastructure fault stops the comparison and
            is reported in it (the candidate is then not verified); a broken
            rendering (`ChallengeFaultError`) is skipped.
        """
        notify = on_event or (lambda _msg: None)
        started = time.perf_counter()
        renderings = self.seeds(template, tier, exclude_hash, exclude_prompt)
        self._reuse_stored_controls(template, tier, renderings)
        shown = {"lessons": list(lessons), "skills": list(skills), "skill_ids": list(skill_ids)}
        run = _Run(template, tier, shown)
        fault: str | None = None
        curtailed = 0
        for index, (seed, challenge) in enumerate(renderings, start=1):
            rest = renderings[index - 1 :]
            if not self._reachable(template, tier, run.best_case(), rest):
                curtailed = len(rest)
                notify(f"verification stopped: the gate cannot promote ({curtailed} left)")
                break
            notify(f"verifying {index}/{len(renderings)}: {template} · {tier} · seed {seed}")
            try:
                fault = self._play(run, seed, challenge, rest)
            except ChallengeFaultError:
                run.candidates.pop(seed, None)  # its candidate may have run: no pair either way
                continue
            if fault is not None:
                break
            if run.stopped:
                curtailed = len(rest)  # a tie at best here, and the rest cannot make up
                notify(f"verification stopped: the gate cannot promote ({curtailed} left)")
                break
        if fault is None and run.deferred and self._undecided(run):
            notify(f"verification: solving the {len(run.deferred)} deferred arm(s)")
            fault = self._settle(run)
        verdict = promotion_gate(run.pairs, self.gate) if fault is None and run.pairs else None
        return Verification(
            template=template,
            tier=tier,
            seeds=tuple(seed for seed, _ in renderings),
            with_candidate=run.with_arm,
            without=run.control,
            verdict=verdict,
            duration_s=time.perf_counter() - started,
            infrastructure_error=fault,
            curtailed=curtailed,
            deferred=len(run.deferred),
        )

    def _play(
        self, run: _Run, seed: int, challenge: Challenge, rest: Sequence[tuple[int, Challenge]]
    ) -> str | None:
        """Solve one rendering's arms, or only the one that decides it; returns a fault, if any.

        The arm likelier to end the rendering as no candidate-only win goes
        first (`_first_arm`); when it does (the control passed, or the
        candidate failed), the other arm is deferred: the pair is a tie or a
        loss either way, counted as a tie (the candidate's best case) until
        `_settle`. With `order="control-first"` (the order before), the control
        runs first and the candidate always after it.

        Raises:
            ChallengeFaultError: the rendering is broken (the caller skips it).
        """
        first = self._first_arm(run, seed)
        candidate: SolveResult | None = None
        if first == "candidate":
            candidate = self._candidate_run(run, seed, challenge)
            if candidate.infrastructure_error is not None:
                return _fault(candidate)
            if not candidate.passed:
                run.deferred[seed] = (challenge, False)
                return None
        base_passed, base_tokens = self._control_run(run.template, run.tier, seed, challenge)
        run.control[seed] = base_passed
        if candidate is None and base_passed:
            if self.order != "control-first":
                run.deferred[seed] = (challenge, True)
                return None
            if not self._reachable(run.template, run.tier, run.best_case(), rest):
                run.stopped = True
                return None
        if candidate is None:
            candidate = self._candidate_run(run, seed, challenge)
            if candidate.infrastructure_error is not None:
                return _fault(candidate)
        run.pair(seed, base_passed, base_tokens, candidate)
        return None

    def _first_arm(self, run: _Run, seed: int) -> str:
        """`control` or `candidate`: which arm of a rendering to solve first.

        A cached control costs nothing, so it goes first. Otherwise the
        candidate goes first when this template's estimated pass rate (known
        control results and this comparison's candidate results, Laplace's
        rule) is at most 1/2: a rendering then costs 1 + P(candidate passes)
        solves against 2 - P(control passes) the other way round.
        """
        if self.order == "control-first" or (run.template, run.tier, seed) in self._control:
            return "control"
        known = [
            passed
            for (template, tier, _), (passed, _, _) in self._control.items()
            if (template, tier) == (run.template, run.tier)
        ]
        known += run.with_arm.values()
        return "candidate" if (sum(known) + 1) / (len(known) + 2) <= 0.5 else "control"

    def _undecided(self, run: _Run) -> bool:
        """Whether the deferred arms could change the verdict (then they are solved).

        They cannot when neither the complete pairs nor the best case (every
        deferred rendering a tie) promote: a deferred rendering is a tie or a loss.
        """
        best = promotion_gate(run.best_case(), self.gate).promote
        return best or (bool(run.pairs) and promotion_gate(run.pairs, self.gate).promote)

    def _settle(self, run: _Run) -> str | None:
        """Solve every deferred arm and complete its pair; returns a fault, if any."""
        for seed, (challenge, control_known) in sorted(run.deferred.items()):
            try:
                if control_known:
                    base_passed, base_tokens = self._control_run(
                        run.template, run.tier, seed, challenge
                    )
                    candidate = self._candidate_run(run, seed, challenge)
                    if candidate.infrastructure_error is not None:
                        return _fault(candidate)
                else:
                    candidate = run.candidates[seed]
                    base_passed, base_tokens = self._control_run(
                        run.template, run.tier, seed, challenge
                    )
                    run.control[seed] = base_passed
            except ChallengeFaultError:
                run.candidates.pop(seed, None)  # as in `compare`'s loop: no pair either way
                continue
            run.pair(seed, base_passed, base_tokens, candidate)
        run.deferred.clear()
        return None

    def _candidate_run(self, run: _Run, seed: int, challenge: Challenge) -> SolveResult:
        """Solve `challenge` with the candidate shown; recorded and kept in `run` when it ran.

        Raises:
            ChallengeFaultError: the rendering is broken.
        """
        result = self.solver.solve(challenge, session_id=self.session_id, **run.shown)
        error = result.infrastructure_error
        if isinstance(error, ChallengeFaultError):
            raise error
        if error is None:
            self._record(result.trajectory, arm="candidate", seed=seed)
            run.candidates[seed] = result
        return result

    def _reachable(
        self,
        template: str,
        tier: str,
        pairs: Sequence[PairedResult],
        rest: Sequence[tuple[int, Challenge]],
    ) -> bool:
        """Whether the gate would promote if every unknown outcome in `rest` favoured the candidate.

        A rendering whose control result is cached counts as that result
        against a candidate pass; one not yet solved counts as a control
        failure against a candidate pass (a candidate-only win).
        """
        best = list(pairs)
        for seed, _ in rest:
            cached = self._control.get((template, tier, seed))
            best.append(
                PairedResult(
                    task_id=f"{template}:{tier}:{seed}",
                    incumbent_score=float(cached[0]) if cached else 0.0,
                    candidate_score=1.0,
                )
            )
        return bool(best) and promotion_gate(best, self.gate).promote

    def control_key(self, challenge: Challenge) -> str:
        """What a control result depends on: model, solver settings, system prompt, rendering.

        Returns:
            16 hex digits of a SHA-256 over them; two runs that agree on it
            would solve the rendering the same way, so one's result serves both.
        """
        basis = {
            "model": getattr(self.solver.model, "name", type(self.solver.model).__name__),
            "solver": self.solver.config.model_dump(mode="json"),
            "system": SYSTEM_PROMPT,
            "challenge": challenge.challenge_hash,
        }
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:16]

    def _reuse_stored_controls(
        self, template: str, tier: str, renderings: Sequence[tuple[int, Challenge]]
    ) -> None:
        """Fill the control cache from earlier runs' control trajectories with the same key."""
        if self.store is None or not renderings:
            return
        cluster = renderings[0][1].cluster
        if cluster not in self._stored:
            found: dict[str, tuple[bool, int, str]] = {}
            for trajectory in self.store.iter_trajectories(
                task_kind="verification", cluster=cluster
            ):
                extra = trajectory.extra
                key = extra.get("control_key")
                if extra.get("verification_arm") != "control" or not key:
                    continue
                if trajectory.infrastructure_error is not None:
                    continue
                tokens = trajectory.tokens_in + trajectory.tokens_out
                found[key] = (trajectory.outcome == Outcome.PASSED, tokens, trajectory.id)
            self._stored[cluster] = found
        for seed, challenge in renderings:
            stored = self._stored[cluster].get(self.control_key(challenge))
            if stored is not None:
                self._control.setdefault((template, tier, seed), stored)

    def _control_run(
        self, template: str, tier: str, seed: int, challenge: Challenge
    ) -> tuple[bool, int]:
        """The control arm's result for one rendering, solved once and cached."""
        key = (template, tier, seed)
        if key not in self._control:
            result: SolveResult = self.solver.solve(
                challenge, session_id=self.session_id, lessons=[]
            )
            if result.infrastructure_error is not None:
                raise result.infrastructure_error
            self._record(
                result.trajectory, arm="control", seed=seed, key=self.control_key(challenge)
            )
            tokens = result.trajectory.tokens_in + result.trajectory.tokens_out
            self._control[key] = (result.passed, tokens, result.trajectory.id)
        passed, tokens, _ = self._control[key]
        return passed, tokens

    def _record(self, trajectory: Trajectory, *, arm: str, seed: int, key: str = "") -> None:
        if self.store is None:
            return
        extra = {**trajectory.extra, "verification_arm": arm, "seed": seed}
        if key:
            extra["control_key"] = key
        marked = trajectory.model_copy(update={"task_kind": "verification", "extra": extra})
        self.store.append_trajectory(marked)


@dataclass
class _Run:
    """One comparison in progress.

    Attributes:
        template, tier: what is rendered.
        shown: the candidate arm's `lessons`, `skills` and `skill_ids` keywords.
        pairs: the renderings solved in both arms.
        candidates: per seed, the candidate arm's solve (`with_arm`: its pass/fail).
        control: per seed, the control arm's pass/fail where it was used.
        deferred: per seed, the rendering and whether its control is the arm
            known (True: the control passed) or the candidate (False: it failed).
        stopped: `control-first` order found the gate decided mid-rendering.
    """

    template: str
    tier: str
    shown: dict[str, Any]
    pairs: list[PairedResult] = field(default_factory=list)
    candidates: dict[int, SolveResult] = field(default_factory=dict)
    control: dict[int, bool] = field(default_factory=dict)
    deferred: dict[int, tuple[Challenge, bool]] = field(default_factory=dict)
    stopped: bool = False

    @property
    def with_arm(self) -> dict[int, bool]:
        """Per seed, whether the candidate arm passed where it was solved."""
        return {seed: result.passed for seed, result in self.candidates.items()}

    def pair(self, seed: int, base_passed: bool, base_tokens: int, result: SolveResult) -> None:
        """Add the complete pair of `seed`."""
        self.pairs.append(
            PairedResult(
                task_id=f"{self.template}:{self.tier}:{seed}",
                incumbent_score=float(base_passed),
                candidate_score=float(result.passed),
                incumbent_cost=base_tokens,
                candidate_cost=result.trajectory.tokens_in + result.trajectory.tokens_out,
            )
        )

    def best_case(self) -> list[PairedResult]:
        """The pairs, with every deferred rendering a tie (its known arm's result twice)."""
        ties = [
            PairedResult(
                task_id=f"{self.template}:{self.tier}:{seed}",
                incumbent_score=float(control_known),
                candidate_score=float(control_known),
            )
            for seed, (_, control_known) in self.deferred.items()
        ]
        return self.pairs + ties


def _fault(result: SolveResult) -> str:
    """An infrastructure fault of a solve, as recorded on the `Verification`."""
    error = result.infrastructure_error
    return f"{type(error).__name__}: {error}"
