"""The dashboard's read model: trajectories, lessons and their lineage, phases, diary.

Plain SQL over the store's tables, each query bounded (`LIMIT`) and served by
an index; nothing here writes. Effective outcomes come from the
`effective_corrections` view, the rule every other reader uses. Lists are
paged with keyset cursors (newest first), so page 2,000 costs what page 1 does.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nightschool.store import Store
    from nightschool.trajectory import Correction, Trajectory

PREVIEW_CHARS = 140
"""Characters of a request or lesson text shown in a list row."""


def when(epoch: float | None) -> datetime | None:
    """Epoch seconds as an aware UTC datetime (None stays None)."""
    return None if epoch is None else datetime.fromtimestamp(float(epoch), UTC)


@dataclass(frozen=True)
class TrajectoryFilter:
    """What the trajectory list shows; every field None means no filter on it."""

    kind: str | None = None
    outcome: str | None = None
    cluster: str | None = None
    tier: str | None = None
    session: str | None = None
    corrected: bool | None = None

    def only_counted_fields(self) -> bool:
        """True when the filter uses only fields the overview counts (fast totals)."""
        return self.session is None and self.corrected is None

    def params(self) -> dict[str, str]:
        """The filter as query parameters (for links)."""
        out = {
            name: str(value)
            for name, value in (
                ("kind", self.kind),
                ("outcome", self.outcome),
                ("cluster", self.cluster),
                ("tier", self.tier),
                ("session", self.session),
            )
            if value
        }
        if self.corrected is not None:
            out["corrected"] = "yes" if self.corrected else "no"
        return out


@dataclass(frozen=True)
class Page:
    """One page of a newest-first list.

    Attributes:
        rows: the rows, newest first.
        older: cursor of the next (older) page, or None at the end.
        newer: cursor of the previous (newer) page, or None at the start.
    """

    rows: list[dict[str, Any]]
    older: str | None = None
    newer: str | None = None


def _cursor(row: Sequence[Any]) -> str:
    return f"{float(row[0])!r}:{int(row[1])}"


def parse_cursor(value: str | None) -> tuple[float, int] | None:
    """`<timestamp>:<rowid>` -> (timestamp, rowid); None for a missing or malformed one."""
    if not value:
        return None
    stamp, _, rowid = value.partition(":")
    try:
        return float(stamp), int(rowid)
    except ValueError:
        return None


_TRAJECTORY_ROW = (
    "SELECT t.timestamp, t.rowid, t.id, t.task_kind, t.cluster, t.tier, t.outcome, "
    "c.outcome, t.session_id, "
    f"substr(json_extract(t.record, '$.user_request'), 1, {PREVIEW_CHARS}), "
    "json_array_length(t.record, '$.tool_calls'), json_extract(t.record, '$.model'), "
    "json_extract(t.record, '$.failure_reason'), "
    "json_extract(t.record, '$.extra.infrastructure_error') "
    "FROM trajectories t LEFT JOIN effective_corrections c ON c.trajectory_id = t.id"
)


def _trajectory_row(row: Sequence[Any]) -> dict[str, Any]:
    return {
        "timestamp": when(row[0]),
        "id": row[2],
        "kind": row[3],
        "cluster": row[4] or "",
        "tier": row[5] or "",
        "recorded_outcome": row[6],
        "outcome": row[7] or row[6],
        "corrected": row[7] is not None,
        "session_id": row[8],
        "request": row[9] or "",
        "tool_calls": int(row[10] or 0),
        "model": row[11] or "",
        "failure_reason": row[12] or "",
        "infrastructure_error": row[13] or "",
    }


def _filter_sql(where: TrajectoryFilter) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("t.task_kind", where.kind),
        ("t.cluster", where.cluster),
        ("t.tier", where.tier),
        ("t.session_id", where.session),
        ("COALESCE(c.outcome, t.outcome)", where.outcome),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if where.corrected is not None:
        clauses.append("c.outcome IS NOT NULL" if where.corrected else "c.outcome IS NULL")
    return clauses, params


def list_trajectories(
    store: Store,
    where: TrajectoryFilter,
    *,
    older_than: tuple[float, int] | None = None,
    newer_than: tuple[float, int] | None = None,
    limit: int = 50,
) -> Page:
    """One page of trajectories, newest first, with their effective outcome.

    Args:
        store: the database.
        where: filters.
        older_than: the page after this cursor (timestamp, rowid).
        newer_than: the page before this cursor (ignored when `older_than` is set).
        limit: rows per page.
    """
    clauses, params = _filter_sql(where)
    backwards = older_than is None and newer_than is not None
    if older_than is not None:
        clauses.append("(t.timestamp, t.rowid) < (?, ?)")
        params.extend(older_than)
    elif newer_than is not None:
        clauses.append("(t.timestamp, t.rowid) > (?, ?)")
        params.extend(newer_than)
    sql = _TRAJECTORY_ROW + (" WHERE " + " AND ".join(clauses) if clauses else "")
    order = "ASC" if backwards else "DESC"
    sql += f" ORDER BY t.timestamp {order}, t.rowid {order} LIMIT ?"
    rows = store.query(sql, [*params, limit + 1])
    more = len(rows) > limit
    if backwards and not more:
        return list_trajectories(store, where, limit=limit)  # back at the newest page
    rows = rows[:limit]
    if backwards:
        rows.reverse()
    page_rows = [_trajectory_row(r) for r in rows]
    if not rows:
        return Page([], None, None)
    at_start = older_than is None and (newer_than is None or not more)
    at_end = not more and not backwards
    return Page(
        page_rows,
        older=None if at_end else _cursor(rows[-1]),
        newer=None if at_start else _cursor(rows[0]),
    )


def count_trajectories(store: Store, where: TrajectoryFilter) -> int:
    """How many trajectories match `where` (one COUNT over the indexed columns)."""
    clauses, params = _filter_sql(where)
    sql = (
        "SELECT COUNT(*) FROM trajectories t "
        "LEFT JOIN effective_corrections c ON c.trajectory_id = t.id"
    )
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    return int(store.query(sql, params)[0][0])


@dataclass
class TrajectoryView:
    """Everything the trajectory viewer shows about one trajectory."""

    trajectory: Trajectory
    recorded_outcome: str
    corrections: list[Correction]
    shown: list[dict[str, Any]] = field(default_factory=list)
    taught: list[dict[str, Any]] = field(default_factory=list)
    reflection: dict[str, Any] | None = None
    reflected_from: str | None = None
    frontier: dict[str, Any] | None = None
    screenshots: list[dict[str, Any]] = field(default_factory=list)
    """The browser's screenshots (`extra["screenshots"]`) that hold a PNG: number, url,
    width, height, bytes (the image itself is served by `screenshot_png`)."""
    extra_shown: dict[str, Any] = field(default_factory=dict)
    """`extra` with each screenshot's base64 PNG replaced by a short note."""


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _screenshot_entries(extra: dict[str, Any]) -> list[dict[str, Any]]:
    entries = extra.get("screenshots")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def screenshot_png(trajectory: Trajectory, number: int) -> bytes | None:
    """The PNG of the trajectory's screenshot `number` (its `number` field), or None.

    None when there is no such screenshot or its `png_base64` does not decode
    to a PNG (the dashboard serves nothing else as an image).
    """
    for entry in _screenshot_entries(trajectory.extra):
        if entry.get("number") == number:
            try:
                png = base64.b64decode(str(entry.get("png_base64", "")), validate=True)
            except (binascii.Error, ValueError):
                return None
            return png if png.startswith(PNG_SIGNATURE) else None
    return None


