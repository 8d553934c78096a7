from __future__ import annotations

from collections.abc import Sequence

import pytest

from nightschool.errors import ModelResponseError, ModelUnavailableError
from nightschool.llm import (
    ChatModel,
    Completion,
    Message,
    NativeToolCall,
    ScriptedModel,
    plain_messages,
    tool_reply,
)

USER: list[Message] = [{"role": "user", "content": "add two numbers please"}]


def test_replies_come_back_in_order_with_word_counts() -> None:
    model = ScriptedModel(["first reply", "second one here"], name="double")
    first = model.complete(USER)
    second = model.complete(USER)
    assert (first.text, second.text) == ("first reply", "second one here")
    assert first.tokens_in == 4 and first.tokens_out == 2
    assert second.tokens_out == 3
    assert first.model == "double" and first.finish_reason == "stop"
    assert first.duration_s == 0.0
    assert model.remaining == 0


def test_exception_items_are_raised_and_the_script_goes_on() -> None:
    outage = ModelUnavailableError("server down", status_code=503)
    model = ScriptedModel(["a", outage, "b"])
    assert model.complete(USER).text == "a"
    with pytest.raises(ModelUnavailableError) as info:
        model.complete(USER)
    assert info.value is outage
    assert model.complete(USER).text == "b"
    assert len(model.calls) == 3


def test_exhausted_script_raises_model_response_error() -> None:
    model = ScriptedModel(["only"])
    model.complete(USER)
    with pytest.raises(ModelResponseError, match="scripted model has no more replies"):
        model.complete(USER)
    with pytest.raises(ModelResponseError):
        ScriptedModel([]).complete(USER)


def test_calls_record_a_copy_of_messages_and_the_kwargs() -> None:
    model = ScriptedModel(["x", "y"])
    messages: list[Message] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    model.complete(messages, temperature=0.0, max_tokens=7, seed=3)
    messages[1]["content"] = "changed later"
    messages.append({"role": "assistant", "content": "extra"})
    model.complete(messages)
    first, second = model.calls
    assert first.messages == (
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    )
    assert (first.temperature, first.max_tokens, first.seed) == (0.0, 7, 3)
    assert (second.temperature, second.max_tokens, second.seed) == (0.2, 512, None)
    assert len(second.messages) == 3


def test_function_backed_model_sees_the_messages() -> None:
    def echo(messages: Sequence[Message]) -> str:
        return messages[-1]["content"].upper()

    model = ScriptedModel(echo)
    assert model.complete(USER).text == "ADD TWO NUMBERS PLEASE"
    assert model.complete([{"role": "user", "content": "again"}]).text == "AGAIN"
    assert model.remaining is None
    assert len(model.calls) == 2


def test_reply_longer_than_max_tokens_is_cut_after_the_last_allowed_word() -> None:
    model = ScriptedModel(["def f():\n    return 1\n\nprint(f())", "short"])
    cut = model.complete(USER, max_tokens=3)
    assert cut.text == "def f():\n    return"
    assert cut.tokens_out == 3 and cut.finish_reason == "length"
    whole = model.complete(USER, max_tokens=1)
    assert whole.text == "short" and whole.finish_reason == "stop"


def test_is_a_chat_model_and_check_is_a_no_op() -> None:
    model = ScriptedModel(["a"])
    assert isinstance(model, ChatModel)
    model.check()
    assert model.calls == []


def test_deterministic_across_instances() -> None:
    script = ["one", "two words", "three little words"]
    models = (ScriptedModel(script), ScriptedModel(script))
    runs = [[model.complete(USER) for _ in script] for model in models]
    assert runs[0] == runs[1]


# -- native tool calls ------------------------------------------------------------------

TOOLS = [{"type": "function", "function": {"name": "list_files", "parameters": {}}}]


def test_supports_tools_is_what_the_script_says() -> None:
    assert not ScriptedModel(["a"]).supports_tools
    assert ScriptedModel(["a"], supports_tools=True).supports_tools


def test_tool_reply_is_served_with_counts_and_the_tools_are_recorded() -> None:
    model = ScriptedModel(
        [tool_reply("list_files", {"path": "."}, text="Looking."), "done"], supports_tools=True
    )
    first = model.complete(USER, tools=TOOLS)
    assert first.text == "Looking." and first.model == "scripted"
    assert first.finish_reason == "tool_calls" and first.tokens_in == 4
    assert first.tokens_out == 1 + 2  # "Looking." and '{"path": "."}'
    [call] = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "list_files", {"path": "."})
    assert model.calls[0].tools == tuple(TOOLS) and model.complete(USER).text == "done"
    assert model.calls[1].tools is None


def test_reply_function_may_return_a_completion_with_bad_arguments() -> None:
    def reply(_messages: Sequence[Message]) -> Completion:
        return tool_reply("read_file", '{"path": ', call_id="x")

    [call] = ScriptedModel(reply).complete(USER).tool_calls
    assert call.arguments == {} and call.raw_arguments == '{"path": '
    assert call.arguments_error is not None


def test_tool_turns_are_recorded_as_copies() -> None:
    call = NativeToolCall.decode("c1", "list_files", {}).to_wire()
    messages: list[Message] = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "(empty)", "tool_call_id": "c1"},
    ]
    model = ScriptedModel(["ok"])
    model.complete(messages)
    messages[1]["tool_calls"][0]["function"]["name"] = "changed"
    recorded = model.calls[0].messages
    assert recorded[1]["tool_calls"][0]["function"]["name"] == "list_files"
    assert recorded[2] == {"role": "tool", "content": "(empty)", "tool_call_id": "c1"}


def test_decode_keeps_what_is_not_an_object() -> None:
    assert NativeToolCall.decode("c", " f ", None).name == "f"
    assert NativeToolCall.decode("c", "f", "").arguments == {}
    listed = NativeToolCall.decode("c", "f", "[1, 2]")
    assert listed.arguments == {} and listed.arguments_error is not None
    assert "JSON object" in listed.arguments_error and listed.raw_arguments == "[1, 2]"
    assert NativeToolCall.decode("c", "f", {"a": 1}).raw_arguments == '{"a": 1}'


def test_plain_messages_turn_tool_turns_into_text() -> None:
    call = NativeToolCall.decode("c1", "list_files", {"path": "."}).to_wire()
    plain = plain_messages(
        [
            {"role": "system", "content": "sys"},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
            {"role": "tool", "content": "a.txt", "tool_call_id": "c1"},
            {"role": "tool", "content": "?", "tool_call_id": "unknown"},
        ]
    )
    assert plain[0] == {"role": "system", "content": "sys"}
    assert plain[1] == {
        "role": "assistant",
        "content": 'Let me look.\n```tool\n{"name": "list_files", "arguments": {"path": "."}}\n```',
    }
    assert plain[2] == {"role": "user", "content": "TOOL RESULT (list_files):\na.txt"}
    assert plain[3]["content"].startswith("TOOL RESULT (tool):")
