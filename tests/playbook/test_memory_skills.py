"""Skills from successes: learn, dedupe, retract, archive, export/restore, kind separation."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nightschool.errors import UserError
from nightschool.playbook import HashingEmbedder, LearnResult, MemoryConfig, SkillMemory, _retrieval
from nightschool.playbook._rows import code_hash, normalise_code
from nightschool.store import Store

MERGE = """\
intervals = sorted(tuple(map(int, line.split())) for line in open("intervals.txt"))
merged = []
for a, b in intervals:
    if merged and a <= merged[-1][1]:
        merged[-1][1] = max(merged[-1][1], b)
    else:
        merged.append([a, b])
for a, b in merged:
    print(a, b)
"""

SHORTER_MERGE = """\
out = []
for a, b in sorted(tuple(map(int, l.split())) for l in open("intervals.txt")):
    out[-1][1:] = [max(out[-1][1], b)] if out and a <= out[-1][1] else out.append([a, b]) or []
print("\\n".join(f"{a} {b}" for a, b in out))
"""

WORDS = """\
#!/usr/bin/env bash
set -euo pipefail
tr -cs '[:alpha:]' '\\n' < text.txt | tr '[:upper:]' '[:lower:]' | sort | uniq -c \\
  | sort -k1,1nr -k2 | head -n 5 | awk '{print $2, $1}'
