"""The stream's combined arm: the facts, abstain and strategy arms' memory in one prompt.

Issue 26's ablation asks for each mechanism alone and all together. This arm
is shown, for each task, what the three would show it: the admitted
environment facts (`_facts`), the nearest strategy item the strategy arm had
distilled *before* this task (`_strategy`; read from its database, never one
learned at this position or later, so a resumed run shows what an
uninterrupted one would), and the memory arm's entries whose paired exposures
helped more often than they hurt (`_abstain`), in that order, cut to the
playbook's and the worked examples' token budgets. It learns nothing of its
own; it runs after the memory and strategy arms, whose rows it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.errors import UserError
from nightschool.evals.stream._abstain import abstaining_recall
from nightschool.evals.stream._facts import facts_recall
from nightschool.evals.stream._rundir import StreamRow, written_since
from nightschool.evals.stream._strategy import STRATEGY_ARM, strategy_recall
from nightschool.evals.stream._tasks import StreamTask
from nightschool.lessons.skills import Recall, shown_recall
from nightschool.playbook import SkillMemory
from nightschool.store import Store

COMBINED_ARM = "combined"
"""The arm's name in the rows."""


def combined_recall(
    store: Store,
    memory: SkillMemory,
    strategies: SkillMemory,
    task: StreamTask,
    position: int,
    rows: Sequence[StreamRow],
    earlier: Sequence[str],
) -> Recall:
    """What the combined arm shows for `task`: facts, then a strategy, then earned entries.

    Args:
        store: the run's database (the no-memory arm's failures, for the facts).
        memory: the memory arm's playbook (the abstain arm's candidates).
        strategies: the strategy arm's playbook (`RUN/strategy.db`).
        task: the task at hand.
        position: its place in the stream.
        rows: the run's rows so far (the memory and strategy arms' among them).
        earlier: ids of the tasks before this one, in stream order.

    Returns:
        A `Recall` cut to the sections' budgets; empty when none of the three
        would show anything.

    Raises:
        UserError: the memory or the strategy arm has not answered `task` yet.
    """
    if not any(r.task_id == task.task_id and r.arm == STRATEGY_ARM for r in rows):
        raise UserError(
            f"the combined arm reads the strategy arm, which has not answered {task.task_id} yet",
            hint="run it after the strategy arm (--arms ...,strategy,combined)",
        )
    later = written_since(rows, STRATEGY_ARM, position)
    facts = facts_recall(store, earlier).lessons
    strategy = strategy_recall(strategies, task, exclude=later).lessons
    earned = abstaining_recall(memory, task.task_id, position, rows)
    if not facts and not strategy and not earned.lessons and not earned.skills:
        return Recall()
    return shown_recall([*facts, *strategy, *earned.lessons], earned.skills)
