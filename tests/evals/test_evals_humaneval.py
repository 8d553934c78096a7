"""HumanEval suite: offline data, code extraction, scoring in the real sandbox."""

from __future__ import annotations

import pytest

from nightschool.evals import AgentReply, get_suite
from nightschool.evals._humaneval import (
    build_program,
    extract_completion,
    load_problems,
    run_program,
    score_reply,
)
from nightschool.sandbox import Sandbox

PICKED = (0, 2, 10, 32, 53, 101, 163)
"""Problems with helpers in the prompt (10: is_palindrome, 32: poly), float math, and the last."""


def reply(text: str) -> AgentReply:
    return AgentReply(text=text)


def full_function(index: int) -> str:
    problem = load_problems()[index]
    source = problem.prompt + problem.canonical_solution
    start = source.index(f"def {problem.entry_point}(")
    return source[start:]


def test_all_164_problems_load_offline_in_order() -> None:
    problems = load_problems()
    assert len(problems) == 164
    assert [p.task_id for p in problems] == [f"HumanEval/{k}" for k in range(164)]
    suite = get_suite("humaneval")
    assert [t.id for t in suite.tasks] == [p.task_id for p in problems]
    assert problems[0].prompt in suite.tasks[0].prompt


@pytest.mark.parametrize("index", PICKED)
def test_canonical_solution_passes_as_body_and_as_full_function(
    sandbox: Sandbox, index: int
) -> None:
    problem = load_problems()[index]
    body = f"```python\n{problem.canonical_solution}\n```"
    assert score_reply(problem, reply(body), sandbox).passed
    full = f"Here it is:\n```python\n{full_function(index)}\n```\nDone."
    assert score_reply(problem, reply(full), sandbox).passed
    assert score_reply(problem, reply(problem.canonical_solution), sandbox).passed  # unfenced


@pytest.mark.parametrize("index", PICKED)
def test_wrong_solution_fails_with_the_reason(sandbox: Sandbox, index: int) -> None:
    problem = load_problems()[index]
    wrong = f"```python\ndef {problem.entry_point}(*args, **kwargs):\n    return None\n```"
    score = score_reply(problem, reply(wrong), sandbox)
    assert not score.passed and score.score == 0.0
    assert score.error


def test_reply_without_code_fails(sandbox: Sandbox) -> None:
    score = score_reply(load_problems()[0], reply("I am not sure."), sandbox)
    assert not score.passed and score.error == "no code in reply"


def test_lone_return_line_is_a_body() -> None:
    assert extract_completion("return a + b") == "return a + b\n"


def test_unindented_body_is_indented_under_the_signature() -> None:
    problem = load_problems()[53]  # add(x, y)
    program = build_program(problem, "return x + y")
    assert "    return x + y" in program and program.rstrip().endswith("check(add)")


def test_hanging_solution_times_out(sandbox: Sandbox) -> None:
    problem = load_problems()[53]
    score = run_program(sandbox, build_program(problem, "while True:\n    pass"), timeout_s=1.0)
    assert not score.passed and "timed out" in (score.error or "")


def test_task_code_has_no_network_in_the_sandbox(sandbox: Sandbox) -> None:
    """A completion that needs the network fails: the sandbox has no route anywhere."""
    problem = load_problems()[53]
    body = (
        "import socket\n"
        "s = socket.socket()\n"
        "s.settimeout(3)\n"
        "s.connect(('1.1.1.1', 80))\n"
        "return x + y"
    )
    score = run_program(sandbox, build_program(problem, body))
    assert not score.passed
    assert "unreachable" in (score.error or "").lower() or "OSError" in (score.error or "")


@pytest.mark.parametrize(
    "tail",
    ["import sys\nsys.exit(0)", "import unittest\nunittest.main()", "exit()"],
    ids=["sys.exit", "unittest.main", "exit"],
)
def test_a_reply_that_exits_before_check_fails(sandbox: Sandbox, tail: str) -> None:
    """Exit status 0 is no proof: the program must reach the end, after `check` ran."""
    problem = load_problems()[53]  # add(x, y)
    wrong = f"```python\ndef add(x, y):\n    return x - y\n\n{tail}\n```"
    score = score_reply(problem, reply(wrong), sandbox)
    assert not score.passed and score.score == 0.0
    right = "```python\ndef add(x, y):\n    return x + y\n```"
    assert score_reply(problem, reply(right), sandbox).passed
