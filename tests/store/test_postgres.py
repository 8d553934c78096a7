"""The Postgres store: schema parity with SQLite, several processes sharing one database,
the SQL translation, clear errors, and `NIGHTSCHOOL_DATABASE_URL` through the real CLI.

Every test that takes the `store` fixture also runs on Postgres (tests/conftest.py);
these are what only Postgres has.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import NIGHTSCHOOL

from nightschool.errors import StoreError
from nightschool.store import MIGRATIONS, Store, redact_url
from nightschool.store._pg import translate
from nightschool.trajectory import Correction, Outcome, Trajectory


def _columns(store: Store) -> dict[str, set[str]]:
    if store.dialect == "sqlite":
        names = [
            r[0]
            for r in store.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'lessons_fts%'"
            )
        ]
        return {n: {r[1] for r in store.query(f"PRAGMA table_info({n})")} for n in names}
    rows = store.query(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = 'public' AND table_name IN (SELECT tablename FROM pg_tables "
        "WHERE schemaname = 'public')"
    )
    tables: dict[str, set[str]] = {}
    for table, column in rows:
        if column not in ("rowid", "fts"):  # SQLite's implicit rowid; the FTS5 table
            tables.setdefault(table, set()).add(column)
    return tables


def test_schema_parity_with_sqlite(tmp_path: Path, postgres_url: str) -> None:
    with Store.open(tmp_path / "s.db") as lite, Store.open_url(postgres_url) as pg:
        assert pg.applied_migrations() == lite.applied_migrations()
        assert pg.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert _columns(pg) == _columns(lite)


def test_reopen_is_idempotent_and_newer_schema_refused(postgres_url: str) -> None:
    Store.open_url(postgres_url).close()
    with Store.open_url(postgres_url) as again:
        assert again.applied_migrations() == [name for name, _ in MIGRATIONS]
        again.connection.execute(
            "INSERT INTO schema_migrations(name, applied_at) VALUES ('m999_future', 'x')"
        )
    from nightschool.errors import SchemaTooNewError

    with pytest.raises(SchemaTooNewError, match="m999_future"):
        Store.open_url(postgres_url)


def test_unreachable_server_is_a_clear_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot connect") as caught:
        Store.open_url("postgresql://me:s3cret@127.0.0.1:1/nightschool")
    assert "s3cret" not in str(caught.value)
    assert "***" in str(caught.value)
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_translation() -> None:
    assert translate("SELECT a FROM t WHERE b = ? AND c = '?' AND d LIKE 'x%'") == (
        "SELECT a FROM t WHERE b = %s AND c = '?' AND d LIKE 'x%%'",
        False,
    )
    text, add_rowid = translate("INSERT OR IGNORE INTO t(a) VALUES (?)")
    assert text == "INSERT INTO t(a) VALUES (%s) ON CONFLICT DO NOTHING RETURNING rowid"
    assert add_rowid
    assert translate("INSERT INTO t(a) VALUES (?) RETURNING id")[1] is False
    assert translate("SELECT CAST(t.timestamp / 86400 AS INTEGER) FROM t")[0] == (
        "SELECT CAST(trunc(t.timestamp / 86400) AS BIGINT) FROM t"
    )


def test_sqlite_semantics_kept(postgres_url: str) -> None:
    """What components rely on: lastrowid, errors, a usable transaction after one, json."""
    with Store.open_url(postgres_url) as store:
        _check_semantics(store)


def _check_semantics(store: Store) -> None:
    conn = store.connection
    cursor = conn.execute(
        "INSERT INTO diary(timestamp, kind, text) VALUES (?, 'entry', ?)", (1.0, "hello %s")
    )
    assert cursor.lastrowid is not None and cursor.lastrowid >= 1
    row = conn.execute("SELECT text FROM diary WHERE id = ?", (cursor.lastrowid,)).fetchone()
    assert row == ("hello %s",)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM diary")
    # A failed statement inside a transaction leaves the transaction usable (as in SQLite).
    with store.transaction():
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO diary(timestamp, kind, text) VALUES (1, 'nonsense', 'x')")
        conn.execute("INSERT INTO diary(timestamp, kind, text) VALUES (2, 'entry', 'kept')")
    assert store.query("SELECT COUNT(*) FROM diary")[0][0] == 2
    assert store.query(
        "SELECT json_extract(?, '$.a.b'), json_valid(?), json_valid('{')",
        (json.dumps({"a": {"b": "x"}}), "{}"),
    )[0] == ("x", True, False)
    assert store.query("SELECT total(v) FROM (SELECT 1 AS v WHERE 1 = 0) empty")[0][0] == 0.0


def _append_many(url: str, worker: int, n: int) -> None:
    with Store.open_url(url) as store:
        for i in range(n):
            trajectory = Trajectory(
                task_kind="selfplay", session_id=f"worker-{worker}", user_request=f"req {i}"
            )
            store.append_trajectory(trajectory)
            if i % 5 == 0:
                store.add_correction(
                    Correction(
                        trajectory_id=trajectory.id,
                        outcome=Outcome.FAILED,
                        failure_reason="checked by a person",
                        source="user",
                        authority="human",
                    )
                )


def test_several_processes_share_one_store_without_lost_or_duplicated_rows(
    postgres_url: str,
) -> None:
    """Four processes migrate (concurrently, on a fresh database) and append at once."""
    admin = postgres_url.rsplit("/", 1)[0] + "/postgres"
    from tests._postgres import fresh_database

    url = fresh_database(admin, f"shared_{os.getpid()}")  # empty: the workers migrate it
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(url, w, 40)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    with Store.open_url(url) as store:
        assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
        counts = store.counts()
        assert counts["trajectories"] == 160
        assert counts["corrections"] == 4 * 8
        assert counts["failed"] == 4 * 8  # the overlay sees every correction
        ids = [t.id for t in store.iter_trajectories()]
        assert len(set(ids)) == 160
        sessions = {t.session_id for t in store.iter_trajectories()}
        assert sessions == {f"worker-{w}" for w in range(4)}


def test_database_url_selects_postgres_in_the_cli(tmp_path: Path, postgres_url: str) -> None:
    """The real CLI, with NIGHTSCHOOL_DATABASE_URL, writes to and reads from Postgres."""
    env = {**os.environ, "NIGHTSCHOOL_DATABASE_URL": postgres_url}
    with Store.open_url(postgres_url) as store:
        store.append_trajectory(
            Trajectory(task_kind="chat", session_id="cli", user_request="hello postgres")
        )
    listed = subprocess.run(
        [str(NIGHTSCHOOL), "trajectories", "export", "--format", "jsonl"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert "hello postgres" in listed.stdout
    assert not (tmp_path / "home" / "nightschool.db").exists()  # no SQLite file was made
    doctor = subprocess.run(
        [str(NIGHTSCHOOL), "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert "Postgres" in doctor.stdout
    bad = subprocess.run(
        [str(NIGHTSCHOOL), "trajectories", "export", "--format", "jsonl"],
        capture_output=True,
        text=True,
        env={**env, "NIGHTSCHOOL_DATABASE_URL": "postgresql://x:pw@127.0.0.1:1/none"},
        timeout=120,
        check=False,
    )
    assert bad.returncode != 0
    assert "cannot connect" in bad.stderr and "pw@" not in bad.stderr


WRONG = "```python\nprint('I did not read the task')\n```"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_two_dream_processes_share_one_postgres_store(
    tmp_path: Path, postgres_url: str, openai_stub: Callable[..., Any]
) -> None:
    """Two real `nightschool dream` processes (own homes, one database) at the same time."""
    with openai_stub(lambda _messages: WRONG, delay_s=0.05) as base_url:
        procs = []
        for worker in range(2):
            env = {
                **os.environ,
                "NIGHTSCHOOL_HOME": str(tmp_path / f"machine-{worker}"),
                "NIGHTSCHOOL_DATABASE_URL": postgres_url,
            }
            args = ["dream", "--cycles", "3", "--seed", str(10 + worker)]
            procs.append(
                subprocess.Popen(
                    [str(NIGHTSCHOOL), *args, "--base-url", base_url, "--model", "stub"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                )
            )
        for proc in procs:
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr
    for worker in range(2):
        assert not (tmp_path / f"machine-{worker}" / "nightschool.db").exists()
    with Store.open_url(postgres_url) as store:
        selfplay = list(store.iter_trajectories(task_kind="selfplay"))
        assert len(selfplay) == 6
        assert len({t.id for t in selfplay}) == 6
        assert len({t.session_id for t in selfplay}) == 2
        runs = store.query("SELECT trajectory_id FROM frontier_runs ORDER BY trajectory_id")
        assert sorted(t.id for t in selfplay) == [r[0] for r in runs]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_ctrl_c_mid_cycle_leaves_nothing_half_written_on_postgres(
    tmp_path: Path,
    postgres_url: str,
    openai_stub: Callable[..., Any],
    interrupt: Callable[..., str],
) -> None:
    with openai_stub(lambda _messages: WRONG, delay_s=0.4) as base_url:
        env = {
            **os.environ,
            "NIGHTSCHOOL_HOME": str(tmp_path / "h"),
            "NIGHTSCHOOL_DATABASE_URL": postgres_url,
        }
        proc = subprocess.Popen(
            [str(NIGHTSCHOOL), "dream", "--cycles", "50", "--base-url", base_url, "--model", "x"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        with Store.open_url(postgres_url) as store:
            deadline = time.monotonic() + 120
            while store.counts()["frontier_runs"] < 1 and time.monotonic() < deadline:
                time.sleep(0.3)
            time.sleep(0.7)  # inside the next cycle
            stderr = interrupt(proc)
            assert proc.returncode == 130, stderr
            assert "interrupted" in stderr and "Traceback" not in stderr
            trajectories = store.query("SELECT id FROM trajectories ORDER BY id")
            runs = store.query("SELECT trajectory_id FROM frontier_runs ORDER BY trajectory_id")
            assert trajectories == runs and len(trajectories) >= 1  # every cycle whole
            locks = store.query("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory'")
            assert locks == [(0,)]  # the interrupted writer's lock went with its connection


def test_a_dropped_connection_is_reopened_between_statements(postgres_url: str) -> None:
    with Store.open_url(postgres_url) as store:
        store.append_trajectory(Trajectory(task_kind="chat", user_request="before"))
        import psycopg

        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        store.append_trajectory(Trajectory(task_kind="chat", user_request="after"))
        assert store.counts()["trajectories"] == 2
