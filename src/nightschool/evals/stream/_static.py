"""The stream's static arm: the same two worked examples for every task, none of them learned.

Every arm that shows solved functions leaned the same way on MBPP order 0 (200
tasks: placebo +5.5 points, curated +3.5, fixed +3.5, memory +3.0), whatever
chose them: retrieval, a random unrelated draw, measured utility, or the first
two learned. If seeing *some* solved functions in the answer's format is what
helps, a fixed few-shot prompt that nothing learned should do as well, and
then the learning adds nothing to it. The static arm is that prompt: the
reference solutions of the template bank's first `STATIC_K` `python_general`
starter templates (seed 0; written for the bank, not drawn from any
benchmark), rendered exactly as worked examples are, shown to every task. It
learns nothing and reads no playbook. It is the bar every learned arm must
clear before its learning can be credited.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from nightschool.challenges import render, templates
from nightschool.lessons.skills import (
    SKILL_CONFIDENCE,
    Recall,
    shown_recall,
    skill_summary,
    unranked,
)
from nightschool.playbook import Lesson

STATIC_K = 2
"""Worked examples shown per task: the memory arm's `skills_k`, as the fixed arm's."""

STATIC_ARM = "static"
"""The arm's name in the rows."""

STATIC_CLUSTER = "python_general"
"""Where the examples come from: the bank's function-writing cluster, the closest in form
to MBPP's and HumanEval's tasks (a typed function and its docstring)."""

_WRITTEN = datetime(2026, 1, 1, tzinfo=UTC)


def static_examples(k: int = STATIC_K) -> list[Lesson]:
    """The arm's worked examples: bank references as unstored skills, in bank order.

    Args:
        k: how many (at most the cluster's template count).

    Returns:
        `k` skill `Lesson`s (ids `L-` + 12 hex digits of the template name's
        sha256), each the starter rendering's reference solution under its
        `skill_summary`; the same on every call.
    """
    chosen: list[Lesson] = []
    for template in templates(STATIC_CLUSTER)[:k]:
        challenge = render(template.name, "starter", 0)
        chosen.append(
            Lesson(
                id="L-" + hashlib.sha256(template.name.encode()).hexdigest()[:12],
                kind="skill",
                trigger=skill_summary(challenge),
                anti_pattern="",
                correct_pattern="",
                code_example=challenge.reference_solution,
                domains=[STATIC_CLUSTER],
                confidence=SKILL_CONFIDENCE,
                source="manual",
                template=challenge.template,
                tier=challenge.tier,
                created_at=_WRITTEN,
                updated_at=_WRITTEN,
                extra={"solution_file": challenge.solution_file, "seed": 0},
            )
        )
    return chosen


def static_recall(k: int = STATIC_K) -> Recall:
    """What the static arm shows every task: `static_examples(k)` as worked examples, no lessons."""
    return shown_recall([], unranked(static_examples(k)))
