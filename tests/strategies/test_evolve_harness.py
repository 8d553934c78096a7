"""The metered harness and the sandboxed strategy runner, on the real bubblewrap sandbox."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import pytest

from nightschool.challenges import Challenge, render
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.strategies import BudgetExhausted, Harness
from nightschool.strategies.harness import PASSED, task_view
from nightschool.strategies.runner import PlayResult, play_strategy

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


def test_oversized_model_arguments_are_the_strategys_error_not_a_model_fault(
    sandbox: Sandbox, challenge: Challenge
) -> None:
    """A prompt the backend would refuse (ModelResponseError, exit 3) must never be sent."""
    from nightschool.strategies.harness import MAX_CODE_CHARS, MAX_PROMPT_EXTRA_CHARS

    model = ScriptedModel([fenced("print(1)")])
    harness = Harness(model, sandbox, challenge, budget=1)
    with pytest.raises(ValueError, match="prompt_extra"):
        harness.sample(prompt_extra="x" * (MAX_PROMPT_EXTRA_CHARS + 1))
    with pytest.raises(ValueError, match="code"):
        harness.refine("x" * (MAX_CODE_CHARS + 1), "FAILED")
    with pytest.raises(ValueError, match="code"):
        harness.critique("x" * (MAX_CODE_CHARS + 1))
    assert model.calls == [] and harness.budget_left == 1
    source = (
        "def solve(task, harness):\n    try:\n"
        "        harness.sample(prompt_extra='x' * 100000)\n"
        "    except Exception as exc:\n        return 'refused ' + str(harness.budget_left)\n"
        "    return 'sent'\n"
    )
    harness, result = play(sandbox, challenge, source, [fenced("print(1)")], budget=1)
    assert (result.status, result.code) == ("ok", "refused 1")


def test_an_over_long_protocol_line_ends_the_play(
    sandbox: Sandbox, challenge: Challenge, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nightschool.strategies import runner

    monkeypatch.setattr(runner, "MAX_LINE_BYTES", 10_000)
    source = "def solve(task, harness):\n    harness.run_tests('x' * 50000)\n    return 'done'\n"
    harness, result = play(sandbox, challenge, source)
    assert result.status == "error" and "protocol line over 10000 bytes" in result.detail
    assert harness.test_runs == 0


@pytest.mark.filterwarnings("ignore:running code WITHOUT a sandbox")
def test_a_runner_that_closes_its_output_and_hangs_is_a_crash(challenge: Challenge) -> None:
    """Unlinted code that closes the protocol pipe and hangs must not crash the parent.

    `--unsandboxed` runs the runner directly (under bubblewrap its own process
    keeps the pipe open, and the step timeout ends the play instead).
    """
    from nightschool.sandbox import SandboxConfig

    unsandboxed = Sandbox(SandboxConfig(unsandboxed=True))
    source = (
        "import os, time\nos.close(1)\ntime.sleep(20)\ndef solve(task, harness):\n    return ''\n"
    )
    _, result = play(unsandboxed, challenge, source)
    assert result.status == "crash" and "closed its output" in result.detail
    assert result.duration_s < 15


def test_lone_surrogates_from_a_strategy_cannot_crash_the_parent(
    sandbox: Sandbox, challenge: Challenge
) -> None:
    """`chr(0xD800)` survives JSON but not UTF-8: re-verifying it must fail, not raise."""
    source = "def solve(task, harness):\n    return 'print(1)' + chr(0xD800)\n"
    harness, result = play(sandbox, challenge, source)
    assert result.status == "ok" and result.code.startswith("print(1)")
    result.code.encode("utf-8")
    assert harness.verify(result.code)[0] is False
    raising = "def solve(task, harness):\n    raise ValueError('bad ' + chr(0xDC80))\n"
    _, failed = play(sandbox, challenge, raising)
    assert failed.status == "error" and "bad" in failed.detail
    failed.detail.encode("utf-8")


PANEL = """\
def solve(task, harness):
    notes = harness.critique("", persona="a tester who lists the task's edge cases")
    code = harness.sample(prompt_extra="Handle: " + notes[:1500], persona="a careful engineer")
    remarks = []
    for reviewer in ("a security reviewer", "a performance reviewer"):
        if harness.budget_left > 1:
            remarks.append(harness.critique(code, persona=reviewer))
    return harness.refine(code, " ".join(remarks), persona="the engineer again")
"""


def test_personas_run_several_roles_over_one_budget(sandbox: Sandbox, challenge: Challenge) -> None:
    from nightschool.strategies.contract import CONTRACT_TEXT, lint_strategy
    from nightschool.strategies.harness import CRITIC_PROMPT

    assert lint_strategy(PANEL) == []  # the lint admits multi-role strategies
    assert 'persona="a careful engineer"' in CONTRACT_TEXT  # the contract documents them
    replies = ["empty input", fenced("print(1)"), "fine", "fine", fenced("print(2)")]
    harness, result = play(sandbox, challenge, PANEL, replies, budget=5)
    assert result.status == "ok" and result.code == "print(2)"
    model = harness.model
    assert isinstance(model, ScriptedModel)
    systems = [c.messages[0]["content"] for c in model.calls]
    assert systems[0] == f"You are a tester who lists the task's edge cases.\n\n{CRITIC_PROMPT}"
    assert systems[1].startswith("You are a careful engineer.\n\n")
    assert systems[2].startswith("You are a security reviewer.\n\n")
    assert systems[3].startswith("You are a performance reviewer.\n\n")
    assert systems[4].startswith("You are the engineer again.\n\n")
    assert "print(1)" in model.calls[2].messages[-1]["content"]  # the panel saw the draft
    assert "Handle: empty input" in model.calls[1].messages[-1]["content"]
    assert harness.model_calls == 5 and harness.budget_left == 0  # one budget for all roles
    assert [u["role"] for u in harness.usage()] == ["analyst", "worker"]


def test_a_persona_is_capped_and_optional(sandbox: Sandbox, challenge: Challenge) -> None:
    from nightschool.solver.core import SYSTEM_PROMPT

    model = ScriptedModel([fenced("print(1)")])
    harness = Harness(model, sandbox, challenge, budget=2)
    with pytest.raises(ValueError, match="persona"):
        harness.sample(persona="x" * 301)
    assert harness.model_calls == 0  # refused before any call
    harness.sample()
    assert model.calls[0].messages[0]["content"] == SYSTEM_PROMPT  # no persona: unchanged
