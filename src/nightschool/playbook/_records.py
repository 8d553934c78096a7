"""The playbook's rows in the store: `PlaybookRecords` (no vectors, no policy).

Lessons and skills share the `lessons` table (column `kind`), so every counter,
`set_verified` and the readers here work the same for both kinds. The row
writes (`insert`, `reinforce`, `archive`, ...) run on a connection the caller
got from `PlaybookIndex.writing()`, which keeps the vector index in step; the
decisions (what is a duplicate, what gets archived) belong to `PlaybookWriter`.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.errors import UserError
from nightschool.playbook._model import FORMAT_VERSION, KINDS, Kind, Lesson
from nightschool.playbook._rows import (
    ARCHIVE_COPY_COLUMNS,
    MAX_REINFORCED_BY,
    RESTORE_COLUMNS,
    SELECT_LESSON,
    any_of,
    epoch_now,
    new_lesson_id,
    to_blob,
    to_lesson,
)
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
    """The `lessons` and `lessons_archive` tables: counters, reads and row writes.

    Thread-safe: the counters take the store's re-entrant lock (`Store.lock`)
    and run in their own `store.transaction()`; reads go through `Store.query`
    (which serialises on the same lock). The row writes take the
    open connection of the caller's transaction and change rows only; mirroring
    vectors is the caller's part (`PlaybookIndex.mirror`, `PlaybookIndex.forget`).

    Args:
        store: an open `Store` (migrated to `m006_skills`).
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

    def record_paired(self, lesson_id: str, helped: int, harmed: int) -> bool:
        """Add `helped` to `times_helpful` and `harmed` to `times_harmful`; False if no such row.

        Raises:
            ValueError: a negative count.
        """
        if helped < 0 or harmed < 0:
            raise ValueError(f"paired counts must be >= 0, got {helped} and {harmed}")
        with self._lock, self.store.transaction() as conn:
            return bool(
                conn.execute(
                    "UPDATE lessons SET times_helpful = times_helpful + ?, "
                    "times_harmful = times_harmful + ?, updated_at = ? WHERE id = ?",
                    (int(helped), int(harmed), epoch_now(), lesson_id),
                ).rowcount
            )

    def set_verified(self, lesson_id: str, verified: bool, comparison: Mapping[str, Any]) -> bool:
        """Set the verified flag, store `comparison` in `extra["verification"]`, credit its pairs.

        Args:
            lesson_id: the lesson.
            verified: the verdict.
            comparison: JSON-serialisable evidence (e.g. pass rates with and
                without the lesson); redacted before storing. When it holds
                `with` and `without` lists (one 0, 1 or None per rendering, as
                `Verification.record()` writes them), each rendering solved
                only with the entry adds 1 to `times_helpful` and each solved
                only without it 1 to `times_harmful` (`paired_counts`), in the
                same transaction.

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
        helped, harmed = paired_counts(comparison)
        with self._lock, self.store.transaction() as conn:
            row = conn.execute("SELECT extra FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
            if row is None:
                return False
            extra = json.loads(row[0])
            extra["verification"] = record
            conn.execute(
                "UPDATE lessons SET verified = ?, extra = ?, times_helpful = times_helpful + ?, "
                "times_harmful = times_harmful + ?, updated_at = ? WHERE id = ?",
                (
                    int(bool(verified)),
                    json.dumps(extra, sort_keys=True),
                    helped,
                    harmed,
                    epoch_now(),
                    lesson_id,
                ),
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

    # -- rowid reads (for the retriever) -----------------------------------------

    def by_rowid(self, rowids: Sequence[int]) -> dict[int, Lesson]:
        """The rows with these rowids that still exist, as `{rowid: Lesson}` (any kind)."""
        if not rowids:
            return {}
        in_rowids, rowid_list = any_of(self.store.dialect, rowids)
        rows = self.store.query(
            f"SELECT rowid, {SELECT_LESSON} FROM lessons WHERE rowid {in_rowids}", (rowid_list,)
        )
        return {int(row[0]): to_lesson(row[1:]) for row in rows}

    def made_from(
        self, kind: Kind, hashes: Collection[str], templates: Collection[str]
    ) -> set[int]:
        """Rowids of `kind` made from one of these challenge hashes or templates.

        Args:
            kind: `lesson` or `skill`.
            hashes: challenge hashes (`challenge_hash` column).
            templates: template names (`template` column).

        Returns:
            The matching rowids; an empty set when both collections are empty.
        """
        if not hashes and not templates:
            return set()
        in_hashes, hash_list = any_of(self.store.dialect, sorted(hashes))
        in_templates, template_list = any_of(self.store.dialect, sorted(templates))
        rows = self.store.query(
            f"SELECT rowid FROM lessons WHERE kind = ? AND (challenge_hash {in_hashes} OR "
            f"template {in_templates})",
            (kind, hash_list, template_list),
        )
        return {int(row[0]) for row in rows}

    # -- row writes, on the caller's write transaction ----------------------------

    def insert(
        self,
        conn: sqlite3.Connection,
        values: Mapping[str, Any],
        vector: npt.NDArray[np.float32],
        embedding_model: str,
    ) -> tuple[str, int]:
        """Insert one row under a freshly drawn id.

        Args:
            conn: the open write transaction's connection.
            values: column -> value (`domains` as a JSON list; `created_at` and
                `updated_at`, in epoch seconds, default to now).
            vector: the entry's embedding, shape `(dim,)`, stored as a float32 BLOB.
            embedding_model: the embedder's name, stored beside the vector.

        Returns:
            `(id, rowid)` of the new row.

        Raises:
            RuntimeError: five drawn ids were all taken already.
        """
        now = epoch_now()
        row = {
            "created_at": now,
            "updated_at": now,
            **values,
            "embedding": to_blob(vector),
            "embedding_model": embedding_model,
        }
        columns = ", ".join(("id", *row))
        marks = ", ".join("?" * (len(row) + 1))
        for _ in range(5):
            lesson_id = new_lesson_id()
            try:
                cursor = conn.execute(
                    f"INSERT INTO lessons ({columns}) VALUES ({marks})", (lesson_id, *row.values())
                )
            except sqlite3.IntegrityError:  # id collision: draw another
                continue
            assert cursor.lastrowid is not None
            return lesson_id, cursor.lastrowid
        raise RuntimeError("could not draw an unused lesson id in 5 tries")

    def insert_restored(
        self,
        conn: sqlite3.Connection,
        values: Sequence[Any],
        vector: npt.NDArray[np.float32],
        embedding_model: str,
    ) -> int | None:
        """Insert one `restore_values` tuple as it is, unless its id is taken.

        Returns:
            The new rowid, or None when a row with that id already exists.
        """
        columns = ", ".join(RESTORE_COLUMNS)
        marks = ", ".join("?" * len(RESTORE_COLUMNS))
        cursor = conn.execute(
            f"INSERT OR IGNORE INTO lessons ({columns}) VALUES ({marks})",
            (*values, to_blob(vector), embedding_model),
        )
        if cursor.rowcount == 1 and cursor.lastrowid is not None:
            return cursor.lastrowid
        return None

    @staticmethod
    def reinforce(
        conn: sqlite3.Connection,
        rowid: int,
        *,
        trajectory_id: str,
        source: str,
        step: float,
        extra_update: Mapping[str, Any] | None = None,
    ) -> None:
        """Count a near-duplicate of the row at `rowid`; the row must exist.

        Adds 1 to `reinforcements`, moves confidence `step` (0..1] of the way to
        1, merges `extra_update` into `extra` and appends `{trajectory_id,
        source, at}` to `extra["reinforced_by"]` (the last `MAX_REINFORCED_BY` kept).
        """
        confidence, extra_text = conn.execute(
            "SELECT confidence, extra FROM lessons WHERE rowid = ?", (rowid,)
        ).fetchone()
        extra = json.loads(extra_text)
        extra.update(extra_update or {})
        history = builtins.list(extra.get("reinforced_by", []))
        history.append(
            {
                "trajectory_id": trajectory_id,
                "source": source,
                "at": datetime.now(UTC).isoformat(),
            }
        )
        extra["reinforced_by"] = history[-MAX_REINFORCED_BY:]
        conn.execute(
            "UPDATE lessons SET reinforcements = reinforcements + 1, confidence = ?, "
            "extra = ?, updated_at = ? WHERE rowid = ?",
            (
                min(1.0, confidence + step * (1.0 - confidence)),
                json.dumps(extra, sort_keys=True),
                epoch_now(),
                rowid,
            ),
        )

    @staticmethod
    def rowids_of(
        conn: sqlite3.Connection, *, trajectory_id: str | None = None, lesson_id: str | None = None
    ) -> builtins.list[int]:
        """Rowids (ascending) of the rows from `trajectory_id`, or of the row `lesson_id`.

        Raises:
            ValueError: not exactly one of the two is given.
        """
        if (trajectory_id is None) == (lesson_id is None):
            raise ValueError("give exactly one of trajectory_id and lesson_id")
        column, value = (
            ("source_trajectory_id", trajectory_id) if lesson_id is None else ("id", lesson_id)
        )
        rows = conn.execute(
            f"SELECT rowid FROM lessons WHERE {column} = ? ORDER BY rowid", (value,)
        ).fetchall()
        return [int(row[0]) for row in rows]

    def archive(self, conn: sqlite3.Connection, rowids: Sequence[int], reason: str) -> None:
        """Copy these rows to `lessons_archive` (with time and `reason`), then delete them."""
        if not rowids:
            return
        in_rowids, ids = any_of(self.store.dialect, rowids)
        conn.execute(
            f"INSERT INTO lessons_archive ({ARCHIVE_COPY_COLUMNS}, archived_at, archive_reason) "
            f"SELECT {ARCHIVE_COPY_COLUMNS}, ?, ? FROM lessons "
            f"WHERE rowid {in_rowids} ORDER BY rowid",
            (epoch_now(), reason, ids),
        )
        conn.execute(f"DELETE FROM lessons WHERE rowid {in_rowids}", (ids,))

    @staticmethod
    def cap_victims(
        conn: sqlite3.Connection, *, kind: Kind, keep_rowid: int, cap: int
    ) -> builtins.list[int]:
        """Rowids of the least useful unverified entries of `kind` beyond `cap` entries.

        Empty unless `kind` has more than `cap` rows; at most the excess; never a
        verified row and never `keep_rowid`. Order: (helpful - harmful + passes -
        failures),
        then confidence, then last update, then id.
        """
        count = conn.execute("SELECT count(*) FROM lessons WHERE kind = ?", (kind,)).fetchone()
        excess = int(count[0]) - cap
        if excess <= 0:
            return []
        return [
            int(r[0])
            for r in conn.execute(
                "SELECT rowid FROM lessons WHERE kind = ? AND verified = 0 AND rowid != ? "
                "ORDER BY times_helpful - times_harmful + times_followed_by_pass "
                "- times_followed_by_failure, "
                "confidence, updated_at, id LIMIT ?",
                (kind, keep_rowid, excess),
            )
        ]


def paired_counts(comparison: Mapping[str, Any]) -> tuple[int, int]:
    """(helped, harmed) of a comparison's `with` / `without` lists (0, 1 or None per pair).

    Only discordant, complete pairs count: solved with and failed without is
    helped, the reverse harmed; a pair with a None (unsolved rendering) or a
    comparison without both lists of equal length counts nothing. A comparison
    stopped by an infrastructure fault counts nothing either.
    """
    with_arm, without = comparison.get("with"), comparison.get("without")
    if comparison.get("infrastructure_error") or not isinstance(with_arm, list):
        return 0, 0
    if not isinstance(without, list) or len(with_arm) != len(without):
        return 0, 0
    pairs = [
        (a, b) for a, b in zip(with_arm, without, strict=True) if a is not None and b is not None
    ]
    helped = sum(1 for a, b in pairs if a and not b)
    harmed = sum(1 for a, b in pairs if b and not a)
    return helped, harmed
