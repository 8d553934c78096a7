"""The admin API under `/admin`: trajectories, lessons, retraction, background work.

Every route is a plain (sync) function: FastAPI runs it in its thread pool, and
the store serialises access with its own lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from fastapi import APIRouter, Body, Path, Query

from nightschool.errors import InfrastructureError, UserError
from nightschool.server._openapi import errors
from nightschool.server._wire import ApiError
from nightschool.trajectory import Outcome, Trajectory

if TYPE_CHECKING:
    from nightschool.playbook import Lesson, SkillMemory
    from nightschool.store import Store

MAX_LIST = 500
"""Most records one list call returns."""

PREVIEW_CHARS = 200
"""Characters of the user request shown in a trajectory summary."""

MAX_PLACED_FILES = 64
"""Most files one `PUT /admin/sessions/{id}/files` call may write (the body bound applies too)."""


class BackgroundSource(Protocol):
    """What the admin API needs from the chat pipeline: its background reflections.

    A pipeline that also has `place_files(session_id, files)` (as `ChatPipeline`
    does) serves `PUT /admin/sessions/{id}/files`.
    """

    def background_results(self, since: int = 0) -> list[Any]:
        """Finished background reflections after the first `since`, in order."""
        ...

    def pending_background(self) -> int:
        """Background reflections scheduled and not finished."""
        ...


def trajectory_summary(trajectory: Trajectory) -> dict[str, Any]:
    """One line of the trajectory list: ids, outcome, fault, a preview of the request."""
    return {
        "id": trajectory.id,
        "timestamp": trajectory.timestamp.isoformat(),
        "session_id": trajectory.session_id,
        "task_kind": trajectory.task_kind,
        "model": trajectory.model,
        "outcome": trajectory.outcome.value,
        "failure_reason": trajectory.failure_reason,
        "infrastructure_error": trajectory.infrastructure_error,
        "corrected": "correction" in trajectory.extra,
        "n_steps": trajectory.n_steps,
        "tool_calls": len(trajectory.tool_calls),
        "duration_s": trajectory.duration_s,
        "user_request": trajectory.user_request[:PREVIEW_CHARS],
    }


def lesson_json(lesson: Lesson) -> dict[str, Any]:
    """A lesson as JSON (every field, timestamps in ISO 8601)."""
    return lesson.model_dump(mode="json")


def background_json(result: Any) -> dict[str, Any]:
    """A `BackgroundResult` (a dataclass or any object with its fields) as JSON."""
    if is_dataclass(result) and not isinstance(result, type):
        return dict(asdict(result))
    return {
        name: getattr(result, name, None)
        for name in ("trajectory_id", "status", "detail", "lesson_id")
    }


def admin_router(
    *, store: Store, memory: SkillMemory | None, background: BackgroundSource
) -> APIRouter:
    """Build the `/admin` routes over `store`, `memory` (None: no playbook) and `background`.

    Routes:
        GET  /admin/trajectories?limit=&task_kind=&outcome=&session_id=   newest first
        GET  /admin/trajectories/{id}                           full record + corrections
        POST /admin/trajectories/{id}/retract-lessons          retract what it taught
        GET  /admin/lessons?limit=&verified=
        GET  /admin/lessons/{id}
        POST /admin/lessons/{id}/retract                       archive, then delete one
        GET  /admin/background?since=                          finished reflections
        PUT  /admin/sessions/{id}/files   {"files": {path: text}}  seed a session workspace
        GET  /admin/self-play                                  background self-play runs
        POST /admin/self-play  {"max_cycles": n}               start background self-play
        POST /admin/self-play/stop                             stop it

    The self-play routes answer 404 when the pipeline has no self-play tools
    (`practice` attribute None or absent).
    """
    router = APIRouter(prefix="/admin")

    def playbook() -> SkillMemory:
        if memory is None:
            raise ApiError(404, "this server runs without a skill playbook", code="no_playbook")
        return memory

    @router.get("/trajectories", responses=errors(400, 401))
    def list_trajectories(
        limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 50,
        task_kind: Annotated[str | None, Query(max_length=64)] = None,
        outcome: Outcome | None = None,
        session_id: Annotated[str | None, Query(max_length=256)] = None,
    ) -> dict[str, Any]:
        clauses, params = [], []
        for column, value in (
            ("task_kind", task_kind),
            ("outcome", outcome.value if outcome else None),
            ("session_id", session_id),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = store.query(
            f"SELECT id FROM trajectories_effective{where} "
            "ORDER BY timestamp DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        found = (store.get_trajectory(row[0]) for row in rows)
        items = [trajectory_summary(t) for t in found if t is not None]
        return {"object": "list", "data": items}

    @router.get("/trajectories/{trajectory_id}", responses=errors(401, 404))
    def show_trajectory(trajectory_id: str) -> dict[str, Any]:
        trajectory = store.get_trajectory(trajectory_id)
        if trajectory is None:
            raise ApiError(404, f"no trajectory {trajectory_id!r}", code="not_found")
        return {
            "trajectory": trajectory.model_dump(mode="json"),
            "corrections": [c.model_dump(mode="json") for c in store.corrections(trajectory_id)],
        }

    @router.post(
        "/trajectories/{trajectory_id}/retract-lessons", responses=errors(400, 401, 404, 413)
    )
    def retract_by_trajectory(
        trajectory_id: str,
        reason: Annotated[str, Body(embed=True, max_length=500)] = "retracted via the admin API",
    ) -> dict[str, Any]:
        count = playbook().retract_from_trajectory(trajectory_id, reason=reason)
        return {"trajectory_id": trajectory_id, "retracted": count}

    @router.get("/lessons", responses=errors(400, 401, 404))
    def list_lessons(
        limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 50,
        verified: bool | None = None,
    ) -> dict[str, Any]:
        lessons = playbook().list(limit=limit, verified=verified)
        return {"object": "list", "data": [lesson_json(lesson) for lesson in lessons]}

    @router.get("/lessons/{lesson_id}", responses=errors(401, 404))
    def show_lesson(lesson_id: str) -> dict[str, Any]:
        lesson = playbook().get(lesson_id)
        if lesson is None:
            raise ApiError(404, f"no lesson {lesson_id!r}", code="not_found")
        return lesson_json(lesson)

    @router.post("/lessons/{lesson_id}/retract", responses=errors(400, 401, 404, 413))
    def retract_lesson(
        lesson_id: str,
        reason: Annotated[str, Body(embed=True, max_length=500)] = "retracted via the admin API",
    ) -> dict[str, Any]:
        if not playbook().retract(lesson_id, reason=reason):
            raise ApiError(404, f"no lesson {lesson_id!r}", code="not_found")
        return {"lesson_id": lesson_id, "retracted": 1}

    @router.get("/background", responses=errors(400, 401))
    def background_results(since: Annotated[int, Query(ge=0)] = 0) -> dict[str, Any]:
        results = background.background_results(since)
        return {
            "object": "list",
            "data": [background_json(r) for r in results],
            "next": since + len(results),
            "pending": background.pending_background(),
        }

    _add_session_routes(router, background)
    _add_self_play_routes(router, background)
    return router


def _add_self_play_routes(router: APIRouter, background: BackgroundSource) -> None:
    """`/admin/self-play`: the agent's background practice (`agent.self_play.SelfPlayTools`)."""

    def practice() -> Any:
        tools = getattr(background, "practice", None)
        if tools is None:
            raise ApiError(404, "this server runs without self-play tools", code="no_self_play")
        return tools

    @router.get("/self-play", responses=errors(401, 404))
    def self_play_status() -> dict[str, Any]:
        return dict(practice().status())

    @router.post("/self-play", responses=errors(400, 401, 404, 409))
    def self_play_start(
        max_cycles: Annotated[int | None, Body(embed=True, ge=1, le=1000)] = None,
    ) -> dict[str, Any]:
        tools = practice()
        if tools.running():
            raise ApiError(409, "background self-play is already running", code="running")
        outcome = tools.self_play_loop(max_cycles)
        return {"detail": outcome.result, **tools.status()}

    @router.post("/self-play/stop", responses=errors(401, 404))
    def self_play_stop() -> dict[str, Any]:
        tools = practice()
        stopped = tools.stop("stopped via the admin API")
        return {"stopped": stopped, **tools.status()}