"""

LearnSkill = Callable[..., LearnResult]


@pytest.fixture
def learn_skill(memory: SkillMemory) -> LearnSkill:
    """`learn_skill(summary, code, **overrides)` with defaults for the rest."""

    def _learn(summary: str, code: str = MERGE, **kw: Any) -> LearnResult:
        args: dict[str, Any] = {
            "summary": summary,
            "code": code,
            "domains": kw.pop("domains", ["algo"]),
            "source_trajectory_id": kw.pop("source_trajectory_id", "t-1"),
        }
        args.update(kw)
        return memory.learn_skill(**args)

    return _learn


def test_learn_skill_writes_a_skill_with_provenance(
    memory: SkillMemory, learn_skill: LearnSkill
) -> None:
    result = learn_skill(
        "Merge overlapping intervals.",
        source_trajectory_id="traj-7",
        challenge_hash="c0ffee",
        template="algo.merge_intervals",
        tier="basic",
        confidence=0.6,
        extra={"solution_file": "solution.py"},
    )
    assert result.status == "written" and result.reason == "new skill"
    skill = memory.get(result.lesson_id or "")
    assert skill is not None
    assert (skill.kind, skill.summary, skill.code) == (
        "skill",
        "Merge overlapping intervals.",
        MERGE.strip("\n"),
    )
    assert (skill.anti_pattern, skill.correct_pattern) == ("", "")
    assert (skill.source, skill.source_trajectory_id, skill.challenge_hash) == (
        "selfplay",
        "traj-7",
        "c0ffee",
    )
    assert (skill.template, skill.tier, skill.domains) == (
        "algo.merge_intervals",
        "basic",
        ["algo"],
    )
    assert skill.confidence == pytest.approx(0.6) and not skill.verified
    assert skill.extra == {"solution_file": "solution.py"}
    assert memory.count(kind="skill") == 1 and memory.count() == 0
    assert memory.count(kind=None) == 1
    chat = learn_skill("Print the five most common words.", WORDS, domains=["bash"])
    assert memory.get(chat.lesson_id or "").source == "chat"  # type: ignore[union-attr]


def test_learn_skill_redacts_summary_and_code(memory: SkillMemory, learn_skill: LearnSkill) -> None:
    code = 'API_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"\nprint("ok")\n'
    result = learn_skill("Send a report to alice@example.com", code)
    skill = memory.get(result.lesson_id or "")
    assert skill is not None
    assert "alice@example.com" not in skill.summary
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in skill.code


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"summary": "  "}, "summary is empty"),
        ({"code": "\n\n"}, "code is empty"),
        ({"code": "x = 1\n" * 700}, "code is longer than 4000 characters"),
        ({"summary": "y" * 1001}, "summary is longer than 1000 characters"),
        ({"domains": []}, "domains must be a non-empty list"),
        ({"domains": ["cooking"]}, "unknown domains ['cooking']"),
        ({"source_trajectory_id": " "}, "source_trajectory_id is empty"),
        ({"confidence": 2.0}, "confidence must be a number within 0..1"),
        ({"source": "rumour"}, "unknown source 'rumour'"),
        ({"extra": {"x": object()}}, "extra is not JSON-serialisable"),
    ],
)
def test_invalid_skills_are_rejected_not_raised(
    memory: SkillMemory, learn_skill: LearnSkill, overrides: dict[str, Any], reason: str
) -> None:
    args: dict[str, Any] = {"summary": "Merge overlapping intervals.", "code": MERGE}
    args.update(overrides)
    result = learn_skill(args.pop("summary"), args.pop("code"), **args)
    assert result.status == "rejected" and result.lesson_id is None
    assert reason in result.reason
    assert memory.count(kind=None) == 0


def test_normalised_code_ignores_layout_only() -> None:
    assert normalise_code("  a = 1  \r\n\n  b = 2\t\n") == "a = 1\nb = 2"
    assert code_hash("x=1\n") == code_hash("\n    x=1   \n\n")
    assert code_hash("x=1") != code_hash("x=1  # note")


def test_same_code_reinforces_and_remembers_the_other_challenge(
    memory: SkillMemory, learn_skill: LearnSkill
) -> None:
    first = learn_skill("Merge overlapping intervals.", challenge_hash="h1", template="algo.a")
    again = learn_skill(
        "Combine ranges that overlap into one list.",
        "\n" + MERGE.replace("\n", "   \r\n"),
        source_trajectory_id="t-2",
        challenge_hash="h2",
        template="algo.b",
    )
    assert again.status == "reinforced" and again.lesson_id == first.lesson_id
    assert "same code" in again.reason
    skill = memory.get(first.lesson_id or "")
    assert skill is not None
    assert skill.reinforcements == 1 and skill.confidence > 0.5
    assert skill.source_trajectory_id == "t-1" and skill.challenge_hash == "h1"
    assert skill.extra["same_code_challenges"] == ["h2"]
    assert [r["trajectory_id"] for r in skill.extra["reinforced_by"]] == ["t-2"]
    assert memory.count(kind="skill") == 1


def test_near_duplicate_of_the_same_template_keeps_the_shorter_code(
    memory: SkillMemory, learn_skill: LearnSkill
) -> None:
    first = learn_skill(
        "Merge overlapping intervals.",
        challenge_hash="h1",
        template="algo.merge_intervals",
        tier="intermediate",
    )
    shorter = learn_skill(
        "Merge overlapping intervals.",
        SHORTER_MERGE,
        source_trajectory_id="t-2",
        challenge_hash="h2",
        template="algo.merge_intervals",
        tier="basic",
    )
    assert shorter.status == "reinforced" and shorter.lesson_id == first.lesson_id
    assert "template algo.merge_intervals" in shorter.reason and "replaced" in shorter.reason
    skill = memory.get(first.lesson_id or "")
    assert skill is not None
    assert skill.code == SHORTER_MERGE.strip("\n")
    assert (skill.source_trajectory_id, skill.challenge_hash, skill.tier) == ("t-2", "h2", "basic")
    assert skill.extra["code_replaced"][0]["source_trajectory_id"] == "t-1"
    # a longer solution reinforces but never replaces the shorter code
    longer = learn_skill(
        "Merge overlapping intervals.",
        MERGE + "# trailing comment\n",
        source_trajectory_id="t-3",
        template="algo.merge_intervals",
    )
    assert longer.status == "reinforced" and "replaced" not in longer.reason
    assert memory.get(first.lesson_id or "").code == SHORTER_MERGE.strip("\n")  # type: ignore[union-attr]
    assert memory.count(kind="skill") == 1


def test_verified_code_is_kept_and_other_templates_or_no_template_never_merge(
    memory: SkillMemory, learn_skill: LearnSkill
) -> None:
    first = learn_skill("Merge overlapping intervals.", template="algo.merge_intervals")
    assert memory.set_verified(first.lesson_id or "", True, {"pass_rate_with": 1.0})
    kept = learn_skill(
        "Merge overlapping intervals.",
        SHORTER_MERGE,
        source_trajectory_id="t-2",
        template="algo.merge_intervals",
    )
    assert kept.status == "reinforced" and "replaced" not in kept.reason
    assert memory.get(first.lesson_id or "").code == MERGE.strip("\n")  # type: ignore[union-attr]
    other = learn_skill("Merge overlapping intervals.", SHORTER_MERGE, template="algo.other")
    assert other.status == "written"
    untemplated = learn_skill("Merge overlapping intervals.", SHORTER_MERGE + "# v2\n")
    assert untemplated.status == "written"
    assert memory.count(kind="skill") == 3


def test_lessons_and_skills_never_mix(memory: SkillMemory, learn_skill: LearnSkill) -> None:
    text = "When merging overlapping intervals"
    skill = learn_skill(text).lesson_id
    lesson = memory.learn(
        trigger=text,
        anti_pattern="comparing only neighbouring pairs",
        correct_pattern="sort by start, then extend the last merged interval",
        domains=["algo"],
        source="reflection",
    )
    assert lesson.status == "written"  # the skill's summary is no duplicate of a lesson
    query = "merging overlapping intervals"
    assert [r.lesson.id for r in memory.retrieve(query, k=5)] == [lesson.lesson_id]
    assert [r.lesson.id for r in memory.retrieve(query, k=5, kind="skill")] == [skill]
    assert all(r.lesson.kind == "skill" for r in memory.retrieve(query, kind="skill"))
    assert [x.id for x in memory.list()] == [lesson.lesson_id]
    assert [x.id for x in memory.list(kind="skill")] == [skill]
    assert len(memory.list(kind=None)) == 2
    with pytest.raises(UserError, match="unknown kind"):
        memory.retrieve(query, kind="recipe")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="unknown kind"):
        memory.count(kind="recipe")  # type: ignore[arg-type]


def test_bm25_of_one_kind_is_not_crowded_out_by_the_other(memory: SkillMemory) -> None:
    for i in range(60):
        memory.learn(
            trigger=f"When merging intervals variant {i}",
            anti_pattern="",
            correct_pattern=f"fix {i}",
            domains=["algo"],
            source="manual",
        )
    skill = memory.learn_skill(
        summary="Merge intervals from a file",
        code=MERGE,
        domains=["algo"],
        source_trajectory_id="t-1",
    ).lesson_id
    got = memory.retrieve("merging intervals", k=3, kind="skill", min_score=0.0)
    assert [r.lesson.id for r in got] == [skill]
    assert got[0].bm25_score > 0


@pytest.mark.parametrize("python_filter_max", [0, 1000])
def test_bm25_kind_filter_in_sql_or_python_gives_the_same_lessons(
    store: Store, monkeypatch: pytest.MonkeyPatch, python_filter_max: int
) -> None:
    monkeypatch.setattr(_retrieval, "FILTER_IN_PYTHON_MAX", python_filter_max)
    memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(candidates=2, min_score=0))
    lessons = [
        memory.learn(
            trigger=f"When merging intervals, case {noun}",
            anti_pattern="",
            correct_pattern=f"handle the {noun}",
            domains=["algo"],
            source="manual",
        ).lesson_id
        for noun in ("apples", "bridges", "clouds")
    ]
    for i in range(3):  # skills that match the words better than any lesson
        memory.learn_skill(
            summary=f"Merging intervals merging intervals {i}",
            code=f"print({i})",
            domains=["algo"],
            source_trajectory_id=f"t-{i}",
        )
    got = memory.retrieve("merging intervals", k=3)
    assert {r.lesson.id for r in got} == set(lessons)
    # BM25's 2 candidates are lessons, not the better-matching skills it dropped
    assert sum(r.bm25_score > 0 for r in got) == 2


def test_exclusions_hide_the_task_at_hand_and_held_out_templates(
    memory: SkillMemory, learn_skill: LearnSkill
) -> None:
    own = learn_skill(
        "Merge overlapping intervals.", challenge_hash="h-own", template="algo.merge_intervals"
    ).lesson_id
    held = learn_skill(
        "Merge overlapping intervals given as pairs.",
        SHORTER_MERGE,
        challenge_hash="h-held",
        template="algo.held_out",
    ).lesson_id
    query = "Merge overlapping intervals"

    def ids(**kw: Any) -> list[str]:
        # about exclusion, not relevance: the floor is off
        return [r.lesson.id for r in memory.retrieve(query, k=5, kind="skill", min_score=0, **kw)]

    assert set(ids()) == {own, held}
    assert ids(exclude_challenge_hashes=("h-own",)) == [held]
    assert ids(exclude_templates=["algo.held_out"]) == [own]
    # a lone string is one hash, not a collection of characters
    assert ids(exclude_challenge_hashes="h-own", exclude_templates=("algo.held_out",)) == []
    assert len(ids(exclude_challenge_hashes=("",))) == 2
    # the same code also passed another challenge: excluding that one hides it too
    learn_skill("Some other wording.", challenge_hash="h-twin", source_trajectory_id="t-9")
    assert ids(exclude_challenge_hashes=("h-twin",)) == [held]


def test_exclusion_does_not_shrink_k(store: Store) -> None:
    # 3 candidates per retriever: without oversampling, excluded rows would eat them
    memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(candidates=3))
    for i in range(8):
        memory.learn_skill(
            summary=f"Merge overlapping intervals, variant {i}",
            code=f"print({i})",
            domains=["algo"],
            source_trajectory_id=f"t-{i}",
            challenge_hash=f"h-{i}",
            template=f"algo.t{i % 2}",
        )
    got = memory.retrieve(
        "merge overlapping intervals",
        k=3,
        kind="skill",
        exclude_templates=("algo.t0",),
        min_score=0.0,
    )
    assert len(got) == 3 and all(r.lesson.template == "algo.t1" for r in got)


def test_skill_retraction_archive_counters_and_verification(
    memory: SkillMemory, learn_skill: LearnSkill
) -> None:
    skill = learn_skill("Merge overlapping intervals.", source_trajectory_id="t-bad").lesson_id
    assert skill is not None
    assert memory.record_exposure([skill], "t-next", [0.7]) == 1
    assert memory.record_outcome("t-next", passed=True) == 1
    assert memory.mark_helpful(skill)
    assert memory.set_verified(skill, True, {"pass_rate_with": 0.9})
    current = memory.get(skill)
    assert current is not None
    assert (current.times_shown, current.times_followed_by_pass, current.times_helpful) == (1, 1, 1)
    assert current.verified and current.extra["verification"]["verified"]
    assert memory.retract_from_trajectory("t-bad", reason="user said it was wrong") == 1
    assert memory.get(skill) is None and memory.count(kind="skill") == 0
    assert memory.retrieve("Merge overlapping intervals", kind="skill") == []
    [archived] = memory.archived("t-bad")
    assert archived.kind == "skill" and archived.code == MERGE.strip("\n")
    assert archived.extra["archive"]["reason"] == "user said it was wrong"
    assert memory.archived(kind="lesson") == [] and len(memory.archived(kind="skill")) == 1
    (digest,) = memory.store.query("SELECT code_hash FROM lessons_archive")[0]
    assert digest == code_hash(MERGE)


def test_export_restore_round_trips_skills(
    tmp_path: Path, memory: SkillMemory, learn_skill: LearnSkill
) -> None:
    memory.learn(
        trigger="When merging intervals",
        anti_pattern="",
        correct_pattern="sort by start first",
        domains=["algo"],
        source="manual",
    )
    learn_skill(
        "Merge overlapping intervals.",
        challenge_hash="h1",
        template="algo.merge_intervals",
        tier="advanced",
        extra={"solution_file": "solution.py"},
    )
    learn_skill(
        "Print the five most common words.", WORDS, domains=["bash"], source_trajectory_id="t-2"
    )
    records = list(memory.export())
    assert [r["kind"] for r in records] == ["lesson", "skill", "skill"]
    assert all(r["format_version"] == 2 for r in records)
    json.dumps(records)
    with Store.open(tmp_path / "copy.db") as other:
        copy = SkillMemory(other, HashingEmbedder())
        assert copy.restore(records) == 3
        assert list(copy.export()) == records
        assert copy.count(kind="skill") == 2 and copy.count() == 1
        hit = copy.retrieve("Merge overlapping intervals", k=1, kind="skill")
        assert (
            hit[0].lesson.id == records[1]["id"]
            and hit[0].lesson.template == "algo.merge_intervals"
        )
        again = copy.learn_skill(
            summary="Merge intervals", code=MERGE, domains=["algo"], source_trajectory_id="t-5"
        )
        assert again.status == "reinforced"  # code_hash was rebuilt by restore
    old = {k: v for k, v in records[0].items() if k not in ("kind", "template", "tier")}
    with Store.open(tmp_path / "v1.db") as other:
        copy = SkillMemory(other, HashingEmbedder())
        assert copy.restore([{**old, "format_version": 1}]) == 1
        assert copy.list()[0].kind == "lesson"
        with pytest.raises(UserError, match="code is empty"):
            copy.restore([{**records[1], "id": "L-000000000001", "code_example": ""}])


def test_size_cap_counts_each_kind_apart(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(max_lessons=2))
    for noun in ("apples", "bridges"):
        memory.learn(
            trigger=f"When painting {noun}",
            anti_pattern="",
            correct_pattern="paint slowly",
            domains=["algo"],
            source="manual",
        )
    for i, noun in enumerate(("clouds", "drums", "engines")):
        memory.learn_skill(
            summary=f"Draw {noun}",
            code=f"print('{noun}')",
            domains=["algo"],
            source_trajectory_id=f"t-{i}",
        )
    assert memory.count() == 2 and memory.count(kind="skill") == 2
    assert [x.kind for x in memory.archived()] == ["skill"]
