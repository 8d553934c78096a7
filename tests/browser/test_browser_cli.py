"""`--browser` on `serve` and `chat`: off by default, on when asked (a stub model drives it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from tests.browser.conftest import Site, needs_chromium
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.store import Store

runner = CliRunner()


def test_serve_and_chat_document_the_switch() -> None:
    for command in ("serve", "chat"):
        result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0
        assert "--browser" in result.output and "--no-browser" in result.output
        assert "127.0.0.1 only" in result.output


def _chat(base_url: str, *flags: str) -> Any:
    return runner.invoke(
        app,
        [
            "chat",
            "--session",
            "web-cli",
            "--no-lessons",
            "--no-self-play-tools",
            "--base-url",
            base_url,
            "--model",
            "stub",
            *flags,
        ],
        input="open the form\n/exit\n",
    )


@needs_chromium
@pytest.mark.parametrize("enabled", [True, False])
def test_chat_offers_the_browser_only_with_the_switch(
    enabled: bool,
    tmp_path: Path,
    fresh_site: Site,
    openai_stub: Callable[..., AbstractContextManager[str]],
) -> None:
    call = {"name": "browser", "arguments": {"op": "goto", "url": f"{fresh_site.url}/form"}}

    def reply(messages: list[dict[str, Any]]) -> str:
        done = any("TOOL RESULT" in str(m.get("content")) or m["role"] == "tool" for m in messages)
        return "The form is open." if done else f"```tool\n{json.dumps(call)}\n```"

    with openai_stub(reply) as base_url:
        result = _chat(base_url, "--browser" if enabled else "--no-browser")
    assert result.exit_code == 0, result.output
    with Store.open(tmp_path / "home" / "nightschool.db") as opened:
        [stored] = opened.iter_trajectories(task_kind="chat")
    calls = [c for c in stored.tool_calls if c.name == "browser"]
    if enabled:
        [browser_call] = calls
        assert browser_call.error is None, browser_call
        assert f"goto {fresh_site.url}/form: HTTP 200" in (browser_call.result or "")
        assert fresh_site.paths == ["/form"]
    else:  # the call is answered as a tool the agent does not have
        assert all(c.error and c.error.startswith("unknown tool") for c in calls), calls
        assert fresh_site.paths == []
