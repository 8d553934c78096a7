"""The prompt registry: append-only rows, the live prompt per slot, rollback."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from nightschool.prompts import registry
from nightschool.prompts.registry import PromptError, StalePromptError
from nightschool.solver.core import SYSTEM_PROMPT
from nightschool.store import Store

VERDICT: dict[str, Any] = {
    "promote": True,
    "reason": "candidate-only wins 6 of 6",
    "n": 6,
    "test": "mcnemar-exact",
    "lift": 1.0,
    "p_value": 0.0156,
    "summary": "PROMOTE (mcnemar-exact, n=6 p=0.0156)",
}


def promote(store: Store, text: str, against: int | None, slot: str = "solver") -> int:
    entry = registry.register(
        store, slot=slot, text=text, verdict=VERDICT, proven_against=against, run_id="run"
    )
    return entry.id


def test_nothing_registered_means_the_built_in_prompt(store: Store) -> None:
    assert registry.current(store, "solver") is None
    assert registry.live_prompt(store, "solver") == SYSTEM_PROMPT
    assert registry.live_prompt(store, "solver", "mine") == "mine"
    assert registry.history(store) == []
    from nightschool.agent.loop import SYSTEM_PROMPT as PLANNING
    from nightschool.lessons.reflection import REFLECTION_SYSTEM_PROMPT

    assert registry.live_prompt(store, "planning") == PLANNING
    assert registry.live_prompt(store, "reflection") == REFLECTION_SYSTEM_PROMPT


def test_register_makes_a_prompt_live_in_its_slot_only(store: Store) -> None:
    first = promote(store, "Prompt one.", None)
    assert registry.live_prompt(store, "solver") == "Prompt one."
    assert registry.live_prompt(store, "reflection") != "Prompt one."
    entry = registry.get(store, first)
    assert entry.kind == "promotion" and entry.parent is None and entry.previous is None
    assert entry.verdict == VERDICT and entry.run_id == "run" and entry.prompt_id == first
    second = promote(store, "Prompt two.", first)
    assert registry.get(store, second).parent == first
    assert registry.current(store, "solver").id == second  # type: ignore[union-attr]
    other = promote(store, "Reflect well.", None, slot="reflection")
    assert registry.live_prompt(store, "reflection") == "Reflect well."
    assert [e.id for e in registry.history(store, "solver")] == [first, second]
    assert [e.id for e in registry.history(store)] == [first, second, other]
    assert [e.id for e in registry.history(store, limit=1)] == [other]


def test_register_refuses_a_stale_or_unproven_or_bad_prompt(store: Store) -> None:
    first = promote(store, "Prompt one.", None)
    with pytest.raises(StalePromptError) as caught:
        promote(store, "Proven against the built-in one.", None)
    assert caught.value.expected is None and caught.value.actual == first
    with pytest.raises(ValueError, match="promotes"):
        registry.register(
            store, slot="solver", text="x", verdict={"promote": False}, proven_against=first
        )
    with pytest.raises(ValueError, match="non-blank"):
        registry.register(store, slot="solver", text="  ", verdict=VERDICT, proven_against=first)
    too_long = "x" * (registry.MAX_PROMPT_CHARS + 1)
    with pytest.raises(ValueError, match="non-blank"):
        registry.register(
            store, slot="solver", text=too_long, verdict=VERDICT, proven_against=first
        )
    with pytest.raises(PromptError, match="unknown prompt slot"):
        registry.register(store, slot="nope", text="x", verdict=VERDICT, proven_against=None)
    assert [e.id for e in registry.history(store)] == [first]


def test_rows_are_append_only(store: Store) -> None:
    first = promote(store, "Prompt one.", None)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"), store.transaction() as conn:
        conn.execute("UPDATE prompts SET text = 'edited' WHERE id = ?", (first,))
    with pytest.raises(sqlite3.DatabaseError, match="append-only"), store.transaction() as conn:
        conn.execute("DELETE FROM prompts WHERE id = ?", (first,))
    assert registry.live_prompt(store, "solver") == "Prompt one."


def test_rollback_walks_back_then_to_the_built_in_prompt(store: Store) -> None:
    first = promote(store, "Prompt one.", None)
    second = promote(store, "Prompt two.", first)
    back = registry.rollback(store, "solver", note="worse in practice")
    assert back.kind == "rollback" and back.restores == first and back.previous == second
    assert back.text == "Prompt one." and back.note == "worse in practice"
    assert registry.current(store, "solver").id == first  # type: ignore[union-attr]
    assert registry.live_prompt(store, "solver") == "Prompt one."
    base = registry.rollback(store, "solver")
    assert base.kind == "baseline" and base.prompt_id is None and base.previous == first
    assert registry.live_prompt(store, "solver") == SYSTEM_PROMPT
    with pytest.raises(PromptError, match="nothing to roll back"):
        registry.rollback(store, "solver")
    again = registry.rollback(store, "solver", second)  # a target re-activates any promotion
    assert again.restores == second and registry.live_prompt(store, "solver") == "Prompt two."
    with pytest.raises(PromptError, match="already live"):
        registry.rollback(store, "solver", second)
    # a promotion now counts against the restored prompt
    third = promote(store, "Prompt three.", second)
    assert registry.get(store, third).previous == second
    assert len(registry.history(store, "solver")) == 6


def test_rollback_target_checks_the_slot_and_the_id(store: Store) -> None:
    solver_id = promote(store, "Prompt one.", None)
    promote(store, "Reflect well.", None, slot="reflection")
    with pytest.raises(PromptError, match="belongs to slot solver"):
        registry.rollback(store, "reflection", solver_id)
    with pytest.raises(PromptError, match="no prompt entry 99"):
        registry.rollback(store, "solver", 99)
    with pytest.raises(PromptError, match="nothing to roll back"):
        registry.rollback(store, "planning")
    assert registry.rollback_target(store, "reflection") is None
