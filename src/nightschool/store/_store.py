"""The store: one database for every persisted record, SQLite or PostgreSQL.

SQLite (the embedded default) is one file, opened with WAL journaling,
`synchronous=FULL` (a committed append survives a crash or power cut), a busy
timeout and foreign keys on. Trajectories and corrections are append-only
(enforced by triggers); every write goes through redaction first. Reads overlay
the correction that counts (see
`nightschool.trajectory.apply_correction`).

PostgreSQL (`Store.open_url`, selected by `NIGHTSCHOOL_DATABASE_URL`) lets
several `serve`/`dream` processes on different machines share one store: the
same named migrations (`_pg_migrations`), the same append-only triggers and
correction overlay, and every component's SQL through `_pg.PgConnection`,
which speaks the `sqlite3` interface and serialises write transactions with an
advisory lock, as SQLite serialises writers.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from nightschool.errors import (
    DatabaseCorruptError,
    IncoherentRecordError,
    SchemaTooNewError,
    StoreError,
)
from nightschool.redact import redact
from nightschool.store._migrations import MIGRATIONS
from nightschool.trajectory import (
    FORMAT_VERSION,
    Correction,
    Outcome,
    Trajectory,
    apply_correction,
)

Dialect = Literal["sqlite", "postgres"]

MIGRATION_LOCK = 0x6E73_6D67  # "nsmg"
"""Postgres advisory lock held while migrating, so concurrent first opens apply each once."""

BUSY_TIMEOUT_MS = 10_000
"""How long a writer waits for another writer's lock before failing, milliseconds."""


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


