"""`nightschool evolve --contract/--author-model/--analyst-model/--holdout-offset/--play-log`
through typer's CliRunner: scripted models stand in for the ones the options name."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.strategies._scripted import CRITIC, config, worker
from typer.testing import CliRunner

from nightschool.cli import _evolve, app
from nightschool.config import Settings
from nightschool.errors import EXIT_CODES
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.strategies.harness import CRITIC_PROMPT
from nightschool.strategies.tasks import HOLDOUT_SEED_BASE

runner = CliRunner()
OPTIONS = ("--contract", "--author-model", "--analyst-model", "--holdout-offset", "--play-log")


def evolve(*args: str) -> Any:
    return runner.invoke(app, ["evolve", *args], env={"COLUMNS": "200"})


def test_help_lists_every_option() -> None:
    result = evolve("--help")
    assert result.exit_code == 0
    for option in (*OPTIONS, "--fallback-model"):
        assert option in result.output


def test_an_unreadable_contract_or_a_bad_offset_is_misuse(tmp_path: Path) -> None:
    missing = evolve("--contract", str(tmp_path / "nope.txt"))
    assert missing.exit_code == EXIT_CODES["usage"]
    assert "--contract" in missing.output and "cannot read it" in missing.output
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    blank = evolve("--contract", str(empty))
    assert blank.exit_code == EXIT_CODES["usage"] and "is empty" in blank.output
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00")
    assert evolve("--contract", str(binary)).exit_code == EXIT_CODES["usage"]
    far = evolve("--holdout", "8", "--holdout-offset", str(HOLDOUT_SEED_BASE))
    assert far.exit_code == EXIT_CODES["usage"] and "--holdout-offset" in far.output


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_the_options_reach_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config(holdout_offset=12)
    solver = worker(cfg)
    built: dict[str, ScriptedModel] = {}

    def preflight(settings: Settings, *, unsandboxed: bool, runs: str) -> Any:
        return Sandbox(), solver

    def named_model(settings: Settings, name: str, role: str) -> ScriptedModel:
        if role == "author":
            model = ScriptedModel(lambda _m: f"```python\n{CRITIC}```", name=name)
        else:
            model = ScriptedModel(lambda _m: "check the empty input", name=name)
        built[role] = model
        return model

    monkeypatch.setattr(_evolve, "preflight", preflight)
    monkeypatch.setattr(_evolve, "named_model", named_model)
    contract = tmp_path / "contract.txt"
    contract.write_text("CALLER CONTRACT: solve(task, harness) only.\n", encoding="utf-8")
    run_dir, log = tmp_path / "run", tmp_path / "plays.jsonl"
    result = evolve(
        *("--generations", "1", "--population", "1", "--train", "2", "--holdout", "6"),
        *("--budget", "3", "--seed", "3", "--cluster", "python_general", "--champion", "score"),
        *("--contract", str(contract), "--author-model", "big-author"),
        *("--analyst-model", "big-critic", "--holdout-offset", "12"),
        *("--play-log", str(log), "--run-dir", str(run_dir)),
    )
    assert result.exit_code == 0, result.output
    state = json.loads((run_dir / "checkpoint.json").read_text())
    assert state["models"]["author"] == "big-author" and state["models"]["analyst"] == "big-critic"
    assert built["author"].calls[0].messages[0]["content"].endswith(contract.read_text())
    assert built["analyst"].calls and all(
        c.messages[0]["content"] == CRITIC_PROMPT for c in built["analyst"].calls
    )
    digest = hashlib.sha256(contract.read_bytes()).hexdigest()
    assert state["contract"] == {"source": "caller", "path": str(contract), "sha256": digest}
    assert state["config"]["holdout_offset"] == 12
    assert state["holdout"]["tasks"][0]["seed"] == HOLDOUT_SEED_BASE + 12
    assert set(state["ledger"]["author"]) == {"big-author"}
    assert set(state["ledger"]["analyst"]) == {"big-critic"}
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 3 * 2 + 2 * 2 + 2 * 6
    assert "cost ledger" in result.output and "latency (reported, not gating)" in result.output
