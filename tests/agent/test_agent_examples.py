"""The request's own examples run against a chat reply's code, and the redraws."""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable

import pytest

from nightschool.agent import ChatPipeline
from nightschool.agent._examples import (
    MAX_EXAMPLES,
    REDRAW_TEMPERATURE_STEP,
    _code,
    _program,
    request_examples,
    run_examples,
)
from nightschool.agent.loop import DIRECT_SYSTEM_PROMPT
from nightschool.errors import ModelUnavailableError
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Outcome

REQUEST = (
    "Write a Python function count_evens(xs) that counts the even numbers of a list.\n"
    "assert count_evens([1, 2, 4]) == 2"
)
WRONG = "```python\ndef count_evens(xs):\n    return len(xs)\n```"
RIGHT = "```python\ndef count_evens(xs):\n    return sum(1 for x in xs if x % 2 == 0)\n```"


def user(text: str) -> Message:
    return {"role": "user", "content": text}


# -- reading the examples --------------------------------------------------------------


def test_assert_lines_and_doctest_pairs_are_read_in_order_once() -> None:
    text = (
        "Add two numbers.\n"
        "    assert add(2, 3) == 5\n"
        ">>> add(1, 1)\n2\n"
        "`assert add(0, 0) == 0`\n"
        "assert add(2, 3) == 5\n"  # a repeat
        "assert add(\n"  # does not parse
        ">>> add(\n"
        ">>> shout('a')\n'A!'\n"
        ">>> table()\n<a table>\n"  # not a literal: compared as text
    )
    found = request_examples(text)
    assert found[0] == "assert add(2, 3) == 5"
    assert found[1].startswith("_got = add(1, 1)\nassert _got == 2, ")  # by value
    assert found[2] == "assert add(0, 0) == 0"
    assert found[3].startswith("_got = shout('a')\nassert _got == 'A!', ")
    assert found[4].startswith("_got = table()\nassert repr(_got) == '<a table>' or str(_got) ==")
    assert len(found) == 5


def test_doctest_outputs_compare_by_value_and_a_bare_comparison_is_its_own_check() -> None:
    sandbox = Sandbox()
    code = "def shift(n):\n    return str(n)[::-1]\n"
    # HumanEval/65 writes the string output with double quotes: the same value
    assert run_examples(sandbox, code, request_examples('>>> shift(12)\n"21"')) == (True, "")
    # a comparison that closes the docstring, with no output line, is an assertion
    [check] = request_examples('>>> shift(12) == "21"\n    """')
    assert check == 'assert shift(12) == "21"'
    assert request_examples('>>> shift(12)\n    """') == []  # the docstring's end is not output


def test_humaneval_references_pass_the_examples_their_prompts_state() -> None:
    from nightschool.evals._humaneval import load_problems

    sandbox = Sandbox()
    stated = passed = caught = 0
    for problem in load_problems()[:40]:  # a benchmark nobody here wrote
        checks = request_examples(problem.prompt)
        if not checks:
            continue
        stated += 1
        passed += run_examples(sandbox, problem.prompt + problem.canonical_solution, checks)[0]
        caught += not run_examples(sandbox, problem.prompt + "    return None\n", checks)[0]
    assert stated >= 15
    assert passed == stated  # none of the first 40 prompts has a wrong example
    assert caught == stated


def test_a_request_without_examples_has_none_and_many_are_capped() -> None:
    assert request_examples("Write a haiku about the sea. Assert your feelings.") == []
    assert request_examples(">>> add(1, 1)\n>>> add(2, 2)\n") == []  # no expected output
    many = "\n".join(f"assert f({k}) == {k}" for k in range(20))
    assert len(request_examples(many)) == MAX_EXAMPLES


def test_examples_run_after_the_code_in_the_real_sandbox() -> None:
    sandbox = Sandbox()
    checks = request_examples(REQUEST + "\n>>> count_evens([])\n0")
    right = "def count_evens(xs):\n    return sum(1 for x in xs if x % 2 == 0)\n"
    assert run_examples(sandbox, right, checks) == (True, "")
    passed, error = run_examples(sandbox, "def count_evens(xs):\n    return len(xs)\n", checks)
    assert not passed and error.startswith("AssertionError")
    # code that leaves before the examples ran does not pass, whatever its status
    passed, _ = run_examples(sandbox, "import sys\nsys.exit(0)\n", checks)
    assert not passed
    passed, error = run_examples(sandbox, "while True:\n    pass\n", checks, timeout_s=1)
    assert not passed and "timed out" in error


