"""Self-play with the live solver prompt: solvers that read the prompt registry.

`with_live_prompt(solver, store)` gives the solver a dream loop solves with
(the default `Solver`, or the `ChampionSolver`) the `LivePromptSolver`
behaviour: at every `solve` without an explicit `system_prompt` it looks up
the `solver` slot's live prompt (`nightschool.prompts.registry.current`, one
query), so a promotion or a rollback takes effect at the next cycle of a
running loop, and solves with it. The trajectory records which prompt it
was: `extra["prompt"] = {"slot": "solver", "prompt_id": int | None}` (None:
the built-in `SYSTEM_PROMPT`).

The returned object is an instance of a subclass of the solver's own class
(`LivePromptSolver` mixed in) holding the same attributes, not a wrapper
around it: `isinstance(loop.solver, ChampionSolver)` still holds, and
assigning `loop.solver.model` changes the model it solves with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from nightschool.challenges import Challenge
from nightschool.prompts.registry import current
from nightschool.solver.core import SYSTEM_PROMPT, Solver, SolverConfig, SolveResult

if TYPE_CHECKING:
    from nightschool.llm import ChatModel
    from nightschool.playbook import RetrievedLesson, SkillMemory
    from nightschool.sandbox import Sandbox
    from nightschool.solver.repair import BudgetRouter, RepairPolicy
    from nightschool.store import Store

__all__ = ["LivePromptSolver", "with_live_prompt"]


class LivePromptSolver(Solver):
    """A `Solver` whose default system prompt is the `solver` slot's live prompt.

    Mixed in before a solver class by `with_live_prompt`; used alone it is the
    default `Solver` with the live prompt.

    Args:
        model, sandbox, config, playbook, search, router: as `Solver`.
        prompt_store: where the registry is read, at every `solve`.
    """

    prompt_store: Store

    def __init__(
        self,
        model: ChatModel,
        sandbox: Sandbox,
        config: SolverConfig | None = None,
        *,
        prompt_store: Store,
        playbook: SkillMemory | None = None,
        search: RepairPolicy | None = None,
        router: BudgetRouter | None = None,
    ) -> None:
        super().__init__(model, sandbox, config, playbook=playbook, search=search, router=router)
        self.prompt_store = prompt_store

    def solve(
        self,
        challenge: Challenge,
        *,
        session_id: str = "",
        on_event: Callable[[str], None] | None = None,
        system_prompt: str | None = None,
        lessons: Sequence[RetrievedLesson] | None = None,
        skills: Sequence[str] = (),
        skill_ids: Sequence[str] = (),
    ) -> SolveResult:
        """Solve with the live prompt (or `system_prompt`, when given).

        Arguments and result as `Solver.solve`; `trajectory.extra["prompt"]`
        names the prompt (`prompt_id` None: the built-in one, or an explicit
        `system_prompt`, then also `"explicit": True`).

        Raises:
            ValueError: `skill_ids` is given without any `skills` section.
            StoreError: the registry cannot be read.
        """
        tag: dict[str, object] = {"slot": "solver", "prompt_id": None}
        if system_prompt is None:
            live = current(self.prompt_store, "solver")
            system_prompt = SYSTEM_PROMPT if live is None else live.text
            tag["prompt_id"] = None if live is None else live.id
        else:
            tag["explicit"] = True
        result = super().solve(
            challenge,
            session_id=session_id,
            on_event=on_event,
            system_prompt=system_prompt,
            lessons=lessons,
            skills=skills,
            skill_ids=skill_ids,
        )
        trajectory = result.trajectory.model_copy(
            update={"extra": {**result.trajectory.extra, "prompt": tag}}
        )
        return dataclasses.replace(result, trajectory=trajectory)


_MIXED: dict[type[Solver], type[LivePromptSolver]] = {}
"""Solver class -> its `LivePromptSolver` subclass (made once per class)."""


def with_live_prompt(solver: Solver, store: Store) -> LivePromptSolver:
    """A copy of `solver` (same attribute values, `solver` itself untouched) using the live prompt.

    Args:
        solver: a `Solver` or a subclass (e.g. `ChampionSolver`).
        store: where the prompt registry is read.

    Returns:
        An instance of `LivePromptSolver` mixed into `type(solver)` (a
        `LivePromptSolver` is returned as a copy of itself, reading `store`).
    """
    base = type(solver)
    if issubclass(base, LivePromptSolver):
        mixed: type[LivePromptSolver] = base
    elif base is Solver:
        mixed = LivePromptSolver
    else:
        found = _MIXED.get(base)
        if found is None:
            found = _MIXED[base] = type(f"LivePrompt{base.__name__}", (LivePromptSolver, base), {})
        mixed = found
    live = object.__new__(mixed)
    live.__dict__.update(vars(solver))
    live.prompt_store = store
    return live
