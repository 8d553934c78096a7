"""The agent's tool names in a code reply: the check, the one repair call, the prompt note."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from nightschool.agent import (
    PROGRAMS_NOTE,
    ChatPipeline,
    build_system_prompt,
    find_tool_leaks,
    leak_sites,
    mentioned_names,
)
from nightschool.agent._leak import code_blocks, leak_note
from nightschool.agent.loop import DIRECT_SYSTEM_PROMPT
from nightschool.agent.tools import TOOL_SPECS
from nightschool.errors import ModelUnavailableError
from nightschool.llm import Message, ScriptedModel
from nightschool.store import Store
from nightschool.trajectory import Outcome

REQUEST = "Write a complete Python program that reads numbers from stdin and prints their sum."
LEAKY = (
    "Here is the program:\n```python\nimport sys\n\ndef run_python(code):\n    exec(code)\n\n"
    "run_python('print(sum(map(int, sys.stdin.read().split())))')\n```"
)
CLEAN = (
    "Here is the program:\n```python\nimport sys\n\n"
    "print(sum(map(int, sys.stdin.read().split())))\n```"
)
STILL_LEAKY = "```python\nfrom tools import read_file\nprint(read_file('numbers.txt'))\n```"


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def tool(name: str, args: str) -> str:
    return f'```tool\n{{"name": "{name}", "arguments": {args}}}\n```'


@pytest.fixture
def make(make_pipeline: Callable[..., ChatPipeline]) -> Callable[..., ChatPipeline]:
    return functools.partial(make_pipeline, verify=False, wake_up=False)


# -- the check ---------------------------------------------------------------------


def test_definitions_imports_and_calls_are_found_with_ast() -> None:
    code = (
        "import run_shell\nfrom tools import read_file as rf\nfrom self_play import x\n"
        "def write_file(p, t):\n    pass\nclass list_files:\n    pass\n"
        "stop_self_play = None\nagent.run_python('1')\n"
    )
    sites = {(site.name, site.kind, site.line) for site in leak_sites(code)}
    assert sites == {
        ("run_shell", "import", 1),
        ("read_file", "import", 2),
        ("self_play", "import", 3),
        ("write_file", "def", 4),
        ("list_files", "def", 6),
        ("stop_self_play", "def", 8),
        ("run_python", "call", 9),
    }


def test_names_in_strings_comments_and_parameters_are_not_leaks_when_the_code_parses() -> None:
    code = (
        "# call run_python here\ndef f(read_file):\n    return read_file\n"
        "print('run_shell(x)', \"self_play()\")\n"
    )
    assert leak_sites(code) == []


def test_code_that_does_not_parse_falls_back_to_patterns() -> None:
    code = "def run_shell(cmd)\n    return 1\nfiles = list_files('.')\nfor x in y print(x)\n"
    kinds = {(site.name, site.kind) for site in leak_sites(code)}
    assert ("run_shell", "def") in kinds and ("list_files", "call") in kinds
    assert leak_sites("function read_file(path) { return 1; }") != []


def test_every_fenced_block_is_read_and_prose_is_not() -> None:
    reply = (
        "Use the read_file tool? No: run_python(x) is mine.\n```python\nprint(1)\n```\n"
        "and\n```\nself_play()\n```\nthen ```python\nlist_files()\n"  # last fence unclosed
    )
    assert len(code_blocks(reply)) == 3
    assert find_tool_leaks(reply) == ("list_files", "self_play")


def test_a_reply_without_fences_is_read_whole_only_when_it_is_code() -> None:
    assert find_tool_leaks("def self_play():\n    pass\n\nself_play()\n") == ("self_play",)
    assert find_tool_leaks("I would call read_file(path) to look at it.") == ()
    assert code_blocks("run_python") == []


def test_names_the_user_mentions_are_not_leaks() -> None:
    reply = "```python\ndef read_file(path):\n    return open(path).read()\nrun_shell()\n```"
    assert mentioned_names("Write read_file(path), please; not readfile") == {"read_file"}
    assert find_tool_leaks(reply) == ("read_file", "run_shell")
    assert find_tool_leaks(reply, allowed="a function called read_file") == ("run_shell",)
    assert find_tool_leaks(reply, allowed="read_files and my_read_file") == (
        "read_file",
        "run_shell",
    )


def test_the_note_names_the_leaked_tools() -> None:
    note = leak_note(["read_file", "run_python"])
    assert "`read_file`, `run_python`" in note and "self-contained" in note


# -- the prompt --------------------------------------------------------------------


def test_both_tool_prompts_say_tools_do_not_exist_inside_programs() -> None:
    for protocol in ("fenced", "native"):
        prompt = build_system_prompt(protocol=protocol, tools=TOOL_SPECS)  # type: ignore[arg-type]
        assert PROGRAMS_NOTE in prompt
    direct = build_system_prompt(tools={})
    assert PROGRAMS_NOTE not in direct and direct.startswith(DIRECT_SYSTEM_PROMPT)


# -- the repair in a chat turn ----------------------------------------------------------


@pytest.mark.parametrize("native", [False, True])
def test_a_reply_defining_run_python_is_repaired(
    make: Callable[..., ChatPipeline], store: Store, native: bool
) -> None:
    model = ScriptedModel([LEAKY, CLEAN], supports_tools=native)
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == CLEAN
    stored = store.get_trajectory(result.trajectory.id)
    assert stored is not None and stored.final_response == CLEAN
    assert stored.extra["tool_leak"] == {
        "names": ["run_python"],
        "repair": "fixed",
        "repaired": True,
    }
    assert stored.n_steps == 2 and stored.extra["finish_reasons"] == ["stop", "stop"]
    assert result.tokens_out == len(LEAKY.split()) + len(CLEAN.split())
    repair = model.calls[1]
    assert repair.tools is None  # no tools offered to the rewrite
    roles = [m["role"] for m in repair.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert repair.messages[0]["content"].startswith(DIRECT_SYSTEM_PROMPT)
    assert repair.messages[2]["content"] == LEAKY
    assert repair.messages[3]["content"] == leak_note(["run_python"])


def test_a_clean_reply_is_untouched_and_costs_no_extra_call(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([CLEAN, "never used"])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == CLEAN and len(model.calls) == 1
    assert "tool_leak" not in result.trajectory.extra
    assert result.trajectory.n_steps == 1


def test_a_request_that_names_read_file_is_not_flagged(
    make: Callable[..., ChatPipeline],
) -> None:
    reply = "```python\ndef read_file(path):\n    with open(path) as f:\n"
    reply += "        return f.read()\n```"
    asked = "Write a Python function read_file(path) that returns the text of a file."
    model = ScriptedModel([reply, reply, "```python\nprint(1)\n```"])
    pipe = make(model)
    result = pipe.handle([user(asked)], session_id="s")
    assert result.reply == reply and len(model.calls) == 1
    assert "tool_leak" not in result.trajectory.extra
    # the same reply to a request that does not name it is a leak
    other = pipe.handle([user("Write a program that prints a file.")], session_id="t")
    assert other.trajectory.extra["tool_leak"]["names"] == ["read_file"]
    assert len(model.calls) == 3


def test_an_earlier_user_message_naming_the_tool_also_counts(
    make: Callable[..., ChatPipeline],
) -> None:
    reply = "```python\ndef list_files(d):\n    import os\n    return os.listdir(d)\n```"
    model = ScriptedModel([reply])
    history = [
        user("I need a function list_files(d)."),
        {"role": "assistant", "content": "Sure, what should it return?"},
        user("The names in the directory, as a list."),
    ]
    result = make(model).handle(history, session_id="s")  # type: ignore[arg-type]
    assert result.reply == reply and len(model.calls) == 1


def test_a_repair_that_still_leaks_keeps_the_original_and_says_so(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([LEAKY, STILL_LEAKY])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == LEAKY
    assert result.trajectory.final_response == LEAKY
    assert result.trajectory.extra["tool_leak"] == {
        "names": ["run_python"],
        "repair": "still leaks",
        "repaired": False,
        "names_after": ["read_file"],
    }
    assert result.trajectory.n_steps == 2  # the call was made and is counted


@pytest.mark.parametrize(
    "answer",
    ["Sorry, I cannot do that.", tool("run_python", '{"code": "print(1)"}'), ""],
)
def test_a_repair_without_code_keeps_the_original(
    make: Callable[..., ChatPipeline], answer: str
) -> None:
    model = ScriptedModel([LEAKY, answer])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == LEAKY
    assert result.trajectory.extra["tool_leak"]["repair"] == "no code"
    assert result.tool_calls == ()  # a call in the rewrite is never run


def test_repair_off_records_the_leak_and_makes_no_call(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([LEAKY, CLEAN])
    result = make(model, repair_tool_leaks=False).handle([user(REQUEST)], session_id="s")
    assert result.reply == LEAKY and len(model.calls) == 1
    assert result.trajectory.extra["tool_leak"] == {
        "names": ["run_python"],
        "repair": "off",
        "repaired": False,
    }


def test_a_model_outage_during_the_repair_is_an_infrastructure_error(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel([LEAKY, ModelUnavailableError("server gone")])
    with pytest.raises(ModelUnavailableError):
        make(model).handle([user(REQUEST)], session_id="s")
    [stored] = list(store.iter_trajectories())
    assert stored.outcome == Outcome.UNKNOWN and stored.failure_reason is None
    assert stored.infrastructure_error == "ModelUnavailableError: server gone"
    assert stored.extra["tool_leak"]["repair"] == "unavailable"
    assert stored.final_response == LEAKY and stored.n_steps == 1


def test_the_repair_follows_tool_rounds_and_counts_as_a_step(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([tool("run_python", '{"code": "print(6)"}'), LEAKY, CLEAN])
    result = make(model).handle([user(REQUEST)], session_id="s")
    assert result.reply == CLEAN
    assert [call.name for call in result.tool_calls] == ["run_python"]
    assert result.trajectory.n_steps == 3
    repair_roles = [m["role"] for m in model.calls[2].messages]
    assert repair_roles == ["system", "user", "assistant", "user"]  # tool rounds left out
