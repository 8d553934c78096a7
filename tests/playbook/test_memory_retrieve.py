from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from bench.data.retrieval_evalset import LESSONS

from nightschool.playbook import (
    HashingEmbedder,
    LearnResult,
    MemoryConfig,
    SkillMemory,
    fts_query,
)
from nightschool.playbook._lexical_pg import tsquery_literal
from nightschool.playbook._text import MAX_QUERY_TOKENS, STOPWORDS, content_tokens
from nightschool.store import Store

Learn = Callable[..., LearnResult]

NASTY_QUERIES = [
    "",
    "   ",
    '"',
    '"unbalanced quote',
    "AND",
    "OR NOT AND NEAR",
    "NEAR(a b, 3)",
    "csv AND sql OR NOT regex",
    "lock*",
    "*",
    "^start",
    "(parentheses (nested) unbalanced",
    "col:value trigger: x",
    "a - b + c",
    "{trigger}: when",
    "日本語のクエリ 中文 café naïve Ünïcödé",
    "emoji 🔥🐍 only",
    "NULL; DROP TABLE lessons; --",
    "'single' \"double\" `back`",
    "x" * 3000,
    " ".join(f"word{i}" for i in range(200)),
    "\x00\x01 control chars",
]


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_fts_query_is_always_valid_fts5(store: Store, query: str) -> None:
    if store.dialect == "postgres":  # one `to_tsquery` literal per word (`PgLexicalIndex`)
        for word in content_tokens(query)[:MAX_QUERY_TOKENS]:
            sql = "SELECT count(*) FROM lessons WHERE fts @@ to_tsquery('english', ?)"
            store.query(sql, (tsquery_literal(word),))
        return
    match = fts_query(query)
    if match:
        store.query("SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?", (match,))
        assert all(part.startswith('"') and part.endswith('"') for part in match.split(" OR "))


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_retrieve_never_raises_on_user_text(memory: SkillMemory, learn: Learn, query: str) -> None:
    learn("When a query contains AND, OR, NEAR or a star *", domains=["sql"])
    learn("When handling café and naïve unicode text", domains=["python_general"])
    results = memory.retrieve(query, k=3)
    assert len(results) <= 2
    assert [r.rank for r in results] == list(range(1, len(results) + 1))


def test_fts_query_drops_stopwords_and_keywords_are_quoted() -> None:
    assert fts_query("How do I use AND with the NEAR operator?") == '"near" OR "operator"'
    assert fts_query("is it") == '"is" OR "it"'
    assert fts_query("Café, café, CAFÉ") == '"café"'
    assert fts_query("!!! ???") == ""
    assert "and" in STOPWORDS


def test_empty_playbook_and_nonpositive_k(memory: SkillMemory, learn: Learn) -> None:
    assert memory.retrieve("anything at all", k=3) == []
    learn("When sorting by two keys", domains=["algo"])
    assert memory.retrieve("sorting", k=0) == []
    assert len(memory.retrieve("sorting by two keys", k=10)) == 1
    assert len(memory.retrieve("sorting", k=10, min_score=0.0)) == 1


def test_hybrid_ranks_the_paraphrased_lesson_first(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder())
    for item in LESSONS:
        memory.learn(
            trigger=item.trigger,
            anti_pattern=item.anti_pattern,
            correct_pattern=item.correct_pattern,
            domains=list(item.domains),
            source="manual",
            source_trajectory_id=item.key,
        )
    assert memory.count() == len(LESSONS)
    cases = {
        "SQL statement built from user input values": "sql-injection",
        "threads incrementing a shared counter lose updates": "cc-counter-lock",
        "my bash script keeps going when a command fails": "sh-strict-mode",
        "combining overlapping intervals": "al-merge-intervals",
    }
    for query, key in cases.items():
        got = memory.retrieve(query, k=3)
        assert got[0].lesson.source_trajectory_id == key, (query, [r.lesson.trigger for r in got])
        assert got[0].score >= got[-1].score
        assert -1.0 <= got[0].vector_score <= 1.0
        assert got[0].bm25_score > 0


def test_scores_are_sorted_and_ties_break_by_id(memory: SkillMemory, learn: Learn) -> None:
    for noun in ("apples", "bridges", "clouds", "drums", "engines"):
        learn(f"When painting {noun} with widgets", f"paint {noun} slowly", domains=["algo"])
    first = memory.retrieve("widgets", k=5)
    second = memory.retrieve("widgets", k=5)
    assert [r.lesson.id for r in first] == [r.lesson.id for r in second]
    keys = [(-r.score, r.lesson.id) for r in first]
    assert keys == sorted(keys)


def test_cluster_boost_reorders_toward_the_domain(memory: SkillMemory, learn: Learn) -> None:
    python = learn(
        "When reading a large file", "iterate over the lines lazily", domains=["python_general"]
    ).lesson_id
    shell = learn(
        "When reading a large log file", "stream it with while read", domains=["bash"]
    ).lesson_id
    plain = memory.retrieve("reading a large file", k=2)
    assert [r.lesson.id for r in plain] == [shell, python]
    boosted = memory.retrieve("reading a large file", k=2, cluster="python_general")
    assert [r.lesson.id for r in boosted] == [python, shell]
    assert boosted[0].score == pytest.approx(plain[1].score + memory.config.cluster_boost)
    unrelated = memory.retrieve("reading a large file", k=2, cluster="sql")
    assert [r.lesson.id for r in unrelated] == [shell, python]


