"""Narrative consolidation (the `narrative` phase) and the chat turn's wake-up prefix."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from nightschool.llm import ChatModel, Message
from nightschool.selfhood._compose import compose_entry
from nightschool.selfhood._diary import NARRATIVE_PHASE, Diary, DiaryEntry, append_row
from nightschool.selfhood._facts import PhaseFacts, merge_facts
from nightschool.selfhood._state import SelfState, self_state
from nightschool.store import Store

NARRATIVE_WORDS = 120
"""Words the model is asked to stay within."""

MAX_NARRATIVE_WORDS = 160
"""A model narrative longer than this is refused (the fallback is written)."""

MIN_NARRATIVE_WORDS = 12
"""A model narrative shorter than this is refused."""

NARRATIVE_MAX_TOKENS = 256
"""Completion cap of the consolidation call, tokens (~190 English words)."""

NARRATIVE_ENTRIES = 12
"""Newest diary entries shown to the model (and folded into the fallback)."""

WAKE_UP_HEADER = "### WHO I AM"
"""First line of the wake-up section of the chat system prompt."""

NARRATIVE_SYSTEM_PROMPT = (
    "You keep the diary of a coding assistant that practises on programming "
    "challenges while its user is away. Write in its voice, in the first person "
    f"(I, my). Write one short paragraph of at most {NARRATIVE_WORDS} words that "
    "tells its story so far: what it practised, what it learned, what still beats "
    "it. Use only the facts given. Do not invent numbers, names or events. Plain "
    "prose: no lists, no headings, no code."
)
"""System prompt of the consolidation call."""

_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|me|my|myself)\b")
_NUMBER = re.compile(r"\d+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LABEL = re.compile(r"^\s*[^\n]{0,60}:\s*\n")


def narrative_problem(text: str, prompt: str, finish_reason: str = "stop") -> str | None:
    """Why a model-written narrative is unusable, or None when it can be stored.

    Refused: cut off at the token cap (`finish_reason == "length"`), fewer than
    `MIN_NARRATIVE_WORDS` or more than `MAX_NARRATIVE_WORDS` words, no
    first-person word, markup (a code fence or a `#` heading line, which could
    pose as a prompt section once the narrative reaches the wake-up prefix), or
    a number that appears nowhere in `prompt` (an invented fact).
    """
    if finish_reason == "length":
        return "cut off at the token cap"
    words = len(text.split())
    if words < MIN_NARRATIVE_WORDS:
        return f"too short ({words} words)"
    if words > MAX_NARRATIVE_WORDS:
        return f"too long ({words} words)"
    if not _FIRST_PERSON.search(text):
        return "not in the first person"
    if "```" in text or any(line.lstrip().startswith("#") for line in text.splitlines()):
        return "contains markup"
    given = {int(n) for n in _NUMBER.findall(prompt)}
    invented = sorted({int(n) for n in _NUMBER.findall(text)} - given)
    if invented:
        return f"mentions numbers not in the facts ({', '.join(map(str, invented[:5]))})"
    return None


def _clean(text: str) -> str:
    text = _LABEL.sub("", text.strip(), count=1).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def _entry_facts(entries: Sequence[DiaryEntry]) -> PhaseFacts:
    periods = []
    for entry in entries:
        facts = entry.record.get("facts")
        if isinstance(facts, dict):
            try:
                periods.append(PhaseFacts.from_record(facts))
            except ValueError:
                continue
    return merge_facts(periods)


def fallback_narrative(
    entries: Sequence[DiaryEntry], state: SelfState, *, max_words: int = NARRATIVE_WORDS
) -> str:
    """A deterministic first-person narrative: the entries' facts summed, then the self-state.

    Args:
        entries: diary entries, oldest first (their `record["facts"]` is summed).
        state: the current self-state (its `summary()` closes the narrative).
        max_words: sentences of the summed facts are dropped from the end until
            the whole fits (the self-state summary is always kept).
    """
    closing = state.summary()
    composed = compose_entry(_entry_facts(entries)) if entries else ""
    sentences = [s for s in _SENTENCE_END.split(composed) if s]
    if sentences:
        day = entries[0].timestamp.strftime("%Y-%m-%d")
        first = sentences[0]
        if not first.startswith(("I ", "I'")):
            first = first[0].lower() + first[1:]
        sentences[0] = f"Since {day}, {first}"
    while sentences and len(" ".join([*sentences, closing]).split()) > max_words:
        sentences.pop()
    return " ".join([*sentences, closing])


def _prompt(previous: DiaryEntry | None, state: SelfState, entries: Sequence[DiaryEntry]) -> str:
    story = previous.text if previous is not None else "(none yet)"
    lines = [
        f"My story so far: {story}",
        "",
        f"How I stand now: {state.summary()}",
        "",
        "My diary since then, oldest first:",
    ]
    lines += [f"- {e.timestamp:%Y-%m-%d %H:%M} after {e.phase}: {e.text}" for e in entries]
    if not entries:
        lines.append("- (no new entries)")
    lines += ["", "Write the new paragraph of my story now."]
    return "\n".join(lines)


def consolidate(
    store: Store,
    model: ChatModel | None,
    *,
    since: datetime | float | None = None,
) -> DiaryEntry | None:
    """Run the narrative consolidation phase: write a short first-person story so far.

    Gathers the newest `NARRATIVE_ENTRIES` diary entries (after the latest
    narrative, or written at or after `since`), the previous narrative and the
    self-state, and asks `model` for one paragraph of at most `NARRATIVE_WORDS`
    words sticking to those facts (temperature 0.2, seed 0,
    `NARRATIVE_MAX_TOKENS`). When `model` is None or the reply is unusable
    (`narrative_problem`), a deterministic narrative (`fallback_narrative`) is
    written instead. The text is redacted and stored as kind `narrative`;
    `record["author"]` is `model` or `fallback`, `record["problem"]` says why
    the model's reply was refused.

    Args:
        store: the open database.
        model: the chat model, or None for the deterministic narrative.
        since: consider entries written at or after this moment (datetime,
            naive means UTC, or epoch seconds) instead of those after the
            latest narrative.

    Returns:
        The stored narrative, or None (nothing written) when there is no new
        entry and either a narrative already exists or the self-state is empty.

    Raises:
        InfrastructureError: the model call failed (not swallowed: the caller
            records the phase as failed).
    """
    diary = Diary(store)
    previous = diary.latest_narrative()
    if since is None:
        after = previous.id if previous is not None else 0
        entries = diary.entries_after(after, limit=NARRATIVE_ENTRIES)
    else:
        entries = list(reversed(diary.entries(NARRATIVE_ENTRIES, kind="entry", since=since)))
    state = self_state(store)
    if not entries and (previous is not None or state.empty):
        return None
    record: dict[str, Any] = {
        "author": "fallback",
        "model": None,
        "problem": "no model",
        "entry_ids": [e.id for e in entries],
        "state": state.to_record(),
    }
    text = ""
    if model is not None:
        prompt = _prompt(previous, state, entries)
        messages = [
            Message(role="system", content=NARRATIVE_SYSTEM_PROMPT),
            Message(role="user", content=prompt),
        ]
        reply = model.complete(messages, temperature=0.2, max_tokens=NARRATIVE_MAX_TOKENS, seed=0)
        candidate = _clean(reply.text)
        problem = narrative_problem(
            candidate, f"{NARRATIVE_SYSTEM_PROMPT}\n{prompt}", reply.finish_reason
        )
        candidate = " ".join(candidate.split())
        record.update(model=reply.model or model.name, problem=problem)
        if problem is None:
            text = candidate
            record["author"] = "model"
    if not text:
        text = fallback_narrative(entries, state)
    return append_row(store, "narrative", NARRATIVE_PHASE, text, record)


def _fit(text: str, budget: int) -> str:
    """Whole leading sentences of `text` within `budget` chars; else a cut with an ellipsis."""
    if len(text) <= budget:
        return text
    kept = ""
    for part in _SENTENCE_END.split(text):
        joined = f"{kept} {part}".strip()
        if len(joined) > budget:
            break
        kept = joined
    if kept:
        return kept
    return text[: max(0, budget - 1)].rstrip() + "…" if budget > 0 else ""


def wake_up_prefix(store: Store, *, max_chars: int = 400) -> str:
    """The `### WHO I AM` section for the chat agent's system prompt, or "".

    `WAKE_UP_HEADER`, then the first sentence(s) of the latest narrative, then
    `SelfState.summary()`, each on one line (whitespace collapsed, so nothing in
    them can start a prompt section), within `max_chars` in all: whole
    sentences where they fit, the summary before the narrative when space is
    short. "" on a fresh home (no narrative and an empty self-state) or when
    `max_chars` cannot hold the header and a few words.

    Cheap: one indexed diary lookup and `self_state`'s five small queries; no
    model call. Stable within a day (no relative times), so a server's prompt
    cache keeps working between turns.
    """
    budget = max_chars - len(WAKE_UP_HEADER) - 1
    if budget < 40:
        return ""
    narrative = Diary(store).latest_narrative()
    state = self_state(store)
    if narrative is None and state.empty:
        return ""
    summary = _fit(" ".join(state.summary().split()), budget)
    lines = [WAKE_UP_HEADER]
    if narrative is not None:
        room = budget - len(summary) - 1
        opening = _fit(" ".join(narrative.text.split()), min(room, budget // 2))
        if opening and not opening.endswith("…"):
            lines.append(opening)
    lines.append(summary)
    return "\n".join(lines)
