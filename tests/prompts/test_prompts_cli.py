"""`nightschool prompts list | show | rollback | optimise` through typer's CliRunner.

`optimise` runs end to end against a real loopback OpenAI-compatible server
whose replies are scripted: the task model passes exactly when its system
prompt holds the marker, the reflection model proposes a prompt with it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from tests.prompts.test_optimise import MARKER, TaskModel, with_marker
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.config import Settings
from nightschool.errors import EXIT_CODES
from nightschool.prompts import registry
from nightschool.prompts.optimise import OptimiseConfig
from nightschool.solver.core import SYSTEM_PROMPT
from nightschool.store import Store

runner = CliRunner()
SIZES = ("--budget", "12", "--train", "3", "--holdout", "6", "--tier", "starter", "--seed", "6")
CONFIG = OptimiseConfig(budget=12, train=3, holdout=6, tier="starter", seed=6)  # no web task
Stub = Callable[..., AbstractContextManager[str]]


def prompts(*args: str, input: str | None = None) -> Any:
    return runner.invoke(app, ["prompts", *args], input=input, env={"COLUMNS": "200"})


def live_id() -> int | None:
    with Store.open(Settings().database_path()) as store:
        entry = registry.current(store, "solver")
        return None if entry is None else entry.id


def test_help_lists_the_commands() -> None:
    result = prompts("--help")
    assert result.exit_code == 0
    for command in ("list", "show", "rollback", "optimise"):
        assert command in result.stdout
    helped = prompts("optimise", "--help").stdout
    for option in ("--budget", "--train", "--holdout", "--reflection-model", "--slot"):
        assert option in helped
    assert "--yes" in prompts("rollback", "--help").stdout


def test_an_empty_home_shows_the_built_in_prompts_and_creates_nothing() -> None:
    listed = prompts("list")
    assert listed.exit_code == 0 and "no prompt registered yet" in listed.stdout
    shown = prompts("show")
    assert shown.exit_code == 0 and "built-in" in shown.stdout
    assert "careful programmer" in shown.stdout
    assert not Settings().database_path().exists()
    assert prompts("list", "--slot", "nope").exit_code == EXIT_CODES["usage"]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_optimise_registers_a_winner_then_list_show_and_rollback(openai_stub: Stub) -> None:
    task = TaskModel(CONFIG, with_marker)
    reflections: list[str] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        if messages[0]["role"] == "user":  # GEPA's reflection call
            reflections.append(messages[0]["content"])
            return f"```\n{SYSTEM_PROMPT} {MARKER}\n```"
        return task(messages)  # type: ignore[arg-type]

    with openai_stub(reply) as base_url:
        result = prompts("optimise", *SIZES, "--base-url", base_url, "--model", "stub")
    assert result.exit_code == 0, result.output
    assert "registered" in result.stdout and "0/6" in result.stdout and "6/6" in result.stdout
    assert reflections and "Checker output" in reflections[0]
    home = Settings().home_dir()
    (report_path,) = (home / "prompts").glob("*/report.json")
    report = json.loads(report_path.read_text())
    assert report["status"] == "registered" and report["verdict"]["promote"] is True
    first = live_id()
    assert first == report["entry_id"]

    listed = prompts("list")
    assert listed.exit_code == 0 and "★" in listed.stdout
    assert f"live solver: prompt {first}" in listed.stdout
    shown = prompts("show")
    assert shown.exit_code == 0 and MARKER in shown.stdout and "PROMOTE" in shown.stdout

    declined = prompts("rollback", input="n\n")
    assert declined.exit_code == EXIT_CODES["error"] and live_id() == first
    back = prompts("rollback", "--yes")
    assert back.exit_code == 0 and "built-in prompt" in back.stdout
    assert live_id() is None
    again = prompts("rollback", "--yes")
    assert again.exit_code == EXIT_CODES["usage"] and "nothing to roll back" in again.output
    restored = prompts("rollback", str(first), "--yes")
    assert restored.exit_code == 0 and live_id() == first


def test_optimise_refuses_slots_without_a_score_and_a_budget_too_small(
    openai_stub: Stub,
) -> None:
    with openai_stub(lambda _m: "unused") as base_url:
        planning = prompts("optimise", "--slot", "planning", "--base-url", base_url)
        small = prompts("optimise", *SIZES[:2], "--train", "12", "--base-url", base_url)
    assert planning.exit_code == EXIT_CODES["usage"]
    assert "per-item executable score" in " ".join(
        planning.output.split()
    )  # wrapped to the terminal
    assert small.exit_code == EXIT_CODES["usage"] and "must exceed" in small.output
    assert not (Settings().home_dir() / "prompts").exists()


def test_ctrl_c_during_optimise_registers_nothing(
    openai_stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nightschool.prompts.optimise as optimise_module

    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(optimise_module, "optimise_prompt", interrupted)
    with openai_stub(lambda _m: "unused") as base_url:
        result = prompts("optimise", *SIZES, "--base-url", base_url, "--model", "stub")
    assert result.exit_code == EXIT_CODES["interrupted"]
    assert "nothing was registered" in result.output
    assert live_id() is None
