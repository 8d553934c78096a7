"""The chat agent's self-play tools (issue 10, part 4): offered only with a `SelfPlayTools`,
one cycle inside a turn, a background loop that the next user turn stops, the admin API.

Real parts: bubblewrap runs every solution, SQLite records every cycle; the model is
scripted (the chat turn calls the tool; the solver's code fails its validator).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from nightschool.agent import TOOL_SCHEMAS, TOOL_SPECS, ChatPipeline
from nightschool.agent.loop import NATIVE_PRACTICE_USES, NATIVE_TOOL_USES
from nightschool.agent.self_play import SESSION_ID, SelfPlayTools
from nightschool.agent.tools import SELF_PLAY_TOOL_SPECS, SessionWorkspace
from nightschool.cli._idle import ForegroundService
from nightschool.cli._serve import _show_self_play
from nightschool.llm import Completion, Message, ScriptedModel, tool_reply
from nightschool.llm.preempt import Foreground
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.server import create_app
from nightschool.server._chat import LocalBackend
from nightschool.store import Store

WRONG = "```python\nprint('no idea')\n```"


def tool(name: str, args: str = "{}") -> str:
    return f'```tool\n{{"name": "{name}", "arguments": {args}}}\n```'


def agent_calls(name: str, args: str = "{}") -> Callable[[Sequence[Message]], str]:
    """The chat agent calls `name` once, then answers; every other caller gets failing code."""

    def reply(messages: Sequence[Message]) -> str:
        if not messages[0]["content"].startswith("You are a helpful assistant"):
            return WRONG  # the solver (or a reflection): code that fails the validator
        if messages[-1]["content"].startswith("TOOL RESULT"):
            return "Done: " + messages[-1]["content"].splitlines()[1][:200]
        return tool(name, args)

    return reply


def self_play_rows(store: Store) -> int:
    return int(
        store.query("SELECT COUNT(*) FROM trajectories WHERE session_id = ?", (SESSION_ID,))[0][0]
    )


@pytest.fixture
def playbook(store: Store) -> Iterator[SkillMemory]:
    memory = SkillMemory(store, HashingEmbedder())
    yield memory
    memory.close()


@pytest.fixture
def make_tools(
    make_self_play_tools: Callable[..., SelfPlayTools], playbook: SkillMemory
) -> Callable[[ScriptedModel], SelfPlayTools]:
    return functools.partial(make_self_play_tools, playbook=playbook)


@pytest.fixture
def pipeline(
    make_pipeline: Callable[..., ChatPipeline],
) -> Callable[[ScriptedModel, Any], ChatPipeline]:
    def make(model: ScriptedModel, practice: Any) -> ChatPipeline:
        return make_pipeline(model, workspace="ws", verify=False, wake_up=False, practice=practice)

    return make


Pipelines = Callable[[ScriptedModel, Any], ChatPipeline]


# -- which tools are offered ----------------------------------------------------------


def test_self_play_tools_are_offered_only_with_a_practice(
    tmp_path: Path, sandbox: Sandbox, make_tools: Callable[[ScriptedModel], SelfPlayTools]
) -> None:
    plain = SessionWorkspace(tmp_path / "a", sandbox)
    assert plain.names == tuple(TOOL_SPECS) and plain.schemas == TOOL_SCHEMAS
    refused = plain.call("self_play", {})
    assert refused.error is not None and "unknown tool 'self_play'" in refused.error

    practising = SessionWorkspace(tmp_path / "b", sandbox, practice=make_tools(ScriptedModel([])))
    assert practising.names == (*TOOL_SPECS, *SELF_PLAY_TOOL_SPECS)
    offered = [schema["function"]["name"] for schema in practising.schemas]
    assert offered == list(practising.names)
    bad = practising.call("self_play_loop", {"max_cycles": "many"})
    assert bad.error == "max_cycles must be a whole number, got 'many'"
    assert practising.call("stop_self_play", {}).result == "no background self-play has run"


def test_the_native_prompt_names_practice_as_a_reason_only_with_the_tools() -> None:
    from nightschool.agent import build_system_prompt
    from nightschool.agent.tools import tool_specs

    plain = build_system_prompt(protocol="native")
    practising = build_system_prompt(protocol="native", tools=tool_specs(practice=True))
    assert NATIVE_TOOL_USES in plain and NATIVE_PRACTICE_USES not in plain
    assert NATIVE_PRACTICE_USES in practising


def test_a_pipeline_without_practice_never_runs_self_play(
    store: Store, pipeline: Pipelines
) -> None:
    model = ScriptedModel(agent_calls("self_play"))
    result = pipeline(model, None).handle(
        [{"role": "user", "content": "practise something"}], session_id="s"
    )
    assert self_play_rows(store) == 0
    assert "self_play" not in model.calls[0].messages[0]["content"]
    assert not result.tool_calls  # read as a call to a tool that does not exist: a blob


# -- one cycle inside the turn ----------------------------------------------------------


def test_self_play_runs_one_cycle_in_the_turn_and_reports_it(
    store: Store, pipeline: Pipelines, make_tools: Callable[[ScriptedModel], SelfPlayTools]
) -> None:
    model = ScriptedModel(agent_calls("self_play"))
    pipe = pipeline(model, make_tools(model))
    result = pipe.handle(
        [{"role": "user", "content": "Go practise one challenge."}], session_id="chat-1"
    )
    system = model.calls[0].messages[0]["content"]
    assert "- self_play {}" in system and "stop_self_play" in system
    (call,) = result.tool_calls
    assert call.name == "self_play" and call.error is None
    assert call.result is not None and call.result.startswith("practised one challenge: ")
    assert "FAILED after" in call.result and "reflected on while the user is away" in call.result
    assert self_play_rows(store) == 1
    (cycle,) = store.query(
        "SELECT outcome, task_kind FROM trajectories WHERE session_id = ?", (SESSION_ID,)
    )
    assert cycle[0] == "failed" and cycle[1] != "chat"
    assert result.reply.startswith("Done: practised one challenge")


def test_native_protocol_offers_and_runs_the_self_play_tools(
    store: Store,
    pipeline: Pipelines,
    make_tools: Callable[[ScriptedModel], SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    def reply(messages: Sequence[Message]) -> str | Completion:
        if not messages[0]["content"].startswith("You are a helpful assistant"):
            return WRONG
        if messages[-1]["role"] == "tool":
            return "Practice is on."
        return tool_reply("self_play_loop", {"max_cycles": 1})

    model = ScriptedModel(reply, supports_tools=True)
    practice = make_tools(model)
    result = pipeline(model, practice).handle(
        [{"role": "user", "content": "Practise in the background."}], session_id="n"
    )
    offered = [spec["function"]["name"] for spec in model.calls[0].tools or ()]
    assert offered == [*TOOL_SPECS, *SELF_PLAY_TOOL_SPECS]
    system = model.calls[0].messages[0]["content"]
    assert "self_play_loop" in system and NATIVE_PRACTICE_USES in system
    assert [call.name for call in result.tool_calls] == ["self_play_loop"]
    run = practice.latest()
    assert run is not None
    wait_until(lambda: run.state == "stopped", 60, "the one-cycle loop")
    assert len(run.cycles) == 1 and self_play_rows(store) == 1


def test_self_play_runs_once_per_user_turn(
    store: Store, foreground: Foreground, make_tools: Callable[[ScriptedModel], SelfPlayTools]
) -> None:
    tools = make_tools(ScriptedModel(lambda _m: WRONG))
    with foreground.turn():
        first = tools.call("self_play", {})
        again = tools.call("self_play", {})
    assert again.result == f"{first.result}\n(Already practised in this turn: answer the user now.)"
    assert self_play_rows(store) == 1
    with foreground.turn():  # the next request may practise again
        tools.call("self_play", {})
    assert self_play_rows(store) == 2


# -- the background loop -----------------------------------------------------------------


def test_loop_waits_for_its_turn_then_the_next_user_turn_stops_it(
    store: Store,
    foreground: Foreground,
    make_tools: Callable[[ScriptedModel], SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    tools = make_tools(ScriptedModel(lambda _m: WRONG))
    with foreground.turn():  # the turn in which the model called self_play_loop
        started = tools.call("self_play_loop", {})
        assert started.result is not None and "until the user's next message" in started.result
        again = tools.call("self_play_loop", {})
        assert again.result is not None and "already on" in again.result
        time.sleep(0.4)
        run = tools.latest()
        assert run is not None and run.state == "waiting" and self_play_rows(store) == 0
    wait_until(lambda: len(run.cycles) >= 2, 60, "two background cycles")
    assert run.state == "running" and tools.status()["active"]
    with foreground.turn():  # the user's next message
        wait_until(lambda: run.state == "stopped", 10, "the loop to stop")
    assert run.stop_reason is not None and "next message" in run.stop_reason
    recorded = self_play_rows(store)
    assert recorded == len(run.cycles)  # nothing half-written: every stored cycle is reported
    time.sleep(0.5)
    assert self_play_rows(store) == recorded and not tools.status()["active"]


def test_a_turn_that_already_ended_still_stops_the_loop_at_its_next_model_call(
    store: Store,
    foreground: Foreground,
    make_tools: Callable[[ScriptedModel], SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    entered, release = threading.Event(), threading.Event()

    def reply(_messages: Sequence[Message]) -> str:
        if not entered.is_set():
            entered.set()
            release.wait(10)
        return WRONG

    tools = make_tools(ScriptedModel(reply))
    tools.call("self_play_loop", {})
    assert entered.wait(30)  # the first cycle's first model call is under way
    with foreground.turn():
        pass  # a request refused at once: in and out while the call runs
    release.set()
    run = tools.latest()
    assert run is not None
    wait_until(lambda: run.state == "stopped", 10, "the loop to stop")
    assert run.cycles == [] and self_play_rows(store) == 0
    assert run.stop_reason is not None and "next message" in run.stop_reason


def test_stop_self_play_and_max_cycles_end_the_loop(
    store: Store,
    make_tools: Callable[[ScriptedModel], SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    tools = make_tools(ScriptedModel(lambda _m: WRONG))
    tools.call("self_play_loop", {"max_cycles": 2})
    first = tools.latest()
    assert first is not None
    wait_until(lambda: first.state == "stopped", 60, "two cycles")
    assert len(first.cycles) == 2 and first.stop_reason == "ran its 2 cycle(s)"

    tools.call("self_play_loop", {"max_cycles": "50"})
    second = tools.latest()
    assert second is not None and second.number == 2
    wait_until(lambda: len(second.cycles) >= 1, 60, "a cycle of the second run")
    stopped = tools.call("stop_self_play", {})
    assert second.state == "stopped" and second.stop_reason == "stopped by stop_self_play"
    assert stopped.result is not None and stopped.result.startswith("background self-play run 2")
    assert self_play_rows(store) == len(first.cycles) + len(second.cycles)


# -- the admin API and the REPL -------------------------------------------------------------


def test_admin_api_starts_reports_and_stops_background_self_play(
    store: Store,
    pipeline: Pipelines,
    playbook: SkillMemory,
    foreground: Foreground,
    make_tools: Callable[[ScriptedModel], SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    model = ScriptedModel(lambda _m: WRONG)
    plain = pipeline(model, None)
    app = create_app(plain, store=store, memory=playbook, api_key=None, model_name="ns")
    with TestClient(app) as client:
        missing = client.get("/admin/self-play")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "no_self_play"
    practice = make_tools(model)
    service = ForegroundService(pipeline(model, practice), foreground)
    app = create_app(service, store=store, memory=playbook, api_key=None, model_name="ns")
    with TestClient(app) as client:
        assert client.get("/admin/self-play").json() == {
            "active": False,
            "verify_k": practice.verify_k,
            "runs": [],
        }
        assert client.post("/admin/self-play", json={"max_cycles": 0}).status_code == 400
        started = client.post("/admin/self-play", json={"max_cycles": 100})
        assert started.status_code == 200 and started.json()["active"]
        assert client.post("/admin/self-play", json={}).status_code == 409
        wait_until(lambda: client.get("/admin/self-play").json()["runs"][0]["cycles"] >= 1, 60, "")
        stopped = client.post("/admin/self-play/stop").json()
    (run,) = stopped["runs"]
    assert stopped["stopped"] and not stopped["active"] and run["state"] == "stopped"
    assert run["stop_reason"] == "stopped via the admin API" and run["cycles"] >= 1

    console = Console(record=True, width=200)
    shown: dict[int, str] = {}
    backend = LocalBackend(service, "s")
    _show_self_play(console, backend, shown)
    _show_self_play(console, backend, shown)  # each state is printed once
    text = console.export_text()
    assert text.count("background self-play run 1 stopped") == 1, text
    assert f"{run['cycles']} cycle(s), 0 passed" in text


def test_the_loops_verification_count_is_a_checked_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nightschool.config import Settings
    from nightschool.errors import UserError

    monkeypatch.delenv("NIGHTSCHOOL_SELF_PLAY_VERIFY_K", raising=False)
    assert Settings().self_play_verify_k == 6  # dream's default
    monkeypatch.setenv("NIGHTSCHOOL_SELF_PLAY_VERIFY_K", "0")
    assert Settings().self_play_verify_k == 0
    monkeypatch.setenv("NIGHTSCHOOL_SELF_PLAY_VERIFY_K", "-1")
    with pytest.raises(UserError, match="NIGHTSCHOOL_SELF_PLAY_VERIFY_K"):
        Settings()
