"""The relevance floor: a relevant request gets its lesson, an unrelated one gets nothing."""

from __future__ import annotations

import pytest
from bench.data.retrieval_evalset import LESSONS
from bench.data.unrelated_requests import UNRELATED_REQUESTS

from nightschool.playbook import HashingEmbedder, MemoryConfig, MiniLMEmbedder, SkillMemory
from nightschool.playbook._tuning import DEFAULT_RELEVANCE_FLOOR
from nightschool.store import Store

EVERYDAY = [
    "what's the capital of France",
    "write a haiku about rain",
    "how do I center a div in CSS",
    "tell me a joke about penguins",
    "give me a recipe for banana bread",
]


@pytest.fixture
def labelled(store: Store) -> SkillMemory:
    """The 74 labelled lessons with the hashing embedder and its own floor."""
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
    return memory


def test_unrelated_requests_get_nothing_and_related_ones_their_lesson(
    labelled: SkillMemory,
) -> None:
    for request in EVERYDAY:
        assert labelled.retrieve(request, k=3) == [], request
    rejected = [labelled.retrieve(q, k=3) == [] for q in UNRELATED_REQUESTS]
    assert sum(rejected) / len(rejected) >= 0.9  # measured 0.95
    got = labelled.retrieve("SQL statement built from user input values", k=3)
    assert got[0].lesson.source_trajectory_id == "sql-injection"
    assert all(r.fused_score >= labelled.relevance_floor() for r in got)
    found = [
        item.key in [r.lesson.source_trajectory_id for r in labelled.retrieve(q, k=5)]
        for item in LESSONS
        for q in (*item.queries, *item.keyword_queries)
    ]
    assert sum(found) / len(found) >= 0.6  # measured 0.62 (0.64 without the floor)


def test_the_floor_ignores_the_cluster_boost(labelled: SkillMemory) -> None:
    request = "write a haiku about rain"
    for cluster in ("algo", "sql", "python_general"):
        assert labelled.retrieve(request, k=3, cluster=cluster) == []
    boosted = labelled.retrieve("threads incrementing a shared counter", k=3, cluster="concurrency")
    for item in boosted:
        assert item.score == pytest.approx(item.fused_score + labelled.config.cluster_boost)


def test_floor_off_returns_top_k_for_anything(labelled: SkillMemory) -> None:
    assert len(labelled.retrieve("write a haiku about rain", k=3, min_score=0.0)) == 3
    off = SkillMemory(labelled.store, HashingEmbedder(), MemoryConfig(min_score=0.0))
    assert len(off.retrieve("write a haiku about rain", k=3)) == 3
    strict = labelled.retrieve("threads incrementing a shared counter", k=5, min_score=0.99)
    assert strict == []


def test_where_the_floor_comes_from(store: Store) -> None:
    hashing = SkillMemory(store, HashingEmbedder())
    assert hashing.relevance_floor("lesson") == HashingEmbedder.relevance_floor
    assert hashing.relevance_floor("skill") == HashingEmbedder.skill_relevance_floor
    config = MemoryConfig(min_score=0.2, min_skill_score=0.3)
    assert SkillMemory(store, HashingEmbedder(), config).relevance_floor("lesson") == 0.2
    assert SkillMemory(store, HashingEmbedder(), config).relevance_floor("skill") == 0.3
    rrf = SkillMemory(store, HashingEmbedder(), MemoryConfig(fusion="rrf"))
    assert rrf.relevance_floor("lesson") == rrf.relevance_floor("skill") == 0.0

    class Plain(HashingEmbedder):
        relevance_floor = None  # type: ignore[assignment]
        skill_relevance_floor = None  # type: ignore[assignment]

    plain = SkillMemory(store, Plain())
    assert plain.relevance_floor("lesson") == plain.relevance_floor("skill")
    assert plain.relevance_floor() == DEFAULT_RELEVANCE_FLOOR == MiniLMEmbedder.relevance_floor


def test_skills_have_their_own_floor(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder())
    summaries = {
        "algo.merge_intervals": "Merge overlapping intervals.",
        "sql.customer_totals": "Report how much each customer spent.",
        "regex_parse.emails": "Extract the e-mail addresses from a text.",
    }
    for template, summary in summaries.items():
        memory.learn_skill(
            summary=summary,
            code=f"print({template!r})",
            domains=[template.split(".")[0]],
            source_trajectory_id=f"t-{template}",
            template=template,
        )
    got = memory.retrieve("Merge the overlapping intervals of a list", k=2, kind="skill")
    assert [r.lesson.template for r in got] == ["algo.merge_intervals"]
    for request in EVERYDAY:
        assert memory.retrieve(request, k=2, kind="skill") == [], request
