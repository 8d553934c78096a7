"""The GEPA adapter on real rendered challenges in the real sandbox, with a scripted model."""

from __future__ import annotations

import shutil

import pytest

from nightschool.challenges import Challenge, render
from nightschool.errors import ModelUnavailableError
from nightschool.llm import Message, ScriptedModel
from nightschool.prompts.adapter import COMPONENT, ModelReflection, PromptTask, SolverPromptAdapter
from nightschool.sandbox import Sandbox
from nightschool.solver.core import Solver, SolverConfig

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

MARKER = "Handle every edge case."


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


def tasks() -> list[PromptTask]:
    names = ("algo.merge_intervals", "python_general.config_merge")
    return [PromptTask(f"train:{n}", render(n, "starter", 700_000_001)) for n in names]


class MarkerOracle:
    """Writes the reference solution when the system prompt holds MARKER, else the wrong one."""

    def __init__(self, challenges: list[Challenge]) -> None:
        self.by_prompt = {c.prompt: c for c in challenges}

    def __call__(self, messages: list[Message]) -> str:
        challenge = self.by_prompt[messages[-1]["content"]]
        good = MARKER in messages[0]["content"]
        code = challenge.reference_solution if good else challenge.wrong_solution
        return f"```\n{code}\n```"


def make_adapter(sandbox: Sandbox, model: ScriptedModel) -> SolverPromptAdapter:
    return SolverPromptAdapter(Solver(model, sandbox, SolverConfig(max_attempts=3)))


def test_evaluate_scores_pass_at_1_under_the_candidate_prompt(sandbox: Sandbox) -> None:
    batch = tasks()
    model = ScriptedModel(MarkerOracle([t.challenge for t in batch]))
    adapter = make_adapter(sandbox, model)
    assert adapter.solver.config.max_attempts == 1  # single attempt, whatever it was given
    plain = adapter.evaluate(batch, {COMPONENT: "Be careful."})
    assert plain.scores == [0.0, 0.0] and plain.trajectories is None
    assert len(model.calls) == 2  # one attempt each: no retries
    assert [call.messages[0]["content"] for call in model.calls] == ["Be careful."] * 2
    marked = adapter.evaluate(batch, {COMPONENT: f"Be careful. {MARKER}"}, capture_traces=True)
    assert marked.scores == [1.0, 1.0]
    assert marked.trajectories is not None and len(marked.trajectories) == 2
    assert all(r.passed and r.code for r in marked.trajectories)
    assert adapter.rollouts == 4


def test_reflective_dataset_carries_the_validator_output(sandbox: Sandbox) -> None:
    batch = tasks()
    oracle = MarkerOracle([t.challenge for t in batch])

    def first_fails(messages: list[Message]) -> str:
        if messages[-1]["content"] == batch[0].challenge.prompt:
            return oracle(messages)
        return oracle([{"role": "system", "content": MARKER}, *messages[1:]])

    model = ScriptedModel(first_fails)
    adapter = make_adapter(sandbox, model)
    evaluated = adapter.evaluate(batch, {COMPONENT: "Be careful."}, capture_traces=True)
    assert evaluated.scores == [0.0, 1.0]
    dataset = adapter.make_reflective_dataset({COMPONENT: "Be careful."}, evaluated, [COMPONENT])
    records = dataset[COMPONENT]
    assert len(records) == 1  # only the failing task
    record = records[0]
    assert record["Task"].startswith(batch[0].challenge.prompt[:50])
    assert batch[0].challenge.wrong_solution.strip()[:40] in record["Generated code"]
    failed = evaluated.trajectories[0]  # type: ignore[index]
    assert failed.feedback and failed.feedback[-80:] in record["Checker output"]
    assert "failed" in record["Score"]


def test_a_blank_prompt_is_not_sent_and_a_model_fault_stops(sandbox: Sandbox) -> None:
    batch = tasks()
    model = ScriptedModel(MarkerOracle([t.challenge for t in batch]))
    adapter = make_adapter(sandbox, model)
    blank = adapter.evaluate(batch[:1], {COMPONENT: "   "}, capture_traces=True)
    assert blank.scores == [0.0] and not model.calls
    assert "blank" in blank.trajectories[0].feedback  # type: ignore[index]
    broken = make_adapter(sandbox, ScriptedModel([ModelUnavailableError("server down")]))
    with pytest.raises(ModelUnavailableError):
        broken.evaluate(batch[:1], {COMPONENT: "Be careful."})


def test_model_reflection_is_a_str_to_str_callable_over_a_chat_model() -> None:
    model = ScriptedModel(["```\nNew prompt.\n```", "second"])
    reflect = ModelReflection(model, max_tokens=99, temperature=0.5, seed=7)
    assert reflect("improve this") == "```\nNew prompt.\n```"
    assert reflect([{"role": "user", "content": [{"type": "text", "text": "parts"}]}]) == "second"
    assert model.calls[0].messages == ({"role": "user", "content": "improve this"},)
    assert model.calls[1].messages == ({"role": "user", "content": "parts"},)
    assert [c.seed for c in model.calls] == [7, 8]
    assert {c.max_tokens for c in model.calls} == {99} and reflect.calls == 2
