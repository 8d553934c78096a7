"""Chat turns through the chat router: `direct` (one call, no tools) or `full` (the loop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from nightschool.agent import ChatPipeline
from nightschool.agent.loop import DIRECT_SYSTEM_PROMPT
from nightschool.learn.chat_router import ChatRouter, ChatRouterConfig, ChatRouterParams
from nightschool.llm import Message, ScriptedModel
from nightschool.llm.scripted import tool_reply
from nightschool.store import Store

CONFIRMED = "VERDICT: CONFIRMED\nCONFIDENCE: 0.9\nNOTE: fine."


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def tool(name: str, args: str) -> str:
    return f'```tool\n{{"name": "{name}", "arguments": {args}}}\n```'


@pytest.fixture
def make(make_pipeline: Callable[..., ChatPipeline]) -> Callable[..., ChatPipeline]:
    def make_routed(
        model: ScriptedModel, router: ChatRouter | None = None, **config: Any
    ) -> ChatPipeline:
        return make_pipeline(model, router=router, **config)

    return make_routed


class Arithmetic:
    """An embedder: requests about sums land near each other, anything else far away."""

    name = "arithmetic"

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [[1.0, 0.0] if "sum" in t else [0.0, 1.0] for t in texts]
        return np.array(rows, dtype=np.float32)


def trained_router() -> ChatRouter:
    """Known requests: sums pass when answered directly; the others only through the loop."""
    vectors = np.array([[1.0, 0.0]] * 5 + [[0.6, 0.8]] * 5, dtype=np.float32)
    params = ChatRouterParams(
        "arithmetic",
        vectors,
        np.array([1] * 5 + [0] * 5, dtype=np.float32),
        np.array([1] * 10, dtype=np.float32),
        ChatRouterConfig(k=5),
    )
    return ChatRouter(params, Arithmetic())


def test_without_a_router_every_turn_runs_the_loop_and_says_so(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel([tool("run_python", '{"code": "print(1 + 1)"}'), "2", CONFIRMED])
    result = make(model).handle([user("what is 1+1? use python")], session_id="s")
    router = result.trajectory.extra["router"]
    assert router["decision"] == "full" and router["reason"] == "no chat router"
    assert "```tool" in model.calls[0].messages[0]["content"]
    assert len(result.tool_calls) == 1 and result.trajectory.extra["verifier"]["verdict"]


def test_direct_is_one_call_without_tools_or_verifier(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel(["def add(a, b):\n    return a + b"])
    pipe = make(model, ChatRouter(forced="direct"))
    result = pipe.handle([user("write add(a, b)")], session_id="s")
    assert len(model.calls) == 1 and result.tool_calls == ()
    system = model.calls[0].messages[0]["content"]
    assert system.startswith(DIRECT_SYSTEM_PROMPT) and "```tool" not in system
    stored = store.get_trajectory(result.trajectory.id)
    assert stored is not None and stored.extra["router"]["decision"] == "direct"
    assert stored.extra["verifier"] == {"skipped": "no tool calls"} and stored.n_steps == 1
    assert result.reply.startswith("def add")


def test_direct_never_runs_a_tool_the_model_calls_anyway(
    make: Callable[..., ChatPipeline],
) -> None:
    native = ScriptedModel([tool_reply("run_python", {"code": "print(3)"})], supports_tools=True)
    result = make(native, ChatRouter(forced="direct")).handle([user("print 3")], session_id="n")
    assert native.calls[0].tools is None  # no tool offered
    assert result.tool_calls == () and len(native.calls) == 1
    assert result.reply == "print(3)"  # the blob's code is the answer


def test_a_trained_router_sends_a_familiar_easy_request_direct_and_an_unrelated_one_to_the_loop(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel(
        ["42", tool("run_python", '{"code": "print(sorted([3, 1]))"}'), "[1, 3]", CONFIRMED]
    )
    pipe = make(model, trained_router())
    easy = pipe.handle([user("the sum of 40 and 2")], session_id="a")
    other = pipe.handle([user("sort [3, 1] with python")], session_id="b")
    assert easy.trajectory.extra["router"]["decision"] == "direct" and easy.tool_calls == ()
    assert easy.trajectory.extra["router"]["p_direct"] == pytest.approx(6 / 7, abs=1e-4)
    route = other.trajectory.extra["router"]
    assert route["decision"] == "full" and route["p_direct"] < 0.5
    assert len(other.tool_calls) == 1 and other.reply == "[1, 3]"
