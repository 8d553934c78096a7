from __future__ import annotations

import json
import shutil

import pytest

from nightschool.challenges import Challenge, render, templates
from nightschool.errors import ModelUnavailableError
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.solver.attempts import normalise_code, read_reply
from nightschool.solver.core import Solver, SolverConfig, extract_code
from nightschool.trajectory import Outcome

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


def fenced(code: str, lang: str = "python") -> str:
    return f"Here is my plan.\n```{lang}\n{code}\n```\n"


def python_challenge() -> Challenge:
    return render(templates("data_analysis")[0].name, "intermediate", 3)


def variant(code: str, n: int) -> str:
    """A program that differs from `code` (one more statement), not just in layout."""
    return code.rstrip() + "\n" + "\n".join(["_unused = 0"] * n) + "\n"


def blob(arguments: dict[str, object]) -> str:
    return json.dumps({"name": "solution", "arguments": arguments})


def test_extract_code_variants() -> None:
    assert extract_code(fenced("print(1)"), "solution.py") == "print(1)"
    both = "```bash\necho hi\n```\n```python\nprint(2)\n```"
    assert extract_code(both, "solution.py") == "print(2)"
    assert extract_code(both, "solution.sh") == "echo hi"
    assert extract_code("```\nprint(3)\n", "solution.py") == "print(3)"  # unterminated fence
    assert extract_code("I cannot do that.", "solution.py") is None


def test_unfenced_reply_is_code_only_when_it_parses() -> None:
    assert extract_code("import sys\nprint(sys.argv)", "solution.py") == (
        "import sys\nprint(sys.argv)\n"
    )
    assert extract_code("Sure\n", "solution.py") is None  # a bare name parses but is no program
    assert extract_code("Here is the idea:\nprint(1)", "solution.py") is None  # prose
    assert extract_code('{"answer": 3,\n "ok": true}', "solution.py") is None  # JSON literal
    assert extract_code('```json\n{"answer": 3}\n```', "solution.py") is None
    assert extract_code("Here is the script:\ncat in.txt | sort", "solution.sh") is None
    assert extract_code("cat in.txt |\n  sort", "solution.sh") == "cat in.txt |\n  sort\n"


@pytest.mark.parametrize(
    "reply",
    [
        blob({"code": "def f():\n    return 1\nprint(f())"}),
        "```json\n" + blob({"content": "def f():\n    return 1\nprint(f())"}) + "\n```",
        "```tool\n"
        + blob({"path": "solution.py", "code": "def f():\n    return 1\nprint(f())"})
        + "\n```",
        "{'function': 'write', 'args': {'source': 'def f():\\n    return 1\\nprint(f())'}}",
        '{"type": "function", "function": {"name": "solution", "arguments": '
        + json.dumps(json.dumps({"code": "def f():\n    return 1\nprint(f())"}))
        + "}}",
        "<tool_call>\n"
        + blob({"code": "```python\ndef f():\n    return 1\nprint(f())\n```"})
        + "\n</tool_call>",
        "Calling the tool: " + blob({"code": "def f():\n    return 1\nprint(f())"}),
    ],
)
def test_tool_call_blob_yields_the_code_inside(reply: str) -> None:
    found = read_reply(reply, "solution.py")
    assert found.blob and found.from_blob
    assert found.code == "def f():\n    return 1\nprint(f())"
    assert extract_code(reply, "solution.py") == found.code


@pytest.mark.parametrize(
    "reply",
    [
        blob({"filename": "solution.py"}),
        "```\n" + blob({"language": "python", "description": "Sorts the rows."}) + "\n```",
        "```python\n" + blob({}) + "\n```",  # a dict in a python fence is still no program
        '{"name": "solution", "arguments": {"code": "def f(x):\n  return x +',  # cut off
    ],
)
def test_tool_call_blob_without_source_is_no_code(reply: str) -> None:
    found = read_reply(reply, "solution.py")
    assert found.blob and found.code is None


def test_normalised_programs_ignore_layout_comments_and_docstrings() -> None:
    a = 'def f(x):\n    """Add one."""\n    # comment\n    return x+1\n'
    b = "def f(x):\n\n    return (x + 1)  # other\n"
    assert normalise_code(a, "solution.py") == normalise_code(b, "solution.py")
    assert normalise_code(a, "solution.py") != normalise_code(a + "f(1)\n", "solution.py")
    assert normalise_code("def f(:\n  x", "solution.py") == normalise_code("def  f(:\n x", "s.py")
    assert normalise_code("#!/bin/bash\necho  a\n", "s.sh") == normalise_code("echo a", "s.sh")


