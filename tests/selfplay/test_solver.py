from __future__ import annotations

import shutil

import pytest

from nightschool.challenges import render, templates
from nightschool.errors import ModelUnavailableError
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.selfplay.solver import Solver, extract_code
from nightschool.trajectory import Outcome

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


def fenced(code: str, lang: str = "python") -> str:
    return f"Here is my plan.\n```{lang}\n{code}\n```\n"


def test_extract_code_variants() -> None:
    assert extract_code(fenced("print(1)"), "solution.py") == "print(1)"
    both = "```bash\necho hi\n```\n```python\nprint(2)\n```"
    assert extract_code(both, "solution.py") == "print(2)"
    assert extract_code(both, "solution.sh") == "echo hi"
    assert extract_code("```\nprint(3)\n", "solution.py") == "print(3)"  # unterminated fence
    assert extract_code("I cannot do that.", "solution.py") is None


def test_first_try_pass(sandbox: Sandbox) -> None:
    challenge = render(templates("algo")[0].name, "basic", 1)
    model = ScriptedModel([fenced(challenge.reference_solution)])
    result = Solver(model, sandbox).solve(challenge, session_id="s")
    traj = result.trajectory
    assert result.passed and result.attempts == 1
    assert traj.outcome == Outcome.PASSED and traj.failure_reason is None
    assert traj.validator_signal == "pass" and len(traj.tool_calls) == 1
    assert traj.tool_calls[0].result == "passed" and traj.tokens_out > 0
    assert traj.extra["challenge_hash"] == challenge.challenge_hash
    assert traj.planning_output == "Here is my plan."


def test_retry_sees_feedback_not_validator_source(sandbox: Sandbox) -> None:
    challenge = render(templates("data_analysis")[0].name, "intermediate", 3)
    model = ScriptedModel([fenced(challenge.wrong_solution), fenced(challenge.reference_solution)])
    result = Solver(model, sandbox).solve(challenge)
    assert result.passed and result.attempts == 2
    retry_prompt = model.calls[1].messages[-1]["content"]
    assert "did not pass" in retry_prompt
    assert challenge.validation_script.strip()[:200] not in retry_prompt
    assert result.trajectory.tool_calls[0].error


def test_three_failures_is_agent_failure(sandbox: Sandbox) -> None:
    challenge = render(templates("sql")[0].name, "basic", 2)
    model = ScriptedModel([fenced(challenge.wrong_solution)] * 2 + ["no code at all"])
    result = Solver(model, sandbox).solve(challenge)
    traj = result.trajectory
    assert not result.passed and result.attempts == 3 and result.tool_errors == 1
    assert traj.outcome == Outcome.FAILED and traj.failure_reason
    assert traj.failure_reason.startswith("validator rejected all 3 attempts")
    assert traj.infrastructure_error is None


def test_model_outage_is_infrastructure_not_failure(sandbox: Sandbox) -> None:
    challenge = render(templates("bash")[0].name, "basic", 5)
    model = ScriptedModel(
        [fenced(challenge.wrong_solution, "bash"), ModelUnavailableError("server went away")]
    )
    result = Solver(model, sandbox).solve(challenge)
    assert isinstance(result.infrastructure_error, ModelUnavailableError)
    assert result.trajectory.outcome == Outcome.UNKNOWN
    assert result.trajectory.failure_reason is None
    assert "server went away" in (result.trajectory.infrastructure_error or "")
