"""The reflection sink: a reflection of a failed trajectory becomes a playbook lesson."""

from __future__ import annotations

from dataclasses import dataclass

from nightschool.lessons.guard import (
    REFLECTION_CONFIDENCE,
    generalization_problem,
    guess_domains,
    task_summary,
)
from nightschool.lessons.reflection import Reflection
from nightschool.playbook import LearnResult, SkillMemory
from nightschool.trajectory import Trajectory


@dataclass
class PlaybookSink:
    """Reflection sink: writes the reflection of a failed trajectory as a lesson.

    Trigger is the failed task's first sentence (what a similar future request
    looks like), anti-pattern the diagnosis, correct pattern the revised plan.
    Provenance is the *source* trajectory's id, so retracting that trajectory
    removes the lesson (seed 002: one id per source of failure).

    The generalization guard applies to what the lesson teaches (diagnosis and
    plan must not copy a run of 6 tokens from the request or, for a self-play
    source, its challenge) and to its domains; the trigger is the request's first
    sentence by design, since it is what a similar future request is matched on.
    """

    memory: SkillMemory

    def __call__(self, reflection: Reflection, source: Trajectory) -> LearnResult:
        """Learn from `reflection` of `source`; returns the playbook's verdict."""
        trigger = task_summary(source.user_request) or "a similar task"
        plan = " ".join(
            f"{i}. {step.strip().rstrip('.')}." for i, step in enumerate(reflection.revised_plan, 1)
        )
        domains = guess_domains(source.user_request, source.cluster)
        problem = generalization_problem(
            trigger="",
            anti_pattern=reflection.diagnosis,
            correct_pattern=plan,
            domains=domains,
            sources=(source.user_request,),
        )
        if problem:
            return LearnResult(status="rejected", reason=f"generalization guard: {problem}")
        return self.memory.learn(
            trigger=trigger,
            anti_pattern=reflection.diagnosis,
            correct_pattern=plan,
            domains=domains,
            source="reflection",
            confidence=REFLECTION_CONFIDENCE,
            source_trajectory_id=source.id,
            challenge_hash=str(source.extra.get("challenge_hash", "")),
            extra={"reflection_trajectory_id": reflection.reflection_trajectory_id},
        )
