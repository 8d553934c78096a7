"""Curation by measured utility: paired helpful/harmful counts, who is shown what, retirement."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nightschool.lessons.skills import recall_request
from nightschool.playbook import (
    RETIRE_MARGIN,
    HashingEmbedder,
    LearnResult,
    MemoryConfig,
    SkillMemory,
)
from nightschool.playbook._records import paired_counts
from nightschool.store import Store

SQL_TOTALS = "sum the order totals per customer with a GROUP BY over the orders table"
SQL_CODE = "SELECT customer, SUM(total) FROM orders GROUP BY customer;"
UNRELATED = "write a limerick about autumn leaves falling on a quiet pond"


def comparison(with_arm: list[int | None], without: list[int | None], **kw: Any) -> dict[str, Any]:
    """A `Verification.record()`-shaped comparison."""
    return {"method": "paired-fresh-renderings", "with": with_arm, "without": without, **kw}


@pytest.fixture
def memory(store: Store) -> SkillMemory:
    """Verified entries only in chat (the near-identical exception has its own test): with
    the hashing embedder every skill above the floor is near-identical (cosine >= 0.8)."""
    return SkillMemory(store, HashingEmbedder(), MemoryConfig(chat_recall_score=1.01))


@pytest.fixture
def skill(memory: SkillMemory) -> str:
    result = memory.learn_skill(
        summary=SQL_TOTALS,
        code=SQL_CODE,
        domains=["sql"],
        source_trajectory_id="t-1",
        template="sql.customer_totals",
        tier="basic",
    )
    assert result.status == "written" and result.lesson_id
    return result.lesson_id


def test_paired_counts_count_discordant_complete_pairs_only() -> None:
    assert paired_counts(comparison([1, 0, 1, None, 1], [0, 1, 1, 0, None])) == (1, 1)
    assert paired_counts(comparison([1, 1], [0, 0])) == (2, 0)
    assert paired_counts(comparison([0, 0, 0], [1, 1, 0])) == (0, 2)
    # no verdict to trust, no lists, lists of different lengths: nothing counted
    assert paired_counts(comparison([1, 1], [0, 0], infrastructure_error="sandbox")) == (0, 0)
    assert paired_counts({"passes_with": 3, "passes_without": 1}) == (0, 0)
    assert paired_counts(comparison([1, 1], [0])) == (0, 0)


def test_set_verified_credits_the_pairs(memory: SkillMemory, skill: str) -> None:
    assert memory.set_verified(skill, True, comparison([1, 1, 0, 1], [0, 1, 1, 0]))
    entry = memory.get(skill)
    assert entry is not None
    assert (entry.times_helpful, entry.times_harmful) == (2, 1)
    assert entry.verified and not entry.harmful and not entry.rejected
    # a second comparison adds to the counts
    assert memory.set_verified(skill, False, comparison([0], [0]))
    entry = memory.get(skill)
    assert entry is not None and (entry.times_helpful, entry.times_harmful) == (2, 1)
    assert entry.rejected


def test_record_paired_rejects_negative_counts_and_unknown_ids(
    memory: SkillMemory, skill: str
) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        memory.record_paired(skill, -1, 0)
    assert memory.record_paired("L-000000000000", 1, 0) is False
    assert memory.record_paired(skill, 1, 0) is True


def test_chat_is_shown_verified_entries_only(memory: SkillMemory, skill: str) -> None:
    # unverified: self-play may see it (its verification shows it), a user's turn may not
    assert [r.lesson.id for r in memory.retrieve(SQL_TOTALS, kind="skill")] == [skill]
    assert memory.retrieve(SQL_TOTALS, kind="skill", audience="chat") == []
    assert recall_request(memory, SQL_TOTALS).skills == []

    memory.set_verified(skill, True, comparison([1, 1], [0, 0]))
    shown = recall_request(memory, SQL_TOTALS)
    assert [r.lesson.id for r in shown.skills] == [skill]
    assert shown.skill_sections and SQL_CODE in shown.skill_sections[0]
    # an unrelated request is shown nothing, verified or not
    assert recall_request(memory, UNRELATED).skills == []
    assert recall_request(memory, UNRELATED).lessons == []


def test_a_rejected_entry_never_reaches_chat(memory: SkillMemory, skill: str) -> None:
    memory.set_verified(skill, False, comparison([0, 1], [0, 1]))
    entry = memory.get(skill)
    assert entry is not None and entry.rejected and not entry.harmful
    assert recall_request(memory, SQL_TOTALS).skills == []
    # practice still sees it: the gate found no lift, not harm
    assert [r.lesson.id for r in memory.retrieve(SQL_TOTALS, kind="skill")] == [skill]


def test_an_infrastructure_stop_is_not_a_rejection(memory: SkillMemory, skill: str) -> None:
    memory.set_verified(skill, False, comparison([], [], infrastructure_error="sandbox gone"))
    entry = memory.get(skill)
    assert entry is not None and not entry.rejected and not entry.verified


def test_a_harmful_entry_is_shown_to_no_one_and_its_place_goes_to_the_next(
    memory: SkillMemory, learn: Callable[..., LearnResult]
) -> None:
    first = learn("when a SQL query sums totals per customer, GROUP BY the customer column")
    second = learn("when summing SQL order totals per customer, alias the SUM column")
    assert first.lesson_id and second.lesson_id
    query = "SQL: sum order totals per customer"
    before = [r.lesson.id for r in memory.retrieve(query, k=1)]
    assert len(before) == 1
    top = before[0]
    other = second.lesson_id if top == first.lesson_id else first.lesson_id
    memory.record_paired(top, 0, 1)  # harmful 1 > helpful 0: hidden, not yet retired
    entry = memory.get(top)
    assert entry is not None and entry.harmful
    assert [r.lesson.id for r in memory.retrieve(query, k=1)] == [other]
    assert top not in [r.lesson.id for r in memory.retrieve(query, k=5, audience="practice")]
    # helped once more: no longer harmful, shown again
    memory.record_paired(top, 1, 0)
    assert [r.lesson.id for r in memory.retrieve(query, k=1)] == [top]


def test_net_harm_of_the_margin_retires_the_entry(memory: SkillMemory, skill: str) -> None:
    memory.set_verified(skill, False, comparison([0] * RETIRE_MARGIN, [1] * RETIRE_MARGIN))
    assert memory.get(skill) is None
    archived = [e for e in memory.archived(kind="skill") if e.id == skill]
    assert len(archived) == 1
    assert archived[0].times_harmful == RETIRE_MARGIN
    assert archived[0].extra.get("archive", {}).get("reason") == "harmful"


def test_counts_survive_export_and_restore(memory: SkillMemory, skill: str, tmp_path: Path) -> None:
    memory.record_paired(skill, 3, 1)
    records = list(memory.export())
    with Store.open(tmp_path / "other.db") as other:
        fresh = SkillMemory(other, HashingEmbedder())
        assert fresh.restore(records) == 1
        entry = fresh.get(skill)
        assert entry is not None and (entry.times_helpful, entry.times_harmful) == (3, 1)
        fresh.close()


def test_chat_sees_an_unverified_entry_only_for_nearly_its_own_task(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder())  # chat_recall_score at its default
    assert memory.config.chat_recall_score == 0.75
    trigger = "when the user asks to parse dates like 03/04/2025 in a CSV, ask for the day order"
    made = memory.learn(
        trigger=trigger,
        anti_pattern="",
        correct_pattern="ask which comes first",
        domains=["data_analysis"],
        source="user_correction",
    )
    assert made.lesson_id
    # the same request again: recall of the user's own correction
    assert [r.lesson.id for r in recall_request(memory, trigger).lessons] == [made.lesson_id]
    # a related but different request clears the floor for practice, not for chat
    related = "parse dates like 03/04/2025 in a CSV"  # cosine 0.645, fused 0.322 > floor 0.31
    assert [r.lesson.id for r in memory.retrieve(related)] == [made.lesson_id]
    assert recall_request(memory, related).lessons == []
    # the exception never covers a rejected entry
    memory.set_verified(made.lesson_id, False, comparison([0, 0], [0, 0]))
    assert recall_request(memory, trigger).lessons == []
