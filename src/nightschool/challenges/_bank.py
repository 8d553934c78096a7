"""The store of accepted generated challenges, their rejections and their rotation.

Split from `nightschool.challenges.generated` (re-exported there).
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import TYPE_CHECKING, Any

from nightschool.challenges._model import Challenge

if TYPE_CHECKING:
    from nightschool.challenges._generation import GenerationOutcome, GenerationRequest
    from nightschool.store import Store

REJECTION_KINDS: tuple[str, ...] = (
    "unparseable",
    "quality",
    "preflight",
    "validator_self_test",
    "reference_fails",
    "wrong_passes",
    "nondeterministic",
    "unsafe",
)
"""Why a candidate was refused, one per gate (`unsafe`: journal mining's redaction gate)."""

RETIRED = "retired"
"""The rejection kind that takes an accepted challenge out of rotation."""

SOURCES = ("llm", "journal")
"""Where a generated challenge comes from (the `source` column of m007)."""

ROTATION_MIN_RUNS = 2
"""Runs after which a solve rate of exactly 0 or 1 takes a challenge out of rotation."""


def _rotates(passes: int, runs: int) -> bool:
    """Too few runs to tell, or a solve rate strictly between 0 and 1 (PRIOR-ART curricula)."""
    return runs < ROTATION_MIN_RUNS or 0 < passes < runs


class ChallengeBank:
    """Accepted generated challenges and every rejection, in the store (m007 tables).

    Both tables are append-only: retiring a challenge appends a `retired` row.

    Args:
        store: the open database.
    """

    FORMAT_VERSION = 1
    """Version of the JSON `record` written by `add`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def add(
        self,
        challenge: Challenge,
        outcome: GenerationOutcome,
        request: GenerationRequest,
        model_name: str,
    ) -> bool:
        """Store an accepted challenge (idempotent: the id is its `challenge_hash`).

        The record holds every `Challenge` field, the gate reports, the
        self-test status, the rejections before it and the request's extras.

        Returns:
            True when written, False when that challenge was already stored.

        Raises:
            ValueError: `challenge.source` is not `llm` or `journal`.
        """
        if challenge.source not in SOURCES:
            raise ValueError(f"only generated challenges are banked, not {challenge.source!r}")
        record = {
            "format_version": self.FORMAT_VERSION,
            **dataclasses.asdict(challenge),
            "challenge_hash": challenge.challenge_hash,
            "gates": outcome.gate_reports,
            "self_test": outcome.self_test,
            "rejections": [dataclasses.asdict(r) for r in outcome.rejections],
            "duration_s": round(outcome.duration_s, 3),
            "request": {
                "brief": request.brief,
                "needed_clusters": list(request.needed_clusters),
                "forbidden_shapes": list(request.forbidden_shapes),
            },
        }
        with self._store.transaction() as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO generated_challenges (id, created_at, cluster, tier, "
                "source, source_trajectory_id, model, generator_attempts, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    challenge.challenge_hash, time.time(), challenge.cluster, challenge.tier,
                    challenge.source, request.source_trajectory_id, model_name,
                    max(1, outcome.attempts), json.dumps(record),
                ),
            )  # fmt: skip
            return cursor.rowcount == 1

    def record_rejections(self, request: GenerationRequest, outcome: GenerationOutcome) -> int:
        """Append one row per rejection of `outcome`; return how many."""
        with self._store.transaction():
            for rejection in outcome.rejections:
                self.reject(
                    cluster=request.cluster,
                    tier=request.tier,
                    source=request.source,
                    kind=rejection.kind,
                    detail=rejection.detail,
                    attempt=rejection.attempt,
                    source_trajectory_id=request.source_trajectory_id,
                )
        return len(outcome.rejections)

    def reject(
        self,
        *,
        cluster: str,
        tier: str,
        source: str,
        kind: str,
        detail: str,
        attempt: int = 1,
        source_trajectory_id: str | None = None,
        challenge_id: str | None = None,
        record: dict[str, Any] | None = None,
    ) -> None:
        """Append one `challenge_rejections` row.

        Raises:
            ValueError: `kind` is not in `REJECTION_KINDS` or `retired`, or
                `source` is not `llm` / `journal`.
        """
        if kind not in (*REJECTION_KINDS, RETIRED):
            raise ValueError(f"unknown rejection kind {kind!r}")
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        with self._store.transaction() as conn:
            conn.execute(
                "INSERT INTO challenge_rejections (created_at, cluster, tier, source, kind, "
                "detail, attempt, challenge_id, source_trajectory_id, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    time.time(), cluster, tier, source, kind, detail, attempt, challenge_id,
                    source_trajectory_id, json.dumps(record or {}),
                ),
            )  # fmt: skip

    def get(self, challenge_id: str) -> Challenge | None:
        """The stored challenge with that id (its `challenge_hash`), or None."""
        rows = self._store.query(
            "SELECT record FROM generated_challenges WHERE id = ?", (challenge_id,)
        )
        return _from_record(rows[0][0]) if rows else None

    def retire(self, challenge_id: str, reason: str) -> bool:
        """Take a challenge out of rotation for good (appends a `retired` row).

        Returns:
            True when retired now, False when it already was.

        Raises:
            ValueError: no generated challenge has that id.
        """
        challenge = self.get(challenge_id)
        if challenge is None:
            raise ValueError(f"no generated challenge {challenge_id!r}")
        if challenge_id in self._retired():
            return False
        self.reject(
            cluster=challenge.cluster,
            tier=challenge.tier,
            source=challenge.source,
            kind=RETIRED,
            detail=reason,
            challenge_id=challenge_id,
        )
        return True

    def _retired(self) -> set[str]:
        rows = self._store.query(
            "SELECT challenge_id FROM challenge_rejections "
            "WHERE kind = ? AND challenge_id IS NOT NULL",
            (RETIRED,),
        )
        return {row[0] for row in rows}

    def solve_rate(self, challenge_id: str) -> tuple[int, int]:
        """(passes, runs) of the challenge in `frontier_runs` (by challenge hash)."""
        rows = self._store.query(
            "SELECT COALESCE(SUM(passed), 0), COUNT(*) FROM frontier_runs WHERE challenge_hash = ?",
            (challenge_id,),
        )
        return int(rows[0][0]), int(rows[0][1])

    def in_rotation(self, cluster: str | None = None) -> list[Challenge]:
        """Challenges still worth playing, oldest first.

        Args:
            cluster: only this cluster; None for all.

        Returns:
            Every stored challenge that is not retired and whose solve rate is
            strictly between 0 and 1 or rests on fewer than `ROTATION_MIN_RUNS` runs.
        """
        sql = (
            "SELECT g.id, g.record, COALESCE(f.passes, 0), COALESCE(f.runs, 0) "
            "FROM generated_challenges g LEFT JOIN (SELECT challenge_hash, SUM(passed) AS passes, "
            "COUNT(*) AS runs FROM frontier_runs GROUP BY challenge_hash) f "
            "ON f.challenge_hash = g.id"
        )
        params: tuple[str, ...] = ()
        if cluster is not None:
            sql += " WHERE g.cluster = ?"
            params = (cluster,)
        retired = self._retired()
        rows = self._store.query(sql + " ORDER BY g.created_at, g.id", params)
        return [
            _from_record(record)
            for challenge_id, record, passes, runs in rows
            if challenge_id not in retired and _rotates(int(passes), int(runs))
        ]

    def mined_trajectory_ids(self) -> set[str]:
        """`source_trajectory_id` of every generated or rejected row (turns already mined)."""
        rows = self._store.query(
            "SELECT source_trajectory_id FROM generated_challenges "
            "WHERE source_trajectory_id IS NOT NULL UNION "
            "SELECT source_trajectory_id FROM challenge_rejections "
            "WHERE source_trajectory_id IS NOT NULL"
        )
        return {row[0] for row in rows}

    def yield_report(self, since: float | None = None) -> dict[str, Any]:
        """Counts for the bench and `status`: what the generator produced.

        Args:
            since: only rows created at or after this time (Unix seconds); None for all.

        Returns:
            `{"accepted": int, "rejections": {kind: int}, "retired": int,
            "attempts": int, "attempts_per_acceptance": float | None}`, where
            attempts counts accepted challenges plus generator rejections
            (`unsafe` and `retired` rows are not generator attempts).
        """
        start = since if since is not None else float("-inf")
        accepted = int(
            self._store.query(
                "SELECT COUNT(*) FROM generated_challenges WHERE created_at >= ?", (start,)
            )[0][0]
        )
        rows = self._store.query(
            "SELECT kind, COUNT(*) FROM challenge_rejections WHERE created_at >= ? "
            "GROUP BY kind ORDER BY kind",
            (start,),
        )
        kinds = {str(kind): int(count) for kind, count in rows}
        failed = sum(n for kind, n in kinds.items() if kind not in ("unsafe", RETIRED))
        attempts = accepted + failed
        return {
            "accepted": accepted,
            "rejections": {k: n for k, n in kinds.items() if k != RETIRED},
            "retired": kinds.get(RETIRED, 0),
            "attempts": attempts,
            "attempts_per_acceptance": round(attempts / accepted, 3) if accepted else None,
        }


def _from_record(record: str) -> Challenge:
    data = json.loads(record)
    names = [f.name for f in dataclasses.fields(Challenge)]
    return Challenge(**{name: data[name] for name in names if name in data})
