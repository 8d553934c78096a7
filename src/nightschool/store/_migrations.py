"""Append-only, named schema migrations.

Each migration is a name and a tuple of SQL statements, applied once, in order,
inside one transaction, and recorded in `schema_migrations`. Never edit or
reorder a migration that has shipped: add a new one.
"""

from __future__ import annotations

_APPEND_ONLY = (
    "CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
    "BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END",
    "CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} "
    "BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END",
)


def _append_only(table: str) -> tuple[str, ...]:
    return tuple(stmt.format(table=table) for stmt in _APPEND_ONLY)


M001_INITIAL: tuple[str, ...] = (
    """CREATE TABLE trajectories (
        id TEXT PRIMARY KEY,
        timestamp REAL NOT NULL,
        session_id TEXT NOT NULL,
        task_kind TEXT NOT NULL,
        cluster TEXT,
        tier TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'unknown')),
        record TEXT NOT NULL CHECK (json_valid(record))
    )""",
    "CREATE INDEX trajectories_timestamp ON trajectories(timestamp)",
    "CREATE INDEX trajectories_session ON trajectories(session_id)",
    "CREATE INDEX trajectories_kind ON trajectories(task_kind, timestamp)",
    "CREATE INDEX trajectories_cluster ON trajectories(cluster, tier)",
    "CREATE INDEX trajectories_outcome ON trajectories(outcome)",
    *_append_only("trajectories"),
    """CREATE TABLE corrections (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        trajectory_id TEXT NOT NULL REFERENCES trajectories(id),
        timestamp REAL NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'unknown')),
        failure_reason TEXT,
        source TEXT NOT NULL,
        authority TEXT NOT NULL CHECK (authority IN ('human', 'machine')),
        record TEXT NOT NULL CHECK (json_valid(record)),
        CHECK (NOT (outcome = 'passed' AND failure_reason IS NOT NULL))
    )""",
    "CREATE INDEX corrections_trajectory ON corrections(trajectory_id)",
    *_append_only("corrections"),
    # The correction that counts: human before machine, then the latest.
    """CREATE VIEW effective_corrections AS
        SELECT * FROM (
            SELECT c.*, ROW_NUMBER() OVER (
                PARTITION BY trajectory_id
                ORDER BY (authority = 'human') DESC, timestamp DESC, id DESC
            ) AS rank_in_trajectory
            FROM corrections c
        ) WHERE rank_in_trajectory = 1""",
    """CREATE VIEW trajectories_effective AS
        SELECT t.id, t.timestamp, t.session_id, t.task_kind, t.cluster, t.tier,
               COALESCE(c.outcome, t.outcome) AS outcome,
               t.outcome AS recorded_outcome, t.record, c.record AS correction
        FROM trajectories t LEFT JOIN effective_corrections c ON c.trajectory_id = t.id""",
    """CREATE TABLE frontier_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        timestamp REAL NOT NULL,
        cluster TEXT NOT NULL,
        template TEXT NOT NULL,
        tier TEXT NOT NULL,
        seed INTEGER NOT NULL,
        challenge_hash TEXT NOT NULL,
        passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
        attempts INTEGER NOT NULL CHECK (attempts >= 1),
        duplicate INTEGER NOT NULL CHECK (duplicate IN (0, 1)),
        compression_delta REAL NOT NULL,
        tool_errors INTEGER NOT NULL DEFAULT 0,
        score REAL NOT NULL,
        trajectory_id TEXT REFERENCES trajectories(id)
    )""",
    "CREATE INDEX frontier_runs_cluster ON frontier_runs(cluster, id)",
    "CREATE INDEX frontier_runs_hash ON frontier_runs(challenge_hash)",
    *_append_only("frontier_runs"),
)

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (("m001_initial", M001_INITIAL),)
"""All migrations this version knows, oldest first."""
