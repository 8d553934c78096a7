"""`run_eval_parallel`: an eval run whose tasks are episodes on a `nightschool.parallel` backend.

The driver (this process) records the run, takes the database snapshot each
task needs (the lessons and skills retrieved for its prompt, the `### WHO I
AM` section, the strategy record) and maps `eval_episode` over the tasks.
Each episode rebuilds the in-process agent in its worker (`DetachedPipeline`:
the same `ChatPipeline` code, no database), asks the task, scores the reply in
the sandbox and returns the `TaskResult` with the turn's trajectory. Results
come back in task order and the driver writes each one in one transaction:
the trajectory, its lesson exposures and outcome credit, and the result row.

Idempotence: the trajectory id is `derive_id("eval", run_id, task_id)` and the
result row is keyed by the table's `UNIQUE (run_id, task_id)`; a result that
arrives twice (a retried task) finds both present and writes nothing.

Differences from `run_eval` with the in-process runner: the snapshot of task
k is taken before results of earlier tasks are written (up to `2 * workers`
ahead), so a playbook whose ranking moves with exposure counts may show a
different lesson; trajectory ids are derived instead of random. Failure rules
are `run_eval`'s (see `_harness`).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nightschool
from nightschool.errors import NightschoolError, UserError
from nightschool.evals._harness import (
    DEFAULT_TIMEOUT_S,
    ResultCallback,
    eval_session_id,
    local_only,
    recorded_run,
    run_task,
)
from nightschool.evals._model import EvalRun, Task, TaskResult
from nightschool.evals._runners import InProcessRunner
from nightschool.evals._storage import add_result, create_run, load_run
from nightschool.evals._suites import Suite, get_suite
from nightschool.learn.chat_router import ChatRouter
from nightschool.parallel import Backend, Resources, derive_id
from nightschool.store import Store
from nightschool.strategies.champions import chat_strategy
from nightschool.trajectory import Outcome, Trajectory

if TYPE_CHECKING:
    from nightschool.agent import AgentConfig
    from nightschool.playbook import RetrievedLesson, SkillMemory


@dataclass(frozen=True)
class RemoteAgent:
    """What every eval episode shares (picklable with `SettingsResources`).

    Attributes:
        resources: the agent's model and the sandbox (tools and scoring).
        config: the agent settings (an eval's: `verify=False`, no reflection).
        suite: the suite name (a worker rebuilds the suite to get each task).
        seed: the suite seed.
        timeout_s: per-task limit for the agent's answer, seconds.
        model_name: the model name recorded on the run.
        route: `full` or `direct`: how every task is answered (`eval run --route`).
    """

    resources: Resources
    config: AgentConfig
    suite: str
    seed: int
    timeout_s: float = DEFAULT_TIMEOUT_S
    model_name: str = ""
    route: str = "full"


@dataclass(frozen=True)
class EvalItem:
    """One task as an episode: its ids and the database snapshot its turn needs.

    Attributes:
        task_id: the task (looked up in the rebuilt suite).
        session_id: the agent session (`eval-<run[:12]>-<index:04d>`).
        trajectory_id: the id the turn's trajectory is written under.
        lessons: lessons retrieved for the prompt (within their budget).
        skills: skills retrieved for the prompt (within their budget).
        who_i_am: the `### WHO I AM` section ("" for none).
        strategy: `extra["strategy"]` of the turn.
    """

    task_id: str
    session_id: str
    trajectory_id: str
    lessons: tuple[RetrievedLesson, ...] = ()
    skills: tuple[RetrievedLesson, ...] = ()
    who_i_am: str = ""
    strategy: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalOutcome:
    """What one eval episode returns to the driver.

    Attributes:
        result: the scored result; None when an infrastructure fault ended it.
        trajectory: the turn's trajectory (id = the item's `trajectory_id`),
            or None when the turn recorded none (a timeout whose turn never
            finished).
        error: the systemic fault that must abort the run (re-raised by the
            driver after writing `trajectory`), or None.
    """

    result: TaskResult | None
    trajectory: Trajectory | None = None
    error: NightschoolError | None = None


_suites: dict[tuple[str, int], dict[str, Task]] = {}
_suites_lock = threading.Lock()


def _task(suite: str, seed: int, task_id: str) -> Task:
    """Task `task_id` of suite (`suite`, `seed`), the suite built once per process."""
    with _suites_lock:
        if (suite, seed) not in _suites:
            _suites[(suite, seed)] = {task.id: task for task in get_suite(suite, seed).tasks}
        tasks = _suites[(suite, seed)]
    if task_id not in tasks:
        raise UserError(f"suite {suite} (seed {seed}) has no task {task_id}")
    return tasks[task_id]


def eval_episode(agent: RemoteAgent, item: EvalItem) -> EvalOutcome:
    """Ask one eval task through a detached in-process agent and score it (runs in a worker).

    Returns:
        The `EvalOutcome`; a timeout or an agent crash is a failed result, an
        infrastructure fault is `error` (with the turn recorded as unknown).

    Raises:
        UserError: the suite or task cannot be rebuilt in this process.
    """
    # function-local: start-up time (_detached loads the agent, ~50 modules, ~140 ms; only a
    # worker's episode needs it)
    from nightschool.evals._detached import DetachedPipeline

    task = _task(agent.suite, agent.seed, item.task_id)
    model, sandbox = agent.resources.model(), agent.resources.sandbox()
    root = Path(tempfile.mkdtemp(prefix="nightschool-eval-"))
    root.chmod(0o711)  # the sandbox user must reach the session workspaces
    pipeline = DetachedPipeline(
        model=model,
        sandbox=sandbox,
        workspace_root=root,
        config=agent.config,
        lessons=item.lessons,
        skills=item.skills,
        who_i_am=item.who_i_am,
        strategy=dict(item.strategy),
        router=ChatRouter(forced="direct" if agent.route == "direct" else "full"),
    )
    runner = InProcessRunner(pipeline, model_name=model.name)
    result: TaskResult | None = None
    error: NightschoolError | None = None
    try:
        result = run_task(
            task, runner, sandbox, session_id=item.session_id, timeout_s=agent.timeout_s
        )
    except NightschoolError as exc:
        error = exc
    finally:
        runner.close()  # a timed-out turn may still finish and record
        pipeline.close(wait=True, timeout_s=30)
        for path in {root, Path(pipeline.workspace_root)}:
            shutil.rmtree(path, ignore_errors=True)
    trajectory = pipeline.recorded[-1] if pipeline.recorded else None
    if trajectory is not None:
        trajectory = trajectory.model_copy(update={"id": item.trajectory_id})
    if result is not None and result.trajectory_id is not None:
        result = replace(result, trajectory_id=item.trajectory_id)
    return EvalOutcome(result, trajectory, error)


def _record_exposures(memory: SkillMemory, trajectory: Trajectory) -> None:
    """What `ChatPipeline._record` credits for a finished turn: exposures, then failure."""
    extra = trajectory.extra
    for ids_key, scores_key in (
        ("lessons_shown", "lesson_scores"),
        ("skills_shown", "skill_scores"),
    ):
        ids = list(extra.get(ids_key) or [])
        if ids:
            memory.record_exposure(ids, trajectory.id, list(extra.get(scores_key) or []) or None)
    if trajectory.outcome == Outcome.FAILED and (
        extra.get("lessons_shown") or extra.get("skills_shown")
    ):
        memory.record_outcome(trajectory.id, passed=False)


def write_outcome(
    store: Store, memory: SkillMemory | None, run_id: str, outcome: EvalOutcome
) -> bool:
    """Write one episode's trajectory (with exposures) and result row in one transaction.

    Idempotent: a trajectory whose id is already stored and a result whose
    (run, task) is already stored are skipped, so a second delivery of the
    same outcome writes nothing.

    Returns:
        True when the result row was written now.

    Raises:
        StoreError: the database refused the write (nothing of it is kept).
    """
    written = False
    with store.transaction():
        trajectory = outcome.trajectory
        if trajectory is not None and store.get_trajectory(trajectory.id) is None:
            stored = store.append_trajectory(trajectory)
            if memory is not None and stored.infrastructure_error is None:
                _record_exposures(memory, stored)
        if outcome.result is not None:
            written = add_result(store, run_id, outcome.result, skip_existing=True)
    return written


def _items(
    store: Store,
    memory: SkillMemory | None,
    agent: RemoteAgent,
    run_id: str,
    tasks: Sequence[Task],
) -> Iterator[EvalItem]:
    """Each task's episode, its snapshot taken when it is submitted."""
    # function-local: start-up time (the agent, ~50 modules, ~200 ms, and selfhood, ~40 ms,
    # beyond what evals loads; only a parallel eval needs them)
    from nightschool.agent._shown import shown_for_request
    from nightschool.selfhood import wake_up_prefix

    who_i_am = wake_up_prefix(store)
    strategy = chat_strategy(store)
    for index, task in enumerate(tasks):
        shown = shown_for_request(memory, agent.config, task.prompt)
        yield EvalItem(
            task_id=task.id,
            session_id=eval_session_id(run_id, index),
            trajectory_id=derive_id("eval", run_id, task.id),
            lessons=tuple(shown.lessons),
            skills=tuple(shown.skills),
            who_i_am=who_i_am,
            strategy=strategy,
        )


