"""The learning curve's control arms: a placebo and an equal-compute baseline.

- **placebo**: each held-out item is shown as many lessons and worked examples
  as the `both` arm shows it, drawn from what the dream learned on *unrelated*
  clusters (a lesson none of whose domains is the item's cluster; a skill of
  another cluster's template), in the same prompt sections. When showing
  something lifts pass@1 by itself (a longer prompt, any code to imitate),
  the placebo gets that lift too; only what the `both` arm gains beyond it is
  due to what was learned.
- **equal compute**: the start agent (nothing shown) given, per held-out item,
  the model calls the dream spent divided by the number of items, as extra
  attempts with the validator's feedback (the dream's own retry loop): is
  dreaming better than spending the same compute at test time?

Both arms are measured once, at the last checkpoint, and paired with the start
through the same clustered gate as every other arm.
"""

from __future__ import annotations

import random

from nightschool.lessons.skills import Recall, shown_recall, unranked
from nightschool.playbook import SkillMemory
from nightschool.store import Store

EQUAL_COMPUTE_MAX_ATTEMPTS = 10
"""Ceiling of the equal-compute arm's attempts per item (a 2-hour dream on 28 items
would otherwise ask for dozens of retries of one task)."""


def placebo_recall(
    memory: SkillMemory | None, both: Recall, cluster: str, template: str, task_id: str
) -> Recall:
    """As many lessons and skills as `both` shows, from clusters unrelated to the item.

    Args:
        memory: the playbook (None: nothing).
        both: what the `both` arm shows this item (the counts to match).
        cluster: the item's cluster; nothing of it is shown.
        template: the item's template; never shown.
        task_id: seeds the deterministic draw (same item, same placebo).

    Returns:
        A `Recall` of unrelated entries, at most as many of each kind as
        `both` has (fewer when the playbook has no more unrelated ones), cut
        to the same token budgets.
    """
    if memory is None or not (both.lessons or both.skills):
        return Recall()
    rng = random.Random(f"placebo:{task_id}")
    lessons = [
        e for e in memory.list(kind="lesson") if cluster not in e.domains and e.template != template
    ]
    skills = [
        e
        for e in memory.list(kind="skill")
        if e.template and e.template.split(".")[0] != cluster and e.template != template
    ]
    picked_lessons = rng.sample(lessons, min(len(both.lessons), len(lessons)))
    picked_skills = rng.sample(skills, min(len(both.skills), len(skills)))
    return shown_recall(unranked(picked_lessons), unranked(picked_skills))


def dream_model_calls(store: Store) -> int:
    """Model calls the dream spent: its self-play and verification trajectories' `model_calls`.

    Lesson-extraction calls are not trajectories and are not counted, so the
    figure is a lower bound (the equal-compute arm gets no more than the dream).
    """
    total = 0
    for trajectory in store.iter_trajectories(task_kind="selfplay"):
        total += int(trajectory.extra.get("model_calls", 1) or 1)
    for trajectory in store.iter_trajectories(task_kind="verification"):
        total += int(trajectory.extra.get("model_calls", 1) or 1)
    return total


def equal_compute_attempts(dream_calls: int, items: int) -> int:
    """Attempts per held-out item for the equal-compute arm: 1 + dream calls / items.

    The one attempt every arm gets, plus the dream's calls spread over the
    items (rounded down), at most `EQUAL_COMPUTE_MAX_ATTEMPTS`.

    Raises:
        ValueError: `items` < 1 or `dream_calls` < 0.
    """
    if items < 1 or dream_calls < 0:
        raise ValueError("need at least one item and a non-negative call count")
    return min(EQUAL_COMPUTE_MAX_ATTEMPTS, 1 + dream_calls // items)
