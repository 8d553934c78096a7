"""The self-state: a small picture of where I stand, derived from the store (never stored)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from nightschool.challenges import CLUSTERS
from nightschool.dream.frontier import (
    MASTERED_FIRST_TRY_WINS,
    SATURATION_DELTA,
    SATURATION_WINDOW,
)
from nightschool.selfhood._compose import join_names, plural
from nightschool.store import Store

RECENT_RUNS = 10
"""Latest runs per cluster that a cluster's recent pass rate is taken over."""

MIN_RUNS = 2
"""Recent runs a cluster needs before it can be called strongest or weakest."""

STREAK_WINDOW = 50
"""Latest runs the streak is counted over (a longer streak reads as 50)."""

STREAK_WORTH_TELLING = 3
"""Shortest streak (either way) that `SelfState.summary` mentions."""


@dataclass(frozen=True)
class ClusterStanding:
    """A cluster's recent record.

    Attributes:
        cluster: the cluster.
        runs: its latest runs counted, 1..`RECENT_RUNS`.
        passes: how many of those passed.
    """

    cluster: str
    runs: int
    passes: int

    @property
    def pass_rate(self) -> float:
        """Share of the counted runs that passed, 0..1 (0 without runs)."""
        return self.passes / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class SelfState:
    """Where I stand now; derived by `self_state`, never stored.

    Attributes:
        strongest: the cluster with the best recent pass rate (>= `MIN_RUNS`
            runs) when that rate is at least 0.5, else None.
        weakest: the cluster with the worst recent pass rate (>= `MIN_RUNS`
            runs) when below 1.0 and not the strongest, else None.
        standings: every cluster with at least one run, in cluster order.
        mastered: clusters with `MASTERED_FIRST_TRY_WINS` distinct first-try
            wins (same definition as `FrontierTracker`).
        saturated: clusters whose latest `SATURATION_WINDOW` runs were flat
            first-try passes (same definition as `FrontierTracker`).
        lessons: lessons in the playbook.
        verified_lessons: of those, verified.
        skills: skills in the playbook.
        verified_skills: of those, verified.
        practice_cycles: self-play runs ever recorded.
        last_practice: time of the latest run (UTC), or None.
        last_user_turn: time of the latest chat turn (UTC), or None.
        streak: consecutive latest runs with the same outcome, positive for
            passes and negative for failures (|streak| <= `STREAK_WINDOW`); 0
            without runs.
    """

    strongest: ClusterStanding | None = None
    weakest: ClusterStanding | None = None
    standings: tuple[ClusterStanding, ...] = ()
    mastered: tuple[str, ...] = ()
    saturated: tuple[str, ...] = ()
    lessons: int = 0
    verified_lessons: int = 0
    skills: int = 0
    verified_skills: int = 0
    practice_cycles: int = 0
    last_practice: datetime | None = None
    last_user_turn: datetime | None = None
    streak: int = 0

    @property
    def empty(self) -> bool:
        """Nothing to tell: no practice and an empty playbook (chat alone is not a self)."""
        return not (self.practice_cycles or self.lessons or self.skills)

    def summary(self) -> str:
        """One or two first-person sentences (no relative times: stable within a day).

        Example: "I have practised 12 challenges, most recently on 2025-06-01, and
        my playbook holds 2 verified lessons and 1 verified skill. I am strongest
        at sql (4 of my last 4 passed); I am weakest at algo (1 of my last 5
        passed)."
        """
        if self.empty:
            return "I have not practised or learned anything yet."
        if self.practice_cycles and self.last_practice is not None:
            when = self.last_practice.strftime("%Y-%m-%d")
            first = (
                f"I have practised {plural(self.practice_cycles, 'challenge')}, "
                f"most recently on {when}"
            )
        else:
            first = "I have not practised yet"
        first += f", and my playbook holds {self._playbook()}."
        clauses = []
        if self.strongest is not None:
            clauses.append(f"I am strongest at {_standing(self.strongest)}")
        if self.weakest is not None:
            clauses.append(f"I am weakest at {_standing(self.weakest)}")
        if self.mastered:
            clauses.append(f"I have mastered {join_names(self.mastered)}")
        if self.saturated:
            verb = "teaches" if len(self.saturated) == 1 else "teach"
            clauses.append(f"{join_names(self.saturated)} no longer {verb} me anything")
        if self.streak >= STREAK_WORTH_TELLING:
            clauses.append(f"I passed my last {self.streak} challenges in a row")
        elif self.streak <= -STREAK_WORTH_TELLING:
            clauses.append(f"I failed my last {-self.streak} challenges in a row")
        if not clauses:
            return first
        second = "; ".join(clauses)
        return f"{first} {second[0].upper()}{second[1:]}."

    def _playbook(self) -> str:
        verified = [
            plural(count, noun)
            for count, noun in (
                (self.verified_lessons, "verified lesson"),
                (self.verified_skills, "verified skill"),
            )
            if count
        ]
        text = " and ".join(verified) or "nothing verified yet"
        unverified = self.lessons + self.skills - self.verified_lessons - self.verified_skills
        if unverified and verified:
            text += f" (plus {unverified} unverified)"
        elif unverified:
            text += f" ({plural(unverified, 'unverified entry', 'unverified entries')})"
        return text

    def to_record(self) -> dict[str, Any]:
        """The state as a JSON-ready dict (times as ISO 8601 UTC strings)."""
        data = asdict(self)
        for key in ("last_practice", "last_user_turn"):
            moment = getattr(self, key)
            data[key] = moment.isoformat() if moment is not None else None
        for key in ("standings", "mastered", "saturated"):
            data[key] = list(data[key])
        return data


