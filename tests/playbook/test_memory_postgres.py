"""The playbook on Postgres: several connections sharing one playbook, and `ts_rank` retrieval."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.playbook import HashingEmbedder, LearnResult, MemoryConfig, SkillMemory
from nightschool.playbook._lexical_pg import PgLexicalIndex, bm25_idf
from nightschool.store import Store

NO_FLOOR = MemoryConfig(min_score=0.0)
NOUNS = ("invoice", "socket", "glacier", "printer", "mortgage", "teapot", "satellite", "violin")
VERBS = ("overflows", "times out", "melts", "jams", "defaults", "whistles", "drifts", "detunes")


@pytest.fixture
def stores(postgres_url: str, tmp_path: Path) -> Iterator[list[Store]]:
    """Four stores on one Postgres database, each with its own connection (as processes)."""
    opened = [Store.open_url(postgres_url, home=tmp_path) for _ in range(4)]
    yield opened
    for store in opened:
        store.close()


def _learn(memory: SkillMemory, trigger: str, trajectory: str = "") -> LearnResult:
    return memory.learn(
        trigger=trigger,
        anti_pattern="",
        correct_pattern="acquire locks in one global order",
        domains=["concurrency"],
        source="manual",
        source_trajectory_id=trajectory,
    )


def test_a_write_on_one_connection_is_seen_by_another(stores: list[Store]) -> None:
    writer, reader = (SkillMemory(s, HashingEmbedder(), NO_FLOOR) for s in stores[:2])
    assert reader.retrieve("deadlock between locks", k=1) == []
    lesson_id = _learn(writer, "When two locks cause a deadlock", "t-1").lesson_id
    got = reader.retrieve("deadlock between locks", k=1)
    assert [r.lesson.id for r in got] == [lesson_id] and got[0].bm25_score > 0
    assert writer.retract_from_trajectory("t-1") == 1
    assert reader.retrieve("deadlock between locks", k=1) == []
    assert [lesson.id for lesson in reader.archived("t-1")] == [lesson_id]


def test_concurrent_learns_of_one_lesson_write_it_once(stores: list[Store]) -> None:
    """The advisory writer lock serialises the duplicate check and the insert."""
    memories = [SkillMemory(s, HashingEmbedder()) for s in stores]
    results: list[LearnResult] = []
    start = threading.Barrier(len(memories))

    def learn(memory: SkillMemory, number: int) -> None:
        start.wait()
        results.append(_learn(memory, "When two locks cause a deadlock", f"t-{number}"))

    threads = [threading.Thread(target=learn, args=(m, i)) for i, m in enumerate(memories)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(r.status for r in results) == ["reinforced"] * 3 + ["written"]
    assert {r.lesson_id for r in results} == {results[0].lesson_id}
    (lesson,) = memories[0].list()
    assert lesson.reinforcements == 3


def test_ts_rank_weighs_the_trigger_most_and_rare_words_over_common(
    stores: list[Store],
) -> None:
    memory = SkillMemory(stores[0], HashingEmbedder(), NO_FLOOR)
    assert isinstance(memory._lexical, PgLexicalIndex)
    for noun, verb in zip(NOUNS, VERBS, strict=True):
        assert _learn(memory, f"When a common {noun} {verb}").status == "written"
    rare = _learn(memory, "When the rare gizmo spins").lesson_id
    in_correct = memory.learn(
        trigger="When a flange leaks",
        anti_pattern="",
        correct_pattern="tighten the gizmo",
        domains=["algo"],
        source="manual",
    ).lesson_id
    rowids = dict(memory.store.query("SELECT id, rowid FROM lessons"))
    hits = memory._lexical.search("common gizmo", 20, memory.count())
    ranked = list(hits)
    assert ranked[:2] == [rowids[rare], rowids[in_correct]]  # rarer word, trigger first
    assert hits[rowids[rare]] > hits[rowids[in_correct]] > hits[ranked[2]] > 0
    assert memory._lexical.search("is it the", 5, memory.count()) == {}  # only stopwords
    assert set(memory._lexical.search("GIZMO!", 5, memory.count())) == set(ranked[:2])


def test_bm25_idf_is_fts5s() -> None:
    assert bm25_idf(100, 1) == pytest.approx(4.1947, abs=1e-4)  # log(99.5 / 1.5)
    assert bm25_idf(100, 90) == 1e-6  # common words are floored, as FTS5 does
    assert bm25_idf(95, 100) == 1e-6  # a snapshot taken before lessons were retracted
