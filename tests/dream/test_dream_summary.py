"""The dream summary says what a run kept, what it threw away and what that changes."""

from __future__ import annotations

from nightschool.cli._dream import kept_summary
from nightschool.dream.frontier import SeedPick
from nightschool.dream.loop import CycleResult, SkillOutcome
from nightschool.lessons.extraction import CandidateLesson, ExtractionOutcome

PICK = SeedPick("algo", "starter", "cold_start", "never practised yet")


def cycle(**kw: object) -> CycleResult:
    base: dict[str, object] = dict(
        cluster="algo", tier="starter", template="algo.t", seed=1, pick=PICK,
        passed=False, attempts=3, trajectory_id="T", duration_s=1.0,
    )  # fmt: skip
    base.update(kw)
    return CycleResult(**base)  # type: ignore[arg-type]


def test_nothing_kept_says_nothing_changed() -> None:
    rejected = ExtractionOutcome("rejected", "generalization guard: trigger copies the challenge")
    lines = kept_summary([cycle(lesson=rejected), cycle(lesson=rejected)])
    assert lines[-1].startswith("what it changed: nothing")
    assert "not kept: 2 lesson: generalization guard" in lines[0]


def test_kept_items_are_listed_with_their_evidence() -> None:
    candidate = CandidateLesson("when merging intervals", "", "sort by start first", ["algo"], 0.6)
    comparison = {"passes_with": 4, "passes_without": 1, "k": 6}
    lesson = ExtractionOutcome("written", "new lesson", "L-1", candidate, comparison)
    skill = SkillOutcome("written", "S-1", verified=False, reason="new skill")
    lines = kept_summary([cycle(lesson=lesson), cycle(passed=True, attempts=1, skill=skill)])
    assert lines[0] == (
        "kept: lesson L-1, verified (4/6 with it vs 1/6 without): when merging intervals"
    )
    assert lines[1] == "kept: skill S-1 (written, not verified)"
    assert "1 verified lesson(s)" in lines[-1] and "1 skill(s) (0 verified)" in lines[-1]
    assert "eval stream" in lines[-1]
