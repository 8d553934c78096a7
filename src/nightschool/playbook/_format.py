"""The prompt sections: `### SKILL PLAYBOOK` (lessons) and `### WORKED EXAMPLES` (skills).

Both are held to a token budget (PRIOR-ART.md: ACE playbooks passed 100K
tokens before 300 examples when nothing bounded them). Tokens are estimated,
not counted: `approx_tokens(text) = ceil(len(text) / 4)`, the usual rule of
thumb of about four characters per token for English text with BPE
tokenizers; dense code can run closer to three, so keep budgets with slack.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nightschool.playbook._model import Kind, Lesson, RetrievedLesson

PLAYBOOK_HEADER = "### SKILL PLAYBOOK"
"""First line of the lessons section; other components look for it."""

WORKED_EXAMPLES_HEADER = "### WORKED EXAMPLES"
"""First line of the skills section; other components look for it."""

TRIGGER_WORDS = 30
"""Word budgets per part of a lesson line; the sum stays within about 120 words."""
ANTI_PATTERN_WORDS = 30
CORRECT_PATTERN_WORDS = 45
CODE_WORDS = 15

PLAYBOOK_TOKEN_BUDGET = 600
"""Default token budget of `### SKILL PLAYBOOK`: three lessons at their word caps
(about 120 words, at most about 180 estimated tokens each) plus the header fit."""

WORKED_EXAMPLES_TOKEN_BUDGET = 600
"""Default token budget of `### WORKED EXAMPLES`: one or two starter-sized solutions
(the template bank's reference solutions are 137-1,412 characters, 35-353 tokens)."""


def approx_tokens(text: str) -> int:
    """Estimated tokens of `text`: ceil(characters / 4) (see the module docstring)."""
    return math.ceil(len(text) / 4)


def format_playbook(
    retrieved: Sequence[RetrievedLesson], token_budget: int | None = PLAYBOOK_TOKEN_BUDGET
) -> str:
    """Render retrieved lessons as the prompt section, in the order given (best first).

    Each lesson becomes `[<id>] When <trigger>: avoid <anti-pattern>; instead
    <correct pattern>.` plus an optional indented `e.g. <code>` line, each
    part cut to a word budget (at most about 120 words per lesson). Lessons
    are taken in order while the whole section (header and newlines
    included) stays within `token_budget` estimated tokens; a lesson that does
    not fit is dropped and lower-ranked ones may still fill the room left.

    Args:
        retrieved: lessons, best first.
        token_budget: most estimated tokens (`approx_tokens`) of the section;
            None: no limit.

    Returns:
        The section (header line first, no trailing newline), or "" when no
        lesson is given or none fits.
    """
    blocks = [_lesson_block(item.lesson) for item in retrieved]
    return _render(PLAYBOOK_HEADER, blocks, _fit(PLAYBOOK_HEADER, blocks, token_budget))


def format_worked_examples(
    retrieved_skills: Sequence[RetrievedLesson],
    token_budget: int | None = WORKED_EXAMPLES_TOKEN_BUDGET,
) -> str:
    """Render retrieved skills as the `### WORKED EXAMPLES` prompt section, best first.

    Each skill becomes its summary line (`Task: <summary>`) and its code in a
    fenced block: `bash` for shell skills (`extra["solution_file"]` ending in
    `.sh`, a `bash.` template, or a shell shebang), else `python`. The fence
    is lengthened when the code itself contains three backticks. Skills are
    taken in order while the section stays within `token_budget` estimated
    tokens; a skill too large for the room left (or for the whole budget on
    its own) is skipped, never cut.

    Args:
        retrieved_skills: skills (`kind == "skill"`), best first.
        token_budget: most estimated tokens (`approx_tokens`) of the section;
            None: no limit.

    Returns:
        The section (header first, no trailing newline), or "" when no skill fits.
    """
    blocks = [_skill_block(item.lesson) for item in retrieved_skills]
    kept = _fit(WORKED_EXAMPLES_HEADER, blocks, token_budget)
    return _render(WORKED_EXAMPLES_HEADER, blocks, kept)


def fit_to_budget(
    retrieved: Sequence[RetrievedLesson], token_budget: int | None, *, kind: Kind = "lesson"
) -> list[RetrievedLesson]:
    """The entries that the section of `kind` shows within `token_budget`, in order.

    `format_playbook(fit_to_budget(r, b), None)` equals `format_playbook(r, b)`
    (likewise for skills and `format_worked_examples`): use it to record
    exposures only for what the prompt actually shows.

    Args:
        retrieved: lessons (`kind="lesson"`) or skills (`kind="skill"`), best first.
        token_budget: as for the formatter; None keeps everything.
        kind: which section's rendering decides the size.
    """
    if kind == "skill":
        header, blocks = WORKED_EXAMPLES_HEADER, [_skill_block(r.lesson) for r in retrieved]
    else:
        header, blocks = PLAYBOOK_HEADER, [_lesson_block(r.lesson) for r in retrieved]
    return [retrieved[i] for i in _fit(header, blocks, token_budget)]


def code_language(skill: Lesson) -> str:
    """`bash` for a shell skill, else `python` (the fence language of its code)."""
    solution_file = str(skill.extra.get("solution_file", ""))
    first = skill.code_example.lstrip().split("\n", 1)[0]
    shebang = first.startswith("#!") and first.rstrip().endswith(("sh", "bash"))
    if solution_file.endswith(".sh") or skill.template.startswith("bash.") or shebang:
        return "bash"
    return "python"


def _fit(header: str, blocks: Sequence[str], token_budget: int | None) -> list[int]:
    """Indices of the blocks kept, greedily in order, within `token_budget` (chars / 4)."""
    kept: list[int] = []
    size = len(header)
    limit = None if token_budget is None else 4 * max(0, token_budget)
    for index, block in enumerate(blocks):
        if limit is not None and size + 1 + len(block) > limit:
            continue
        kept.append(index)
        size += 1 + len(block)
    return kept


def _render(header: str, blocks: Sequence[str], kept: Sequence[int]) -> str:
    return "\n".join([header, *(blocks[i] for i in kept)]) if kept else ""


def _lesson_block(lesson: Lesson) -> str:
    trigger = _clip(lesson.trigger, TRIGGER_WORDS)
    if not trigger.lower().startswith(("when ", "if ", "before ", "after ", "while ")):
        trigger = "When " + trigger[:1].lower() + trigger[1:]
    line = f"[{lesson.id}] {trigger}:"
    anti = _clip(lesson.anti_pattern, ANTI_PATTERN_WORDS)
    if anti:
        line += f" avoid {_lower_first(anti)};"
    line += f" instead {_lower_first(_clip(lesson.correct_pattern, CORRECT_PATTERN_WORDS))}."
    code = _clip(" ".join(lesson.code_example.split()), CODE_WORDS)
    if code:
        line += f"\n    e.g. `{code.replace('`', chr(39))}`"
    return line


def _skill_block(skill: Lesson) -> str:
    code = skill.code_example.strip("\n")
    fence = "```"
    while fence in code:
        fence += "`"
    summary = " ".join(skill.trigger.split())
    return f"Task: {summary}\n{fence}{code_language(skill)}\n{code}\n{fence}"


def _clip(text: str, words: int) -> str:
    parts = text.split()
    clipped = " ".join(parts[:words]).rstrip(" .;:,")
    return clipped + " ..." if len(parts) > words else clipped


def _lower_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text
