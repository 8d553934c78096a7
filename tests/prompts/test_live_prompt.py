"""The live solver prompt reaches the dream loop's cycles (through `open_practice`)."""

from __future__ import annotations

import shutil

import pytest

from nightschool.challenges import Challenge
from nightschool.llm import Message, ScriptedModel
from nightschool.practice import open_practice
from nightschool.prompts import LivePromptSolver, registry, with_live_prompt
from nightschool.sandbox import Sandbox
from nightschool.solver.core import SYSTEM_PROMPT, Solver
from nightschool.store import Store
from nightschool.strategies.champion_solver import ChampionSolver
from nightschool.trajectory import Outcome

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

MARKER = "Re-read the examples before answering."


class Oracle:
    """The reference solution of the challenge in play when the system prompt has MARKER."""

    def __init__(self) -> None:
        self.current: Challenge | None = None
        self.systems: list[str] = []

    def __call__(self, messages: list[Message]) -> str:
        assert self.current is not None
        self.systems.append(messages[0]["content"])
        good = MARKER in messages[0]["content"]
        code = self.current.reference_solution if good else self.current.wrong_solution
        return f"```\n{code}\n```"


def test_dream_cycles_use_the_live_prompt_and_a_rollback_at_the_next_cycle(store: Store) -> None:
    oracle = Oracle()
    entry = registry.register(
        store,
        slot="solver",
        text=f"{SYSTEM_PROMPT} {MARKER}",
        verdict={"promote": True, "summary": "test"},
        proven_against=None,
    )
    with open_practice(
        store,
        ScriptedModel(oracle),
        Sandbox(),
        lessons=False,
        skills=False,
        verify_k=0,
        seed=1,
        curriculum=False,
    ) as practice:
        loop = practice.loop
        assert isinstance(loop.solver, LivePromptSolver)
        assert isinstance(loop.solver, ChampionSolver)  # a subclass, not a wrapper
        original = loop.next_challenge

        def spy(pick):  # type: ignore[no-untyped-def]
            oracle.current = original(pick)
            return oracle.current

        loop.next_challenge = spy  # type: ignore[method-assign]
        first = loop.run_cycle(tier="starter")
        registry.rollback(store, "solver")
        second = loop.run_cycle(tier="starter")
    with_prompt = store.get_trajectory(first.trajectory_id)
    built_in = store.get_trajectory(second.trajectory_id)
    assert with_prompt is not None and built_in is not None
    assert first.passed and with_prompt.outcome == Outcome.PASSED
    assert with_prompt.system_prompt.startswith(f"{SYSTEM_PROMPT} {MARKER}")
    assert with_prompt.extra["prompt"] == {"slot": "solver", "prompt_id": entry.id}
    assert with_prompt.extra["strategy"]["champion_id"] is None  # the champion wrapper ran too
    assert not second.passed and MARKER not in built_in.system_prompt
    assert built_in.extra["prompt"] == {"slot": "solver", "prompt_id": None}
    assert oracle.systems[0].startswith(f"{SYSTEM_PROMPT} {MARKER}")


def test_an_explicit_system_prompt_wins_over_the_live_one(store: Store) -> None:
    registry.register(
        store,
        slot="solver",
        text="Registered prompt.",
        verdict={"promote": True},
        proven_against=None,
    )
    oracle = Oracle()
    model = ScriptedModel(oracle)
    solver = LivePromptSolver(model, Sandbox(), prompt_store=store)
    from nightschool.challenges import render

    oracle.current = render("algo.top_k", "starter", 5)
    result = solver.solve(oracle.current, system_prompt="Explicit prompt.")
    assert oracle.systems and set(oracle.systems) == {"Explicit prompt."}
    assert result.trajectory.extra["prompt"] == {
        "slot": "solver",
        "prompt_id": None,
        "explicit": True,
    }


def test_with_live_prompt_copies_the_solver_and_keeps_its_class(store: Store) -> None:
    base = Solver(ScriptedModel(["x"]), Sandbox())
    live = with_live_prompt(base, store)
    assert type(live) is LivePromptSolver and type(base) is Solver
    assert live.model is base.model and live.config is base.config and live is not base
    champion = ChampionSolver(base, store)
    mixed = with_live_prompt(champion, store)
    assert isinstance(mixed, ChampionSolver) and isinstance(mixed, LivePromptSolver)
    assert type(with_live_prompt(champion, store)) is type(mixed)  # one class per solver class
    again = with_live_prompt(mixed, store)
    assert type(again) is type(mixed) and again is not mixed
    mixed.model = ScriptedModel(["y"])  # assigning on the copy changes what it solves with
    assert champion.model is base.model
