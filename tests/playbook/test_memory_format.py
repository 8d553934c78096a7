"""Prompt sections within a token budget: the playbook and the worked examples."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from nightschool.playbook import (
    PLAYBOOK_HEADER,
    PLAYBOOK_TOKEN_BUDGET,
    WORKED_EXAMPLES_HEADER,
    WORKED_EXAMPLES_TOKEN_BUDGET,
    Lesson,
    RetrievedLesson,
    approx_tokens,
    fit_to_budget,
    format_playbook,
    format_worked_examples,
)


def _item(rank: int, **kw: Any) -> RetrievedLesson:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    fields: dict[str, Any] = {
        "id": f"L-{rank:012d}",
        "trigger": f"When handling case {rank}",
        "anti_pattern": "",
        "correct_pattern": "do the right thing",
        "domains": ["algo"],
        "confidence": 0.5,
        "source": "manual",
        "created_at": now,
        "updated_at": now,
    }
    fields.update(kw)
    return RetrievedLesson(
        lesson=Lesson(**fields), score=1.0 / rank, bm25_score=0.0, vector_score=0.5, rank=rank
    )


def _skill(rank: int, code: str, **kw: Any) -> RetrievedLesson:
    return _item(
        rank,
        kind="skill",
        trigger=kw.pop("summary", f"Solve task {rank}."),
        correct_pattern="",
        code_example=code,
        **kw,
    )


def test_approx_tokens_is_chars_over_four_rounded_up() -> None:
    assert [approx_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_playbook_drops_the_lowest_ranked_lessons_that_do_not_fit() -> None:
    items = [_item(i, correct_pattern=" ".join(["word"] * 40)) for i in (1, 2, 3, 4)]
    full = format_playbook(items, token_budget=None)
    assert full.count("[L-") == 4
    one = approx_tokens(format_playbook(items[:1], token_budget=None))
    budget = 2 * one + 5  # room for two lessons and the header, not three
    text = format_playbook(items, token_budget=budget)
    assert approx_tokens(text) <= budget
    assert [line[:15] for line in text.splitlines()[1:]] == ["[L-000000000001", "[L-000000000002"]
    # a big lesson that does not fit is skipped; a smaller, lower-ranked one still fits
    big = _item(2, correct_pattern=" ".join(["word"] * 45), trigger=" ".join(["long"] * 30))
    small = _item(3, correct_pattern="ok")
    text = format_playbook([items[0], big, small], token_budget=one + 20)
    assert "[L-000000000002]" not in text and "[L-000000000003]" in text
    assert format_playbook(items, token_budget=3) == ""  # not even the header fits


def test_default_playbook_budget_holds_three_lessons_at_their_word_caps() -> None:
    long = " ".join(["wordy"] * 400)
    items = [
        _item(i, trigger=long, anti_pattern=long, correct_pattern=long, code_example=long)
        for i in (1, 2, 3)
    ]
    text = format_playbook(items)
    assert text.count("[L-") == 3
    assert approx_tokens(text) <= PLAYBOOK_TOKEN_BUDGET
    assert text.splitlines()[0] == PLAYBOOK_HEADER


def test_worked_examples_render_summary_and_fenced_code_best_first() -> None:
    py = "for line in open('x.txt'):\n    print(line.strip())"
    sh = "tr -cs '[:alpha:]' '\\n' < text.txt | sort | uniq -c"
    text = format_worked_examples(
        [
            _skill(1, py, summary="Print every line.", extra={"solution_file": "solution.py"}),
            _skill(2, sh, summary="Count the words.", extra={"solution_file": "solution.sh"}),
            _skill(3, "#!/bin/bash\necho hi", summary="Say hi."),
            _skill(4, "echo $1", summary="Echo.", template="bash.echo"),
        ]
    )
    assert text.startswith(WORKED_EXAMPLES_HEADER + "\n") and WORKED_EXAMPLES_HEADER == (
        "### WORKED EXAMPLES"
    )
    assert f"Task: Print every line.\n```python\n{py}\n```" in text
    assert f"Task: Count the words.\n```bash\n{sh}\n```" in text
    assert "Task: Say hi.\n```bash\n" in text and "Task: Echo.\n```bash\n" in text
    assert text.index("Print every line") < text.index("Count the words")
    assert format_worked_examples([]) == ""


def test_worked_examples_budget_skips_what_does_not_fit() -> None:
    small = _skill(1, "print(1)")
    huge = _skill(2, "x = 1\n" * 1000)  # 6,000 chars: larger than the default budget alone
    other = _skill(3, "print(3)")
    text = format_worked_examples([small, huge, other])
    assert approx_tokens(text) <= WORKED_EXAMPLES_TOKEN_BUDGET
    assert "print(1)" in text and "print(3)" in text and "x = 1" not in text
    assert format_worked_examples([huge]) == ""
    assert format_worked_examples([huge], token_budget=None).count("x = 1") == 1000
    tight = approx_tokens(format_worked_examples([small]))
    assert format_worked_examples([small, other], token_budget=tight).count("Task:") == 1


def test_code_with_backticks_gets_a_longer_fence() -> None:
    code = 'print("```")'
    text = format_worked_examples([_skill(1, code)])
    assert f"````python\n{code}\n````" in text


def test_fit_to_budget_names_exactly_what_the_section_shows() -> None:
    lessons = [_item(i, correct_pattern=" ".join(["word"] * 40)) for i in (1, 2, 3)]
    budget = approx_tokens(format_playbook(lessons[:2], token_budget=None))
    kept = fit_to_budget(lessons, budget)
    assert [r.rank for r in kept] == [1, 2]
    assert format_playbook(kept, token_budget=None) == format_playbook(lessons, budget)
    skills = [_skill(1, "print(1)"), _skill(2, "x = 1\n" * 1000), _skill(3, "print(3)")]
    kept = fit_to_budget(skills, 600, kind="skill")
    assert [r.rank for r in kept] == [1, 3]
    assert format_worked_examples(kept, None) == format_worked_examples(skills, 600)
    assert fit_to_budget(lessons, None) == lessons