def _screenshots(trajectory: Trajectory) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(the screenshots to show, `extra` without their base64 images)."""
    shown: list[dict[str, Any]] = []
    for entry in _screenshot_entries(trajectory.extra):
        number = entry.get("number")
        if isinstance(number, int) and screenshot_png(trajectory, number) is not None:
            shown.append(
                {
                    "number": number,
                    "url": str(entry.get("url", "")),
                    "width": entry.get("width") if isinstance(entry.get("width"), int) else None,
                    "height": entry.get("height") if isinstance(entry.get("height"), int) else None,
                    "bytes": entry.get("bytes"),
                }
            )
    extra = dict(trajectory.extra)
    if "screenshots" in extra and isinstance(extra["screenshots"], list):
        extra["screenshots"] = [
            {**e, "png_base64": f"<{len(str(e.get('png_base64', '')))} base64 characters>"}
            if isinstance(e, dict) and "png_base64" in e
            else e
            for e in extra["screenshots"]
        ]
    return shown, extra


def trajectory_view(store: Store, trajectory_id: str) -> TrajectoryView | None:
    """The trajectory with its corrections overlay, the lessons shown to it and taught by it.

    Returns:
        None when there is no such trajectory.
    """
    trajectory = store.get_trajectory(trajectory_id)
    if trajectory is None:
        return None
    recorded = store.query("SELECT outcome FROM trajectories WHERE id = ?", (trajectory_id,))
    view = TrajectoryView(trajectory, str(recorded[0][0]), store.corrections(trajectory_id))
    view.shown = [
        {
            "lesson_id": row[0],
            "rank": row[1],
            "score": row[2],
            "credited": row[3],
            "trigger": row[4] or row[5] or "",
            "retracted": row[4] is None,
        }
        for row in store.query(
            "SELECT e.lesson_id, e.rank, e.score, e.outcome, l.trigger, "
            "(SELECT a.trigger FROM lessons_archive a WHERE a.id = e.lesson_id LIMIT 1) "
            "FROM lesson_exposures e LEFT JOIN lessons l ON l.id = e.lesson_id "
            "WHERE e.trajectory_id = ? ORDER BY e.id LIMIT 200",
            (trajectory_id,),
        )
    ]
    view.taught = [
        {"id": row[0], "kind": row[1], "trigger": row[2], "retracted": bool(row[3])}
        for row in store.query(
            "SELECT id, kind, trigger, 0 FROM lessons WHERE source_trajectory_id = ? "
            "UNION ALL SELECT id, kind, trigger, 1 FROM lessons_archive "
            "WHERE source_trajectory_id = ? LIMIT 200",
            (trajectory_id, trajectory_id),
        )
    ]
    claim = store.query(
        "SELECT status, reflection_trajectory_id, detail, finished_at FROM reflection_claims "
        "WHERE trajectory_id = ?",
        (trajectory_id,),
    )
    if claim:
        view.reflection = {
            "status": claim[0][0],
            "trajectory_id": claim[0][1],
            "detail": claim[0][2],
            "finished_at": when(claim[0][3]),
        }
    source = trajectory.extra.get("reflected_from")
    view.reflected_from = str(source) if source else None
    view.screenshots, view.extra_shown = _screenshots(trajectory)
    run = store.query(
        "SELECT template, tier, seed, passed, attempts, duplicate, compression_delta, score "
        "FROM frontier_runs WHERE trajectory_id = ? LIMIT 1",
        (trajectory_id,),
    )
    if run:
        names = ("template", "tier", "seed", "passed", "attempts", "duplicate", "delta", "score")
        view.frontier = dict(zip(names, run[0], strict=True))
    return view


LESSON_COLUMNS = (
    "id, kind, trigger, anti_pattern, correct_pattern, code_example, domains, confidence, "
    "verified, source, source_trajectory_id, challenge_hash, template, tier, times_shown, "
    "times_helpful, times_followed_by_pass, times_followed_by_failure, reinforcements, "
    "created_at, updated_at, extra"
)
_LESSON_NAMES = [name.strip() for name in LESSON_COLUMNS.split(",")]


def _lesson(row: Sequence[Any], archived: Sequence[Any] = ()) -> dict[str, Any]:
    out = dict(zip(_LESSON_NAMES, row, strict=True))
    out["domains"] = json.loads(out["domains"] or "[]")
    out["extra"] = json.loads(out["extra"] or "{}")
    out["verified"] = bool(out["verified"])
    out["created_at"] = when(out["created_at"])
    out["updated_at"] = when(out["updated_at"])
    out["archived_at"] = when(archived[0]) if archived else None
    out["archive_reason"] = archived[1] if archived else ""
    return out


def list_lessons(
    store: Store, *, kind: str, status: str, page: int, size: int
) -> tuple[list[dict[str, Any]], int]:
    """One page of playbook entries, newest first, and how many there are in all.

    Args:
        store: the database.
        kind: `lesson` or `skill`.
        status: `active` (in the playbook), `verified` (active and verified) or
            `retracted` (in the archive).
        page: page number from 1.
        size: rows per page.
    """
    table = "lessons_archive" if status == "retracted" else "lessons"
    where = "kind = ?" + (" AND verified = 1" if status == "verified" else "")
    extra = ", archived_at, archive_reason" if status == "retracted" else ""
    total = int(store.query(f"SELECT COUNT(*) FROM {table} WHERE {where}", (kind,))[0][0])
    rows = store.query(
        f"SELECT {LESSON_COLUMNS}{extra} FROM {table} WHERE {where} "
        "ORDER BY rowid DESC LIMIT ? OFFSET ?",
        (kind, size, (page - 1) * size),
    )
    width = len(_LESSON_NAMES)
    return [_lesson(r[:width], r[width:]) for r in rows], total


@dataclass
class Lineage:
    """A lesson's (or skill's) story: source, reflection, the entry, exposures, retraction."""

    lesson: dict[str, Any]
    source: dict[str, Any] | None
    source_corrections: list[Correction]
    reflection: dict[str, Any] | None
    exposures: list[dict[str, Any]]
    exposure_totals: dict[str, int]


def lesson_lineage(
    store: Store, lesson_id: str, *, page: int = 1, size: int = 50
) -> Lineage | None:
    """The lineage of one lesson or skill (active or retracted), exposures paged newest first.

    Returns:
        None when no entry has this id, in the playbook or its archive.
    """
    rows = store.query(f"SELECT {LESSON_COLUMNS} FROM lessons WHERE id = ?", (lesson_id,))
    if rows:
        lesson = _lesson(rows[0])
    else:
        rows = store.query(
            f"SELECT {LESSON_COLUMNS}, archived_at, archive_reason FROM lessons_archive "
            "WHERE id = ? ORDER BY archived_at DESC LIMIT 1",
            (lesson_id,),
        )
        if not rows:
            return None
        width = len(_LESSON_NAMES)
        lesson = _lesson(rows[0][:width], rows[0][width:])
    source_id = lesson["source_trajectory_id"]
    source = None
    corrections: list[Correction] = []
    if source_id:
        found = store.query(_TRAJECTORY_ROW + " WHERE t.id = ?", (source_id,))
        source = _trajectory_row(found[0]) if found else {"id": source_id, "missing": True}
        corrections = store.corrections(source_id) if found else []
    reflection = _reflection(store, source_id, lesson["extra"].get("reflection_trajectory_id"))
    exposures = [
        {
            "trajectory_id": row[0],
            "timestamp": when(row[1]),
            "rank": row[2],
            "score": row[3],
            "credited": row[4],
            "kind": row[5] or "",
            "outcome": row[6] or "",
        }
        for row in store.query(
            "SELECT e.trajectory_id, e.timestamp, e.rank, e.score, e.outcome, t.task_kind, "
            "COALESCE(c.outcome, t.outcome) FROM lesson_exposures e "
            "LEFT JOIN trajectories t ON t.id = e.trajectory_id "
            "LEFT JOIN effective_corrections c ON c.trajectory_id = e.trajectory_id "
            "WHERE e.lesson_id = ? ORDER BY e.id DESC LIMIT ? OFFSET ?",
            (lesson_id, size, (page - 1) * size),
        )
    ]
    totals = {"shown": 0, "passed": 0, "failed": 0}
    for credited, count in store.query(
        "SELECT outcome, COUNT(*) FROM lesson_exposures WHERE lesson_id = ? GROUP BY outcome",
        (lesson_id,),
    ):
        totals["shown"] += int(count)
        if credited in ("passed", "failed"):
            totals[credited] += int(count)
    return Lineage(lesson, source, corrections, reflection, exposures, totals)


def _reflection(store: Store, source_id: str, reflection_id: Any) -> dict[str, Any] | None:
    """The reflection that turned the source into a lesson: claim row and its trajectory."""
    claim = (
        store.query(
            "SELECT status, reflection_trajectory_id, detail, finished_at FROM reflection_claims "
            "WHERE trajectory_id = ?",
            (source_id,),
        )
        if source_id
        else []
    )
    trajectory_id = str(reflection_id or (claim[0][1] if claim else "") or "")
    if not claim and not trajectory_id:
        return None
    out: dict[str, Any] = {
        "status": claim[0][0] if claim else "",
        "finished_at": when(claim[0][3]) if claim else None,
        "trajectory_id": trajectory_id,
        "diagnosis": "",
        "plan": [],
    }
    if trajectory_id:
        found = store.query(
            "SELECT json_extract(record, '$.extra.diagnosis'), "
            "json_extract(record, '$.extra.revised_plan') FROM trajectories WHERE id = ?",
            (trajectory_id,),
        )
        if found:
            out["diagnosis"] = found[0][0] or ""
            plan = json.loads(found[0][1]) if found[0][1] else []
            out["plan"] = [str(step) for step in plan] if isinstance(plan, list) else []
    return out


def playbook_stats(store: Store) -> dict[str, dict[str, int]]:
    """Per kind: `active`, `verified` and `retracted` entries."""
    out = {kind: {"active": 0, "verified": 0, "retracted": 0} for kind in ("lesson", "skill")}
    for kind, verified, count in store.query(
        "SELECT kind, verified, COUNT(*) FROM lessons GROUP BY kind, verified"
    ):
        bucket = out.setdefault(kind, {"active": 0, "verified": 0, "retracted": 0})
        bucket["active"] += int(count)
        if verified:
            bucket["verified"] += int(count)
    for kind, count in store.query(
        "SELECT kind, COUNT(DISTINCT id) FROM lessons_archive GROUP BY kind"
    ):
        out.setdefault(kind, {"active": 0, "verified": 0, "retracted": 0})["retracted"] = int(count)
    return out


def most_shown(store: Store, limit: int = 5) -> list[dict[str, Any]]:
    """The playbook entries shown most often, with what followed their exposures."""
    return [
        {
            "id": row[0],
            "kind": row[1],
            "trigger": row[2],
            "shown": row[3],
            "passed": row[4],
            "failed": row[5],
            "verified": bool(row[6]),
        }
        for row in store.query(
            "SELECT id, kind, trigger, times_shown, times_followed_by_pass, "
            "times_followed_by_failure, verified FROM lessons WHERE times_shown > 0 "
            "ORDER BY times_shown DESC, rowid LIMIT ?",
            (limit,),
        )
    ]


def phase_runs(store: Store, phases: Sequence[str]) -> list[dict[str, Any]]:
    """Per idle phase (in `phases` order, then any other logged phase): its last runs.

    Each: `phase`, `last` (latest row: when, status, detail) and `closed` (the
    latest closing row), either None when the phase never ran.
    """
    latest: dict[str, dict[str, Any]] = {}
    closed: dict[str, dict[str, Any]] = {}
    for target, status_clause in ((latest, ""), (closed, "WHERE status != 'started' ")):
        for phase, stamp, status, detail in store.query(
            "SELECT p.phase, p.timestamp, p.status, p.detail FROM phase_runs p JOIN ("
            f"SELECT phase, MAX(id) AS id FROM phase_runs {status_clause}GROUP BY phase"
            ") m ON m.id = p.id"
        ):
            target[phase] = {"when": when(stamp), "status": status, "detail": detail}
    names = list(phases) + sorted(set(latest) - set(phases))
    return [{"phase": n, "last": latest.get(n), "closed": closed.get(n)} for n in names]


def diary_page(
    store: Store, *, before: int | None, size: int
) -> tuple[list[dict[str, Any]], int | None]:
    """Diary rows newest first, `size` at a time below row id `before`; and the next cursor."""
    rows = store.query(
        "SELECT id, timestamp, kind, phase, text FROM diary WHERE id < ? ORDER BY id DESC LIMIT ?",
        (before if before is not None else 2**62, size + 1),
    )
    more = len(rows) > size
    rows = rows[:size]
    out = [
        {"id": r[0], "when": when(r[1]), "kind": r[2], "phase": r[3], "text": r[4]} for r in rows
    ]
    return out, (int(rows[-1][0]) if more else None)


def latest_narrative(store: Store) -> dict[str, Any] | None:
    """The newest consolidated narrative of the diary, or None."""
    rows = store.query(
        "SELECT id, timestamp, text FROM diary WHERE kind = 'narrative' ORDER BY id DESC LIMIT 1"
    )
    return {"id": rows[0][0], "when": when(rows[0][1]), "text": rows[0][2]} if rows else None


def current_champion(store: Store) -> dict[str, Any] | None:
    """The current strategy champion's promotion row, or None (the built-in baselines).

    The rule of `evolution.champions.current`, read with two indexed lookups so
    the overview does not import the evolution package (about 1 s): the latest
    registry row decides; a `promotion` is its own champion, a `rollback`
    re-activates `restores`, a `baseline` means none.
    """
    latest = store.query(
        "SELECT id, kind, restores FROM strategy_champions ORDER BY id DESC LIMIT 1"
    )
    if not latest or latest[0][1] == "baseline":
        return None
    champion_id = latest[0][0] if latest[0][1] == "promotion" else latest[0][2]
    rows = store.query(
        "SELECT id, timestamp, name, verdict, run_id FROM strategy_champions WHERE id = ?",
        (champion_id,),
    )
    if not rows:
        return None
    verdict = json.loads(rows[0][3]) if rows[0][3] else {}
    return {
        "id": rows[0][0],
        "when": when(rows[0][1]),
        "name": rows[0][2],
        "verdict": verdict if isinstance(verdict, dict) else {},
        "run_id": rows[0][4],
        "restored": latest[0][1] == "rollback",
    }
