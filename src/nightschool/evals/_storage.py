"""Eval runs and per-task results in the store (tables of migration `m005_eval_runs`).

`eval_runs` rows are updated as a run progresses; `eval_results` rows are
append-only, one per (run, task), each written in its own durable transaction
so an interrupted run keeps every result it finished.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nightschool.errors import StoreError, UserError
from nightschool.evals._model import EvalRun, RunStatus, TaskResult
from nightschool.store import Store
from nightschool.trajectory import new_id

_RUN_COLUMNS = (
    "id, suite, runner, model, seed, version, started_at, finished_at, status, n, passed, config"
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def create_run(
    store: Store,
    *,
    suite: str,
    runner: str,
    model: str,
    seed: int,
    version: str,
    config: Mapping[str, Any],
) -> str:
    """Insert a `running` run and return its id (32 hex digits)."""
    run_id = new_id()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO eval_runs(id, suite, runner, model, seed, version, started_at, status, "
            "config) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
            (run_id, suite, runner, model, seed, version, _now(), json.dumps(dict(config))),
        )
    return run_id


def add_result(
    store: Store, run_id: str, result: TaskResult, *, skip_existing: bool = False
) -> bool:
    """Append one task result and bump the run's counts, in one transaction.

    Args:
        store: the database.
        run_id: the run.
        result: the task's result.
        skip_existing: when the run already has a result for `result.task_id`
            (the `UNIQUE (run_id, task_id)` key), write nothing and return
            False instead of raising: an idempotent write for a result that may
            arrive twice (a retried parallel episode). Joins an enclosing
            `store.transaction()`.

    Returns:
        True when the row was written.

    Raises:
        StoreError: the run already has a result for this task (unless
            `skip_existing`), or no such run.
    """
    try:
        with store.transaction() as conn:
            if (
                skip_existing
                and conn.execute(
                    "SELECT 1 FROM eval_results WHERE run_id = ? AND task_id = ?",
                    (run_id, result.task_id),
                ).fetchone()
            ):
                return False
            conn.execute(
                "INSERT INTO eval_results(run_id, task_id, passed, score, tokens_in, tokens_out, "
                "duration_s, error, trajectory_id, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    result.task_id,
                    int(result.passed),
                    float(result.score),
                    int(result.tokens_in),
                    int(result.tokens_out),
                    float(result.duration_s),
                    result.error,
                    result.trajectory_id,
                    json.dumps(dict(result.detail), default=str),
                ),
            )
            conn.execute(
                "UPDATE eval_runs SET n = n + 1, passed = passed + ? WHERE id = ?",
                (int(result.passed), run_id),
            )
    except sqlite3.IntegrityError as exc:
        raise StoreError(f"result {result.task_id} of run {run_id} refused: {exc}") from exc
    return True


def finish_run(
    store: Store, run_id: str, status: RunStatus, *, error: str | None = None, model: str = ""
) -> None:
    """Set the run's final status and finish time (and the model when learned late)."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE eval_runs SET status = ?, finished_at = ?, error = ?, "
            "model = CASE WHEN ? != '' THEN ? ELSE model END WHERE id = ?",
            (status, _now(), error, model, model, run_id),
        )


def _result(row: tuple[Any, ...]) -> TaskResult:
    return TaskResult(
        task_id=row[0],
        passed=bool(row[1]),
        score=float(row[2]),
        tokens_in=int(row[3]),
        tokens_out=int(row[4]),
        duration_s=float(row[5]),
        error=row[6],
        trajectory_id=row[7],
        detail=json.loads(row[8]),
    )


def _run(row: tuple[Any, ...], results: tuple[TaskResult, ...] = ()) -> EvalRun:
    return EvalRun(
        id=row[0],
        suite=row[1],
        runner=row[2],
        model=row[3],
        seed=int(row[4]),
        version=row[5],
        started_at=row[6],
        finished_at=row[7],
        status=row[8],
        n=int(row[9]),
        passed=int(row[10]),
        config=json.loads(row[11]),
        results=results,
    )


def load_run(store: Store, run_id: str) -> EvalRun:
    """Load a run with its results (execution order); a unique id prefix is accepted.

    Raises:
        UserError: no run, or more than one, matches `run_id`.
    """
    rows = store.query(
        f"SELECT {_RUN_COLUMNS} FROM eval_runs WHERE id LIKE ? ORDER BY started_at",
        (run_id.replace("%", "").replace("_", "") + "%",),
    )
    if not rows:
        raise UserError(
            f"no eval run {run_id!r} in {store.path}", hint="see `nightschool eval runs`"
        )
    if len(rows) > 1:
        raise UserError(f"eval run id {run_id!r} is ambiguous ({len(rows)} runs match)")
    results = store.query(
        "SELECT task_id, passed, score, tokens_in, tokens_out, duration_s, error, trajectory_id, "
        "detail FROM eval_results WHERE run_id = ? ORDER BY id",
        (rows[0][0],),
    )
    return _run(rows[0], tuple(_result(row) for row in results))


def list_runs(store: Store, *, suite: str | None = None, limit: int = 20) -> list[EvalRun]:
    """The latest runs, newest first (results not loaded)."""
    sql = f"SELECT {_RUN_COLUMNS} FROM eval_runs"
    params: list[Any] = []
    if suite is not None:
        sql += " WHERE suite = ?"
        params.append(suite)
    sql += " ORDER BY started_at DESC, rowid DESC LIMIT ?"
    params.append(limit)
    return [_run(row) for row in store.query(sql, params)]
