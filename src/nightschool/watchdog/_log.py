"""The phase log: cooldown anchors that survive restarts (table `phase_runs`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nightschool.store import Store
from nightschool.trajectory import new_id

CLOSING_STATUSES = ("ok", "failed", "interrupted", "skipped")
"""How a phase run can end (`started` is written before it runs)."""


@dataclass(frozen=True)
class PhaseRow:
    """One row of `phase_runs`.

    Attributes:
        timestamp: epoch seconds.
        phase: the phase's name.
        run_id: shared by a run's `started` row and its closing row.
        status: `started`, `ok`, `failed`, `interrupted` or `skipped`.
        detail: one readable line.
        record: JSON details (counts, the adaptive cool-off, the error).
    """

    timestamp: float
    phase: str
    run_id: str
    status: str
    detail: str = ""
    record: dict[str, Any] = field(default_factory=dict)


class PhaseLog:
    """Appends and reads the watchdog's phase rows.

    The anchor discipline of PRIOR-ART ("set before its await and again in
    finally"): `start` writes a `started` row before the phase runs and
    `finish` a closing row after it, whatever happened; a phase's anchor is its
    latest row, so a crashing phase still waits out its cooldown.
    """

    def __init__(self, store: Store, clock: Any = time.time) -> None:
        self.store = store
        self.clock = clock

    def start(self, phase: str) -> str:
        """Write the `started` row; returns the run id."""
        run_id = new_id()
        self._append(phase, run_id, "started", "", {})
        return run_id

    def finish(
        self,
        phase: str,
        run_id: str,
        status: str,
        detail: str = "",
        record: Mapping[str, Any] | None = None,
    ) -> None:
        """Write the closing row.

        Raises:
            ValueError: `status` is not one of `CLOSING_STATUSES`.
        """
        if status not in CLOSING_STATUSES:
            raise ValueError(f"status must be one of {CLOSING_STATUSES}, got {status!r}")
        self._append(phase, run_id, status, detail, dict(record or {}))

    def _append(
        self, phase: str, run_id: str, status: str, detail: str, record: dict[str, Any]
    ) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO phase_runs(timestamp, phase, run_id, status, detail, record) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    float(self.clock()),
                    phase,
                    run_id,
                    status,
                    detail[:500],
                    json.dumps(record, default=str),
                ),
            )

    def latest(self, phase: str) -> PhaseRow | None:
        """The phase's latest row (its anchor), or None if it never ran."""
        rows = self.store.query(
            "SELECT timestamp, phase, run_id, status, detail, record FROM phase_runs "
            "WHERE phase = ? ORDER BY id DESC LIMIT 1",
            (phase,),
        )
        return _row(rows[0]) if rows else None

    def last_closed(self, phase: str) -> PhaseRow | None:
        """The phase's latest closing row (how its last finished run ended)."""
        rows = self.store.query(
            "SELECT timestamp, phase, run_id, status, detail, record FROM phase_runs "
            "WHERE phase = ? AND status != 'started' ORDER BY id DESC LIMIT 1",
            (phase,),
        )
        return _row(rows[0]) if rows else None


def _row(row: tuple[Any, ...]) -> PhaseRow:
    try:
        record = json.loads(row[5])
    except (TypeError, ValueError):
        record = {}
    return PhaseRow(row[0], row[1], row[2], row[3], row[4], record)
