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

Curtailment: before each solve the verifier asks the gate whether it could
still promote if every unknown outcome went the candidate's way (an unsolved
control fails, an unsolved candidate passes). When even that best case is
refused, the comparison stops: the full run could only have been refused too,
so the verdict is the same and the remaining solves are saved. With k = 6 and
pass/fail pairs, the second rendering that is not a candidate-only win ends
it (5 wins and no loss are needed). Measured on the 0.5B model, a failed
dream cycle's lesson verification took 12 solves (about 6.5 minutes) before.
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
            "solved": len(self.with_candidate),
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

    The counts are over the renderings solved in both arms; when curtailment
    stopped early (the gate could no longer promote), the sentence says so
    instead of dividing by `k` as if all had been solved.
    """
    k = record.get("k")
    solved = record.get("solved", k)
    text = (
        f"{record.get('passes_with')}/{solved} with it vs "
        f"{record.get('passes_without')}/{solved} without"
    )
    if record.get("curtailed"):
        text += f"; stopped after {solved} of {k}: the gate could no longer promote"
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
    """

    def __init__(
        self,
        solver: Solver,
        *,
        store: Store | None = None,
        k: int = DEFAULT_K,
        gate: GateConfig | None = None,
        session_id: str = "",
    ) -> None:
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
        with_arm: dict[int, bool] = {}
        control: dict[int, bool] = {}
        pairs: list[PairedResult] = []
        fault: str | None = None
        curtailed = 0
        for index, (seed, challenge) in enumerate(renderings, start=1):
            rest = renderings[index - 1 :]
            if not self._reachable(template, tier, pairs, rest):
                curtailed = len(rest)
                notify(f"verification stopped: the gate cannot promote ({curtailed} left)")
                break
            notify(f"verifying {index}/{len(renderings)}: {template} · {tier} · seed {seed}")
            try:
                base_passed, base_tokens = self._control_run(template, tier, seed, challenge)
                control[seed] = base_passed
                if base_passed and not self._reachable(template, tier, pairs, rest):
                    curtailed = len(rest)  # a tie at best here, and the rest cannot make up
                    notify(f"verification stopped: the gate cannot promote ({curtailed} left)")
                    break
                result = self.solver.solve(
                    challenge,
                    session_id=self.session_id,
                    lessons=list(lessons),
                    skills=list(skills),
                    skill_ids=list(skill_ids),
                )
            except ChallengeFaultError:
                continue
            if result.infrastructure_error is not None:
                if isinstance(result.infrastructure_error, ChallengeFaultError):
                    continue
                fault = (
                    f"{type(result.infrastructure_error).__name__}: {result.infrastructure_error}"
                )
                break
            self._record(result.trajectory, arm="candidate", seed=seed)
            with_arm[seed] = result.passed
            tokens = result.trajectory.tokens_in + result.trajectory.tokens_out
            pairs.append(
                PairedResult(
                    task_id=f"{template}:{tier}:{seed}",
                    incumbent_score=float(base_passed),
                    candidate_score=float(result.passed),
                    incumbent_cost=base_tokens,
                    candidate_cost=tokens,
                )
            )
        verdict = promotion_gate(pairs, self.gate) if fault is None and pairs else None
        return Verification(
            template=template,
            tier=tier,
            seeds=tuple(seed for seed, _ in renderings),
            with_candidate=with_arm,
            without=control,
            verdict=verdict,
            duration_s=time.perf_counter() - started,
            infrastructure_error=fault,
            curtailed=curtailed,
        )

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
