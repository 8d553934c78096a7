"""Native tool calling and tool-call blobs in the step loop, with the scripted model."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.agent.loop import (
    FINAL_STEP_NOTE,
    NATIVE_SYSTEM_PROMPT,
    REPEAT_NOTE,
    blob_correction,
    build_system_prompt,
    detect_blob,
    parse_tool_call,
    run_steps,
    uses_native_tools,
)
from nightschool.agent.tools import (
    EMPTY_DIRECTORY,
    SILENT_PYTHON_NOTE,
    TOOL_SCHEMAS,
    TOOL_SPECS,
    SessionWorkspace,
    usable_workspace_root,
)
from nightschool.feedback import STEP_LIMIT_MARKER
from nightschool.llm import Completion, Message, NativeToolCall, ScriptedModel, tool_reply
from nightschool.sandbox import Sandbox

SOLUTION_BLOB = '{"name": "solution", "arguments": {"code": "def add(a, b):\\n    return a + b"}}'
ADD_CODE = "def add(a, b):\n    return a + b"


def tool(name: str, args: str) -> str:
    return f'```tool\n{{"name": "{name}", "arguments": {args}}}\n```'


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[SessionWorkspace]:
    sandbox = Sandbox()
    root = usable_workspace_root(tmp_path / "r", sandbox)
    yield SessionWorkspace(root / "s", sandbox)
    shutil.rmtree(root, ignore_errors=True)


def start() -> list[Message]:
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def run(model: ScriptedModel, ws: SessionWorkspace, protocol: str, steps: int = 4) -> object:
    return run_steps(
        model,
        ws,
        start(),
        max_steps=steps,
        max_tokens=200,
        temperature=0,
        max_tool_output_chars=500,
        protocol=protocol,  # type: ignore[arg-type]
    )


# -- the tool schemas and the prompt -------------------------------------------------


def test_tool_schemas_match_the_tools() -> None:
    names = [spec["function"]["name"] for spec in TOOL_SCHEMAS]
    assert names == list(TOOL_SPECS)
    for spec in TOOL_SCHEMAS:
        assert spec["type"] == "function"
        params = spec["function"]["parameters"]
        assert params["type"] == "object" and set(params.get("required", ())) <= set(
            params["properties"]
        )
    list_files = TOOL_SCHEMAS[-1]["function"]["parameters"]
    assert "required" not in list_files and "path" in list_files["properties"]
    json.dumps(TOOL_SCHEMAS)  # plain JSON


def test_native_prompt_names_the_tools_without_the_fenced_format() -> None:
    prompt = build_system_prompt(
        "### SKILL PLAYBOOK\n[L1] x",
        "Be terse.",
        worked_examples="### WORKED EXAMPLES\nTask: y",
        protocol="native",
    )
    assert prompt.startswith(NATIVE_SYSTEM_PROMPT.split(":", 1)[0])
    assert "```tool" not in prompt
    assert all(name in prompt for name in TOOL_SPECS)
    order = ["### SKILL PLAYBOOK", "### WORKED EXAMPLES", "Be terse."]
    assert [prompt.index(part) for part in order] == sorted(prompt.index(p) for p in order)
    fenced = build_system_prompt(worked_examples="### WORKED EXAMPLES\nTask: y")
    assert "```tool" in fenced and "### WORKED EXAMPLES" in fenced


def test_uses_native_tools_reads_the_flag() -> None:
    assert uses_native_tools(ScriptedModel(["x"], supports_tools=True))
    assert not uses_native_tools(ScriptedModel(["x"]))

    class Old:  # a wrapper written before the flag existed
        name = "old"

    assert not uses_native_tools(Old())  # type: ignore[arg-type]


# -- native protocol ---------------------------------------------------------------------


def test_native_call_round_trip(ws: SessionWorkspace) -> None:
    model = ScriptedModel(
        [tool_reply("write_file", {"path": "a.txt", "content": "x"}, text="Saving."), "Done."],
        supports_tools=True,
    )
    messages = start()
    result = run_steps(
        model,
        ws,
        messages,
        max_steps=4,
        max_tokens=64,
        temperature=0,
        max_tool_output_chars=500,
        protocol="native",
    )
    assert result.reply == "Done." and result.protocol == "native" and result.n_steps == 2
    assert [c.name for c in result.tool_calls] == ["write_file"]
    assert (ws.path / "a.txt").read_text() == "x"
    assert result.planning == ["Saving."]
    first, second = model.calls
    assert first.tools is not None and [t["function"]["name"] for t in first.tools] == list(
        TOOL_SPECS
    )
    assistant, result_message = second.messages[-2:]
    assert assistant["role"] == "assistant" and assistant["content"] == "Saving."
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert assistant["tool_calls"][0]["function"]["name"] == "write_file"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"])["path"] == "a.txt"
    assert result_message == {
        "role": "tool",
        "content": "wrote 1 bytes to a.txt",
        "tool_call_id": "call_1",
    }
    assert len(messages) == 4


def test_native_mode_runs_several_calls_and_flags_bad_arguments(ws: SessionWorkspace) -> None:
    calls = (
        NativeToolCall.decode("c1", "write_file", {"path": "b.txt", "content": "y"}),
        NativeToolCall.decode("c2", "read_file", '{"path": "b.txt"'),  # cut-off JSON
        NativeToolCall.decode("c3", "list_files", None),
    )
    reply = Completion("", 0, 0, "", 0.0, "tool_calls", calls)
    model = ScriptedModel([reply, "ok"], supports_tools=True)
    result = run(model, ws, "native")
    assert [c.name for c in result.tool_calls] == ["write_file", "read_file", "list_files"]
    bad = result.tool_calls[1]
    assert bad.error is not None and "not valid JSON" in bad.error and bad.arguments == {}
    assert "b.txt (1 bytes)" in (result.tool_calls[2].result or "")
    tool_messages = [m for m in model.calls[1].messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2", "c3"]
    assert tool_messages[1]["content"].startswith("ERROR: arguments are not valid JSON")


def test_native_mode_reads_calls_written_as_text(ws: SessionWorkspace) -> None:
    """Qwen2.5-Coder-0.5B writes its calls in a ```json fence even with native tools."""
    fence = '```json\n{"name": "list_files", "arguments": {"path": "."}}\n```'
    model = ScriptedModel([fence, "Empty."], supports_tools=True)
    result = run(model, ws, "native")
    assert [c.name for c in result.tool_calls] == ["list_files"] and result.reply == "Empty."
    assistant, tool_message = model.calls[1].messages[-2:]
    assert assistant["tool_calls"][0]["id"] == tool_message["tool_call_id"] == "call_1"


def test_native_step_limit_aborts_with_the_marker(ws: SessionWorkspace) -> None:
    model = ScriptedModel(lambda _m: tool_reply("list_files", {}), supports_tools=True)
    result = run(model, ws, "native", steps=3)
    assert result.aborted and result.n_steps == 3 and len(result.tool_calls) == 2
    assert STEP_LIMIT_MARKER in result.reply


# -- tool-call blobs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        SOLUTION_BLOB,
        f"```json\n{SOLUTION_BLOB}\n```",
        f"Here is the solution:\n```python\n{SOLUTION_BLOB}\n```",
        f"<tool_call>\n{SOLUTION_BLOB}\n</tool_call>",
        '{"function": {"name": "solution", "arguments": "{\\"code\\": \\"x = 1\\"}"}}',
        "{'name': 'solution', 'args': {'code': 'x = 1'}}",
        '```tool\n{"name": "solution", "arguments": {"code": "x = 1"}}\n```',
    ],
)
def test_blobs_are_detected(text: str) -> None:
    blob = detect_blob(text)
    if blob is None:  # a tool-tagged fence is a call (to an unknown tool) instead
        call = parse_tool_call(text)
        assert call is not None and call.name == "solution"
        return
    assert blob.name == "solution" and blob.answer in (ADD_CODE, "x = 1")


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        '```json\n{"name": "Alice", "age": 3}\n```',
        '{"name": "Alice", "tool": "hammer"}',
        tool("list_files", "{}"),  # a real tool: a call, not a blob
        "```python\nconfig = {'name': 'x', 'arguments': {'a': 1}}\nprint(config)\n```",
        "x" * 300 + '\n{"name": "solution", "arguments": {"code": "y"}}',
    ],
)
def test_answers_are_not_blobs(text: str) -> None:
    assert detect_blob(text) is None


def test_blob_answer_text_is_code_or_text_never_an_example_input() -> None:
    blob = detect_blob('{"name": "is_palindrome", "arguments": {"s": "racecar"}}')
    assert blob is not None and blob.name == "is_palindrome" and blob.answer == ""
    multi = detect_blob('{"name": "f", "arguments": {"src": "def f():\\n    return 1"}}')
    assert multi is not None and multi.answer == "def f():\n    return 1"


@pytest.mark.parametrize("protocol", ["fenced", "native"])
def test_blob_is_corrected_and_the_loop_goes_on(ws: SessionWorkspace, protocol: str) -> None:
    model = ScriptedModel([SOLUTION_BLOB, f"```python\n{ADD_CODE}\n```"], supports_tools=True)
    result = run(model, ws, protocol)
    assert result.reply == f"```python\n{ADD_CODE}\n```" and result.n_steps == 2
    assert result.blob_replies == 1 and not result.blob_answer and not result.aborted
    assert result.tool_calls == []
    blob_message, correction = model.calls[1].messages[-2:]
    assert blob_message == {"role": "assistant", "content": SOLUTION_BLOB}
    assert correction == {"role": "user", "content": blob_correction("solution")}
    assert "`solution` is not a tool" in correction["content"]
    assert "run_python" in correction["content"] and "code or text itself" in correction["content"]


def test_native_call_to_an_unknown_tool_is_a_blob(ws: SessionWorkspace) -> None:
    model = ScriptedModel(
        [tool_reply("solution", {"code": ADD_CODE}, call_id="c9"), ADD_CODE], supports_tools=True
    )
    result = run(model, ws, "native")
    assert result.reply == ADD_CODE and result.blob_replies == 1 and result.tool_calls == []
    assistant, tool_message = model.calls[1].messages[-2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "solution"
    assert tool_message == {
        "role": "tool",
        "content": blob_correction("solution"),
        "tool_call_id": "c9",
    }


@pytest.mark.parametrize("protocol", ["fenced", "native"])
def test_out_of_steps_the_blobs_code_is_the_answer(ws: SessionWorkspace, protocol: str) -> None:
    model = ScriptedModel(lambda _m: SOLUTION_BLOB, supports_tools=True)
    result = run(model, ws, protocol, steps=2)
    assert result.reply == ADD_CODE and result.final_response == ADD_CODE
    assert result.blob_replies == 2 and result.blob_answer and not result.aborted
    assert len(model.calls) == 2


def test_single_step_blob_gives_its_code(ws: SessionWorkspace) -> None:
    model = ScriptedModel([f"<tool_call>\n{SOLUTION_BLOB}\n</tool_call>"])
    result = run(model, ws, "fenced", steps=1)
    assert result.reply == ADD_CODE and result.blob_answer


def test_blob_without_code_is_never_the_answer(ws: SessionWorkspace) -> None:
    blob = '```json\n{"name": "is_palindrome", "arguments": {"s": "racecar"}}\n```'
    model = ScriptedModel(lambda _m: blob)
    result = run(model, ws, "fenced", steps=2)
    assert result.aborted and STEP_LIMIT_MARKER in result.reply and blob not in result.reply
    assert result.blob_replies == 2


def test_fenced_tool_block_naming_an_unknown_tool_is_a_blob(ws: SessionWorkspace) -> None:
    model = ScriptedModel([tool("solution", '{"code": "x = 1"}'), "x = 1"])
    result = run(model, ws, "fenced")
    assert result.reply == "x = 1" and result.blob_replies == 1 and result.tool_calls == []


# -- lenient parsing additions ------------------------------------------------------------


def test_tool_call_tags_and_a_bare_name_are_calls() -> None:
    tagged = parse_tool_call('Sure.\n<tool_call>\n{"name": "list_files", "arguments": {}}\n')
    assert tagged is not None and tagged.name == "list_files" and tagged.prose == "Sure."
    named = parse_tool_call('list_files {"path": "."}')
    assert named is not None and (named.name, named.arguments) == ("list_files", {"path": "."})
    assert parse_tool_call('hello {"path": "."}') is None


def test_silent_python_gets_a_note(ws: SessionWorkspace) -> None:
    silent = ws.call("run_python", {"code": "2**100"})
    assert silent.error is None and SILENT_PYTHON_NOTE in (silent.result or "")
    loud = ws.call("run_python", {"code": "print(2**100)"})
    assert SILENT_PYTHON_NOTE not in (loud.result or "")


@pytest.mark.parametrize("protocol", ["fenced", "native"])
def test_a_repeated_call_gets_a_nudge(ws: SessionWorkspace, protocol: str) -> None:
    call = '```json\n{"name": "list_files", "arguments": {"path": "."}}\n```'
    model = ScriptedModel([call, call, "Nothing."], supports_tools=True)
    result = run(model, ws, protocol)
    assert result.reply == "Nothing." and len(result.tool_calls) == 2
    first_result = model.calls[1].messages[-1]["content"]
    second_result = model.calls[2].messages[-1]["content"]
    assert REPEAT_NOTE not in first_result and REPEAT_NOTE in second_result
    assert EMPTY_DIRECTORY in first_result


def test_a_call_missing_its_closing_braces_is_still_a_call() -> None:
    """Measured: Qwen2.5-Coder-0.5B stopped one brace short."""
    call = parse_tool_call('{"name": "run_python", "arguments": {"code": "print(2**100)"}')
    assert call is not None and call.arguments == {"code": "print(2**100)"}
    blob = detect_blob('```json\n{"name": "solution", "arguments": {"code": "x = 1"\n```')
    assert blob is not None and blob.answer == "x = 1"


TRIPLE_QUOTED_CALL = (  # Qwen2.5-Coder-1.5B, bench_tool_leak request 4 (shown as the answer)
    '```json\n{\n  "name": "run_python",\n  "arguments": {\n    "code": """\nimport csv\n\n'
    'csv_data = """\nitem,price,qty\napple,0.5,4\npear,0.75,2\n"""\n\n'
    "reader = csv.DictReader(csv_data.strip().splitlines())\n"
    "print(sum(float(r['price']) * int(r['qty']) for r in reader))\n"
    '"""\n  }\n}\n```'
)


def test_a_call_with_triple_quoted_code_is_still_a_call(ws: SessionWorkspace) -> None:
    """The code holds its own triple-quoted string: neither JSON nor a literal reads it."""
    call = parse_tool_call(TRIPLE_QUOTED_CALL)
    assert call is not None and call.name == "run_python"
    assert (
        call.arguments["code"].startswith("\nimport csv")
        and "csv_data = " in call.arguments["code"]
    )
    ran = ws.call("run_python", call.arguments)
    assert ran.error is None and "stdout:\n3.5" in (ran.result or "")
    answer = '```python\ntext = """a\nb"""\nprint(text)\n```'  # code in an answer stays an answer
    assert parse_tool_call(answer) is None and detect_blob(answer) is None
    data = '```json\n{"name": "Ann", "note": """x"""}\n```'  # JSON-ish data naming no tool
    assert parse_tool_call(data) is None and detect_blob(data) is None


@pytest.mark.parametrize("protocol", ["fenced", "native"])
def test_the_last_step_is_told_to_answer(ws: SessionWorkspace, protocol: str) -> None:
    call = '```json\n{"name": "list_files", "arguments": {}}\n```'
    model = ScriptedModel([call, call, "Empty."], supports_tools=True)
    result = run(model, ws, protocol, steps=3)
    assert result.reply == "Empty." and not result.aborted
    second, last = model.calls[1].messages[-1], model.calls[2].messages[-1]
    assert FINAL_STEP_NOTE not in second["content"] and FINAL_STEP_NOTE in last["content"]
    assert last["role"] == "user"
