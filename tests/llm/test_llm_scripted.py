from __future__ import annotations

from collections.abc import Sequence

import pytest

from nightschool.errors import ModelResponseError, ModelUnavailableError
from nightschool.llm import ChatModel, Message, ScriptedModel

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