class Store:
    """Handle on the nightschool database.

    Use `Store.open(path)`; it creates the file and parent directory if needed
    and applies pending migrations. Safe to share between threads (one
    connection guarded by a re-entrant lock).

    Raises at open:
        DatabaseCorruptError: the file exists but is not a SQLite database.
        SchemaTooNewError: the database holds migrations this version does not know.
        StoreError: the file cannot be opened (permissions, disk).
    """

    def __init__(
        self, connection: sqlite3.Connection, path: Path, dialect: Dialect = "sqlite"
    ) -> None:
        self._conn = connection
        self.path = path
        self.dialect: Dialect = dialect
        """`sqlite` or `postgres`: for the few components whose SQL must differ."""
        self._lock: threading.RLock = threading.RLock()
        self._depth = 0

    @classmethod
    def open(cls, path: Path, *, synchronous: str = "FULL") -> Store:
        """Open (creating if absent) the database at `path` and migrate it.

        Args:
            path: database file; `:memory:` is allowed for tests.
            synchronous: SQLite `synchronous` pragma, `FULL` (default, durable) or
                `NORMAL` (durable against process crash, not power loss).
        """
        if str(path) != ":memory:":
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the directory for {path}: {exc}") from exc
        try:
            conn = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {path}: {exc}") from exc
        store = cls(conn, path)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(path) != ":memory:" and str(mode).lower() != "wal":
                raise StoreError(f"could not switch {path} to WAL mode (got {mode})")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            store._migrate()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise DatabaseCorruptError(
                f"{path} is not a usable nightschool database ({exc})",
                hint="move the file aside (it is left untouched) or set NIGHTSCHOOL_HOME "
                "to another directory",
            ) from exc
        except StoreError:
            conn.close()
            raise
        return store

    @classmethod
    def open_url(cls, url: str, *, home: Path | None = None) -> Store:
        """Open (migrating if needed) the PostgreSQL database at `url`.

        Args:
            url: `postgresql://user[:password]@host[:port]/dbname[?options]` (libpq).
            home: the local home directory; `path` is `home/"nightschool.db"`
                (never created), so files kept beside the database (evolve
                reports, checkpoints) still have a place.

        Raises:
            StoreError: the server cannot be reached or refuses the login.
            SchemaTooNewError: the database holds migrations this version does not know.
        """
        from nightschool.store._pg import PgConnection  # function-local: Postgres only (psycopg)

        try:
            conn = PgConnection(url)
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot connect to the Postgres database {redact_url(url)}: {exc}",
                hint="check NIGHTSCHOOL_DATABASE_URL and that the server is running",
            ) from exc
        path = (home or Path(".")) / "nightschool.db"
        # PgConnection implements the sqlite3.Connection subset the components use.
        store = cls(cast(sqlite3.Connection, conn), path, "postgres")
        try:
            conn.execute("SELECT pg_advisory_lock(?)", (MIGRATION_LOCK,))
            try:
                store._migrate()
            finally:
                conn.execute("SELECT pg_advisory_unlock(?)", (MIGRATION_LOCK,))
        except BaseException:
            conn.close()
            raise
        return store

    def close(self) -> None:
        """Close the connection; further calls fail."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def lock(self) -> threading.RLock:
        """The re-entrant lock guarding the connection.

        Components that keep their own state beside the database (the playbook's
        vector index) take this same lock, so a thread holding a transaction and
        another reading can never deadlock on two locks taken in opposite orders.
        """
        return self._lock

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for components that own their own tables."""
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run a block atomically; nested blocks join the outermost transaction.

        Any exception (KeyboardInterrupt included) rolls the whole outermost
        transaction back, so an interrupted cycle leaves nothing half-written.
        """
        with self._lock:
            outermost = self._depth == 0
            if outermost:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield self._conn
            except BaseException:
                self._depth -= 1
                if outermost:
                    self._conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outermost:
                self._conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read query under the store's lock and return all rows."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # -- migrations -------------------------------------------------------------

    def _migrate(self) -> None:
        conn = self._conn
        migrations = MIGRATIONS
        if self.dialect == "postgres":
            # function-local: Postgres only (the translated migrations are built at import)
            from nightschool.store._pg_migrations import COMPATIBILITY, PG_MIGRATIONS

            migrations = PG_MIGRATIONS
            for statement in COMPATIBILITY:
                conn.execute(statement)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "rowid BIGINT GENERATED BY DEFAULT AS IDENTITY UNIQUE, "
                "name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
        else:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
        applied = [row[0] for row in conn.execute("SELECT name FROM schema_migrations")]
        known = [name for name, _ in MIGRATIONS]
        unknown = sorted(set(applied) - set(known))
        if unknown:
            raise SchemaTooNewError(
                f"{self.path} was written by a newer nightschool (migrations "
                f"{', '.join(unknown)} are unknown to this version)",
                hint="upgrade nightschool (`pip install -U nightschool`) or point "
                "NIGHTSCHOOL_HOME at another directory",
            )
        for name, statements in migrations:
            if name in applied:
                continue
            with self.transaction():
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)",
                    (name, datetime.now(UTC).isoformat()),
                )

    def applied_migrations(self) -> list[str]:
        """Names of the migrations recorded in this database, in order applied."""
        rows = self._conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")
        return [row[0] for row in rows]

    # -- trajectories -----------------------------------------------------------

    def append_trajectory(self, trajectory: Trajectory) -> Trajectory:
        """Redact and append one trajectory in its own durable transaction.

        Args:
            trajectory: the record; not mutated.

        Returns:
            The redacted record exactly as stored.

        Raises:
            IncoherentRecordError: the record contradicts itself.
            StoreError: the id already exists, or the database refused the write.
        """
        return self.append_trajectories([trajectory])[0]

    def append_trajectories(self, trajectories: Sequence[Trajectory]) -> list[Trajectory]:
        """Redact and append several trajectories in one transaction (all or none).

        One commit (one fsync under `synchronous=FULL`) for the whole batch: the
        way to go past the per-commit fsync ceiling (see `bench/bench_store.py`).

        Raises:
            IncoherentRecordError: a record contradicts itself (nothing is written).
            StoreError: an id already exists, or the database refused the write.
        """
        rows = []
        stored_records = []
        for trajectory in trajectories:
            problem = trajectory.coherence_problem()
            if problem:
                raise IncoherentRecordError(f"trajectory {trajectory.id} refused: {problem}")
            data = redact(trajectory.model_dump(mode="json"))
            data["id"] = trajectory.id  # identifiers are never redaction targets
            stored = Trajectory.model_validate(data)
            stored_records.append(stored)
            rows.append(
                (
                    stored.id,
                    _epoch(stored.timestamp),
                    stored.session_id,
                    stored.task_kind,
                    stored.cluster,
                    stored.tier,
                    stored.outcome.value,
                    json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                )
            )
        try:
            with self.transaction() as conn:
                conn.executemany(
                    "INSERT INTO trajectories(id, timestamp, session_id, task_kind, cluster, "
                    "tier, outcome, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"trajectories could not be stored: {exc}") from exc
        return stored_records

    def add_correction(self, correction: Correction) -> Correction:
        """Redact and append a correction of an existing trajectory's outcome.

        Raises:
            IncoherentRecordError: `passed` with a failure reason.
            StoreError: the trajectory does not exist.
        """
        problem = correction.coherence_problem()
        if problem:
            raise IncoherentRecordError(
                f"correction of {correction.trajectory_id} refused: {problem}"
            )
        data = redact(correction.model_dump(mode="json"))
        data["trajectory_id"] = correction.trajectory_id
        stored = Correction.model_validate(data)
        try:
            with self.transaction() as conn:
                conn.execute(
                    "INSERT INTO corrections(trajectory_id, timestamp, outcome, failure_reason, "
                    "source, authority, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        stored.trajectory_id,
                        _epoch(stored.timestamp),
                        stored.outcome.value,
                        stored.failure_reason,
                        stored.source,
                        stored.authority,
                        json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                    ),
                )
        except sqlite3.IntegrityError as exc:
            raise StoreError(
                f"correction refused: no trajectory {correction.trajectory_id} ({exc})"
            ) from exc
        return stored

    def corrections(self, trajectory_id: str) -> list[Correction]:
        """All corrections of one trajectory, oldest first."""
        rows = self.query(
            "SELECT record FROM corrections WHERE trajectory_id = ? ORDER BY id", (trajectory_id,)
        )
        return [Correction.model_validate_json(row[0]) for row in rows]

    def get_trajectory(self, trajectory_id: str) -> Trajectory | None:
        """Return one trajectory with its effective correction overlaid, or None."""
        rows = self.query(
            "SELECT record, correction FROM trajectories_effective WHERE id = ?",
            (trajectory_id,),
        )
        return _overlay(rows[0][0], rows[0][1]) if rows else None

    def iter_trajectories(
        self,
        *,
        since: datetime | None = None,
        task_kind: str | None = None,
        outcome: Outcome | None = None,
        cluster: str | None = None,
        limit: int | None = None,
    ) -> Iterator[Trajectory]:
        """Yield trajectories oldest first, corrections overlaid.

        Args:
            since: only those at or after this moment (naive means UTC).
            task_kind: only this kind (`selfplay`, `chat`, ...).
            outcome: only this effective outcome (after corrections).
            cluster: only this cluster.
            limit: at most this many.
        """
        clauses: list[str] = []
        params: list[Any] = []
        if since is not None:
            clauses.append("timestamp >= ?")
            params.append(_epoch(since))
        for column, value in (("task_kind", task_kind), ("cluster", cluster)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if outcome is not None:
            clauses.append("outcome = ?")
            params.append(Outcome(outcome).value)
        sql = "SELECT record, correction FROM trajectories_effective"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += " ORDER BY timestamp, id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        for record, correction in self.query(sql, params):
            yield _overlay(record, correction)

    def counts(self) -> dict[str, int]:
        """Row counts: trajectories by effective outcome, corrections, frontier runs."""
        result = {"trajectories": 0, "passed": 0, "failed": 0, "unknown": 0}
        for outcome, count in self.query(
            "SELECT outcome, COUNT(*) FROM trajectories_effective GROUP BY outcome"
        ):
            result[outcome] = count
            result["trajectories"] += count
        result["corrections"] = self.query("SELECT COUNT(*) FROM corrections")[0][0]
        result["frontier_runs"] = self.query("SELECT COUNT(*) FROM frontier_runs")[0][0]
        return result


def redact_url(url: str) -> str:
    """`url` with any password replaced by `***` (safe to print)."""
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, user_password = head.partition("//")
    user = user_password.split(":", 1)[0]
    return f"{scheme}//{user}:***@{tail}"


def _overlay(record: str, correction: str | None) -> Trajectory:
    trajectory = Trajectory.model_validate_json(record)
    if trajectory.format_version > FORMAT_VERSION:
        raise StoreError(
            f"trajectory {trajectory.id} has format_version {trajectory.format_version}, "
            f"newer than this nightschool understands ({FORMAT_VERSION})"
        )
    return apply_correction(
        trajectory, Correction.model_validate_json(correction) if correction else None
    )
