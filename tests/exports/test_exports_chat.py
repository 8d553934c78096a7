from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.exports._factory import BAD, GOOD, chat, measured, selfplay

from nightschool.cli._records import write_jsonl
from nightschool.exports import Exclusions, Tally, openai_chat_records
from nightschool.trajectory import Outcome, Trajectory

# What OpenAI's chat fine-tuning format allows (its cookbook's "Data preparation and
# analysis for chat model fine-tuning" format checks).
MESSAGE_KEYS = {"role", "content", "name", "function_call", "weight"}
ROLES = {"system", "user", "assistant", "function", "tool"}


def assert_openai_chat_example(example: dict[str, Any]) -> None:
    """The cookbook's format errors, plus our shape: system, user, assistant, non-empty."""
    assert set(example) == {"messages"}, "only `messages` at the top level"
    messages = example["messages"]
    assert isinstance(messages, list) and messages
    for message in messages:
        assert set(message) <= MESSAGE_KEYS and "role" in message and "content" in message
        assert message["role"] in ROLES
        assert isinstance(message["content"], str) and message["content"].strip()
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]


def export(trajectories: list[Trajectory], path: Path, **kwargs: Any) -> list[dict[str, Any]]:
    write_jsonl(openai_chat_records(trajectories, **kwargs), path)
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_passing_solutions_round_trip_as_openai_chat_jsonl(tmp_path: Path) -> None:
    retried = selfplay([(BAD, "failed"), (GOOD, "passed")], challenge="one")
    first_try = selfplay([(GOOD, "passed")], challenge="two", prompt="Write add again.")
    failed = selfplay([(BAD, "failed")], challenge="three", prompt="Other task.")
    conversation = chat()
    tally = Tally()
    examples = export([retried, failed, first_try, conversation], tmp_path / "x.jsonl", tally=tally)
    for example in examples:
        assert_openai_chat_example(example)
    assert len(examples) == tally.written == 3
    system, user, assistant = examples[0]["messages"]
    assert system["content"] == retried.system_prompt
    assert user["content"] == retried.user_request
    assert assistant["content"] == f"```python\n{GOOD.strip()}\n```"  # the passing program
    assert examples[1]["messages"][1]["content"] == "Write add again."
    assert examples[2]["messages"][2]["content"] == conversation.final_response
    assert tally.skipped == {"failed (not passed)": 1}


def test_what_is_left_out_and_why(tmp_path: Path) -> None:
    kept = selfplay([(GOOD, "passed")], challenge="kept", prompt="Kept task.")
    items = [
        kept,
        selfplay([(GOOD, "passed")], challenge="kept", prompt="Kept task."),  # duplicate
        selfplay([("def add(a, b):\n    return sum((a, b))\n", "passed")], prompt="Kept task."),
        selfplay([(GOOD, "passed")], challenge="evalhash", prompt="Eval task."),
        measured("eval", challenge="evalhash", prompt="Eval task."),
        chat(tools=True),
        chat(answer="   "),
        selfplay([(BAD, "failed")], outcome=Outcome.UNKNOWN),
    ]
    exclusions = Exclusions.from_trajectories([items[4]])
    tally = Tally()
    examples = export(items, tmp_path / "x.jsonl", exclusions=exclusions, tally=tally)
    assert len(examples) == 2  # `kept`, and the third: another program
    assert all("Eval task." not in json.dumps(e) for e in examples)
    assert tally.skipped == {
        "duplicate examples": 1,
        "eval, verification or held-out item": 2,
        "chat turns that used tools": 1,
        "chat turns without a final response": 1,
        "unknown (not passed)": 1,
    }


def test_same_program_reformatted_is_a_duplicate() -> None:
    spaced = "def add(a, b):\n\n    # sum\n    return a + b\n"
    items = [selfplay([(GOOD, "passed")]), selfplay([(spaced, "passed")])]
    tally = Tally()
    assert len(list(openai_chat_records(items, tally=tally))) == 1
    assert tally.skipped == {"duplicate examples": 1}


def test_export_redacts_again_with_current_rules() -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    leaky = selfplay(
        [(f'API_KEY = "{key}"\n' + GOOD, "passed")],
        prompt="Mail alice@example.com the sum; key " + key,
    )
    [example] = openai_chat_records([leaky])
    text = json.dumps(example)
    assert key not in text and "alice@example.com" not in text
    assert "<REDACTED_EMAIL>" in text and "<REDACTED" in example["messages"][2]["content"]


def test_a_human_correction_to_passed_exports_the_last_program() -> None:
    from nightschool.trajectory import Correction, apply_correction

    failed = selfplay([(BAD, "failed")])
    corrected = apply_correction(
        failed,
        Correction(
            trajectory_id=failed.id, outcome=Outcome.PASSED, source="user", authority="human"
        ),
    )
    [example] = openai_chat_records([corrected])
    assert example["messages"][2]["content"] == f"```python\n{BAD.strip()}\n```"
