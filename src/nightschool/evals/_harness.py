"""Running a suite: every task through a runner, scored, stored one by one.

The whole run executes inside `privacy.no_external_network()`: any
non-loopback connection or DNS lookup from this process raises (the HTTP
runner's loopback connection is allowed), and task code is scored in the
bubblewrap sandbox, which has no network at all.

Failure rules:
    - a task that times out is failed with error `timeout`;
    - an agent that crashes on a task (an unexpected exception) fails that task
      with the exception named;
    - an infrastructure fault (`InfrastructureError`: model down, sandbox
      broken, broken challenge) aborts the run (status `aborted`, the fault in
      `eval_runs.error`) and propagates (CLI exit 3); it is never scored;
    - a blocked egress attempt aborts the run with a `UserError` (exit 2);
    - Ctrl-C marks the run `interrupted` and propagates; every result finished
      before it is already stored.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import nightschool
from nightschool.errors import NightschoolError, UserError
from nightschool.evals._model import EvalRun, RunStatus, Task, TaskResult
from nightschool.evals._runners import Runner, TaskTimeout
from nightschool.evals._storage import add_result, create_run, finish_run, load_run
from nightschool.evals._suites import Suite
from nightschool.privacy import NetworkEgressError, no_external_network
from nightschool.sandbox import Sandbox
from nightschool.store import Store

DEFAULT_TIMEOUT_S = 300.0
"""Default per-task limit, seconds. The prior system measured 80-250 s for
multi-turn template tasks on a local 35B model; a 60 s default produced
spurious timeouts there."""

ResultCallback = Callable[[int, Task, TaskResult], None]
"""Called after each stored result with (index, task, result)."""


def run_task(
    task: Task,
    runner: Runner,
    sandbox: Sandbox,
    *,
    session_id: str,
    timeout_s: float,
) -> TaskResult:
    """Ask the agent one task and score the reply.

    Returns:
        The `TaskResult`; a timeout or an agent crash is a failed result.

    Raises:
        InfrastructureError: the model, server or sandbox is unusable.
        NightschoolError: other systemic faults (egress blocked, bad settings).
    """
    started = time.perf_counter()
    try:
        reply = runner.ask(task, session_id=session_id, timeout_s=timeout_s)
    except TaskTimeout:
        return TaskResult(
            task.id, False, 0.0, duration_s=round(time.perf_counter() - started, 4), error="timeout"
        )
    except NightschoolError:
        raise
    except Exception as exc:  # the agent under test crashed on this task: data
        return TaskResult(
            task.id,
            False,
            0.0,
            duration_s=round(time.perf_counter() - started, 4),
            error=f"agent crashed: {type(exc).__name__}: {exc}"[:300],
        )
    score = task.scorer(reply, sandbox)
    return TaskResult(
        task_id=task.id,
        passed=score.passed,
        score=min(1.0, max(0.0, float(score.score))),
        tokens_in=reply.tokens_in,
        tokens_out=reply.tokens_out,
        duration_s=round(time.perf_counter() - started, 4),
        error=None if score.passed else (score.error or "failed"),
        trajectory_id=reply.trajectory_id,
        detail={**score.detail, "lessons_shown": list(reply.lessons_shown)},
    )


def run_eval(
    suite: Suite,
    runner: Runner,
    store: Store,
    sandbox: Sandbox,
    *,
    limit: int | None = None,
    task_ids: Sequence[str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    config: Mapping[str, Any] | None = None,
    on_start: Callable[[str, int], None] | None = None,
    on_result: ResultCallback | None = None,
) -> EvalRun:
    """Run `suite` (optionally a subset) through `runner`; store the run and every result.

    Args:
        suite: the suite.
        runner: how the agent is reached.
        store: where the run is recorded (tables of `m005_eval_runs`).
        sandbox: where task code is scored.
        limit: only the first `limit` tasks (after `task_ids`).
        task_ids: only these tasks (suite order kept).
        timeout_s: per-task limit for the agent's answer, seconds.
        config: extra provenance stored with the run (playbook on/off, server...).
        on_start: called with (run id, number of tasks) once the run is recorded.
        on_result: called after each stored result.

    Returns:
        The finished run with its results.

    Raises:
        UserError: bad selection, or a non-loopback connection was attempted.
        InfrastructureError: the agent's model, the server or the sandbox failed;
            the run is stored as `aborted` with what finished before.
        KeyboardInterrupt: the run is stored as `interrupted` first.
    """
    if timeout_s <= 0:
        raise UserError(f"--timeout must be positive, got {timeout_s:g}")
    tasks = suite.select(task_ids, limit)
    with local_only():
        runner.check()
    settings = {"limit": limit, "timeout_s": timeout_s, "task_ids": [t.id for t in tasks]}
    run_id = create_run(
        store,
        suite=suite.name,
        runner=runner.name,
        model=runner.model_name,
        seed=suite.seed,
        version=nightschool.__version__,
        config={**settings, **dict(config or {})},
    )
    if on_start is not None:
        on_start(run_id, len(tasks))
    with recorded_run(store, run_id, lambda: runner.model_name), local_only():
        for index, task in enumerate(tasks):
            result = run_task(
                task,
                runner,
                sandbox,
                session_id=eval_session_id(run_id, index),
                timeout_s=timeout_s,
            )
            add_result(store, run_id, result)
            if on_result is not None:
                on_result(index, task, result)
    return load_run(store, run_id)


def eval_session_id(run_id: str, index: int) -> str:
    """The agent session of task `index` (from 0) of run `run_id`: `eval-<id[:12]>-<index:04d>`."""
    return f"eval-{run_id[:12]}-{index:04d}"


@contextlib.contextmanager
def recorded_run(store: Store, run_id: str, model_name: Callable[[], str]) -> Iterator[None]:
    """Finish run `run_id` when the block ends: `completed`, `interrupted` or `aborted`.

    `completed` when the block returns; `interrupted` on Ctrl-C; `aborted`
    with the fault in `eval_runs.error` on any other exception, which
    propagates. `model_name()` is read at the end (an HTTP runner learns the
    served model late).
    """
    status: RunStatus = "aborted"
    error: str | None = None
    try:
        yield
        status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except NightschoolError as exc:
        error = f"{type(exc).__name__}: {exc.message}"
        raise
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
        raise
    finally:
        finish_run(store, run_id, status, error=error, model=model_name())


@contextlib.contextmanager
def local_only() -> Iterator[None]:
    """`privacy.no_external_network()`, with a blocked attempt turned into a `UserError`.

    Raises (inside the block):
        UserError: a non-loopback connection or DNS lookup was attempted (CLI exit 2).
    """
    try:
        with no_external_network():
            yield
    except NetworkEgressError as exc:
        raise UserError(
            f"eval aborted: {exc.message} (evals are local-only)",
            hint="use a model server on 127.0.0.1 or the embedded model",
        ) from exc
