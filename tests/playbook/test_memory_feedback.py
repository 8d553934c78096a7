from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest

from nightschool.errors import UserError
from nightschool.playbook import HashingEmbedder, LearnResult, MemoryConfig, SkillMemory
from nightschool.store import Store

Learn = Callable[..., LearnResult]


def _ids(*results: LearnResult) -> list[str]:
    return [r.lesson_id or "" for r in results]


def test_exposures_increment_shown_and_record_rank(memory: SkillMemory, learn: Learn) -> None:
    a, b = _ids(learn("When alpha happens"), learn("When beta occurs", "other fix"))
    assert memory.record_exposure([a, b, "L-missing"], "traj-1", scores=[0.9, 0.5, 0.1]) == 2
    memory.record_exposure([b], "traj-2")
    rows = memory.store.query(
        "SELECT lesson_id, trajectory_id, rank, score, outcome FROM lesson_exposures ORDER BY id"
    )
    assert rows == [
        (a, "traj-1", 1, 0.9, None),
        (b, "traj-1", 2, 0.5, None),
        (b, "traj-2", 1, 0.0, None),
    ]
    shown = {lid: memory.get(lid).times_shown for lid in (a, b)}  # type: ignore[union-attr]
    assert shown == {a: 1, b: 2}
    with pytest.raises(ValueError):
        memory.record_exposure([a], "traj-3", scores=[1.0, 2.0])


def test_outcomes_are_counted_once_per_trajectory(memory: SkillMemory, learn: Learn) -> None:
    a, b = _ids(learn("When alpha happens"), learn("When beta occurs", "other fix"))
    memory.record_exposure([a, b], "traj-1")
    memory.record_exposure([a], "traj-1")  # shown twice in the same episode
    memory.record_exposure([b], "traj-2")
    assert memory.record_outcome("traj-1", passed=True) == 2
    assert memory.record_outcome("traj-1", passed=True) == 0
    assert memory.record_outcome("traj-1", passed=False) == 0
    assert memory.record_outcome("traj-2", passed=False) == 1
    assert memory.record_outcome("never-seen", passed=True) == 0
    assert memory.record_outcome("  ", passed=True) == 0
    la, lb = memory.get(a), memory.get(b)
    assert la is not None and lb is not None
    assert (la.times_followed_by_pass, la.times_followed_by_failure) == (1, 0)
    assert (lb.times_followed_by_pass, lb.times_followed_by_failure) == (1, 1)
    outcomes = memory.store.query("SELECT trajectory_id, outcome FROM lesson_exposures ORDER BY id")
    assert outcomes == [
        ("traj-1", "passed"),
        ("traj-1", "passed"),
        ("traj-1", "passed"),
        ("traj-2", "failed"),
    ]


def test_mark_helpful_and_set_verified(memory: SkillMemory, learn: Learn) -> None:
    (a,) = _ids(learn("When alpha happens"))
    assert memory.mark_helpful(a)
    assert not memory.mark_helpful("L-000000000000")
    comparison = {"with": 0.75, "without": 0.5, "tasks": 8, "token": "ghp_" + "x1" * 20}
    assert memory.set_verified(a, True, comparison)
    lesson = memory.get(a)
    assert lesson is not None
    assert lesson.times_helpful == 1 and lesson.verified
    verification = lesson.extra["verification"]
    assert verification["verified"] is True
    assert verification["comparison"]["with"] == 0.75
    assert "ghp_" not in str(verification)
    assert not memory.set_verified("L-000000000000", True, {})
    with pytest.raises(UserError):
        memory.set_verified(a, False, {"bad": object()})