def _standing(standing: ClusterStanding) -> str:
    return f"{standing.cluster} ({standing.passes} of my last {standing.runs} passed)"


def _moment(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(float(epoch), UTC)


def self_state(store: Store, *, clusters: Sequence[str] = CLUSTERS) -> SelfState:
    """Derive the self-state from the store in five small read queries.

    Cheap enough for every chat turn: per-cluster recent runs come through the
    `frontier_runs(cluster, id)` index (LIMIT `RECENT_RUNS` each), the latest
    runs and the chat turn through the rowid and `trajectories(task_kind,
    timestamp)`; the mastered test aggregates over `frontier_runs` in SQL.
    Mastered and saturated follow `FrontierTracker.state` (its constants are
    imported, and the tests compare the two).

    Args:
        store: the open database.
        clusters: clusters considered (default: the template bank's).

    Returns:
        The state; `SelfState.empty` on a fresh home.
    """
    window = max(RECENT_RUNS, SATURATION_WINDOW)
    recent: dict[str, list[tuple[bool, int, float]]] = {c: [] for c in clusters}
    if clusters:
        union = " UNION ALL ".join(
            "SELECT * FROM (SELECT cluster, passed, attempts, compression_delta "
            "FROM frontier_runs WHERE cluster = ? ORDER BY id DESC LIMIT ?) AS recent"
            for _ in clusters
        )
        params: list[Any] = [v for c in clusters for v in (c, window)]
        for cluster, passed, attempts, delta in store.query(union, params):
            recent[cluster].append((bool(passed), int(attempts), float(delta)))
    standings = tuple(
        ClusterStanding(c, len(runs[:RECENT_RUNS]), sum(ok for ok, _, _ in runs[:RECENT_RUNS]))
        for c, runs in recent.items()
        if runs
    )
    saturated = tuple(
        c
        for c, runs in recent.items()
        if len(runs) >= SATURATION_WINDOW
        and all(ok and n == 1 and d <= SATURATION_DELTA for ok, n, d in runs[:SATURATION_WINDOW])
    )
    mastered_rows = store.query(
        "SELECT cluster FROM frontier_runs WHERE passed = 1 AND attempts = 1 AND duplicate = 0 "
        "GROUP BY cluster HAVING COUNT(DISTINCT challenge_hash) >= ?",
        (MASTERED_FIRST_TRY_WINS,),
    )
    mastered_set = {row[0] for row in mastered_rows}
    latest = store.query(
        "SELECT passed, timestamp, (SELECT COUNT(*) FROM frontier_runs) FROM frontier_runs "
        "ORDER BY id DESC LIMIT ?",
        (STREAK_WINDOW,),
    )
    kinds = {
        kind: (int(n), int(v))
        for kind, n, v in store.query(
            "SELECT kind, COUNT(*), COALESCE(SUM(verified), 0) FROM lessons GROUP BY kind"
        )
    }
    [(last_chat,)] = store.query("SELECT MAX(timestamp) FROM trajectories WHERE task_kind = 'chat'")
    strongest, weakest = _extremes(standings)
    return SelfState(
        strongest=strongest,
        weakest=weakest,
        standings=standings,
        mastered=tuple(c for c in clusters if c in mastered_set),
        saturated=saturated,
        lessons=kinds.get("lesson", (0, 0))[0],
        verified_lessons=kinds.get("lesson", (0, 0))[1],
        skills=kinds.get("skill", (0, 0))[0],
        verified_skills=kinds.get("skill", (0, 0))[1],
        practice_cycles=int(latest[0][2]) if latest else 0,
        last_practice=_moment(latest[0][1]) if latest else None,
        last_user_turn=_moment(last_chat),
        streak=_streak([bool(row[0]) for row in latest]),
    )


def _extremes(
    standings: Sequence[ClusterStanding],
) -> tuple[ClusterStanding | None, ClusterStanding | None]:
    ranked = [s for s in standings if s.runs >= MIN_RUNS]
    if not ranked:
        return None, None
    best = min(ranked, key=lambda s: (-s.pass_rate, -s.runs, s.cluster))
    worst = min(ranked, key=lambda s: (s.pass_rate, -s.runs, s.cluster))
    strongest = best if best.pass_rate >= 0.5 else None
    weakest = worst if worst.pass_rate < 1.0 and worst is not strongest else None
    return strongest, weakest


def _streak(outcomes: Sequence[bool]) -> int:
    """Signed length of the run of equal outcomes at the start of `outcomes` (newest first)."""
    if not outcomes:
        return 0
    length = 1
    while length < len(outcomes) and outcomes[length] == outcomes[0]:
        length += 1
    return length if outcomes[0] else -length
