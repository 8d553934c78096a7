"""Real-time reflections on a background worker: tracked, logged, never lost silently.

Seed 002: without a done-callback the result of a fire-and-forget reflection
was invisible, and operators could not tell "loop misfired" from "model was
slow". Every scheduled task here ends in exactly one `BackgroundResult` (ok /
no lesson / failed, cancelled ones included) and one log line.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

from nightschool.agent._types import BackgroundResult
from nightschool.lessons.reflection import Reflector, ReflectOutcome
from nightschool.trajectory import Trajectory

logger = logging.getLogger("nightschool.agent")

_PREVIEW = 120
"""Characters of the diagnosis shown in logs and results."""


def summarise(outcome: ReflectOutcome) -> BackgroundResult:
    """Turn a `ReflectOutcome` into a `BackgroundResult` (ok / no lesson)."""
    tid = outcome.source_trajectory_id
    if outcome.status != "reflected" or outcome.reflection is None:
        return BackgroundResult(tid, "no lesson", f"{outcome.status}: {outcome.detail}", None)
    preview = outcome.reflection.diagnosis[:_PREVIEW]
    sink = outcome.sink_result
    status = getattr(sink, "status", None)
    lesson_id = getattr(sink, "lesson_id", None)
    if status in ("written", "reinforced") and isinstance(lesson_id, str):
        return BackgroundResult(tid, "ok", f"diagnosis={preview!r} (lesson {status})", lesson_id)
    if sink is None:
        why = outcome.detail if "sink failed" in outcome.detail else "no sink configured"
    else:
        why = f"lesson {status}: {getattr(sink, 'reason', '')}".rstrip(": ")
    return BackgroundResult(tid, "no lesson", f"{why}; diagnosis={preview!r}", None)


class BackgroundReflections:
    """One worker thread running `reflector.reflect_one`, with every result kept in order.

    Args:
        reflector: runs the reflections.
    """

    def __init__(self, reflector: Reflector) -> None:
        self.reflector = reflector
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._cond = threading.Condition()
        self._pending = 0
        self._results: list[BackgroundResult] = []
        self._closed = False

    def schedule(self, trajectory: Trajectory) -> bool:
        """Queue a reflection on `trajectory`; False when closed (nothing queued)."""
        with self._cond:
            if self._closed:
                logger.warning("post-turn reflection not scheduled (closed): %s", trajectory.id)
                return False
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix="nightschool-realtime-reflect"
                )
            self._pending += 1
            try:
                future = self._executor.submit(self._run, trajectory)
            except RuntimeError:  # executor shut down meanwhile
                self._pending -= 1
                return False
        future.add_done_callback(self._done_callback(trajectory.id))
        return True

    def _run(self, trajectory: Trajectory) -> BackgroundResult:
        try:
            return summarise(self.reflector.reflect_one(trajectory))
        except Exception as exc:
            logger.debug("post-turn reflection raised", exc_info=True)
            return BackgroundResult(trajectory.id, "failed", f"{type(exc).__name__}: {exc}", None)

    def _done_callback(
        self, trajectory_id: str
    ) -> Callable[[concurrent.futures.Future[BackgroundResult]], None]:
        def done(future: concurrent.futures.Future[BackgroundResult]) -> None:
            if future.cancelled():
                result = BackgroundResult(trajectory_id, "failed", "CancelledError: at close", None)
            elif (exc := future.exception()) is not None:
                result = BackgroundResult(
                    trajectory_id, "failed", f"{type(exc).__name__}: {exc}", None
                )
            else:
                result = future.result()
            _log(result)
            with self._cond:
                self._results.append(result)
                self._pending -= 1
                self._cond.notify_all()

        return done

    def results(self, since: int = 0) -> list[BackgroundResult]:
        """Finished results from index `since` on, in the order they finished."""
        with self._cond:
            return list(self._results[max(0, since) :])

    def pending(self) -> int:
        """Tasks queued or running."""
        with self._cond:
            return self._pending

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until no task is pending (or `timeout_s` passes); True when all are done."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout=timeout_s)

    def close(self, *, wait: bool = True, timeout_s: float | None = None) -> None:
        """Stop accepting tasks; drain them (`wait`) or cancel the queued ones.

        A task still running when `timeout_s` runs out (or with `wait=False`)
        cannot be interrupted: it finishes on its own thread and its result is
        still recorded; queued ones are cancelled and recorded as `failed`.
        """
        with self._cond:
            self._closed = True
            executor = self._executor
        if executor is None:
            return
        drained = self.wait(timeout_s) if wait else False
        if not drained and self.pending():
            logger.warning("closing with %d post-turn reflection(s) unfinished", self.pending())
        executor.shutdown(wait=drained, cancel_futures=True)


def _log(result: BackgroundResult) -> None:
    if result.status == "ok":
        logger.info(
            "post-turn reflection: ok (traj=%s): %s lesson=%s",
            result.trajectory_id,
            result.detail,
            result.lesson_id,
        )
    elif result.status == "no lesson":
        logger.warning("post-turn reflection: no lesson (traj=%s): %s", *_args(result))
    else:
        logger.error("post-turn reflection: failed (traj=%s): %s", *_args(result))


def _args(result: BackgroundResult) -> tuple[str, str]:
    return result.trajectory_id, result.detail