def run_eval_parallel(
    suite: Suite,
    agent: RemoteAgent,
    store: Store,
    backend: Backend,
    *,
    memory: SkillMemory | None = None,
    limit: int | None = None,
    task_ids: Sequence[str] | None = None,
    config: Mapping[str, Any] | None = None,
    on_start: Callable[[str, int], None] | None = None,
    on_result: ResultCallback | None = None,
) -> EvalRun:
    """Run `suite` with each task an episode on `backend`; the driver stores everything in order.

    Args:
        suite: the suite (rebuilt by name and seed in each worker).
        agent: what every episode shares (`agent.suite`/`seed` must match `suite`).
        store: where the run is recorded; only this process writes it.
        backend: where episodes run (`LocalBackend` runs them here, in order).
        memory: the playbook the snapshot is retrieved from and exposures are
            credited to (None: no playbook).
        limit: only the first `limit` tasks (after `task_ids`).
        task_ids: only these tasks (suite order kept).
        config: extra provenance stored with the run; `backend` and `workers`
            are added.
        on_start: called with (run id, number of tasks) once the run is recorded.
        on_result: called after each stored result.

    Returns:
        The finished run with its results (runner `inprocess`).

    Raises:
        UserError: bad selection, a non-loopback connection was attempted, or
            `agent` names another suite.
        InfrastructureError: a model, sandbox or worker fault; the run is stored
            as `aborted` with every result written before it.
        KeyboardInterrupt: episodes in flight are cancelled, the run is stored
            as `interrupted` with the results written before.
    """
    if agent.timeout_s <= 0:
        raise UserError(f"--timeout must be positive, got {agent.timeout_s:g}")
    if (agent.suite, agent.seed) != (suite.name, suite.seed):
        raise UserError(f"the agent spec is for suite {agent.suite}, not {suite.name}")
    tasks = suite.select(task_ids, limit)
    settings = {"limit": limit, "timeout_s": agent.timeout_s, "task_ids": [t.id for t in tasks]}
    run_id = create_run(
        store,
        suite=suite.name,
        runner="inprocess",
        model=agent.model_name,
        seed=suite.seed,
        version=nightschool.__version__,
        config={
            **settings,
            **dict(config or {}),
            "backend": backend.name,
            "workers": backend.workers,
        },
    )
    if on_start is not None:
        on_start(run_id, len(tasks))
    with recorded_run(store, run_id, lambda: agent.model_name), local_only():
        outcomes = backend.map(eval_episode, agent, _items(store, memory, agent, run_id, tasks))
        with contextlib.closing(outcomes):
            for index, (task, outcome) in enumerate(zip(tasks, outcomes, strict=True)):
                write_outcome(store, memory, run_id, outcome)
                if outcome.error is not None:
                    raise outcome.error
                assert outcome.result is not None
                if on_result is not None:
                    on_result(index, task, outcome.result)
    return load_run(store, run_id)
