"""The playbook's parts, each built and exercised without the `SkillMemory` facade."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from nightschool.playbook import HashingEmbedder, MemoryConfig, SkillMemory
from nightschool.playbook._model import Kind
from nightschool.playbook._playbook_index import PlaybookIndex
from nightschool.playbook._records import PlaybookRecords
from nightschool.playbook._retrieval import Retriever
from nightschool.playbook._rows import entry_text
from nightschool.playbook._tuning import (
    DEFAULT_DUPLICATE_THRESHOLD,
    DEFAULT_RELEVANCE_FLOOR,
    DEFAULT_VECTOR_WEIGHT,
    duplicate_threshold,
    relevance_floor,
    vector_weight,
)
from nightschool.playbook._writer import PlaybookWriter
from nightschool.store import Store


def _values(trigger: str, kind: Kind = "lesson", **kw: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "trigger": trigger,
        "anti_pattern": "",
        "correct_pattern": kw.pop("correct_pattern", "do it right"),
        "domains": json.dumps(kw.pop("domains", ["python_general"])),
        "confidence": 0.5,
        "source": "manual",
        **kw,
    }


def _insert_raw(store: Store, records: PlaybookRecords, trigger: str, **kw: Any) -> tuple[str, int]:
    """A row written by the records alone (no index told): as another process would."""
    embedder = HashingEmbedder()
    values = _values(trigger, **kw)
    text = entry_text(values["kind"], trigger, values["anti_pattern"], values["correct_pattern"])
    vector = embedder.embed([text])[0]
    with store.transaction() as conn:
        return records.insert(conn, values, vector, embedder.name)


def test_tuning_prefers_config_then_embedder_then_default() -> None:
    class Bare:
        """An embedder that states no scale of its own."""

        name, dim = "bare", 4

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((len(texts), self.dim), dtype=np.float32)

    bare, hashing = Bare(), HashingEmbedder()
    assert duplicate_threshold(MemoryConfig(), bare) == DEFAULT_DUPLICATE_THRESHOLD
    assert vector_weight(MemoryConfig(), bare) == DEFAULT_VECTOR_WEIGHT
    assert relevance_floor(MemoryConfig(), bare) == DEFAULT_RELEVANCE_FLOOR
    assert relevance_floor(MemoryConfig(), hashing, "skill") == hashing.skill_relevance_floor
    assert vector_weight(MemoryConfig(vector_weight=0.3), hashing) == 0.3
    assert relevance_floor(MemoryConfig(fusion="rrf"), hashing) == 0.0


def test_records_alone_insert_reinforce_cap_and_archive(store: Store) -> None:
    records = PlaybookRecords(store)
    first, first_rowid = _insert_raw(store, records, "When parsing dates")
    second, second_rowid = _insert_raw(store, records, "When sorting rows")
    assert records.count() == 2 and records.get(first) is not None
    with store.transaction() as conn:
        records.reinforce(conn, first_rowid, trajectory_id="t-1", source="manual", step=0.5)
        assert records.rowids_of(conn, lesson_id=second) == [second_rowid]
        assert records.cap_victims(conn, kind="lesson", keep_rowid=second_rowid, cap=1) == [
            first_rowid
        ]
        with pytest.raises(ValueError):
            records.rowids_of(conn)
    lesson = records.get(first)
    assert lesson is not None and lesson.reinforcements == 1 and lesson.confidence == 0.75
    assert [r["trajectory_id"] for r in lesson.extra["reinforced_by"]] == ["t-1"]
    assert set(records.by_rowid([first_rowid, second_rowid, 999])) == {first_rowid, second_rowid}
    with store.transaction() as conn:
        records.archive(conn, [first_rowid], "size_cap")
    assert records.get(first) is None and records.count() == 1
    assert [a.extra["archive"]["reason"] for a in records.archived()] == ["size_cap"]


def test_records_made_from_challenges_and_templates(store: Store) -> None:
    records = PlaybookRecords(store)
    _, by_hash = _insert_raw(store, records, "Skill one", kind="skill", challenge_hash="h1")
    _, by_template = _insert_raw(store, records, "Skill two", kind="skill", template="algo.x")
    _insert_raw(store, records, "Lesson one", challenge_hash="h1")
    assert records.made_from("skill", {"h1"}, {"algo.x"}) == {by_hash, by_template}
    assert records.made_from("skill", (), ()) == set()


def test_index_alone_loads_rows_written_behind_its_back(store: Store) -> None:
    records = PlaybookRecords(store)
    index = PlaybookIndex(store, HashingEmbedder(), MemoryConfig())
    lesson_id, rowid = _insert_raw(store, records, "When a socket times out")
    _, skill_rowid = _insert_raw(store, records, "Retry a socket call", kind="skill")
    with store.lock:
        index.sync()
        assert rowid in index.vectors["lesson"] and skill_rowid in index.vectors["skill"]
        assert index.entries[rowid].id == lesson_id
        found = index.search("socket times out", "lesson", 5, lexical_n=5, lexical_kind=None)
    assert found.vector_keys == [rowid]  # the skill is in the other vector index
    assert set(found.lexical) == {rowid, skill_rowid}  # the lexical side sees both kinds
    assert found.query_vector.shape == (HashingEmbedder().dim,)
    index.forget([rowid])
    assert rowid not in index.vectors["lesson"] and rowid not in index.entries
    index.close()


def test_index_writing_mirrors_and_adopts_the_generation(store: Store) -> None:
    records = PlaybookRecords(store)
    index = PlaybookIndex(store, HashingEmbedder(), MemoryConfig())
    vector = index.embed("When a queue is full")
    with index.writing() as conn:
        values = _values("When a queue is full")
        lesson_id, rowid = records.insert(conn, values, vector, index.embedder.name)
        index.mirror(rowid, vector, lesson_id, values["domains"], "lesson")
    with pytest.raises(RuntimeError), index.writing():
        raise RuntimeError("rolled back")
    with store.lock:
        index.sync()  # reloaded after the failed write: the committed row is still there
        assert list(index.entries) == [rowid]
        assert np.allclose(index.vectors["lesson"].scores(vector, [rowid])[rowid], 1.0)


def test_retriever_alone_over_raw_rows(store: Store) -> None:
    records = PlaybookRecords(store)
    config = MemoryConfig(min_score=0.0)
    index = PlaybookIndex(store, HashingEmbedder(), config)
    retriever = Retriever(records, index, config)
    wanted, _ = _insert_raw(store, records, "When a socket times out", challenge_hash="h1")
    _insert_raw(store, records, "When a teapot whistles")
    got = retriever.retrieve("socket times out", k=2)
    assert [r.lesson.id for r in got][:1] == [wanted] and got[0].rank == 1
    assert retriever.retrieve("socket times out", k=2, kind="skill") == []
    assert wanted not in {
        r.lesson.id for r in retriever.retrieve("socket", exclude_challenge_hashes=["h1"])
    }
    index.close()


def test_writer_alone_learns_reinforces_and_retracts(store: Store) -> None:
    records = PlaybookRecords(store)
    config = MemoryConfig()
    index = PlaybookIndex(store, HashingEmbedder(), config)
    writer = PlaybookWriter(records, index, config)
    args: dict[str, Any] = {
        "anti_pattern": "",
        "correct_pattern": "close the file",
        "domains": ["python_general"],
        "source": "manual",
        "source_trajectory_id": "t-1",
    }
    first = writer.learn(trigger="When writing a file", **args)
    again = writer.learn(trigger="when writing a file!", **args)
    assert first.status == "written" and again.status == "reinforced"
    assert again.lesson_id == first.lesson_id
    assert writer.retract_from_trajectory("t-1") == 1 and records.count() == 0
    assert index.entries == {}


def test_facade_holds_the_parts_and_shares_them(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder())
    assert memory.retriever.index is memory.index is memory.writer.index
    assert memory.retriever.records is memory.records is memory.writer.records
    assert memory.duplicate_threshold == memory.writer.duplicate_threshold
    assert memory.relevance_floor("skill") == memory.retriever.relevance_floor("skill")
    memory.close()
