"""The diary: append-only first-person rows in the `diary` table (migration `m009_diary`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from nightschool.redact import redact, redact_text
from nightschool.selfhood._compose import compose_entry
from nightschool.selfhood._facts import FACTS_VERSION, PhaseFacts
from nightschool.store import Store

RECORD_VERSION = 1
"""`format_version` written into every diary row's `record`."""

DiaryKind = Literal["entry", "narrative"]
"""`entry`: written after a phase from its facts; `narrative`: the consolidated story."""

NARRATIVE_PHASE = "narrative"
"""The `phase` of narrative rows."""

_COLUMNS = "id, timestamp, kind, phase, text, record"


@dataclass(frozen=True)
class DiaryEntry:
    """One diary row.

    Attributes:
        id: row id; grows with time (newest is largest).
        timestamp: when it was written, UTC.
        kind: `entry` or `narrative`.
        phase: the phase it was written after (`dream`, `reflect`, ...), or
            `narrative`.
        text: first-person text, redacted.
        record: structured data: `format_version`, and `facts`
            (`PhaseFacts.to_record`) for entries; `author`, `model`, `problem`,
            `entry_ids` and `state` for narratives.
    """

    id: int
    timestamp: datetime
    kind: DiaryKind
    phase: str
    text: str
    record: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict (timestamp as ISO 8601 UTC)."""
        return {
            "id": self.id,
            "timestamp": self.timestamp.isoformat(),
            "kind": self.kind,
            "phase": self.phase,
            "text": self.text,
            "record": self.record,
        }


def _row(row: tuple[Any, ...]) -> DiaryEntry:
    record = json.loads(row[5]) if row[5] else {}
    return DiaryEntry(
        id=int(row[0]),
        timestamp=datetime.fromtimestamp(float(row[1]), UTC),
        kind=row[2],
        phase=row[3],
        text=row[4],
        record=record if isinstance(record, dict) else {"value": record},
    )


def append_row(
    store: Store, kind: DiaryKind, phase: str, text: str, record: Mapping[str, Any]
) -> DiaryEntry:
    """Redact `text` and `record`, append one row, return it as stored.

    Raises:
        ValueError: empty `text` or `phase`.
    """
    text = redact_text(" ".join(text.split()))
    phase = phase.strip()
    if not text or not phase:
        raise ValueError("a diary row needs a phase and some text")
    data = redact({"format_version": RECORD_VERSION, **record})
    stamp = time.time()
    with store.transaction() as conn:
        cursor = conn.execute(
            "INSERT INTO diary(timestamp, kind, phase, text, record) VALUES (?, ?, ?, ?, ?)",
            (stamp, kind, phase, text, json.dumps(data, ensure_ascii=False, sort_keys=True)),
        )
        row_id = int(cursor.lastrowid or 0)
    return DiaryEntry(row_id, datetime.fromtimestamp(stamp, UTC), kind, phase, text, data)


def _epoch(since: datetime | float) -> float:
    if isinstance(since, datetime):
        return (since if since.tzinfo else since.replace(tzinfo=UTC)).timestamp()
    return float(since)


class Diary:
    """Reads and writes the diary of one store.

    Entries are composed deterministically from `PhaseFacts` (no model call):
    counts and names only, never user text (see `facts_since`). Rows are
    append-only (the table's triggers refuse updates and deletes).

    Args:
        store: the open database (migrated to `m009_diary`).
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def write_entry(self, phase: str, facts: PhaseFacts | Mapping[str, Any]) -> DiaryEntry | None:
        """Write the first-person entry for what `phase` did.

        An empty period (`PhaseFacts.empty`) writes nothing and returns None:
        an idle phase would otherwise fill the diary with "nothing happened"
        (`phase_runs` already logs every run).

        Args:
            phase: the phase's name (`dream`, `reflect`, ...), non-empty.
            facts: the phase's facts (`facts_since(store, started_at)`), or a
                mapping with `PhaseFacts.to_record` keys (missing ones default).

        Returns:
            The stored entry (text redacted), or None when there was nothing to say.

        Raises:
            ValueError: empty `phase`, or a mapping that is not phase facts.
        """
        if not phase.strip():
            raise ValueError("write_entry needs the phase's name")
        if not isinstance(facts, PhaseFacts):
            facts = PhaseFacts.from_record(facts)
        text = compose_entry(facts)
        if not text:
            return None
        record = {"facts_version": FACTS_VERSION, "facts": facts.to_record()}
        return append_row(self._store, "entry", phase, text, record)

    def entries(
        self,
        limit: int = 20,
        kind: DiaryKind | None = None,
        since: datetime | float | None = None,
    ) -> list[DiaryEntry]:
        """The latest rows, newest first.

        Args:
            limit: at most this many (>= 1).
            kind: only `entry` or only `narrative` rows; None for both.
            since: only rows written at or after this moment (a datetime, naive
                means UTC, or epoch seconds).

        Raises:
            ValueError: `limit` below 1.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        clauses: list[str] = ["1 = 1"]
        params: list[Any] = []
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        if since is not None:
            clauses.append("timestamp >= ?")
            params.append(_epoch(since))
        rows = self._store.query(
            f"SELECT {_COLUMNS} FROM diary WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [_row(row) for row in rows]

    def entries_after(self, row_id: int, *, limit: int) -> list[DiaryEntry]:
        """The newest `limit` entry rows (kind `entry`) with id above `row_id`, oldest first."""
        rows = self._store.query(
            f"SELECT {_COLUMNS} FROM diary WHERE kind = 'entry' AND id > ? "
            "ORDER BY id DESC LIMIT ?",
            (row_id, limit),
        )
        return [_row(row) for row in reversed(rows)]

    def latest_narrative(self) -> DiaryEntry | None:
        """The newest narrative row, or None (one indexed lookup)."""
        rows = self._store.query(
            f"SELECT {_COLUMNS} FROM diary WHERE kind = 'narrative' ORDER BY id DESC LIMIT 1"
        )
        return _row(rows[0]) if rows else None