def test_the_replys_python_blocks_are_run_not_its_transcripts_or_shell() -> None:
    reply = (
        "```python\ndef double(x):\n    return 2 * x\n```\nUsage:\n"
        "```\n>>> double(2)\n4\n```\n```bash\npython double.py\n```"
    )
    assert _code(reply) == "def double(x):\n    return 2 * x\n"
    broken = "```python\ndef double(x) return 2 * x\n```"
    assert _code(broken) == "def double(x) return 2 * x\n"  # the only program: run, and fails
    assert _code("```bash\nls\n```") is None
    assert _code("def double(x):\n    return 2 * x\n") == "def double(x):\n    return 2 * x\n"
    assert _code("No code here.") is None


def test_a_body_only_reply_runs_after_the_requests_own_signature() -> None:
    from nightschool.evals._humaneval import load_problems

    sandbox = Sandbox()
    problem = load_problems()[2]  # truncate_number: its prompt states a doctest
    checks = request_examples(problem.prompt)
    reply = f"```python\n{problem.canonical_solution}```"  # the body alone
    program = _program(problem.prompt, _code(reply))
    assert program == problem.prompt.lstrip("\n") + problem.canonical_solution
    assert checks and run_examples(sandbox, program, checks) == (True, "")
    fenced = f"Complete it:\n```python\n{problem.prompt}```"
    assert _program(fenced, _code(reply)) == problem.prompt + problem.canonical_solution
    # the eval's request: an instruction, then the prompt; a body that lost its indentation
    asked = "Complete the following Python function.\n\n" + problem.prompt
    flat = textwrap.dedent(problem.canonical_solution)
    program = _program(asked, flat)
    assert program == problem.prompt.lstrip("\n") + textwrap.indent(flat, "    ")
    assert run_examples(sandbox, program, checks) == (True, "")
    whole = "def f():\n    return 1\n"
    assert _program(problem.prompt, whole) == whole  # a reply that parses is run as it is


# -- in a chat turn (the real sandbox and store, a scripted model) ---------------------


@pytest.fixture
def make(make_pipeline: Callable[..., ChatPipeline]) -> Callable[..., ChatPipeline]:
    return functools.partial(make_pipeline, verify=False, wake_up=False)