def test_retraction_archives_then_removes(memory: SkillMemory, learn: Learn) -> None:
    bad1, bad2, good, legacy = _ids(
        learn(
            "When counting lines of code",
            "run wc -l yourself",
            source_trajectory_id="t-bad",
            code_example="wc -l *.py",
            confidence=0.7,
        ),
        learn("When answering with a number", "state the number", source_trajectory_id="t-bad"),
        learn("When quoting variables", 'use "$var"', source_trajectory_id="t-good"),
        learn("When a lesson has no provenance", "keep it"),
    )
    memory.record_exposure([bad1], "t-x")
    before = memory.get(bad1)
    assert [r.lesson.id for r in memory.retrieve("counting lines of code", k=1)] == [bad1]

    assert memory.retract_from_trajectory("t-bad") == 2
    assert memory.get(bad1) is None and memory.get(bad2) is None
    assert {lesson.id for lesson in memory.list()} == {good, legacy}
    assert all(
        r.lesson.id not in (bad1, bad2) for r in memory.retrieve("counting lines of code", k=5)
    )

    archived = memory.archived("t-bad")
    assert [lesson.id for lesson in archived] == [bad1, bad2]
    copy = archived[0]
    assert copy.extra["archive"]["reason"] == "retracted"
    assert before is not None
    assert copy.model_dump(exclude={"extra"}) == before.model_dump(exclude={"extra"})
    (blob,) = memory.store.query("SELECT embedding FROM lessons_archive WHERE id = ?", (bad1,))[0]
    assert blob is not None and len(blob) == 4 * memory.embedder.dim

    assert memory.retract_from_trajectory("t-bad") == 0  # idempotent
    assert len(memory.archived("t-bad")) == 2
    assert memory.retract_from_trajectory("") == 0
    assert memory.retract_from_trajectory("   \n") == 0
    assert memory.count() == 2  # the legacy lesson with "" provenance is untouched
    assert len(memory.archived()) == 2


def test_retract_with_reason_and_reinforced_lessons(memory: SkillMemory, learn: Learn) -> None:
    (a,) = _ids(learn("When alpha happens", source_trajectory_id="t-1"))
    memory.learn(
        trigger="when alpha happens",
        anti_pattern="",
        correct_pattern="x",
        domains=["algo"],
        source="selfplay",
        source_trajectory_id="t-2",
    )
    assert memory.retract_from_trajectory("t-2") == 0  # it only reinforced, provenance is t-1
    assert memory.retract_from_trajectory("t-1", reason="user correction") == 1
    assert memory.archived("t-1")[0].extra["archive"]["reason"] == "user correction"
    assert memory.get(a) is None


def test_archive_is_append_only(memory: SkillMemory, learn: Learn) -> None:
    learn("When alpha happens", source_trajectory_id="t-1")
    memory.retract_from_trajectory("t-1")
    with pytest.raises(sqlite3.DatabaseError):
        memory.store.connection.execute("DELETE FROM lessons_archive")


def test_failed_write_leaves_index_consistent(memory: SkillMemory, learn: Learn) -> None:
    learn("When alpha happens", source_trajectory_id="t-1")

    class Boom(Exception):
        pass

    with pytest.raises(Boom), memory.store.transaction():
        memory.retract_from_trajectory("t-1")
        raise Boom
    assert memory.count() == 1
    assert memory.archived() == []
    assert len(memory.retrieve("alpha happens", k=3)) == 1


def test_size_cap_never_removes_verified_and_never_fires_below(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(max_lessons=3))
    nouns = ["apples", "bridges", "clouds", "drums", "engines", "forests"]

    def add(i: int) -> str:
        result = memory.learn(
            trigger=f"When painting {nouns[i]}",
            anti_pattern="",
            correct_pattern=f"paint {nouns[i]} slowly",
            domains=["algo"],
            source="manual",
        )
        assert result.status == "written"
        return result.lesson_id or ""

    ids = [add(i) for i in range(3)]
    assert memory.count() == 3 and memory.archived() == []  # at the cap: nothing removed
    for lesson_id in ids:
        memory.set_verified(lesson_id, True, {})
    fourth = add(3)
    assert memory.count() == 4  # every other lesson is verified: nothing to evict
    assert memory.archived() == []
    memory.set_verified(ids[0], False, {})
    fifth = add(4)
    assert memory.count() == 3  # the two unverified older lessons go, down to the cap
    assert {lesson.id for lesson in memory.archived()} == {ids[0], fourth}
    assert {lesson.extra["archive"]["reason"] for lesson in memory.archived()} == {"size_cap"}
    assert {lesson.id for lesson in memory.list()} == {ids[1], ids[2], fifth}
