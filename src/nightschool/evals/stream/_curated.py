"""The stream's curated arm: generic worked examples, chosen by their measured utility.

The placebo arm (entries unrelated to the task, drawn at random) beat the
no-memory arm on MBPP order 0 at 145 tasks (12 wins / 4 losses, exact p =
0.038) while the memory arm (the nearest entries) did not (12/8): what a small
model takes from earlier passing functions is their form, not the nearest
task. The curated arm turns that into a mechanism that learns: it is shown
`CURATED_K` skills the memory arm learned *before* this task that retrieval
does not rank as related to it (never recall of a near-identical problem), and
*which* ones is learned from its own history. Each candidate skill's utility
is the public-test pass rate of the curated arm's earlier answers it was shown
to (what a user would see; the hidden tests never reach learning), and skills
are picked by Thompson sampling from Beta(1 + passes, 1 + failures) (Thompson
1933; Chapelle and Li 2011), seeded by the task id: a skill not shown yet is
explored, one that keeps being followed by failures stops being drawn.

Everything is read from the run's rows and its database, so a resumed run
draws exactly as an uninterrupted one. The arm learns nothing of its own.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from nightschool.evals.stream._tasks import StreamTask, challenge_for
from nightschool.lessons.skills import Recall, related_ids, shown_recall, unranked
from nightschool.playbook import KINDS, SkillMemory

CURATED_K = 2
"""Worked examples shown per task: the memory arm's `skills_k`."""

CURATED_ARM = "curated"
"""The arm's name in the rows."""


class Row(Protocol):
    """What this arm reads of a `StreamRow`."""

    @property
    def position(self) -> int: ...
    @property
    def arm(self) -> str: ...
    @property
    def public_passed(self) -> bool: ...
    @property
    def skills_shown(self) -> list[str]: ...
    @property
    def learned(self) -> str: ...
    @property
    def learned_id(self) -> str: ...


def utility(rows: Sequence[Row], position: int) -> dict[str, tuple[int, int]]:
    """Skill id -> (public passes, public failures) of the curated arm's answers before `position`.

    Args:
        rows: the run's rows (`StreamRow`s; other arms are ignored).
        position: the task at hand; only earlier positions count.
    """
    counts: dict[str, list[int]] = {}
    for row in rows:
        if row.arm != CURATED_ARM or row.position >= position:
            continue
        for skill_id in row.skills_shown:
            seen = counts.setdefault(skill_id, [0, 0])
            seen[0 if row.public_passed else 1] += 1
    return {skill_id: (p, f) for skill_id, (p, f) in counts.items()}


def curated_recall(
    memory: SkillMemory,
    task: StreamTask,
    position: int,
    rows: Sequence[Row],
    *,
    k: int = CURATED_K,
) -> Recall:
    """The worked examples the curated arm is shown for `task` (no lessons).

    Args:
        memory: the memory arm's playbook (its skills are the candidates).
        task: the task at hand.
        position: its place in the stream.
        rows: the run's rows so far: which skills the memory arm learned before
            `position` (`learned_id`) and the curated arm's earlier answers.
        k: skills shown at most.

    Returns:
        A `Recall` with at most `k` skills, none of them related to the task
        (not among retrieval's top `RELATED_K` of either kind) nor learned at
        this position or later; empty before the memory arm has learned any.
    """
    learned_before = {
        row.learned_id
        for row in rows
        if row.arm == "memory" and row.position < position and row.learned.startswith("skill:")
    } - {""}
    if not learned_before or k <= 0:
        return Recall()
    challenge = challenge_for(task)
    related = related_ids(memory, challenge.prompt, kinds=KINDS)
    pool = [
        skill
        for skill in memory.list(kind="skill")
        if skill.id in learned_before
        and skill.id not in related
        and skill.challenge_hash != challenge.challenge_hash
    ]
    if not pool:
        return Recall()
    stats = utility(rows, position)
    rng = random.Random(f"curated:{task.task_id}")
    drawn = []
    for skill in sorted(pool, key=lambda s: s.id):
        passes, failures = stats.get(skill.id, (0, 0))
        drawn.append((rng.betavariate(1 + passes, 1 + failures), skill.id, skill))
    drawn.sort(key=lambda item: (-item[0], item[1]))
    return shown_recall([], unranked([skill for _, _, skill in drawn[:k]]))
