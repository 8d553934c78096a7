"""The stream's placebo arm: as much memory shown as the memory arm gets, none of it related.

Showing a small model *anything* (a longer prompt, any typed function to
imitate) can change its answers. The placebo arm is shown, for each task, as
many lessons and worked examples as the memory arm is shown, drawn at random
(seeded by the task id) from what the memory arm had learned *before* this
task and that retrieval does not rank as related to it (not among the top 10
of either kind above the playbook's relevance floor). It learns nothing. Only
what the memory arm gains beyond the placebo is due to what it learned.
"""

from __future__ import annotations

import random
from collections.abc import Collection

from nightschool.evals.stream._tasks import StreamTask, challenge_for
from nightschool.lessons.skills import Recall, related_ids, shown_recall, unranked
from nightschool.playbook import KINDS, Kind, Lesson, SkillMemory


def placebo_recall(
    memory: SkillMemory,
    task: StreamTask,
    counts: tuple[int, int],
    learned_later: Collection[str] = (),
    *,
    verified_only: bool = False,
) -> Recall:
    """Unrelated entries for `task`: `counts` = (lessons, skills) the memory arm is shown.

    Args:
        memory: the memory arm's playbook.
        task: the task at hand.
        counts: how many lessons and skills to show (the memory arm's).
        learned_later: ids of entries the memory arm learned at this task's
            position or later (a resumed run): never drawn, so the placebo
            draws from the memory as it was.
        verified_only: draw only entries a chat turn may be shown
            (`Lesson.shown_to("chat")`), as the memory arm is in dream, then
            stream (`_run.as_chat`).

    Returns:
        A `Recall` with at most `counts` entries (fewer when fewer unrelated
        ones exist), cut to the memory arm's token budgets.
    """
    n_lessons, n_skills = counts
    if not n_lessons and not n_skills:
        return Recall()
    challenge = challenge_for(task)
    later = set(learned_later)
    related = related_ids(memory, challenge.prompt, kinds=KINDS)
    rng = random.Random(f"placebo:{task.task_id}")

    def pool(kind: Kind) -> list[Lesson]:
        return [
            e
            for e in memory.list(kind=kind)
            if e.id not in later and e.id not in related
            and e.challenge_hash != challenge.challenge_hash
            and (not verified_only or e.shown_to("chat"))
        ]  # fmt: skip

    lessons, skills = pool("lesson"), pool("skill")
    picked_lessons = rng.sample(lessons, min(n_lessons, len(lessons)))
    picked_skills = rng.sample(skills, min(n_skills, len(skills)))
    return shown_recall(unranked(picked_lessons), unranked(picked_skills))
