"""The prompt registry: which prompt each slot uses live, and how it got there.

A **slot** is one prompt nightschool sends to its model: `solver` (the
self-play solver's system prompt, `nightschool.solver.core.SYSTEM_PROMPT`),
`reflection` (the reflector's system prompt,
`nightschool.lessons.reflection.REFLECTION_SYSTEM_PROMPT`) and `planning`
(the chat agent's system prompt, `nightschool.agent.loop.SYSTEM_PROMPT`).
Nothing registered: the slot uses that built-in text.

Prompts live in the store's append-only table `prompts` (migration
`m011_prompts`), the design of the strategy-champion registry
(`nightschool.strategies.champions`): one row per change of a slot's live
prompt, never updated or deleted, so the history is complete.

Row kinds:

* `promotion`: a prompt the promotion gate promoted, with the gate's verdict,
  the optimisation run it came from and `parent`, the prompt it was measured
  against (None: the built-in one). Its row id is the **prompt id**.
* `rollback`: re-activates an earlier promotion of the same slot
  (`restores` = its prompt id; its text is copied onto the row).
* `baseline`: back to the built-in prompt.

A slot's live prompt is its latest row's: a promotion's own, a rollback's
`restores`, the built-in one after `baseline`. `previous` on every row is the
prompt id live in that slot just before it was written; `rollback()` with no
target follows it from the live prompt's promotion row, so repeated rollbacks
walk back through the promotions, and past the first one to `baseline`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from nightschool.errors import NightschoolError, UserError
from nightschool.lessons.reflection import REFLECTION_SYSTEM_PROMPT
from nightschool.solver.core import SYSTEM_PROMPT
from nightschool.store.registry import AppendOnlyRegistry, Kind, live_id

if TYPE_CHECKING:
    from nightschool.store import Store

__all__ = [
    "MAX_PROMPT_CHARS",
    "SLOTS",
    "PromptEntry",
    "PromptError",
    "Slot",
    "StalePromptError",
    "check_slot",
    "current",
    "default_prompt",
    "get",
    "history",
    "live_prompt",
    "register",
    "rollback",
    "rollback_target",
    "said",
]

Slot = Literal["solver", "reflection", "planning"]
SLOTS: tuple[Slot, ...] = ("solver", "reflection", "planning")
"""Every prompt slot, in the order `nightschool prompts list` shows them."""


MAX_PROMPT_CHARS = 6000
"""The longest prompt the registry accepts, characters (a prompt is sent with
every request: a runaway reflection must not become a 20 kB system prompt)."""


class PromptError(UserError):
    """The registry cannot do what was asked (unknown id or slot, nothing to roll back); exit 2."""


class StalePromptError(NightschoolError):
    """A prompt was proven against a prompt that is no longer live in its slot (exit 1).

    Attributes:
        expected: the prompt id the run compared against (None: the built-in prompt).
        actual: the prompt id live now (None: the built-in prompt).
    """

    def __init__(self, message: str, *, expected: int | None, actual: int | None) -> None:
        super().__init__(
            message,
            hint="run `nightschool prompts optimise` again: it starts from the live prompt",
        )
        self.expected = expected
        self.actual = actual


def check_slot(slot: str) -> Slot:
    """`slot` as a `Slot`.

    Raises:
        PromptError: not one of `SLOTS`.
    """
    if slot not in SLOTS:
        raise PromptError(f"unknown prompt slot {slot!r}; use one of {', '.join(SLOTS)}")
    return slot


def default_prompt(slot: str) -> str:
    """The built-in text of `slot` (what the slot uses when nothing is registered).

    Raises:
        PromptError: an unknown slot.
    """
    name = check_slot(slot)
    if name == "solver":
        return SYSTEM_PROMPT
    if name == "reflection":
        return REFLECTION_SYSTEM_PROMPT
    # function-local: start-up time (the agent package, ~2 s; only the planning slot needs it)
    from nightschool.agent.loop import SYSTEM_PROMPT as PLANNING_PROMPT

    return PLANNING_PROMPT


@dataclass(frozen=True)
class PromptEntry:
    """One row of the registry.

    Attributes:
        id: the row id (1, 2, ...); for a `promotion` it is the prompt id.
        timestamp: when the row was written (UTC).
        slot: `solver`, `reflection` or `planning`.
        kind: `promotion`, `rollback` or `baseline`.
        text: the prompt (a rollback's: the restored prompt's); "" for `baseline`.
        verdict: the promotion gate's verdict (`promote`, `reason`, `n`, `test`,
            `lift`, `ci_low`, `ci_high`, `p_value`, `cost_savings`, ...,
            `summary`); None unless a promotion.
        run_id: the optimisation run (its directory, or an idle run's id), or None.
        parent: for a promotion, the prompt id it was optimised from and measured
            against (None: the built-in prompt); else None.
        restores: for a rollback, the prompt id it re-activates; else None.
        previous: the prompt id live in the slot just before this row (None: built-in).
        note: why (free text).
        record: how it was measured: `model`, `reflection_model`, `tier`,
            `budget` (GEPA metric calls), `metric_calls`, `train`, `holdout`,
            `seed`, `heldout_seed`, `incumbent_pass`, `candidate_pass`,
            per-set pass counts, ...
    """

    id: int
    timestamp: datetime
    slot: Slot
    kind: Kind
    text: str = ""
    verdict: dict[str, Any] | None = None
    run_id: str | None = None
    parent: int | None = None
    restores: int | None = None
    previous: int | None = None
    note: str = ""
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_id(self) -> int | None:
        """The prompt this row makes live: own id, `restores`, or None (built-in)."""
        return live_id(self)


def _missing(entry_id: int) -> PromptError:
    return PromptError(f"no prompt entry {entry_id}", hint="see `nightschool prompts list`")


_REGISTRY: AppendOnlyRegistry[PromptEntry] = AppendOnlyRegistry(
    table="prompts",
    columns=(
        "slot",
        "kind",
        "text",
        "verdict",
        "run_id",
        "parent",
        "restores",
        "previous",
        "note",
        "record",
    ),
    entry=PromptEntry,
    missing=_missing,
    partition="slot",
)


def get(store: Store, entry_id: int) -> PromptEntry:
    """The registry row `entry_id`.

    Raises:
        PromptError: there is no such row.
    """
    return _REGISTRY.get(store, entry_id)


def history(
    store: Store, slot: str | None = None, *, limit: int | None = None
) -> list[PromptEntry]:
    """Every row (of `slot`, or of all slots), oldest first; the last `limit` when given.

    Raises:
        PromptError: an unknown slot.
    """
    return _REGISTRY.history(store, None if slot is None else check_slot(slot), limit=limit)


def current(store: Store, slot: str) -> PromptEntry | None:
    """The live prompt's `promotion` row in `slot`, or None (the built-in prompt is live).

    Raises:
        PromptError: an unknown slot.
    """
    return _REGISTRY.current(store, check_slot(slot))


def live_prompt(store: Store, slot: str, default: str | None = None) -> str:
    """The text `slot` uses now: the registered live prompt, else `default`.

    Args:
        store: the open database.
        slot: `solver`, `reflection` or `planning`.
        default: the text when nothing is registered (None: `default_prompt(slot)`).

    Raises:
        PromptError: an unknown slot.
    """
    entry = current(store, slot)
    if entry is not None:
        return entry.text
    return default_prompt(slot) if default is None else default


def said(prompt_id: int | None) -> str:
    """`prompt 3`, or `the built-in prompt` for None."""
    return f"prompt {prompt_id}" if prompt_id else "the built-in prompt"


def register(
    store: Store,
    *,
    slot: str,
    text: str,
    verdict: Mapping[str, Any],
    proven_against: int | None,
    run_id: str | None = None,
    record: Mapping[str, Any] | None = None,
    note: str = "",
) -> PromptEntry:
    """Append a `promotion` row: `text` becomes the slot's live prompt.

    Args:
        store: the open database.
        slot: `solver`, `reflection` or `planning`.
        text: the prompt; non-blank, at most `MAX_PROMPT_CHARS` characters.
        verdict: the promotion gate's verdict as JSON-ready data; `promote` must be True.
        proven_against: the prompt id the gate compared it with (None: the
            built-in prompt); recorded as `parent`. The row is written only if
            that is still the slot's live prompt, checked in the same
            transaction: a prompt never replaces one it did not beat.
        run_id: the optimisation run that promoted it.
        record: how it was measured (see `PromptEntry.record`).
        note: free text.

    Returns:
        The new row (its id is the new prompt id).

    Raises:
        ValueError: the verdict does not promote, or the text is blank or too
            long (a caller bug: the optimiser checks both).
        PromptError: an unknown slot.
        StalePromptError: `proven_against` is no longer the slot's live prompt.
    """
    name = check_slot(slot)
    if verdict.get("promote") is not True:
        raise ValueError("only a verdict that promotes registers a prompt")
    if not text.strip() or len(text) > MAX_PROMPT_CHARS:
        raise ValueError(f"a prompt must be non-blank and at most {MAX_PROMPT_CHARS} characters")

    def stale(expected: int | None, actual: int | None) -> StalePromptError:
        return StalePromptError(
            f"the {name} prompt was proven against {said(expected)}, but "
            f"{said(actual)} is live now: not registered",
            expected=expected,
            actual=actual,
        )

    return _REGISTRY.promote(
        store,
        name,
        proven_against=proven_against,
        stale=stale,
        text=text,
        verdict=dict(verdict),
        run_id=run_id,
        parent=proven_against,
        note=note,
        record=dict(record or {}),
    )


def rollback_target(store: Store, slot: str, target: int | None = None) -> int | None:
    """The prompt id `rollback(store, slot, target)` would make live (None: built-in).

    Raises:
        PromptError: as `rollback`.
    """
    name = check_slot(slot)
    now = current(store, name)
    if target is None:
        if now is None:
            raise PromptError(
                f"the built-in {name} prompt is live: nothing to roll back",
                hint="see `nightschool prompts list`",
            )
        return now.previous
    entry = get(store, target)
    if entry.slot != name:
        raise PromptError(f"prompt entry {target} belongs to slot {entry.slot}, not {name}")
    if entry.prompt_id == (None if now is None else now.id):
        raise PromptError(f"{said(entry.prompt_id)} is already live: nothing to roll back")
    return entry.prompt_id


def rollback(store: Store, slot: str, target: int | None = None, *, note: str = "") -> PromptEntry:
    """Re-activate an earlier prompt of `slot` by appending a row (history is never rewritten).

    Args:
        store: the open database.
        slot: the slot to roll back.
        target: a registry row id of that slot: a promotion (that prompt), a
            rollback (the prompt it restored) or a baseline row (the built-in
            prompt). None: the prompt that was live when the current one was
            promoted, or the built-in one (a `baseline` row) when there was none.
        note: why (free text).

    Returns:
        The appended `rollback` (or `baseline`) row.

    Raises:
        PromptError: unknown slot; `target` does not exist, belongs to another
            slot or is already live; or (with no target) the built-in prompt is live.
    """
    name = check_slot(slot)
    with store.transaction():
        prompt_id = rollback_target(store, name, target)
        if prompt_id is None:
            return _REGISTRY.restore(store, name, None, note=note)
        restored = get(store, prompt_id)
        return _REGISTRY.restore(store, name, prompt_id, text=restored.text, note=note)
