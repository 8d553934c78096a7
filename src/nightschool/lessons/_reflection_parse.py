"""Lenient parsing of a reflection reply: `DIAGNOSIS:` then `REVISED PLAN:` with steps.

Small models drift from the format (bold markers, headings, inline steps,
numbering styles, placeholders left unfilled); `parse_reflection` accepts those
drifts and refuses a reply without a diagnosis or without a step.
"""

from __future__ import annotations

import re

MAX_PLAN_STEPS = 5
"""Steps kept from a revised plan (the seed's format asks for 1–5)."""


def squash(text: str) -> str:
    """`text` with every run of whitespace collapsed to one space."""
    return " ".join(text.split())


_BOLD = re.compile(r"\*\*")
_LEAD = re.compile(r"^(?:[\s#>]+|\*(?=\S))+")
_DIAGNOSIS = re.compile(r"^diagnosis\b(?:[^:\n]{0,40}:|\s*[-–—.])?\s*(.*)$", re.IGNORECASE)
_PLAN = re.compile(
    r"^(?:(?:revised|new|improved|better|corrected|updated)[\s_-]*plan\b(?:\s*\([^)]*\))?"
    r"\s*[:\-–—.]?|plan(?:\s*\([^)]*\))?\s*[:\-–—])\s*(.*)$",
    re.IGNORECASE,
)
_STEP = re.compile(r"^(?:step\s*\d+\s*[:.)\-–—]?|\(?\d{1,2}\s*[.):]|[-*•+](?=\s))\s*(.*)$", re.I)
_INLINE_PLAN = re.compile(r"(?<=\S)[ \t]+(?=(?:\*\*)?revised[\s_-]*plan\s*(?:\*\*)?\s*:)", re.I)
_INLINE_STEP = re.compile(r"(?<=\S)[ \t]+(?=(?:step\s*)?\d{1,2}[.)]\s+\S)", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"^<[^<>]*>$")


def _clean(line: str) -> str:
    """Drop markdown bold and leading `#`/`>`/italic marks so headers can be matched."""
    return _LEAD.sub("", _BOLD.sub("", line)).strip()


def _tidy(text: str) -> str:
    """Squash whitespace, strip quotes and stray emphasis; '' for an echoed `<placeholder>`."""
    text = squash(text).strip(" \"'*_")
    return "" if _PLACEHOLDER.match(text) else text


def _step_text(cleaned: str) -> str | None:
    """The text of a list item (`1. x`, `1) x`, `Step 1: x`, `- x`, `- Step 1: x`), or None."""
    match = _STEP.match(cleaned)
    if match is None:
        return None
    nested = _STEP.match(match.group(1)) if cleaned[0] in "-*•+" else None
    return nested.group(1) if nested is not None and nested.group(1) else match.group(1)


def _split_inline_steps(line: str) -> list[str]:
    """Split `1. do a 2. do b` (or `Revised plan: 1. do a`) into one line per item."""
    parts = _INLINE_STEP.split(_clean(line))
    head, steps = ([], parts) if _step_text(parts[0]) is not None else (parts[:1], parts[1:])
    if len(steps) >= 2 or (steps and head and _PLAN.match(head[0])):
        return [*head, *steps]
    return [line]


def _find_diagnosis(lines: list[str]) -> tuple[str, int] | None:
    """The first diagnosis that is not a placeholder, and the index of its header line."""
    for index, raw in enumerate(lines):
        match = _DIAGNOSIS.match(_clean(raw))
        if match is None:
            continue
        parts = [match.group(1)] if match.group(1).strip() else []
        for following in map(_clean, lines[index + 1 :]):
            if not following:
                if parts:
                    break
                continue
            if _PLAN.match(following) or _DIAGNOSIS.match(following):
                break
            if _step_text(following) is not None:
                break
            parts.append(following)
        if diagnosis := _tidy(" ".join(parts)):
            return diagnosis, index
    return None


def _collect_steps(lines: list[str], start: int) -> list[str]:
    """Read the first numbered or bulleted list at or after line `start`.

    Deeper-indented lines right after an item (wrapped text, sub-bullets) join
    it; a blank line followed by prose, unindented prose or a header ends it.
    """
    steps: list[str] = []
    base_indent = 0
    blank_seen = False
    for raw in lines[start:]:
        cleaned = _clean(raw)
        if not cleaned:
            blank_seen = True
            continue
        text, indent = _step_text(cleaned), len(raw) - len(raw.lstrip())
        if text is not None and (not steps or indent <= base_indent):
            base_indent = indent if not steps else base_indent
            steps.append(text)
        elif steps and not blank_seen and indent > base_indent:
            steps[-1] += " " + (text if text is not None else cleaned)
        elif steps or _DIAGNOSIS.match(cleaned) or _PLAN.match(cleaned):
            break
        blank_seen = False
    return steps


def parse_reflection(text: str) -> tuple[str, list[str]] | None:
    """Parse a critique reply into (diagnosis, 1–5 stripped plan steps), or None.

    Lenient: headers in any case, with markdown marks (`**Diagnosis:**`,
    `## Revised plan`); the diagnosis on its header line or below it; steps
    `1.`, `1)`, `Step 1:`, `-`/`*` bullets, run together on one line, or wrapped;
    prose around. Without a plan header the first list after the diagnosis is
    the plan; a header with text and no list gives one step. Echoed template
    placeholders (`<first step>`) are ignored. Steps beyond 5 are dropped; None
    when no diagnosis or no step is found.
    """
    text = _INLINE_PLAN.sub("\n", text.replace("\r\n", "\n"))
    lines = [part for line in text.split("\n") for part in _split_inline_steps(line)]
    found = _find_diagnosis(lines)
    if found is None:
        return None
    diagnosis, at = found
    headers = [i for i, line in enumerate(lines) if _PLAN.match(_clean(line))]
    # Plan headers after the diagnosis first, then earlier ones, then a bare list.
    for index in [*(i for i in headers if i > at), *(i for i in headers if i < at), None]:
        steps = [_tidy(s) for s in _collect_steps(lines, at + 1 if index is None else index + 1)]
        inline = _PLAN.match(_clean(lines[index])) if index is not None else None
        if not any(steps) and inline is not None:
            steps = [_tidy(inline.group(1))]
        if steps := [step for step in steps if step]:
            return diagnosis, steps[:MAX_PLAN_STEPS]
    return None
