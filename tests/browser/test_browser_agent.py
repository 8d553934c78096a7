"""The `browser` tool in the chat agent: off by default, its screenshots in the trajectory,
an aborted sequence failing the turn (fenced and native tool calls, real Chromium)."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.browser.conftest import Site, needs_chromium

from nightschool.agent import AgentConfig, ChatPipeline
from nightschool.agent._leak import find_tool_leaks
from nightschool.agent.tools import (
    AGENT_TOOL_NAMES,
    BROWSER_TOOL_SPECS,
    LEAK_CHECKED_NAMES,
    MAX_SCREENSHOTS_PER_TURN,
    SELF_PLAY_TOOL_SPECS,
    TOOL_SCHEMAS,
    TOOL_SPECS,
    SessionWorkspace,
    leak_checked_names,
    tool_specs,
)
from nightschool.browser import BROWSER_TOOL_SCHEMA, SEQUENCE_ABORTED_BANNER, BrowserSessions
from nightschool.llm import ScriptedModel, tool_reply
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Outcome


def fenced(name: str, arguments: dict[str, object]) -> str:
    return f"```tool\n{json.dumps({'name': name, 'arguments': arguments})}\n```"


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


@pytest.fixture
def browsers() -> Iterator[BrowserSessions]:
    sessions = BrowserSessions()
    try:
        yield sessions
    finally:
        sessions.close()


# -- off by default ----------------------------------------------------------------------


def test_the_default_tool_list_does_not_grow(tmp_path: Path, sandbox: Sandbox) -> None:
    assert tool_specs() == dict(TOOL_SPECS)
    assert tool_specs(practice=True) == {**TOOL_SPECS, **SELF_PLAY_TOOL_SPECS}
    ws = SessionWorkspace(tmp_path / "ws", sandbox)
    assert "browser" not in ws.specs and ws.schemas == TOOL_SCHEMAS
    assert ws.call("browser", {"op": "screenshot"}).error == (
        "unknown tool 'browser'; available: run_python, run_shell, read_file, write_file, "
        "list_files"
    )
    assert "browser" in AGENT_TOOL_NAMES  # a call naming it is still read as a call


def test_browser_in_code_is_a_leak_only_when_the_tool_was_offered() -> None:
    reply = "```python\nbrowser = playwright.chromium.launch()\nbrowser.close()\n```"
    assert "browser" not in LEAK_CHECKED_NAMES
    assert find_tool_leaks(reply) == ()
    assert find_tool_leaks(reply, names=leak_checked_names(browser=False)) == ()
    assert find_tool_leaks(reply, names=leak_checked_names(browser=True)) == ("browser",)


# -- the workspace's tool ----------------------------------------------------------------


@needs_chromium
def test_the_workspace_offers_the_tool_and_keeps_screenshots(
    tmp_path: Path, sandbox: Sandbox, browsers: BrowserSessions, fresh_site: Site
) -> None:
    ws = SessionWorkspace(tmp_path / "ws", sandbox, browser=browsers.session("s1"))
    assert list(ws.specs) == [*TOOL_SPECS, *BROWSER_TOOL_SPECS]
    assert ws.schemas == (*TOOL_SCHEMAS, BROWSER_TOOL_SCHEMA)
    opened = ws.call("browser", {"op": "goto", "url": f"{fresh_site.url}/form"})
    assert opened.error is None and "HTTP 200" in (opened.result or "")
    for number in range(1, MAX_SCREENSHOTS_PER_TURN + 2):
        shot = ws.call("browser", {"op": "screenshot"})
        assert shot.error is None
        if number <= MAX_SCREENSHOTS_PER_TURN:
            assert (shot.result or "").endswith(
                f"stored with this turn's trajectory as screenshot {number}"
            )
        else:
            assert "(not stored: 4 screenshots per turn at most)" in (shot.result or "")
    assert [record["number"] for record in ws.screenshots] == [1, 2, 3, 4]
    record = ws.screenshots[0]
    png = base64.b64decode(record["png_base64"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) == record["bytes"]
    assert hashlib.sha256(png).hexdigest() == record["sha256"]
    assert (record["width"], record["height"], record["url"]) == (
        1024,
        768,
        f"{fresh_site.url}/form",
    )
    bad = ws.call("browser", {"op": "goto"})
    assert bad.error is not None and bad.error.startswith('goto needs "url"')
    unknown = ws.call("browser", {"op": "goto", "url": "x", "headless": False})
    assert unknown.error == "browser got unexpected argument(s) headless"


# -- a whole turn --------------------------------------------------------------------------


def _pipeline(
    model: ScriptedModel, store: Store, sandbox: Sandbox, tmp_path: Path, browsers: BrowserSessions
) -> ChatPipeline:
    return ChatPipeline(
        model=model,
        store=store,
        sandbox=sandbox,
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "workspaces",
        config=AgentConfig(verify=False),
        wake_up=False,
        browser=browsers,
    )


@needs_chromium
def test_a_turn_stores_its_screenshot_and_an_abort_fails_it(
    tmp_path: Path,
    store: Store,
    sandbox: Sandbox,
    browsers: BrowserSessions,
    fresh_site: Site,
) -> None:
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_url = f"http://127.0.0.1:{dead.getsockname()[1]}/"
    model = ScriptedModel(
        [
            fenced("browser", {"op": "goto", "url": f"{fresh_site.url}/form"}),
            fenced("browser", {"op": "screenshot"}),
            "The form is there.",
            fenced(
                "browser",
                {
                    "op": "interact",
                    "actions": [
                        {"action": "goto", "url": dead_url},
                        {"action": "click", "selector": "#send"},
                    ],
                },
            ),
            "I could not open it.",
        ]
    )
    pipe = _pipeline(model, store, sandbox, tmp_path, browsers)
    try:
        first = pipe.handle([{"role": "user", "content": "look at the form"}], session_id="web-1")
        assert "browser" in model.calls[0].messages[0]["content"]  # offered in the prompt
        stored = store.get_trajectory(first.trajectory.id)
        assert stored is not None and stored.outcome == Outcome.UNKNOWN
        [shot] = stored.extra["screenshots"]
        png = base64.b64decode(shot["png_base64"])  # redaction left the image alone
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert hashlib.sha256(png).hexdigest() == shot["sha256"]

        second = pipe.handle([{"role": "user", "content": "send the form"}], session_id="web-1")
    finally:
        dead.close()
        pipe.close()
    call = second.trajectory.tool_calls[0]
    assert call.name == "browser"
    assert (call.result or "").startswith(f"{SEQUENCE_ABORTED_BANNER}: goto_failed")
    assert "aborted_sequence: true" in (call.result or "")
    assert second.trajectory.outcome == Outcome.FAILED
    assert (second.trajectory.failure_reason or "").startswith(
        f"browser sequence aborted: {SEQUENCE_ABORTED_BANNER}: goto_failed"
    )
    assert "screenshots" not in second.trajectory.extra


@needs_chromium
def test_native_calls_pass_lists_and_booleans(
    tmp_path: Path,
    store: Store,
    sandbox: Sandbox,
    browsers: BrowserSessions,
    fresh_site: Site,
) -> None:
    model = ScriptedModel(
        [
            tool_reply(
                "browser",
                {
                    "op": "interact",
                    "actions": [
                        {"action": "goto", "url": f"{fresh_site.url}/form"},
                        {"action": "fill", "selector": "#name", "value": "Di"},
                        {"action": "click", "selector": "#send"},
                    ],
                    "stop_on_error": True,
                },
            ),
            "Sent.",
        ],
        supports_tools=True,
    )
    pipe = _pipeline(model, store, sandbox, tmp_path, browsers)
    try:
        turn = pipe.handle([{"role": "user", "content": "sign up as Di"}], session_id="web-2")
    finally:
        pipe.close()
    offered = model.calls[0].tools or ()
    assert BROWSER_TOOL_SCHEMA in offered
    assert turn.trajectory.tool_calls[0].error is None, turn.trajectory.tool_calls[0]
    assert fresh_site.submissions == [{"name": "Di", "colour": "r"}]
    assert turn.trajectory.outcome == Outcome.UNKNOWN