def test_first_try_pass(sandbox: Sandbox) -> None:
    challenge = render(templates("algo")[0].name, "basic", 1)
    model = ScriptedModel([fenced(challenge.reference_solution)])
    result = Solver(model, sandbox).solve(challenge, session_id="s")
    traj = result.trajectory
    assert result.passed and result.attempts == 1 and result.model_calls == 1
    assert traj.outcome == Outcome.PASSED and traj.failure_reason is None
    assert traj.validator_signal == "pass" and len(traj.tool_calls) == 1
    assert traj.tool_calls[0].result == "passed" and traj.tokens_out > 0
    assert traj.tool_calls[0].arguments["temperature"] == 0.2
    assert traj.extra["challenge_hash"] == challenge.challenge_hash
    assert traj.planning_output == "Here is my plan."
    extra = traj.extra
    assert extra["model_calls"] == 1 and extra["attempt_codes_distinct"] == 1
    assert extra["duplicates_resampled"] == 0 and extra["wasted_attempts"] == 0
    assert extra["temperatures"] == [0.2] and extra["blob_replies"] == 0
    assert extra["retry_mode"] == "fresh" and extra["skills_shown"] == []


def test_retry_is_a_fresh_prompt_with_failing_code_and_checker_message(sandbox: Sandbox) -> None:
    challenge = python_challenge()
    model = ScriptedModel([fenced(challenge.wrong_solution), fenced(challenge.reference_solution)])
    result = Solver(model, sandbox).solve(challenge)
    assert result.passed and result.attempts == 2
    checker = result.trajectory.tool_calls[0].error
    assert checker
    retry = model.calls[1].messages
    assert [m["role"] for m in retry] == ["system", "user"]  # not the growing conversation
    assert retry[0]["content"] == model.calls[0].messages[0]["content"]
    prompt = retry[1]["content"]
    assert prompt.startswith(challenge.prompt.rstrip())
    assert "Your previous solution (below) failed with this checker message:" in prompt
    assert challenge.wrong_solution.strip() in prompt and checker.strip() in prompt
    assert "Write a different, corrected solution." in prompt
    for call in model.calls:
        for message in call.messages:
            assert challenge.validation_script.strip()[:200] not in message["content"]


def test_temperatures_rise_per_attempt_with_reproducible_seeds(sandbox: Sandbox) -> None:
    challenge = python_challenge()
    wrong = [fenced(variant(challenge.wrong_solution, n)) for n in range(3)]
    model = ScriptedModel(wrong)
    result = Solver(model, sandbox).solve(challenge)
    traj = result.trajectory
    assert not result.passed and result.attempts == 3 and result.model_calls == 3
    assert [call.temperature for call in model.calls] == [0.2, 0.55, 0.9]
    assert traj.extra["temperatures"] == [0.2, 0.55, 0.9]
    assert [c.arguments["temperature"] for c in traj.tool_calls] == [0.2, 0.55, 0.9]
    assert traj.extra["attempt_codes_distinct"] == 3
    seeds = [call.seed for call in model.calls]
    assert len(set(seeds)) == 3 and all(isinstance(s, int) for s in seeds)
    again = ScriptedModel(wrong)
    Solver(again, sandbox).solve(challenge)
    assert [call.seed for call in again.calls] == seeds
    assert traj.failure_reason and traj.failure_reason.startswith(
        "validator rejected all 3 attempts"
    )


def test_duplicate_is_not_run_but_resampled_hotter(sandbox: Sandbox) -> None:
    challenge = python_challenge()
    relaid = "# same program, new comment\n" + challenge.wrong_solution.replace("\n", "\n\n")
    model = ScriptedModel(
        [
            fenced(challenge.wrong_solution),
            fenced(relaid),
            fenced(challenge.reference_solution),
        ]
    )
    result = Solver(model, sandbox).solve(challenge)
    traj = result.trajectory
    assert result.passed and result.attempts == 2 and result.model_calls == 3
    assert [call.temperature for call in model.calls] == [0.2, 0.55, 0.9]
    assert len(traj.tool_calls) == 2  # the duplicate left no run behind
    assert traj.tool_calls[1].result == "passed"
    resample = model.calls[2].messages
    assert [m["role"] for m in resample] == ["system", "user"]
    assert "repeated the solution of attempt 1" in resample[1]["content"]
    # the checker's message stays, the program it would copy again does not
    assert challenge.wrong_solution.strip() not in resample[1]["content"]
    assert "checker message" in resample[1]["content"]
    first_retry = model.calls[1].messages[1]["content"]
    assert challenge.wrong_solution.strip() in first_retry  # a plain retry shows it
    assert len({call.seed for call in model.calls}) == 3
    extra = traj.extra
    assert extra["duplicates_resampled"] == 1 and extra["wasted_attempts"] == 0
    assert extra["attempt_codes_distinct"] == 2 and extra["model_calls"] == 3


def test_all_duplicates_make_a_wasted_attempt(sandbox: Sandbox) -> None:
    challenge = python_challenge()
    model = ScriptedModel([fenced(challenge.wrong_solution)] * 7)
    result = Solver(model, sandbox).solve(challenge)
    traj = result.trajectory
    assert not result.passed and result.attempts == 3 and result.model_calls == 7
    assert model.remaining == 0
    assert [call.result for call in traj.tool_calls] == ["failed", None, None]
    assert traj.tool_calls[1].error == "duplicate of attempt 1; not run"
    assert traj.tool_calls[2].error == "duplicate of attempt 1; not run"
    assert traj.tool_calls[2].arguments["code"] == challenge.wrong_solution.strip()
    assert traj.extra["temperatures"] == [0.2, 0.55, 0.9, 1.0, 0.9, 1.0, 1.0]
    assert traj.extra["wasted_attempts"] == 2 and traj.extra["duplicates_resampled"] == 4
    assert traj.extra["attempt_codes_distinct"] == 1
    assert traj.outcome == Outcome.FAILED and traj.failure_reason
    assert traj.failure_reason.startswith("validator rejected all 3 attempts")


