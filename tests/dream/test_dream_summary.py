"""The dream summary says what a run kept, what it threw away and what that changes."""

from __future__ import annotations

from types import SimpleNamespace

from nightschool.cli._dream_report import budget_lines, cycle_lines, kept_summary
from nightschool.dream.budget import Ledger, VerificationBudget
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


def test_a_candidate_that_waited_counts_once_by_its_last_word() -> None:
    candidate = CandidateLesson("when merging intervals", "", "sort by start first", ["algo"], 0.6)
    other = CandidateLesson("when parsing dates", "", "use datetime.strptime", ["regex"], 0.6)
    waits = ExtractionOutcome("waiting", "verification waits: ...", None, candidate)
    still = ExtractionOutcome("waiting", "verification waits: ...", None, other)
    written = ExtractionOutcome(
        "written", "new lesson", "L-1", candidate, {"passes_with": 5, "passes_without": 0, "k": 6}
    )
    skill_waits = SkillOutcome("written", "S-1", reason="verification waits: ...", waits=True)
    skill_done = SkillOutcome("written", "S-1", verified=True, comparison={"k": 6})
    skill_left = SkillOutcome("written", "S-2", reason="verification waits: ...", waits=True)
    lines = kept_summary(
        [
            cycle(lesson=waits),
            cycle(passed=True, attempts=1, skill=skill_waits),
            cycle(lesson=still, caught_up=(written, skill_done)),
            cycle(passed=True, attempts=1, skill=skill_left),
        ]
    )
    assert lines[0].startswith("kept: lesson L-1, verified")
    assert lines[1:3] == [
        "kept: skill S-1 (written, verified)",
        "kept: skill S-2 (written, not verified)",
    ]
    assert len(lines) == 4  # what still waits is the queue's to say (`budget_lines`)
    assert "1 verified lesson(s)" in lines[-1] and "2 skill(s) (1 verified)" in lines[-1]


def test_a_run_without_waiting_says_nothing_about_waiting() -> None:
    skill = SkillOutcome("written", "S-1", verified=True, comparison={"k": 6})
    lines = kept_summary([cycle(passed=True, attempts=1, skill=skill)])
    assert not any("waiting" in line for line in lines)


def test_a_cycle_names_the_waiting_candidates_it_compared() -> None:
    candidate = CandidateLesson("when merging intervals", "", "sort by start first", ["algo"], 0.6)
    refused = ExtractionOutcome(
        "rejected", "verification: the gate did not promote the lesson", None, candidate
    )
    skill = SkillOutcome(
        "written", "S-1", verified=True, comparison={"passes_with": 5, "k": 6, "test": "mcnemar"}
    )
    waits = ExtractionOutcome("waiting", "verification has taken 30% ...", None, candidate)
    lines = cycle_lines(cycle(lesson=waits, caught_up=(skill, refused)))
    assert lines[0] == "    [dim]lesson candidate waits: verification has taken 30% ...[/]"
    assert lines[1].startswith("    skill S-1, after waiting, [green]verified[/]")
    assert lines[2].startswith("    [dim]lesson candidate, after waiting, not kept: verif")
    assert cycle_lines(cycle()) == []  # nothing learned, nothing waited: no line


def test_the_budget_lines_say_what_was_taken_over_and_what_is_kept_for_the_next_dream() -> None:
    now = [0.0]
    budget = VerificationBudget(0.25, clock=lambda: now[0])
    budget.start()
    with budget.timed():
        now[0] = 30.0
    now[0] = 200.0
    waiting = {"skill": 1, "lesson": 2}
    loop = SimpleNamespace(
        budget=budget, resumed=(3, 1), waiting=SimpleNamespace(count=waiting.get)
    )
    share, kept = budget_lines(loop)
    assert share == (
        "verification: 30 s of 200 s (15%; share 25%), 1 comparison(s); 3 waiting candidate(s) "
        "taken over from earlier dreams (1 older lesson candidate(s) dropped)"
    )
    assert kept.startswith("still waiting for verification, kept for the next dream: 1 skill(s)")
    assert "2 lesson candidate(s) (not shown until verified)" in kept

    waiting.update(skill=0, lesson=0)
    loop.resumed = (0, 0)
    assert budget_lines(loop) == [
        "verification: 30 s of 200 s (15%; share 25%), 1 comparison(s)"
    ]  # nothing taken over, nothing left
    budget.earlier = Ledger(elapsed_s=600.0, spent_s=170.0, comparisons=10)
    [line] = budget_lines(loop)
    assert line.endswith("1 comparison(s); with the last day's earlier dreams 25% of 800 s")
    assert budget_lines(SimpleNamespace(budget=None)) == []  # a loop without one (curve, benches)


def test_a_skill_an_earlier_dream_left_is_compared_not_kept_again() -> None:
    theirs = SkillOutcome("written", "S-9", verified=True, comparison={"k": 6}, earlier=True)
    ours = SkillOutcome("written", "S-1", reason="verification waits: ...", waits=True)
    lines = kept_summary([cycle(passed=True, attempts=1, skill=ours, caught_up=(theirs,))])
    assert lines[0] == "kept: skill S-1 (written, not verified)"
    assert lines[1] == "compared: 1 skill(s) earlier dreams left waiting, 1 verified"
    assert "S-9" not in " ".join(lines) and "1 skill(s) (0 verified)" in lines[-1]
