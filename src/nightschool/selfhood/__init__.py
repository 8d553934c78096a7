"""Selfhood: a first-person diary, a derived self-state, narrative consolidation, wake-up.

- `Diary(store).write_entry(phase, facts_since(store, started_at))` writes what a
  phase did ("I practised 4 challenges (algo ×2, sql ×2) and passed 3. ..."),
  composed deterministically from counts and names (never user text); an
  empty period writes nothing.
- `self_state(store)` derives where I stand (strongest and weakest clusters,
  mastered and saturated ones, playbook size, practice count, streak); never
  stored. `SelfState.summary()` says it in one or two sentences.
- `consolidate(store, model)` is the narrative phase: a short first-person
  story so far from the newest entries and the self-state, written by the
  model and checked (`narrative_problem`), or composed deterministically.
- `wake_up_prefix(store)` is the `### WHO I AM` section the chat agent puts in
  its system prompt on every turn ("" on a fresh home).

Everything lives in the store's append-only `diary` table (migration
`m009_diary`). Importing this package touches nothing.
"""

from nightschool.selfhood._diary import NARRATIVE_PHASE, Diary, DiaryEntry, DiaryKind
from nightschool.selfhood._facts import (
    ClusterPractice,
    PhaseFacts,
    PhaseProblem,
    TemplateStruggle,
    facts_since,
    merge_facts,
)
from nightschool.selfhood._narrative import (
    NARRATIVE_SYSTEM_PROMPT,
    WAKE_UP_HEADER,
    consolidate,
    fallback_narrative,
    narrative_problem,
    wake_up_prefix,
)
from nightschool.selfhood._state import ClusterStanding, SelfState, self_state

__all__ = [
    "NARRATIVE_PHASE",
    "NARRATIVE_SYSTEM_PROMPT",
    "WAKE_UP_HEADER",
    "ClusterPractice",
    "ClusterStanding",
    "Diary",
    "DiaryEntry",
    "DiaryKind",
    "PhaseFacts",
    "PhaseProblem",
    "SelfState",
    "TemplateStruggle",
    "consolidate",
    "facts_since",
    "fallback_narrative",
    "merge_facts",
    "narrative_problem",
    "self_state",
    "wake_up_prefix",
]
