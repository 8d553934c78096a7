"""The stream's fixed arm: the same worked examples for every task (`lessons.skills.exemplars`).

The placebo arm beat the no-memory arm on MBPP order 0 (15 wins / 4 losses
over 200 tasks, exact p = 0.0096) by showing entries unrelated to the task,
drawn at random per task; retrieving the nearest ones (the memory arm) did
less (15 / 9). If what helps is the form of a solved function and not its
content, any fixed handful of solved functions should do as well. The fixed
arm shows the product's exemplars (`exemplars`: the first `FIXED_K` skills
learned, not among retrieval's top `RELATED_K` for the task, not the task's
own), to every later task: no retrieval of the nearest, no learning, no
per-task draw. It is the bar the curated arm (which chooses its examples by
measured utility) and every other mechanism has to beat, and what `dream
--exemplars` shows its practice.
"""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.evals.stream._curated import Row
from nightschool.evals.stream._tasks import StreamTask, challenge_for
from nightschool.lessons.skills import Recall, exemplars, shown_recall, unranked
from nightschool.playbook import SkillMemory

FIXED_K = 2
"""Worked examples shown per task: the memory arm's `skills_k`, as the curated arm's."""

FIXED_ARM = "fixed"
"""The arm's name in the rows."""


def fixed_recall(
    memory: SkillMemory,
    task: StreamTask,
    position: int,
    rows: Sequence[Row],
    *,
    k: int = FIXED_K,
    verified_only: bool = False,
) -> Recall:
    """The worked examples the fixed arm is shown for `task` (no lessons).

    Args:
        memory: the memory arm's playbook (its skills are the candidates).
        task: the task at hand.
        position: its place in the stream.
        rows: the run's rows: a skill the memory arm learned at this position
            or later (a resumed run's memory holds it) is never shown.
        k: skills shown at most.
        verified_only: only skills the paired gate verified: what dream practice
            shows (`exemplars_verified`), used when the memory comes from a home's
            playbook (dream, then stream).

    Returns:
        A `Recall` with `exemplars`: the first `k` skills in the memory learned
        before `position` (oldest first) that are neither related to the task
        nor its own challenge; empty before any was learned.
    """
    # a skill first learned earlier and only reinforced later stays allowed
    earlier: set[str] = set()
    later: set[str] = set()
    for row in rows:
        if row.arm == "memory" and row.learned.startswith("skill:"):
            (earlier if row.position < position else later).add(row.learned_id)
    chosen = exemplars(
        memory,
        challenge_for(task),
        k=k,
        exclude_ids=(later - earlier) - {""},
        verified_only=verified_only,
    )
    return shown_recall([], unranked(chosen))
