"""Playbook records without vectors: feedback counters and reading (base of `SkillMemory`).

Lessons and skills share the `lessons` table (column `kind`), so every counter,
`set_verified` and the readers here work the same for both kinds.
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from nightschool.errors import UserError
from nightschool.memory._model import FORMAT_VERSION, KINDS, Kind, Lesson
from nightschool.memory._rows import SELECT_LESSON, epoch_now, to_lesson
from nightschool.redact import redact
from nightschool.store import Store


def _store_lock(store: Store) -> threading.RLock:
    """The store's own re-entrant lock (`Store.lock`), shared by the playbook.

    With one lock for both, a caller that holds a store transaction and calls
    the playbook, while another thread does the reverse, cannot deadlock (two
    locks taken in opposite orders would).
    """
    return store.lock


EXPORT_PAGE = 1000
"""Lessons read per query by `export`."""


def check_kind(kind: str | None) -> None:
    """Raise `UserError` unless `kind` is None or one of `KINDS`."""
    if kind is not None and kind not in KINDS:
        raise UserError(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}")


class PlaybookRecords:
    """Counters and reads over the `lessons` tables; `SkillMemory` adds vectors.

    Args:
        store: an open `Store`.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = _store_lock(store)

    # -- feedback ---------------------------------------------------------------

    def record_exposure(
        self,
        lesson_ids: Sequence[str],
        trajectory_id: str,
        scores: Sequence[float] | None = None,
    ) -> int:
        """Record that these lessons (best first) were shown to `trajectory_id`.

        Adds 1 to each lesson's `times_shown` and one `lesson_exposures` row
        per lesson (rank from 1). Unknown ids are skipped.

        Args:
            lesson_ids: lesson ids in rank order.
            trajectory_id: the episode that saw them.
            scores: retrieval scores, same length as `lesson_ids`; None stores 0.

        Returns:
            How many exposures were recorded.

        Raises:
            ValueError: `scores` has a different length than `lesson_ids`.
        """
        if scores is not None and len(scores) != len(lesson_ids):
            raise ValueError("scores and lesson_ids must have the same length")
        now = epoch_now()
        recorded = 0
        with self._lock, self.store.transaction() as conn:
            for rank, lesson_id in enumerate(lesson_ids, start=1):
                changed = conn.execute(
                    "UPDATE lessons SET times_shown = times_shown + 1, updated_at = ? WHERE id = ?",
                    (now, lesson_id),
                ).rowcount
                if not changed:
                    continue
                score = float(scores[rank - 1]) if scores is not None else 0.0
                conn.execute(
                    "INSERT INTO lesson_exposures (lesson_id, trajectory_id, timestamp, rank, "
                    "score) VALUES (?, ?, ?, ?, ?)",
                    (lesson_id, trajectory_id, now, rank, score),
                )
                recorded += 1
        return recorded

    def record_outcome(self, trajectory_id: str, passed: bool) -> int:
        """Credit the outcome of `trajectory_id` to the lessons it was shown.

        Each lesson exposed to the trajectory (and not yet credited for it)
        gets `times_followed_by_pass` or `times_followed_by_failure` + 1, once
        per trajectory however often it was shown. A second call for the same
        trajectory changes nothing. An empty id changes nothing.

        Returns:
            How many lessons were credited.
        """
        if not trajectory_id.strip():
            return 0
        outcome = "passed" if passed else "failed"
        column = "times_followed_by_pass" if passed else "times_followed_by_failure"
        with self._lock, self.store.transaction() as conn:
            lesson_ids = {
                row[0]
                for row in conn.execute(
                    "UPDATE lesson_exposures SET outcome = ? "
                    "WHERE trajectory_id = ? AND outcome IS NULL RETURNING lesson_id",
                    (outcome, trajectory_id),
                ).fetchall()
            }
            now = epoch_now()
            credited = 0
            for lesson_id in sorted(lesson_ids):
                credited += conn.execute(
                    f"UPDATE lessons SET {column} = {column} + 1, updated_at = ? WHERE id = ?",
                    (now, lesson_id),
                ).rowcount
        return credited

    def mark_helpful(self, lesson_id: str) -> bool:
        """Add 1 to `times_helpful`; False if no such lesson."""
        with self._lock, self.store.transaction() as conn:
            return bool(
                conn.execute(
                    "UPDATE lessons SET times_helpful = times_helpful + 1, updated_at = ? "
                    "WHERE id = ?",
                    (epoch_now(), lesson_id),
                ).rowcount
            )

    def set_verified(self, lesson_id: str, verified: bool, comparison: Mapping[str, Any]) -> bool:
        """Set the verified flag and store `comparison` in `extra["verification"]`.

        Args:
            lesson_id: the lesson.
            verified: the verdict.
            comparison: JSON-serialisable evidence (e.g. pass rates with and
                without the lesson); redacted before storing.

        Returns:
            False if no such lesson.

        Raises:
            UserError: `comparison` is not JSON-serialisable.
        """
        record = {
            "verified": bool(verified),
            "at": datetime.now(UTC).isoformat(),
            "comparison": redact(dict(comparison)),
        }
        try:
            json.dumps(record)
        except (TypeError, ValueError) as exc:
            raise UserError(f"comparison is not JSON-serialisable: {exc}") from exc
        with self._lock, self.store.transaction() as conn:
            row = conn.execute("SELECT extra FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
            if row is None:
                return False
            extra = json.loads(row[0])
            extra["verification"] = record
            conn.execute(
                "UPDATE lessons SET verified = ?, extra = ?, updated_at = ? WHERE id = ?",
                (int(bool(verified)), json.dumps(extra, sort_keys=True), epoch_now(), lesson_id),
            )
        return True

    # -- reading ----------------------------------------------------------------

    def get(self, lesson_id: str) -> Lesson | None:
        """The lesson with this id, or None."""
        rows = self.store.query(f"SELECT {SELECT_LESSON} FROM lessons WHERE id = ?", (lesson_id,))
        return to_lesson(rows[0]) if rows else None

    def list(
        self,
        limit: int | None = None,
        verified: bool | None = None,
        *,
        kind: Kind | None = "lesson",
    ) -> builtins.list[Lesson]:
        """Entries of one kind, oldest first; optionally only (un)verified ones, at most `limit`.

        Args:
            limit: at most this many (None: all).
            verified: only verified (True) or unverified (False) ones; None: both.
            kind: `lesson` (default, what callers before skills expect), `skill`,
                or None for both kinds.

        Raises:
            UserError: unknown `kind`.
        """
        check_kind(kind)
        sql = f"SELECT {SELECT_LESSON} FROM lessons"
        where, params = self._kind_filter(kind)
        if verified is not None:
            where.append("verified = ?")
            params.append(int(verified))
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at, rowid"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        return [to_lesson(row) for row in self.store.query(sql, params)]

    def count(self, kind: Kind | None = "lesson") -> int:
        """Number of entries of `kind` in the playbook (archived ones excluded).

        Args:
            kind: `lesson` (default), `skill`, or None for both kinds.

        Raises:
            UserError: unknown `kind`.
        """
        check_kind(kind)
        where, params = self._kind_filter(kind)
        sql = "SELECT count(*) FROM lessons" + (" WHERE " + where[0] if where else "")
        return int(self.store.query(sql, params)[0][0])

    @staticmethod
    def _kind_filter(kind: Kind | None) -> tuple[builtins.list[str], builtins.list[Any]]:
        return (["kind = ?"], [kind]) if kind is not None else ([], [])

    def archived(
        self, trajectory_id: str | None = None, *, kind: Kind | None = None
    ) -> builtins.list[Lesson]:
        """Archived entries (oldest archive first), optionally only those from one trajectory.

        Each has `extra["archive"] = {"archived_at": ISO time, "reason": str}`.

        Args:
            trajectory_id: only entries with this provenance (None: all).
            kind: only this kind; None (default): lessons and skills.

        Raises:
            UserError: unknown `kind`.
        """
        check_kind(kind)
        sql = f"SELECT {SELECT_LESSON}, archived_at, archive_reason FROM lessons_archive"
        where, params = self._kind_filter(kind)
        if trajectory_id is not None:
            where.append("source_trajectory_id = ?")
            params.append(trajectory_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        out = []
        for row in self.store.query(sql + " ORDER BY archived_at, rowid", params):
            lesson = to_lesson(row[:-2])
            archive = {
                "archived_at": datetime.fromtimestamp(row[-2], UTC).isoformat(),
                "reason": row[-1],
            }
            out.append(lesson.model_copy(update={"extra": {**lesson.extra, "archive": archive}}))
        return out

    def export(self) -> Iterator[dict[str, Any]]:
        """Every lesson and skill as a JSON-ready dict (`format_version: 2`), oldest first.

        Embeddings are not exported (they are derived data); timestamps are ISO 8601.
        Reads in pages of `EXPORT_PAGE` rows, so memory stays flat for big playbooks.
        """
        after: tuple[float, int] = (float("-inf"), -1)
        while True:
            rows = self.store.query(
                f"SELECT created_at, rowid, {SELECT_LESSON} FROM lessons "
                "WHERE (created_at, rowid) > (?, ?) ORDER BY created_at, rowid LIMIT ?",
                (*after, EXPORT_PAGE),
            )
            for row in rows:
                lesson = to_lesson(row[2:])
                yield {"format_version": FORMAT_VERSION, **lesson.model_dump(mode="json")}
            if len(rows) < EXPORT_PAGE:
                return
            after = (rows[-1][0], rows[-1][1])
