from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.agent.loop import (
    build_system_prompt,
    conversation_window,
    parse_tool_call,
    run_steps,
)
from nightschool.agent.tools import TOOL_SPECS, SessionWorkspace, usable_workspace_root
from nightschool.errors import ModelUnavailableError
from nightschool.feedback import STEP_LIMIT_MARKER
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox


def tool(name: str, args: str) -> str:
    return f'```tool\n{{"name": "{name}", "arguments": {args}}}\n```'


# -- parsing -----------------------------------------------------------------------


def test_parses_the_documented_format() -> None:
    call = parse_tool_call(tool("run_python", '{"code": "print(1)"}'))
    assert call is not None
    assert (call.name, call.arguments, call.prose) == ("run_python", {"code": "print(1)"}, "")


@pytest.mark.parametrize(
    "text",
    [
        'Let me check.\n```json\n{"name": "list_files", "arguments": {"path": "."}}\n```',
        '```\n{"tool": "list_files", "args": {"path": "."}}\n```',
        '{"name": "list_files", "parameters": {"path": "."}}',
        'Sure: {"name": "list_files", "arguments": "{\\"path\\": \\".\\"}"}',
        "```tool\n{'name': 'list_files', 'arguments': {'path': '.'}}\n```",
        '```tool\n{"function": {"name": "list_files", "arguments": "{\\"path\\": \\".\\"}"}}\n```',
        '```tool\n{"name": "list_files", "path": "."}\n```',
        '```tool\n{"name": "list_files", "arguments": {"path": "."}}',  # unterminated fence
        '```tool_call\n{"name": " list_files ", "input": {"path": "."}} trailing junk\n```',
    ],
)
def test_parses_leniently(text: str) -> None:
    call = parse_tool_call(text)
    assert call is not None, text
    assert call.name == "list_files"
    assert call.arguments == {"path": "."}


def test_string_arguments_go_to_the_primary_argument() -> None:
    call = parse_tool_call('```tool\n{"name": "run_shell", "arguments": "ls -la"}\n```')
    assert call is not None and call.arguments == {"command": "ls -la"}


def test_prose_around_a_call_is_kept() -> None:
    call = parse_tool_call("I will list.\n" + tool("list_files", "{}") + "\nthen answer")
    assert call is not None and call.prose == "I will list.\n\nthen answer"


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        "```python\nprint('hello')\n```",
        "```bash\nfind . -name '*.py' | xargs wc -l\n```",
        '```json\n{"result": 3}\n```',
        "```tool\nnot json at all\n```",
        "",
        'Here is code:\n```python\nx = {"name": "y"}\n```',
        '```json\n{"name": "Alice", "age": 3}\n```',
        'As JSON: {"name": "Alice", "tool": "hammer"}',
        '```\n{"name": "config.yaml", "port": 8080}\n```',
    ],
)
def test_anything_else_is_a_final_answer(text: str) -> None:
    assert parse_tool_call(text) is None


# -- prompt and history ------------------------------------------------------------


def test_system_prompt_lists_tools_playbook_and_client_instructions() -> None:
    prompt = build_system_prompt("### SKILL PLAYBOOK\n[L1] When x: instead y.", "Be terse.")
    for name in TOOL_SPECS:
        assert name in prompt
    assert "```tool" in prompt and '"name": "run_python"' in prompt
    assert prompt.index("### SKILL PLAYBOOK") < prompt.index("Be terse.")
    assert "### SKILL PLAYBOOK" not in build_system_prompt()


def test_conversation_window_keeps_newest_and_starts_with_user() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "a" * 500},
        {"role": "assistant", "content": "b" * 500},
        {"role": "user", "content": "c" * 50},
        {"role": "assistant", "content": "d" * 50},
        {"role": "user", "content": "now"},
    ]
    window = conversation_window(messages, 700)
    assert [m["content"][0] for m in window] == ["c", "d", "n"]
    assert conversation_window(messages, 10_000)[0]["content"].startswith("a")
    huge = conversation_window([{"role": "user", "content": "x" * 5000}], 200)
    assert len(huge) == 1 and len(huge[0]["content"]) < 300


# -- the step loop -----------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[SessionWorkspace]:
    sandbox = Sandbox()
    root = usable_workspace_root(tmp_path / "r", sandbox)
    yield SessionWorkspace(root / "s", sandbox)
    shutil.rmtree(root, ignore_errors=True)


def start() -> list[Message]:
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def test_tool_round_then_answer(ws: SessionWorkspace) -> None:
    model = ScriptedModel([tool("write_file", '{"path": "a.txt", "content": "x"}'), "Done."])
    messages = start()
    run = run_steps(
        model, ws, messages, max_steps=4, max_tokens=64, temperature=0, max_tool_output_chars=500
    )
    assert run.reply == "Done." and not run.aborted and run.n_steps == 2
    assert [c.name for c in run.tool_calls] == ["write_file"]
    assert (ws.path / "a.txt").read_text() == "x"
    second = model.calls[1].messages
    assert second[-1]["role"] == "user" and second[-1]["content"].startswith(
        "TOOL RESULT (write_file)"
    )
    assert run.tokens_out > 0 and len(messages) == 4


def test_step_limit_aborts_with_the_marker(ws: SessionWorkspace) -> None:
    model = ScriptedModel(lambda _m: tool("list_files", "{}"))
    run = run_steps(
        model, ws, start(), max_steps=3, max_tokens=64, temperature=0, max_tool_output_chars=500
    )
    assert run.aborted and run.n_steps == 3
    assert len(run.tool_calls) == 2  # the last reply's call is not run: nobody would read it
    assert STEP_LIMIT_MARKER in run.final_response and run.reply == run.final_response


def test_model_fault_is_kept_not_raised(ws: SessionWorkspace) -> None:
    model = ScriptedModel([tool("list_files", "{}"), ModelUnavailableError("down")])
    run = run_steps(
        model, ws, start(), max_steps=3, max_tokens=64, temperature=0, max_tool_output_chars=500
    )
    assert isinstance(run.infrastructure_error, ModelUnavailableError)
    assert len(run.tool_calls) == 1 and run.n_steps == 1
