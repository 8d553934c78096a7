"""The stream's fixed arm: the same worked examples for every task (the cheapest explanation).

The placebo arm beat the no-memory arm on MBPP order 0 (15 wins / 4 losses
over 200 tasks, exact p = 0.0096) by showing entries unrelated to the task,
drawn at random per task; retrieving the nearest ones (the memory arm) did
less (15 / 9). If what helps is the form of a solved function and not its
content, any fixed handful of solved functions should do as well. The fixed
arm shows the first `FIXED_K` skills the memory arm learned, to every later
task: no retrieval, no learning, no per-task draw. A task to which one of them
is related (retrieval's top `RELATED_K`, or its own challenge) gets the next
learned skill instead, as the placebo and curated arms never show related ones.
It is the bar the curated arm (which chooses its examples by measured utility)
and every other mechanism has to beat.
"""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.evals.stream._curated import Row
from nightschool.evals.stream._placebo import related_ids
from nightschool.evals.stream._tasks import StreamTask, challenge_for
from nightschool.lessons.skills import Recall, shown_recall, unranked
from nightschool.playbook import SkillMemory

FIXED_K = 2
"""Worked examples shown per task: the memory arm's `skills_k`, as the curated arm's."""

FIXED_ARM = "fixed"
"""The arm's name in the rows."""


def fixed_recall(
    memory: SkillMemory, task: StreamTask, position: int, rows: Sequence[Row], *, k: int = FIXED_K
) -> Recall:
    """The worked examples the fixed arm is shown for `task` (no lessons).

    Args:
        memory: the memory arm's playbook (its skills are the candidates).
        task: the task at hand.
        position: its place in the stream.
        rows: the run's rows: the memory arm's `learned_id`s, in stream order,
            say which skills came first.
        k: skills shown at most.

    Returns:
        A `Recall` with the first `k` skills the memory arm learned before
        `position` that are neither related to the task nor its own challenge;
        empty before any was learned.
    """
    learned = [
        row.learned_id
        for row in sorted(rows, key=lambda r: r.position)
        if row.arm == "memory" and row.position < position and row.learned.startswith("skill:")
    ]
    order = list(dict.fromkeys(skill_id for skill_id in learned if skill_id))
    if not order or k <= 0:
        return Recall()
    challenge = challenge_for(task)
    related = related_ids(memory, challenge.prompt)
    skills = {skill.id: skill for skill in memory.list(kind="skill")}
    picked = [
        skills[skill_id]
        for skill_id in order
        if skill_id in skills
        and skill_id not in related
        and skills[skill_id].challenge_hash != challenge.challenge_hash
    ][:k]
    return shown_recall([], unranked(picked))
