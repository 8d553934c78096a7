from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nightschool.errors import (
    DatabaseCorruptError,
    IncoherentRecordError,
    SchemaTooNewError,
    StoreError,
)
from nightschool.store import MIGRATIONS, Store
from nightschool.trajectory import Correction, Outcome, ToolCall, Trajectory


def make(**kw: object) -> Trajectory:
    base: dict[str, object] = {"task_kind": "selfplay", "cluster": "algo", "tier": "basic"}
    base.update(kw)
    return Trajectory(**base)  # type: ignore[arg-type]


def test_pragmas_and_migrations_recorded(store: Store) -> None:
    conn = store.connection
    if store.dialect == "sqlite":
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    else:
        assert conn.execute("SHOW default_transaction_isolation").fetchone()[0] == "read committed"
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    assert store.applied_migrations() == [
        "m001_initial",
        "m002_lessons",
        "m003_reflections",
        "m004_lesson_memory",
        "m005_eval_runs",
        "m006_skills",
        "m007_generated_challenges",
        "m008_phase_runs",
        "m009_diary",
        "m010_strategy_champions",
        "m011_prompts",
        "m012_dashboard_indexes",
        "m013_harmful",
        "m014_verification_queue",
    ]


def test_reopen_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    Store.open(path).close()
    with Store.open(path) as again:
        assert again.applied_migrations() == [name for name, _ in MIGRATIONS]


def test_roundtrip_full_record(store: Store) -> None:
    traj = make(
        session_id="s1",
        model="m",
        temperature=0.2,
        system_prompt="sys",
        user_request="do it",
        tool_calls=[
            ToolCall(
                name="run_solution",
                arguments={"attempt": 1},
                result="failed",
                error="boom",
                duration_s=0.5,
            )
        ],
        n_steps=1,
        tokens_in=10,
        tokens_out=5,
        outcome=Outcome.FAILED,
        failure_reason="boom",
        validator_signal="fail",
        final_response="code",
    )
    store.append_trajectory(traj)
    back = store.get_trajectory(traj.id)
    assert back is not None
    assert back.model_dump() == traj.model_dump()
    assert list(back.model_dump())[-1] == "final_response"


def test_append_only(store: Store) -> None:
    traj = store.append_trajectory(make())
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.connection.execute("UPDATE trajectories SET outcome='passed' WHERE id=?", (traj.id,))
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.connection.execute("DELETE FROM trajectories")
    with pytest.raises(StoreError):
        store.append_trajectory(traj)  # same id twice


def test_redaction_on_write(store: Store) -> None:
    secret = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    traj = store.append_trajectory(
        make(
            user_request=f"my key is {secret} and mail bob@example.com",
            extra={"api_key": "hunter2", "path": "/home/alice/x.py"},
        )
    )
    raw = store.connection.execute("SELECT record FROM trajectories").fetchone()[0]
    assert secret not in raw and "bob@example.com" not in raw and "hunter2" not in raw
    assert "alice" not in raw
    assert traj.id in raw


def test_incoherent_trajectory_refused(store: Store) -> None:
    with pytest.raises(IncoherentRecordError):
        store.append_trajectory(make(outcome=Outcome.PASSED, failure_reason="but it failed"))
    assert store.counts()["trajectories"] == 0


def test_correction_overlay_and_authority(store: Store) -> None:
    traj = store.append_trajectory(make(outcome=Outcome.FAILED, failure_reason="wrong"))
    now = datetime.now(UTC)
    store.add_correction(
        Correction(
            trajectory_id=traj.id,
            outcome=Outcome.PASSED,
            source="human_label",
            authority="human",
            timestamp=now,
        )
    )
    # a later machine verdict does not outrank the human label
    store.add_correction(
        Correction(
            trajectory_id=traj.id,
            outcome=Outcome.FAILED,
            failure_reason="verifier says no",
            source="verifier",
            timestamp=now + timedelta(seconds=5),
        )
    )
    back = store.get_trajectory(traj.id)
    assert back is not None
    assert back.outcome == Outcome.PASSED and back.failure_reason is None
    assert back.extra["correction"]["authority"] == "human"
    assert [t.id for t in store.iter_trajectories(outcome=Outcome.PASSED)] == [traj.id]
    assert list(store.iter_trajectories(outcome=Outcome.FAILED)) == []
    assert len(store.corrections(traj.id)) == 2


def test_latest_machine_correction_wins(store: Store) -> None:
    traj = store.append_trajectory(make(outcome=Outcome.UNKNOWN))
    t0 = datetime.now(UTC)
    store.add_correction(
        Correction(trajectory_id=traj.id, outcome=Outcome.PASSED, source="validator", timestamp=t0)
    )
    store.add_correction(
        Correction(
            trajectory_id=traj.id,
            outcome=Outcome.FAILED,
            source="user_correction",
            timestamp=t0 + timedelta(1),
        )
    )
    back = store.get_trajectory(traj.id)
    assert back is not None and back.outcome == Outcome.FAILED
    assert back.failure_reason == "marked failed by user_correction"
    assert store.counts()["failed"] == 1


def test_incoherent_correction_and_dangling_refused(store: Store) -> None:
    traj = store.append_trajectory(make())
    with pytest.raises(IncoherentRecordError):
        store.add_correction(
            Correction(
                trajectory_id=traj.id,
                outcome=Outcome.PASSED,
                failure_reason="x",
                source="validator",
            )
        )
    with pytest.raises(StoreError):
        store.add_correction(
            Correction(trajectory_id="nope", outcome=Outcome.FAILED, source="validator")
        )


def test_iter_filters(store: Store) -> None:
    old = make(timestamp=datetime(2020, 1, 1, tzinfo=UTC), cluster="sql")
    new = make(cluster="algo", task_kind="chat")
    store.append_trajectory(old)
    store.append_trajectory(new)
    assert [t.id for t in store.iter_trajectories(since=datetime(2021, 1, 1, tzinfo=UTC))] == [
        new.id
    ]
    assert [t.id for t in store.iter_trajectories(cluster="sql")] == [old.id]
    assert [t.id for t in store.iter_trajectories(task_kind="chat")] == [new.id]
    assert len(list(store.iter_trajectories(limit=1))) == 1


def test_transaction_rolls_back_on_interrupt(store: Store) -> None:
    with pytest.raises(KeyboardInterrupt), store.transaction():
        store.append_trajectory(make())
        raise KeyboardInterrupt
    assert store.counts()["trajectories"] == 0
    store.append_trajectory(make())  # the connection is usable afterwards
    assert store.counts()["trajectories"] == 1


def test_corrupt_database_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(DatabaseCorruptError, match="not a usable nightschool database"):
        Store.open(path)
    assert path.read_bytes().startswith(b"this is not sqlite")  # left untouched


def test_newer_schema_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES ('m999_from_the_future', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNewError, match="m999_from_the_future"):
        Store.open(path)


def test_concurrent_threads_no_lost_appends(tmp_path: Path) -> None:
    import threading

    with Store.open(tmp_path / "c.db", synchronous="NORMAL") as shared:

        def work() -> None:
            for _ in range(50):
                shared.append_trajectory(make())

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert shared.counts()["trajectories"] == 200
