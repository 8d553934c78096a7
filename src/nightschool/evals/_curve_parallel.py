"""`measure` of the learning curve with each held-out solve an episode on a parallel backend.

The driver recalls what each item's arm shows (the playbook is read here,
never in a worker), maps `solver.episodes.solve_once` over the items that
need a solve and writes each trajectory in item order; an item that shows
nothing reuses the start's result exactly as `curve.measure` does. Trajectory
ids are `derive_id("curve", salt, task_id)` with one fresh salt per
measurement, so a result delivered twice is written once and two measurements
never share an id.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from nightschool.evals._curve_items import (
    Arm,
    HeldOut,
    HeldOutItem,
    ItemResult,
    Measurement,
    as_eval,
    item_row,
    reusable,
    shown_for,
)
from nightschool.parallel import Backend, Resources, derive_id
from nightschool.solver.core import SolverConfig
from nightschool.solver.episodes import Solved, SolveJob, solve_once
from nightschool.store import Store
from nightschool.trajectory import new_id

if TYPE_CHECKING:
    from nightschool.lessons.skills import Recall
    from nightschool.playbook import SkillMemory


def store_once(store: Store, solved: Solved) -> str:
    """Append `solved.trajectory` unless its id is already stored; return the id."""
    with store.transaction():
        if store.get_trajectory(solved.trajectory.id) is None:
            store.append_trajectory(solved.trajectory)
    return solved.trajectory.id


def measure_parallel(
    backend: Backend,
    resources: Resources,
    config: SolverConfig,
    store: Store,
    memory: SkillMemory | None,
    heldout: HeldOut,
    arm: Arm,
    *,
    checkpoint: int,
    dream_s: float,
    cycles: int,
    session_id: str,
    on_item: Callable[[int, int, ItemResult], None] | None = None,
    start: Measurement | None = None,
    done: Mapping[str, ItemResult] | None = None,
) -> Measurement:
    """`curve.measure` with the solves on `backend` (arguments as there).

    Args:
        backend: where the solves run.
        resources: the solver's model and sandbox as an episode gets them.
        config: the single-attempt solver's settings.
        store: eval trajectories are appended here, in item order, by this process.
        memory: the playbook to recall from (None: nothing is shown).
        heldout: the sets.
        arm: `none`, `lessons`, `skills` or `both`.
        checkpoint: 0 for the start, then 1, 2, ...
        dream_s: dream seconds so far.
        cycles: dream cycles so far.
        session_id: recorded on the trajectories.
        on_item: progress callback (index from 1, total, result).
        start: the `none` measurement whose results items that show nothing reuse.
        done: results an earlier session measured (`curve.measure`): taken as
            they are, never solved or passed to `on_item`.

    Raises:
        InfrastructureError: the model, sandbox or a worker failed (items
            before it are stored, the rest cancelled).
    """
    out = Measurement(checkpoint, dream_s, cycles, arm)
    items = heldout.items
    before = {r.task_id: r for r in start.results} if start is not None else {}
    salt = new_id()
    earlier = done or {}
    plan = [
        (item, shown_for(memory, heldout, item, arm))
        for item in items
        if item.task_id not in earlier
    ]

    def reused(item: HeldOutItem, shown: Recall) -> bool:
        return item.task_id in before and reusable(arm, shown)

    def jobs() -> Iterator[SolveJob]:
        for item, shown in plan:
            if not reused(item, shown):
                yield SolveJob(
                    challenge=item.challenge,
                    config=config,
                    session_id=session_id,
                    trajectory_id=derive_id("curve", salt, item.task_id),
                    lessons=tuple(shown.lessons),
                    skills=tuple(shown.skill_sections),
                    skill_ids=tuple(shown.skill_ids),
                )

    with contextlib.closing(backend.map(solve_once, resources, jobs())) as solved:
        rows = iter(plan)
        for index, item in enumerate(items, start=1):
            if item.task_id in earlier:
                out.results.append(earlier[item.task_id])
                continue
            _, shown = next(rows)
            if reused(item, shown):
                row = dataclasses.replace(before[item.task_id], reused=True)
            else:
                result = next(solved)
                if result.infrastructure_error is not None:
                    raise result.infrastructure_error
                trajectory = as_eval(result.trajectory, checkpoint, arm, item.set_name)
                trajectory_id = store_once(
                    store, dataclasses.replace(result, trajectory=trajectory)
                )
                row = item_row(item, shown, result.passed, trajectory, trajectory_id)
            out.results.append(row)
            if on_item is not None:
                on_item(index, len(items), row)
    return out
