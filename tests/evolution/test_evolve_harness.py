"""The metered harness and the sandboxed strategy runner, on the real bubblewrap sandbox."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import pytest

from nightschool.challenges import Challenge, render
from nightschool.evolution import BudgetExhausted, Harness
from nightschool.evolution.harness import PASSED, task_view
from nightschool.evolution.runner import PlayResult, play_strategy
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


@pytest.fixture(scope="module")
def challenge() -> Challenge:
    return render("python_general.tag_index", "basic", 5)


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def test_budget_metering_counts_calls_and_tokens(sandbox: Sandbox, challenge: Challenge) -> None:
    model = ScriptedModel([fenced("print(1)"), "a critique with five words", fenced("print(2)")])
    harness = Harness(model, sandbox, challenge, budget=3, max_tokens=64)
    assert harness.budget_left == 3
    assert harness.sample(prompt_extra="EXTRA") == "print(1)"
    assert model.calls[0].messages[-1]["content"].endswith("EXTRA")
    assert harness.critique("print(1)") == "a critique with five words"
    assert harness.refine("print(1)", "FAILED: wrong") == "print(2)"
    assert "FAILED: wrong" in model.calls[2].messages[-1]["content"]
    assert harness.budget_left == 0 and harness.model_calls == 3
    replies = ["```python print(1) ```", "a critique with five words", "```python print(2) ```"]
    expected = sum(
        sum(len(m["content"].split()) for m in call.messages) + len(reply.split())
        for call, reply in zip(model.calls, replies, strict=True)
    )
    assert harness.tokens == expected
    with pytest.raises(BudgetExhausted):
        harness.sample()
    assert len(model.calls) == 3  # the over-budget call never reached the model
    assert all(call.max_tokens == 64 for call in model.calls)


def test_run_tests_shows_feedback_never_the_validator(
    sandbox: Sandbox, challenge: Challenge
) -> None:
    harness = Harness(ScriptedModel([]), sandbox, challenge, budget=1)
    assert harness.run_tests(challenge.reference_solution) == PASSED
    feedback = harness.run_tests(challenge.wrong_solution)
    assert feedback.startswith("FAILED: ") and len(feedback) <= 8 + 800
    assert challenge.validation_script not in feedback
    with pytest.raises(BudgetExhausted):  # budget 1 allows budget + 1 = 2 test runs
        harness.run_tests(challenge.reference_solution)
    assert harness.tokens == 0 and harness.test_runs == 2


def play(
    sandbox: Sandbox,
    challenge: Challenge,
    source: str,
    replies: Sequence[str] = (),
    budget: int = 2,
    **kwargs: float,
) -> tuple[Harness, PlayResult]:
    harness = Harness(ScriptedModel(list(replies)), sandbox, challenge, budget=budget)
    result = play_strategy(sandbox, source, harness, task_view(challenge, "t1"), **kwargs)
    return harness, result


def test_reverification_ignores_what_the_strategy_claims(
    sandbox: Sandbox, challenge: Challenge
) -> None:
    source = (
        "def solve(task, harness):\n    harness.run_tests('x')\n    return 'print(\"PASSED\")'\n"
    )
    harness, result = play(sandbox, challenge, source)
    assert result.status == "ok" and result.code == 'print("PASSED")'
    assert harness.verify(result.code)[0] is False
    assert harness.verify(challenge.reference_solution) == (True, "")
    assert harness.verify("") == (False, "no code was returned")


def test_over_budget_call_raises_inside_the_strategy(
    sandbox: Sandbox, challenge: Challenge
) -> None:
    caught = (
        "def solve(task, harness):\n    codes = []\n    while True:\n        try:\n"
        "            codes.append(harness.sample())\n        except Exception as exc:\n"
        "            return str(len(codes)) + ' ' + str(harness.budget_left) + ' ' + str(exc)\n"
    )
    harness, result = play(sandbox, challenge, caught, [fenced("a"), fenced("b")])
    assert result.status == "ok"
    assert result.code.startswith("2 0 no model calls left")
    assert harness.model_calls == 2
    uncaught = "def solve(task, harness):\n    harness.sample()\n    return harness.sample()\n"
    harness, result = play(sandbox, challenge, uncaught, [fenced("a")], budget=1)
    assert result.status == "budget" and "BudgetExhausted" in result.detail


def test_runner_isolates_a_lint_bypass(sandbox: Sandbox, challenge: Challenge) -> None:
    """Unlinted code that reaches for the network and host files still gets neither."""
    source = (
        "import os, socket\n"
        "def solve(task, harness):\n"
        "    out = []\n"
        "    try:\n"
        "        socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
        "        out.append('net')\n"
        "    except OSError:\n"
        "        out.append('nonet')\n"
        "    out.append('home' if os.path.exists(os.path.expanduser('~/.ssh')) else 'nohome')\n"
        "    out.append(','.join(sorted(os.listdir('.'))))\n"
        '    print(\'{"op": "done", "code": "forged"}\')\n'
        "    return ' '.join(out)\n"
    )
    _, result = play(sandbox, challenge, source)
    assert result.code == "nonet nohome runner.py,strategy.py"


def test_runner_reports_errors_timeouts_and_bad_returns(
    sandbox: Sandbox, challenge: Challenge
) -> None:
    _, raised = play(sandbox, challenge, "def solve(task, harness):\n    return 1 / 0\n")
    assert raised.status == "error" and "ZeroDivisionError" in raised.detail
    _, wrong_type = play(sandbox, challenge, "def solve(task, harness):\n    return 3\n")
    assert wrong_type.status == "error" and "not str" in wrong_type.detail
    spin = "def solve(task, harness):\n    while True:\n        pass\n"
    _, stuck = play(sandbox, challenge, spin, step_timeout_s=1.0)
    assert stuck.status == "timeout" and stuck.duration_s < 10
    _, unknown = play(sandbox, challenge, "def solve(task, harness):\n    return task['id']\n")
    assert unknown.code == "t1"


def test_task_view_hides_the_validator(challenge: Challenge) -> None:
    view = task_view(challenge, "x")
    assert set(view) == {"id", "prompt", "solution_file", "cluster", "tier"}
    assert challenge.validation_script not in str(view)


def test_dispatch_refuses_unknown_calls(sandbox: Sandbox, challenge: Challenge) -> None:
    harness = Harness(ScriptedModel([]), sandbox, challenge, budget=1)
    with pytest.raises(ValueError, match="unknown harness call"):
        harness.dispatch("verify", {})
    assert harness.dispatch("budget_left", {}) == 1
