"""A request to write code answered without code is asked once more for the code."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from nightschool.agent import ChatPipeline
from nightschool.agent._missing_code import (
    MISSING_CODE_NOTE,
    asks_for_code,
    has_code,
    missing_code_note,
    requested_language,
)
from nightschool.errors import ModelUnavailableError
from nightschool.llm import Message, ScriptedModel
from nightschool.store import Store
from nightschool.trajectory import Outcome

REQUEST = (
    "Write a complete Python program that reads text from standard input and prints "
    "the number of words in it."
)
RUN_IT = (  # the agent runs its program first (measured: on no input)
    '```tool\n{"name": "run_python", "arguments": {"code": '
    '"import sys\\nprint(len(sys.stdin.read().split()))"}}\n```'
)
OUTPUT_ONLY = "The number of words in the input is 0."  # measured, Qwen2.5-Coder-1.5B
PLACEHOLDER = "```python\n# Your Python code here\n```"  # measured, the FizzBuzz request
PROGRAM = "```python\nimport sys\nprint(len(sys.stdin.read().split()))\n```"


def user(text: str) -> Message:
    return {"role": "user", "content": text}


@pytest.mark.parametrize(
    "request_text",
    [
        REQUEST,
        "Implement a function that returns the n-th Fibonacci number.",
        "write me some python code to parse a date",
        "Can you create a bash script that backs up my home folder?",
    ],
)
def test_requests_to_write_code_are_recognised(request_text: str) -> None:
    assert asks_for_code(request_text)


@pytest.mark.parametrize(
    "request_text",
    [
        "What does this function do?\n\ndef f(x): return x * 2",
        "What is the capital of France?",
        "Explain the code below line by line.",
        "Why does my program crash with a KeyError?",
    ],
)
def test_other_requests_are_not(request_text: str) -> None:
    assert not asks_for_code(request_text)


def test_a_placeholder_or_prose_is_not_code() -> None:
    assert not has_code(OUTPUT_ONLY)
    assert not has_code(PLACEHOLDER)
    assert not has_code("```python\npass\n```\n```\n...\n```")
    assert has_code(PROGRAM)
    assert has_code("Here:\n```bash\ntar czf home.tgz ~\n```")


@pytest.mark.parametrize(
    ("request_text", "language"),
    [
        ("Write a Python program that sums the numbers on stdin.", "python"),
        ("Write a program that sums the numbers on stdin.", "python"),
        ("Create a bash script that archives my home directory.", "bash"),
        ("Write a shell script to count the lines of every file.", "bash"),
        ("Write a Python function that runs a bash command.", "python"),
        ("Write an SQL query for the top 3 customers.", "sql"),
        ("Write a function that parses a query string.", "python"),
        ("Create a Node.js script that prints the date.", "javascript"),
    ],
)
def test_the_follow_up_names_the_requested_language(request_text: str, language: str) -> None:
    assert requested_language(request_text) == language
    assert f"```{language} block" in missing_code_note(request_text)


def test_a_python_request_gets_the_measured_wording() -> None:
    assert missing_code_note(REQUEST) == MISSING_CODE_NOTE


# -- in a chat turn (the real sandbox and store, a scripted model) ---------------------


@pytest.fixture
def make(make_pipeline: Callable[..., ChatPipeline]) -> Callable[..., ChatPipeline]:
    return functools.partial(make_pipeline, verify=False, wake_up=False)


@pytest.mark.parametrize("without_code", [OUTPUT_ONLY, PLACEHOLDER])
def test_a_code_request_answered_without_code_is_asked_for_it_once(
    make: Callable[..., ChatPipeline], store: Store, without_code: str
) -> None:
    model = ScriptedModel([RUN_IT, without_code, PROGRAM])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == PROGRAM
    stored = store.get_trajectory(result.trajectory.id)
    assert stored is not None and stored.final_response == PROGRAM
    assert stored.extra["missing_code"] == {"redraw": "kept"}
    assert stored.n_steps == 3 and len(result.tool_calls) == 1
    follow_up = model.calls[2]
    assert follow_up.tools is None  # a direct answer: nothing more to run
    assert [m["role"] for m in follow_up.messages] == ["system", "user", "assistant", "user"]
    assert follow_up.messages[-2]["content"] == without_code
    assert follow_up.messages[-1]["content"] == MISSING_CODE_NOTE


def test_a_bash_request_is_asked_for_a_bash_block(make: Callable[..., ChatPipeline]) -> None:
    script = "```bash\ntar czf home.tgz ~\n```"
    model = ScriptedModel([PLACEHOLDER, script])
    request = "Create a bash script that archives my home directory."
    result = make(model).handle([user(request)], session_id="s")
    assert result.reply == script
    assert model.calls[1].messages[-1]["content"] == missing_code_note(request)
    assert "```bash block" in model.calls[1].messages[-1]["content"]


def test_a_follow_up_without_code_keeps_the_first_reply(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel([OUTPUT_ONLY, "Sorry, I cannot."])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == OUTPUT_ONLY
    assert result.trajectory.extra["missing_code"] == {"redraw": "no code"}
    assert result.trajectory.n_steps == 2


def test_code_in_the_reply_or_a_request_for_no_code_costs_nothing(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([PROGRAM, "Paris.", "never used"])
    pipe = make(model)
    coded = pipe.handle([user(REQUEST)], session_id="a")
    assert coded.reply == PROGRAM and "missing_code" not in coded.trajectory.extra
    unrelated = pipe.handle([user("What is the capital of France?")], session_id="b")
    assert unrelated.reply == "Paris." and "missing_code" not in unrelated.trajectory.extra
    assert len(model.calls) == 2


def test_the_follow_up_can_be_turned_off(make: Callable[..., ChatPipeline]) -> None:
    model = ScriptedModel([OUTPUT_ONLY, "never used"])
    result = make(model, ask_for_missing_code=False).handle([user(REQUEST)], session_id="s")
    assert result.reply == OUTPUT_ONLY and "missing_code" not in result.trajectory.extra
    assert len(model.calls) == 1


def test_a_model_outage_during_the_follow_up_is_an_infrastructure_error(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel([OUTPUT_ONLY, ModelUnavailableError("server gone")])
    with pytest.raises(ModelUnavailableError):
        make(model).handle([user(REQUEST)], session_id="s")
    [stored] = list(store.iter_trajectories())
    assert stored.outcome == Outcome.UNKNOWN and stored.failure_reason is None
    assert stored.infrastructure_error == "ModelUnavailableError: server gone"
    assert stored.extra["missing_code"] == {"redraw": "unavailable"}
