"""The learning curve's control arms: the placebo draws unrelated items; equal compute's budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from nightschool.evals._curve_arms import equal_compute_attempts, placebo_recall
from nightschool.lessons.skills import Recall
from nightschool.playbook import HashingEmbedder, RetrievedLesson, SkillMemory
from nightschool.store import Store


def test_equal_compute_spreads_the_dream_calls_over_the_items() -> None:
    assert equal_compute_attempts(0, 28) == 1
    assert equal_compute_attempts(56, 28) == 3
    assert equal_compute_attempts(10_000, 28) == 10  # the ceiling
    with pytest.raises(ValueError):
        equal_compute_attempts(5, 0)


def test_placebo_matches_the_counts_from_unrelated_clusters_only(tmp_path: Path) -> None:
    with Store.open(tmp_path / "p.db") as store:
        memory = SkillMemory(store, embedder=HashingEmbedder())
        for k, template in enumerate(["sql.a", "sql.b", "algo.c", "bash.d", "algo.e"]):
            memory.learn_skill(
                summary=f"task {k}", code=f"def f{k}():\n    return {k}\n",
                domains=[template.split(".")[0]], source_trajectory_id=f"T{k}",
                template=template, tier="starter",
            )  # fmt: skip
        memory.learn(
            trigger="joining two tables", anti_pattern="a cross join",
            correct_pattern="join on the key", domains=["sql"], source="selfplay",
        )  # fmt: skip
        memory.learn(
            trigger="merging sorted intervals", anti_pattern="not sorting first",
            correct_pattern="sort by start", domains=["algo"], source="selfplay",
        )  # fmt: skip
        sql_skill = memory.list(kind="skill")[0]
        sql_lesson = memory.list(kind="lesson")[0]

        def shown(entry):  # type: ignore[no-untyped-def]
            return RetrievedLesson(lesson=entry, score=1.0, bm25_score=0, vector_score=0, rank=1)

        both = Recall([shown(sql_lesson)], [shown(sql_skill), shown(sql_skill)], ["x"])
        placebo = placebo_recall(memory, both, "sql", "sql.a", "b:sql.a:starter:1")
        assert len(placebo.lessons) == 1 and len(placebo.skills) == 2
        assert all(not s.lesson.template.startswith("sql.") for s in placebo.skills)
        assert placebo.lessons[0].lesson.domains == ["algo"]
        assert placebo.skill_sections and "### WORKED EXAMPLES" in placebo.skill_sections[0]
        # the same item draws the same placebo; nothing shown by both: nothing shown
        again = placebo_recall(memory, both, "sql", "sql.a", "b:sql.a:starter:1")
        assert again.skill_ids == placebo.skill_ids
        assert placebo_recall(memory, Recall(), "sql", "sql.a", "x") == Recall()