def _add_session_routes(router: APIRouter, background: BackgroundSource) -> None:
    """`PUT /admin/sessions/{id}/files`, served when the pipeline can place files."""

    @router.put("/sessions/{session_id}/files", responses=errors(400, 401, 404, 413, 503))
    def place_files(
        session_id: Annotated[str, Path(min_length=1, max_length=256)],
        files: Annotated[dict[str, str], Body(embed=True)],
    ) -> dict[str, Any]:
        place = getattr(background, "place_files", None)
        if place is None:
            raise ApiError(404, "this server cannot place workspace files", code="not_supported")
        if len(files) > MAX_PLACED_FILES:
            raise ApiError(
                400, f"at most {MAX_PLACED_FILES} files per request", code="too_many_files"
            )
        try:
            written = place(session_id, files)
        except UserError as exc:
            raise ApiError(400, str(exc), code="invalid_path") from exc
        except InfrastructureError as exc:
            raise ApiError(
                503, str(exc), type="server_error", code="workspace_unavailable"
            ) from exc
        return {"session_id": session_id, "written": list(written)}


def correction_json(correction: Any) -> dict[str, Any] | None:
    """The `correction` field of the wire extension, or None."""
    if correction is None:
        return None
    return {
        "trajectory_id": correction.trajectory_id,
        "jaccard": correction.jaccard,
        "signals": list(correction.signals),
        "lessons_retracted": correction.lessons_retracted,
        "reflection_scheduled": correction.reflection_scheduled,
    }


def extension_json(result: Any, session_id: str) -> Mapping[str, Any]:
    """The `nightschool` object added to every chat completion (see the shared contract)."""
    trajectory = result.trajectory
    return {
        "trajectory_id": trajectory.id,
        "session_id": session_id,
        "model": trajectory.model,
        "outcome": trajectory.outcome.value,
        "lessons_shown": list(result.lessons_shown),
        "tool_calls": [{"name": call.name, "error": call.error} for call in result.tool_calls],
        "correction": correction_json(result.correction),
    }