def test_a_reply_failing_the_requests_example_is_redrawn_and_the_redraw_kept(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel([WRONG, RIGHT])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == RIGHT
    stored = store.get_trajectory(result.trajectory.id)
    assert stored is not None and stored.final_response == RIGHT
    record = stored.extra["examples"]
    assert record["examples"] == 1 and record["passed"] is False
    assert record["redraw"] == "fixed" and record["repaired"] is True
    assert record["first_reply"] == WRONG  # what the user would have had without the check
    assert record["error"].startswith("AssertionError")
    assert stored.outcome != Outcome.FAILED  # the user got code that passes
    assert stored.n_steps == 2
    first, redraw = model.calls
    # the same request again, as a direct answer: no tools, nothing of the failure
    assert redraw.tools is None and redraw.messages[0]["content"].startswith(DIRECT_SYSTEM_PROMPT)
    assert [m["role"] for m in redraw.messages] == ["system", "user"]
    assert redraw.messages[-1]["content"] == REQUEST
    assert WRONG not in "\n".join(m["content"] for m in redraw.messages)
    assert redraw.temperature == pytest.approx(first.temperature + REDRAW_TEMPERATURE_STEP)
    assert redraw.seed is not None and redraw.seed != first.seed


def test_a_passing_reply_and_a_request_without_examples_cost_no_call(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel([RIGHT, WRONG, "never used"])
    pipe = make(model)
    passing = pipe.handle([user(REQUEST)], session_id="a")
    assert passing.reply == RIGHT and passing.trajectory.extra["examples"] == {
        "examples": 1,
        "passed": True,
    }
    # an unrelated request states no example: nothing is run, nothing recorded
    plain = pipe.handle([user("Write count_evens(xs) in Python.")], session_id="b")
    assert plain.reply == WRONG and "examples" not in plain.trajectory.extra
    assert len(model.calls) == 2


def test_a_redraw_that_fails_too_keeps_the_first_reply_and_fails_the_turn(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    also_wrong = "```python\ndef count_evens(xs):\n    return 0\n```"
    model = ScriptedModel([WRONG, also_wrong, also_wrong])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == WRONG
    record = result.trajectory.extra["examples"]
    assert record["redraw"] == "still fails" and not record["repaired"]
    assert record["redraws"] == 2 and len(model.calls) == 3  # the default: two at most
    assert "first_reply" not in record  # the user has the first reply
    assert record["error_after"].startswith("AssertionError")
    stored = store.get_trajectory(result.trajectory.id)
    assert stored is not None and stored.outcome == Outcome.FAILED
    assert stored.failure_reason is not None
    assert "fails the request's own example" in stored.failure_reason


def test_a_second_redraw_comes_only_after_the_first_failed_too(
    make: Callable[..., ChatPipeline],
) -> None:
    also_wrong = "```python\ndef count_evens(xs):\n    return 0\n```"
    model = ScriptedModel([WRONG, also_wrong, RIGHT])
    result = make(model, example_redraws=2).handle([user(REQUEST)], session_id="s")
    assert result.reply == RIGHT
    record = result.trajectory.extra["examples"]
    assert record["redraw"] == "fixed" and record["redraws"] == 2 and record["repaired"]
    assert record["first_reply"] == WRONG and result.trajectory.n_steps == 3
    first, second, third = model.calls
    assert second.messages == third.messages  # the same request each time, nothing shown
    assert second.temperature == pytest.approx(first.temperature + REDRAW_TEMPERATURE_STEP)
    assert third.temperature == pytest.approx(first.temperature + 2 * REDRAW_TEMPERATURE_STEP)
    assert len({first.seed, second.seed, third.seed}) == 3
    # a first redraw that passes ends it: no third call
    model = ScriptedModel([WRONG, RIGHT, "never used"])
    fixed = make(model, example_redraws=2).handle([user(REQUEST)], session_id="t")
    assert fixed.reply == RIGHT and len(model.calls) == 2
    assert fixed.trajectory.extra["examples"]["redraws"] == 1
    # one redraw at most when asked for one
    model = ScriptedModel([WRONG, also_wrong, "never used"])
    once = make(model, example_redraws=1).handle([user(REQUEST)], session_id="u")
    assert once.reply == WRONG and len(model.calls) == 2
    assert once.trajectory.extra["examples"]["redraws"] == 1


def test_redraws_out_of_range_are_refused() -> None:
    from nightschool.agent import AgentConfig
    from nightschool.agent._types import MAX_EXAMPLE_REDRAWS
    from nightschool.errors import UserError

    with pytest.raises(UserError, match="example_redraws"):
        AgentConfig(example_redraws=MAX_EXAMPLE_REDRAWS + 1)
    with pytest.raises(UserError, match="example_redraws"):
        AgentConfig(example_redraws=-1)


def test_redraw_off_runs_the_examples_and_asks_nothing(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([WRONG, "never used"])
    result = make(model, check_examples=False).handle([user(REQUEST)], session_id="s")
    assert result.reply == WRONG and len(model.calls) == 1
    assert result.trajectory.extra["examples"]["redraw"] == "off"
    assert result.trajectory.outcome == Outcome.FAILED


def test_a_redraw_without_code_keeps_the_first_reply(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([WRONG, "I cannot help with that.", "Nor can I."])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == WRONG
    assert result.trajectory.extra["examples"]["redraw"] == "no code"


def test_a_model_outage_during_the_redraw_is_an_infrastructure_error(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel([WRONG, ModelUnavailableError("server gone")])
    with pytest.raises(ModelUnavailableError):
        make(model).handle([user(REQUEST)], session_id="s")
    [stored] = list(store.iter_trajectories())
    assert stored.outcome == Outcome.UNKNOWN and stored.failure_reason is None
    assert stored.infrastructure_error == "ModelUnavailableError: server gone"
    assert stored.extra["examples"]["redraw"] == "unavailable"
    assert stored.final_response == WRONG