def test_bm25_only_and_vector_only_configs(store: Store) -> None:
    # About the fusion weights; the floor (calibrated at the embedder's weight) is off.
    lexical = SkillMemory(store, HashingEmbedder(), MemoryConfig(vector_weight=0.0, min_score=0.0))
    lexical.learn(
        trigger="When quoting shell variables",
        anti_pattern="",
        correct_pattern='use "$var"',
        domains=["bash"],
        source="manual",
    )
    hit = lexical.retrieve("quoting variables", k=1)[0]
    assert hit.bm25_score > 0 and hit.score > 0
    vector = SkillMemory(
        store, HashingEmbedder(), MemoryConfig(vector_weight=1.0, fusion="mix", min_score=0.0)
    )
    hit = vector.retrieve("quoting variables", k=1)[0]
    assert hit.score == pytest.approx(hit.vector_score)


def test_second_instance_sees_writes_of_the_first(store: Store) -> None:
    no_floor = MemoryConfig(min_score=0.0)  # about index sync, not relevance
    reader = SkillMemory(store, HashingEmbedder(), no_floor)
    writer = SkillMemory(store, HashingEmbedder(), no_floor)
    assert reader.retrieve("deadlock", k=1) == []
    lesson_id = writer.learn(
        trigger="When two locks cause a deadlock",
        anti_pattern="",
        correct_pattern="acquire locks in one global order",
        domains=["concurrency"],
        source="manual",
        source_trajectory_id="t-1",
    ).lesson_id
    assert [r.lesson.id for r in reader.retrieve("deadlock between locks", k=1)] == [lesson_id]
    writer.retract_from_trajectory("t-1")
    assert reader.retrieve("deadlock between locks", k=1) == []


def test_vectors_of_another_model_are_reembedded(store: Store) -> None:
    old = SkillMemory(store, HashingEmbedder(dim=512))
    old.learn(
        trigger="When matching across lines",
        anti_pattern="",
        correct_pattern="re.DOTALL",
        domains=["regex_parse"],
        source="manual",
    )
    new = SkillMemory(store, HashingEmbedder(dim=256))
    got = new.retrieve("matching text across lines", k=1)
    assert len(got) == 1 and got[0].vector_score > 0.2
    ((model, size),) = store.query("SELECT embedding_model, length(embedding) FROM lessons")
    assert (model, size) == ("hashing-v1-256", 4 * 256)


def test_posting_budget_drops_common_words(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(fts_posting_budget=3))
    for i in range(6):
        memory.learn(
            trigger=f"When handling common widget case {i}",
            anti_pattern="",
            correct_pattern=f"apply fix {i}",
            domains=["algo"],
            source="manual",
        )
    memory.learn(
        trigger="When handling a rare gizmo",
        anti_pattern="",
        correct_pattern="apply the gizmo fix",
        domains=["algo"],
        source="manual",
    )
    hits = memory._lexical.search("widget gizmo handling", 10, memory.count())
    gizmo = memory.store.query("SELECT rowid FROM lessons WHERE trigger LIKE '%gizmo%'")
    assert list(hits) == [gizmo[0][0]]  # only the rare word fits the budget
    assert memory.retrieve("widget gizmo", k=1)[0].lesson.trigger == "When handling a rare gizmo"


def test_query_embedding_is_unit_norm(memory: SkillMemory) -> None:
    vec = memory.embedder.embed(["When sorting by two keys"])[0]
    assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed(texts)


def test_repeated_query_is_embedded_once(store: Store) -> None:
    embedder = CountingEmbedder()
    memory = SkillMemory(store, embedder)
    memory.learn(
        trigger="When quoting shell variables",
        anti_pattern="",
        correct_pattern='use "$var"',
        domains=["bash"],
        source="manual",
    )
    first = memory.retrieve("quoting variables in bash", k=1)
    before = len(embedder.calls)
    again = memory.retrieve("quoting variables in bash", k=1)
    assert len(embedder.calls) == before
    assert first == again
    memory.close()
    assert memory.retrieve("quoting variables in bash", k=1) == first  # worker restarts


def test_retrieve_inside_a_transaction_sees_uncommitted_lessons(memory: SkillMemory) -> None:
    with memory.store.transaction():
        memory.learn(
            trigger="When quoting shell variables",
            anti_pattern="",
            correct_pattern='use "$var"',
            domains=["bash"],
            source="manual",
        )
        got = memory.retrieve("quoting shell variables", k=1)
        assert len(got) == 1 and got[0].bm25_score > 0


def test_no_deadlock_between_transactions_and_retrieval(memory: SkillMemory) -> None:
    memory.learn(
        trigger="When quoting shell variables",
        anti_pattern="",
        correct_pattern='use "$var"',
        domains=["bash"],
        source="manual",
    )
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            for _ in range(40):
                memory.retrieve("quoting shell variables", k=2)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            for i in range(20):
                with memory.store.transaction():
                    memory.learn(
                        trigger=f"When painting fence number {i} blue",
                        anti_pattern="",
                        correct_pattern=f"use brush size {i}",
                        domains=["algo"],
                        source="manual",
                        source_trajectory_id=f"t-{i}",
                    )
                    memory.retrieve("painting fences", k=1)
                    memory.retract_from_trajectory(f"t-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "deadlock"
    assert errors == []
    assert memory.count() == 1
