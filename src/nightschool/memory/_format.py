"""The `### SKILL PLAYBOOK` prompt section."""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.memory._model import RetrievedLesson

PLAYBOOK_HEADER = "### SKILL PLAYBOOK"
"""First line of the prompt section; other components look for it."""

TRIGGER_WORDS = 30
"""Word budgets per part of a lesson line; the sum stays within about 120 words."""
ANTI_PATTERN_WORDS = 30
CORRECT_PATTERN_WORDS = 45
CODE_WORDS = 15


def format_playbook(retrieved: Sequence[RetrievedLesson]) -> str:
    """Render retrieved lessons as the prompt section, in the order given.

    Each lesson becomes `[<id>] When <trigger>: avoid <anti-pattern>; instead
    <correct pattern>.` plus an optional indented `e.g. <code>` line, each
    part cut to a word budget (at most about 120 words per lesson).

    Returns:
        The section (header line first, no trailing newline), or "" for no lessons.
    """
    if not retrieved:
        return ""
    lines = [PLAYBOOK_HEADER]
    for item in retrieved:
        lesson = item.lesson
        trigger = _clip(lesson.trigger, TRIGGER_WORDS)
        if not trigger.lower().startswith(("when ", "if ", "before ", "after ", "while ")):
            trigger = "When " + trigger[:1].lower() + trigger[1:]
        line = f"[{lesson.id}] {trigger}:"
        anti = _clip(lesson.anti_pattern, ANTI_PATTERN_WORDS)
        if anti:
            line += f" avoid {_lower_first(anti)};"
        line += f" instead {_lower_first(_clip(lesson.correct_pattern, CORRECT_PATTERN_WORDS))}."
        lines.append(line)
        code = _clip(" ".join(lesson.code_example.split()), CODE_WORDS)
        if code:
            lines.append(f"    e.g. `{code.replace('`', chr(39))}`")
    return "\n".join(lines)


def _clip(text: str, words: int) -> str:
    parts = text.split()
    clipped = " ".join(parts[:words]).rstrip(" .;:,")
    return clipped + " ..." if len(parts) > words else clipped


def _lower_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text