def test_blob_with_code_is_run_as_that_code(sandbox: Sandbox) -> None:
    challenge = python_challenge()
    model = ScriptedModel([blob({"code": challenge.reference_solution})])
    result = Solver(model, sandbox).solve(challenge)
    traj = result.trajectory
    assert result.passed and result.attempts == 1
    assert traj.tool_calls[0].arguments["code"] == challenge.reference_solution.strip()
    assert traj.tool_calls[0].arguments["blob_corrected"] is True
    assert traj.extra["blob_replies"] == 1 and traj.extra["blob_corrected"] == 1


def test_blob_without_code_is_never_run_and_the_retry_asks_for_code(sandbox: Sandbox) -> None:
    challenge = python_challenge()
    model = ScriptedModel(
        [blob({"file": "solution.py", "n": 3}), fenced(challenge.reference_solution)]
    )
    result = Solver(model, sandbox).solve(challenge)
    traj = result.trajectory
    assert result.passed and result.attempts == 2 and result.tool_errors == 1
    first = traj.tool_calls[0]
    assert "code" not in first.arguments and first.result is None
    assert first.error and "tool call or JSON object" in first.error
    prompt = model.calls[1].messages[-1]["content"]
    assert (
        "Reply with the complete solution.py in one ```python block, not a tool call or JSON."
        in prompt
    )
    assert traj.extra["blob_replies"] == 1 and traj.extra["blob_corrected"] == 0
    assert traj.extra["attempt_codes_distinct"] == 1


def test_three_failures_is_agent_failure(sandbox: Sandbox) -> None:
    challenge = render(templates("sql")[0].name, "basic", 2)
    wrong = challenge.wrong_solution
    model = ScriptedModel([fenced(wrong), fenced(variant(wrong, 1)), "no code at all"])
    result = Solver(model, sandbox).solve(challenge)
    traj = result.trajectory
    assert not result.passed and result.attempts == 3 and result.tool_errors == 1
    assert traj.outcome == Outcome.FAILED and traj.failure_reason
    assert traj.failure_reason.startswith("validator rejected all 3 attempts")
    assert traj.infrastructure_error is None
    assert traj.extra["attempt_codes_distinct"] == 2


def test_conversation_mode_reproduces_the_old_retry(sandbox: Sandbox) -> None:
    challenge = python_challenge()
    config = SolverConfig(retry_mode="conversation", temperature_step=0, max_resamples=0)
    model = ScriptedModel([fenced(challenge.wrong_solution)] * 3)
    result = Solver(model, sandbox, config).solve(challenge)
    traj = result.trajectory
    assert result.attempts == 3 and result.model_calls == 3
    assert [call.temperature for call in model.calls] == [0.2, 0.2, 0.2]
    last = model.calls[2].messages
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "did not pass" in last[-1]["content"]
    assert traj.extra["wasted_attempts"] == 2 and traj.extra["retry_mode"] == "conversation"


def test_skill_sections_follow_the_system_prompt(sandbox: Sandbox) -> None:
    challenge = render(templates("algo")[0].name, "basic", 1)
    model = ScriptedModel([fenced(challenge.reference_solution)])
    section = "### WORKED EXAMPLE\nsorted(rows)"
    result = Solver(model, sandbox).solve(challenge, skills=[section], skill_ids=["sk-1"])
    system = model.calls[0].messages[0]["content"]
    assert system.endswith(section) and result.trajectory.system_prompt == system
    assert result.trajectory.extra["skills_shown"] == ["sk-1"]
    with pytest.raises(ValueError, match="skill ids"):
        Solver(model, sandbox).solve(challenge, skills=[], skill_ids=["a", "b"])


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


def test_reply_cut_off_by_the_token_cap_runs_without_its_broken_tail() -> None:
    reply = (
        "```python\ndef add(a, b):\n    return a + b\n\n\n# tests\n"
        "def check():\n    assert add(1, 2) == 3\n    assert add(('x', 'y'"
    )
    code = extract_code(reply, "solution.py")
    assert code is not None and code.startswith("def add(a, b):\n    return a + b\n")
    assert "check" not in code and compile(code, "solution.py", "exec")
    whole = "```python\ndef add(a, b):\n    return a + b\n\nprint(add(1, 2))\n```"
    expected = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))"
    assert extract_code(whole, "solution.py") == expected  # complete code is left alone
    broken = "```python\ndef add(a, b):\n    return (a + b\n```"  # nothing complete to keep
    assert extract_code(broken, "solution.py") == "def add(a, b):\n    return (a + b"
    shell = "```bash\necho 'unterminated\n```"
    assert extract_code(shell, "solution.sh") == "echo 'unterminated"
