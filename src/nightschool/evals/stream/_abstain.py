"""The stream's abstaining arm: the memory arm's retrieval, kept only where an item earned it.

The memory arm shows whatever retrieval ranks above the playbook's relevance
floor: similarity decides. On MBPP order 0 (200 tasks) that was worse than
showing unrelated entries (memory 130, placebo 135 hidden-test passes), and on
the 0.5B a neighbour at similarity 0.52 turned passing items into failures.
This arm is shown an entry only when its exposures so far predict that it
helps (issue 26: "retrieval that abstains unless the item is predicted to
help, utility learned from exposures' outcomes, not similarity alone").

An exposure is an earlier task (this arm's or the memory arm's) whose answer
was shown the entry; its outcome is paired with the no-memory arm's answer to
the same task on the public test, as the promotion gate pairs a with-item and
a without-item run: *helpful* when the answer shown the entry passed and the
no-memory answer failed, *harmful* the other way round, a tie otherwise. An
entry is shown only when it was helpful more often than harmful
(`helpful - harmful >= ABSTAIN_MARGIN`); every other candidate, an unseen one
included, is withheld. So the arm starts by abstaining on every task (taking
the no-memory answer) and shows only what the memory arm's exposures vouched
for. Hidden tests never reach it.

Its candidates are what the memory arm was shown for the same task (its row),
in the memory arm's order: the arm runs after the memory arm.
"""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.errors import UserError
from nightschool.evals.stream._rundir import StreamRow
from nightschool.lessons.skills import Recall, shown_recall, unranked
from nightschool.playbook import Lesson, SkillMemory

ABSTAIN_ARM = "abstain"
"""The arm's name in the rows."""

ABSTAIN_MARGIN = 1
"""Helpful minus harmful paired exposures an entry needs before it is shown (1: it
helped at least once more than it hurt; an entry never exposed is withheld)."""

EXPOSING_ARMS = ("memory", ABSTAIN_ARM)
"""Whose exposures count: the memory arm's (similarity alone) and this arm's own."""


def paired_utility(rows: Sequence[StreamRow], position: int) -> dict[str, tuple[int, int]]:
    """Entry id -> (helpful, harmful) paired exposures before `position`.

    Args:
        rows: the run's rows; exposures are `EXPOSING_ARMS` rows that showed the
            entry, paired with the no-memory row of the same task (an exposure
            without one is not counted).
        position: the task at hand; only earlier positions count.
    """
    unaided = {r.task_id: r.public_passed for r in rows if r.arm == "no_memory"}
    counts: dict[str, list[int]] = {}
    for row in rows:
        if row.arm not in EXPOSING_ARMS or row.position >= position or row.task_id not in unaided:
            continue
        with_it, without = row.public_passed, unaided[row.task_id]
        if with_it == without:
            continue
        for entry_id in [*row.lessons_shown, *row.skills_shown]:
            seen = counts.setdefault(entry_id, [0, 0])
            seen[0 if with_it else 1] += 1
    return {entry_id: (h, x) for entry_id, (h, x) in counts.items()}


def abstaining_recall(
    memory: SkillMemory, task_id: str, position: int, rows: Sequence[StreamRow]
) -> Recall:
    """What the abstaining arm shows for `task_id`: the memory arm's entries that earned it.

    Args:
        memory: the memory arm's playbook (where the shown ids are read from).
        task_id: the task at hand.
        position: its place in the stream.
        rows: the run's rows so far (the memory arm's row for this task among them).

    Returns:
        A `Recall` of the memory arm's lessons and skills for this task whose
        paired utility reaches `ABSTAIN_MARGIN`, in the memory arm's order
        (cut to the sections' budgets); empty when none does.

    Raises:
        UserError: the memory arm has not answered `task_id` yet.
    """
    candidate = next((r for r in rows if r.task_id == task_id and r.arm == "memory"), None)
    if candidate is None:
        raise UserError(
            f"the abstain arm filters the memory arm's retrieval, which has not answered "
            f"{task_id} yet",
            hint="run the memory arm first (--arms no_memory,memory,abstain)",
        )
    stats = paired_utility(rows, position)

    def earned(entry_id: str) -> bool:
        helpful, harmful = stats.get(entry_id, (0, 0))
        return helpful - harmful >= ABSTAIN_MARGIN

    def kept(ids: Sequence[str]) -> list[Lesson]:
        found = [memory.get(entry_id) for entry_id in ids if earned(entry_id)]
        return [entry for entry in found if entry is not None]

    lessons, skills = kept(candidate.lessons_shown), kept(candidate.skills_shown)
    if not lessons and not skills:
        return Recall()
    return shown_recall(unranked(lessons), unranked(skills))
