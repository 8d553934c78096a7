"""`optimise_prompt` end to end: real GEPA, real renders, real sandbox, scripted models.

The task model writes the reference solution exactly when its system prompt
holds a marker phrase (else the template's wrong solution), so a prompt's
pass rate is decided by the prompt. The reflection model proposes a prompt
with the marker (it wins on the held-out set: registered), junk (GEPA keeps
the live prompt: nothing measured or registered) or a prompt that only helps
on the training tasks (the gate refuses it: nothing registered).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from nightschool.challenges import Challenge
from nightschool.dream.loop import DREAM_SEED_LIMIT
from nightschool.llm import Message, ScriptedModel
from nightschool.prompts import registry
from nightschool.prompts.optimise import (
    PROMPT_TRAIN_SEED_BASE,
    OptimiseConfig,
    draw_train_tier,
    optimise_prompt,
    pick_holdout,
)
from nightschool.sandbox import Sandbox
from nightschool.solver.core import SYSTEM_PROMPT
from nightschool.store import Store
from nightschool.watchdog.prompt_phase import optimise_prompt_phase

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

MARKER = "Check the edge cases against the task's examples."
# seed 6: no web_automation task in the training draw (each costs a Chromium start, ~4 s;
# the web path is tested with its own cluster); every other seed-3 property holds
CONFIG = OptimiseConfig(budget=12, train=3, holdout=6, tier="starter", seed=6)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


def run_challenges(config: OptimiseConfig) -> tuple[list[Challenge], list[Challenge]]:
    heldout, holdout = pick_holdout(config)
    train = draw_train_tier(config, heldout.unseen_templates)
    return [t.challenge for t in train], [t.challenge for t in holdout]


class TaskModel:
    """Reference solution when `passes(system prompt, challenge)`, else the wrong one.

    Records which challenges it was asked about (`asked`).
    """

    def __init__(
        self, config: OptimiseConfig, passes: Callable[[str, Challenge, bool], bool]
    ) -> None:
        train, holdout = run_challenges(config)
        self.train = {c.prompt: c for c in train}
        self.by_prompt = {**self.train, **{c.prompt: c for c in holdout}}
        self.passes = passes
        self.asked: list[Challenge] = []

    def __call__(self, messages: list[Message]) -> str:
        challenge = self.by_prompt[messages[-1]["content"]]
        self.asked.append(challenge)
        good = self.passes(messages[0]["content"], challenge, challenge.prompt in self.train)
        code = challenge.reference_solution if good else challenge.wrong_solution
        return f"```\n{code}\n```"


def proposing(text: str) -> ScriptedModel:
    return ScriptedModel(lambda _messages: f"Here is the new prompt:\n```\n{text}\n```")


def with_marker(system: str, _challenge: Challenge, _train: bool) -> bool:
    return MARKER in system


def test_the_training_tier_is_private_and_the_holdout_balanced() -> None:
    heldout, holdout = pick_holdout(CONFIG)
    train = draw_train_tier(CONFIG, heldout.unseen_templates)
    assert all(PROMPT_TRAIN_SEED_BASE <= t.challenge.seed < 800_000_000 for t in train)
    assert all(t.challenge.seed >= DREAM_SEED_LIMIT for t in train)
    assert not {t.challenge.template for t in train} & heldout.unseen_templates
    assert [t.task_id[0] for t in holdout] == ["a", "b"] * 3
    assert len({t.challenge.cluster for t in holdout}) == 3
    assert draw_train_tier(CONFIG, heldout.unseen_templates) == train  # deterministic
    assert pick_holdout(CONFIG.model_copy(update={"seed": 4}))[1] != holdout  # fresh per seed


@pytest.mark.store_backends("sqlite")
def test_a_better_prompt_wins_on_the_holdout_and_is_registered(
    store: Store, sandbox: Sandbox
) -> None:
    task = TaskModel(CONFIG, with_marker)
    reflector = proposing(f"{SYSTEM_PROMPT} {MARKER}")
    lines: list[str] = []
    result = optimise_prompt(
        store,
        ScriptedModel(task),
        sandbox,
        CONFIG,
        reflection_model=reflector,
        run_id="run-1",
        on_event=lines.append,
    )
    assert result.status == "registered" and result.incumbent_id is None
    assert result.incumbent == SYSTEM_PROMPT and MARKER in result.candidate
    assert result.train_scores == (0.0, 1.0)
    assert result.pass_rate("incumbent") == (0, 6) and result.pass_rate("candidate") == (6, 6)
    assert result.verdict is not None and result.verdict["promote"] is True
    assert result.verdict["test"] == "mcnemar-exact"
    assert 12 <= result.metric_calls <= 12 + 2 * 3 + 3
    # GEPA's reflection saw the checker's output of the failed training solutions
    reflection_prompt = reflector.calls[0].messages[0]["content"]
    assert "Checker output" in reflection_prompt and SYSTEM_PROMPT in reflection_prompt
    assert "FAIL" in reflection_prompt or "expected" in reflection_prompt.lower()
    live = registry.current(store, "solver")
    assert live is not None and live.id == result.entry.id  # type: ignore[union-attr]
    assert live.text == result.candidate and live.parent is None and live.run_id == "run-1"
    assert live.record["candidate_pass"] == [6, 6] and live.record["incumbent_pass"] == [0, 6]
    assert any("PROMOTE" in line for line in lines)
    # the held-out tasks were never seen while GEPA searched: only in the 12 gate solves
    holdout = set(task.by_prompt) - set(task.train)
    assert sum(c.prompt in holdout for c in task.asked) == 12


@pytest.mark.store_backends("postgres")
def test_junk_from_the_reflection_model_registers_nothing(store: Store, sandbox: Sandbox) -> None:
    task = TaskModel(CONFIG, with_marker)
    reflector = proposing("Write code. Be fast. Never mind the examples.")
    result = optimise_prompt(
        store, ScriptedModel(task), sandbox, CONFIG, reflection_model=reflector
    )
    assert result.status == "no_candidate" and result.candidate == SYSTEM_PROMPT
    assert reflector.calls and result.reflections == len(reflector.calls)
    assert result.verdict is None and not result.pairs
    assert not set(c.prompt for c in task.asked) - set(task.train)  # no held-out solve
    assert registry.history(store) == []


@pytest.mark.store_backends("sqlite")
def test_a_prompt_that_only_helps_on_training_tasks_is_refused_by_the_gate(
    store: Store, sandbox: Sandbox
) -> None:
    def memorised(system: str, _challenge: Challenge, train: bool) -> bool:
        return MARKER in system and train

    task = TaskModel(CONFIG, memorised)
    reflector = proposing(f"{SYSTEM_PROMPT} {MARKER}")
    result = optimise_prompt(
        store, ScriptedModel(task), sandbox, CONFIG, reflection_model=reflector
    )
    assert result.train_scores == (0.0, 1.0)  # GEPA was fooled ...
    assert result.status == "not_promoted"  # ... the gate was not
    assert result.pass_rate("candidate") == (0, 6) and result.verdict is not None
    assert result.verdict["promote"] is False
    assert registry.history(store) == []


@pytest.mark.store_backends("postgres")
def test_ctrl_c_while_measuring_the_holdout_registers_nothing(
    store: Store, sandbox: Sandbox
) -> None:
    task = TaskModel(CONFIG, with_marker)

    def interrupt_on_holdout(messages: list[Message]) -> str:
        if messages[-1]["content"] not in task.train:
            raise KeyboardInterrupt
        return task(messages)

    reflector = proposing(f"{SYSTEM_PROMPT} {MARKER}")
    with pytest.raises(KeyboardInterrupt):
        optimise_prompt(
            store, ScriptedModel(interrupt_on_holdout), sandbox, CONFIG, reflection_model=reflector
        )
    assert reflector.calls  # GEPA had found its candidate
    assert registry.history(store) == []


@pytest.mark.store_backends("postgres")
def test_a_promotion_counts_only_against_the_prompt_it_beat(store: Store, sandbox: Sandbox) -> None:
    first = registry.register(
        store,
        slot="solver",
        text=SYSTEM_PROMPT + " Think first.",
        verdict={"promote": True},
        proven_against=None,
    )
    task = TaskModel(CONFIG, with_marker)
    reflector = proposing(f"{SYSTEM_PROMPT} {MARKER}")
    result = optimise_prompt(
        store, ScriptedModel(task), sandbox, CONFIG, reflection_model=reflector
    )
    assert result.incumbent_id == first.id and result.incumbent.endswith("Think first.")
    assert result.status == "registered" and result.entry is not None
    assert result.entry.parent == first.id and result.entry.previous == first.id


def test_only_the_solver_slot_has_an_optimiser(store: Store, sandbox: Sandbox) -> None:
    model = ScriptedModel(["unused"])
    for slot in ("reflection", "planning"):
        with pytest.raises(registry.PromptError, match="per-item executable score"):
            optimise_prompt(store, model, sandbox, CONFIG.model_copy(update={"slot": slot}))
    from nightschool.errors import UserError

    with pytest.raises(UserError, match="must exceed"):
        optimise_prompt(store, model, sandbox, CONFIG.model_copy(update={"budget": 3}))
    assert not model.calls


@pytest.mark.store_backends("sqlite")
def test_the_idle_phase_runs_one_optimisation(
    store: Store, sandbox: Sandbox, tmp_path: Path
) -> None:
    stamp = 1_700_000_006  # seed 6, as CONFIG: no web task in the training draw
    config = OptimiseConfig(train=3, holdout=6, seed=stamp % 1_000_000)
    task = TaskModel(config, with_marker)
    result = optimise_prompt_phase(
        store,
        ScriptedModel(task),
        sandbox,
        tmp_path,
        reflection_model=proposing(f"{SYSTEM_PROMPT} {MARKER}"),
        clock=lambda: float(stamp),
        budget=12,
        train=3,
        holdout=6,
    )
    assert result.status == "ok" and "registered as prompt 1" in result.detail
    assert result.record["candidate_pass"] == 6 and result.record["incumbent_pass"] == 0
    assert (tmp_path / "prompts" / f"idle-prompts-{stamp}" / "report.json").is_file()
    assert registry.live_prompt(store, "solver").endswith(MARKER)
