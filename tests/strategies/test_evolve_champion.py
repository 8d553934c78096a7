"""`nightschool evolve` and the champion registry: register only on promotion, start from it.

The CLI runs in-process (typer's CliRunner) with its preflight replaced by the
real sandbox and a scripted model, so the command's own wiring (read the
current champion, start from it, register a promoted winner) is what runs.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nightschool.cli import _evolve, app
from nightschool.config import Settings
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.strategies import champions
from nightschool.strategies.author import AUTHOR_SYSTEM
from nightschool.strategies.tasks import draw_holdout, draw_train

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

MAGIC = "MAGIC: read the task twice"
DEPTH = f'def solve(task, harness):\n    return harness.sample(prompt_extra="{MAGIC}")\n'
HOPELESS = 'def solve(task, harness):\n    return harness.sample(prompt_extra="guess")\n'
CLUSTER = "python_general"
SEED = 3


def world(train: int, holdout: int, author_source: str = DEPTH) -> ScriptedModel:
    """Right code only when the prompt carries MAGIC; the author always writes `author_source`."""
    specs = draw_train(train, seed=SEED, clusters=[CLUSTER])
    specs += draw_holdout(holdout, specs, seed=SEED, clusters=[CLUSTER])
    known = {c.prompt: c for c in (s.render() for s in specs)}

    def reply(messages: Sequence[Message]) -> str:
        if messages[0]["content"] == AUTHOR_SYSTEM:
            return f"```python\n{author_source}```"
        for prompt, challenge in known.items():
            if prompt in messages[1]["content"]:
                good = MAGIC in messages[-1]["content"]
                body = challenge.reference_solution if good else challenge.wrong_solution
                return f"```python\n{body}\n```"
        return "I do not know this task"

    return ScriptedModel(reply, name="scripted-solver")


def evolve(
    monkeypatch: pytest.MonkeyPatch, model: ScriptedModel, run_dir: Path, holdout: int = 6
) -> Any:
    monkeypatch.setattr(_evolve, "preflight", lambda *_a, **_k: (Sandbox(), model))
    args = ["evolve", "--generations", "1", "--population", "1", "--train", "3"]
    args += ["--holdout", str(holdout), "--budget", "2", "--seed", str(SEED)]
    args += ["--cluster", CLUSTER, "--champion", "score", "--run-dir", str(run_dir)]
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def registry() -> list[champions.ChampionEntry]:
    with Store.open(Settings().database_path()) as store:
        return champions.history(store)


def checkpoint(run_dir: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads((run_dir / "checkpoint.json").read_text())
    return state


def test_evolve_registers_only_on_promotion_and_the_next_run_starts_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A better challenger the gate refuses (3 holdout pairs < the 6-pair floor): nothing registered.
    refused = evolve(monkeypatch, world(3, 3), tmp_path / "refused", holdout=3)
    assert refused.exit_code == 0, refused.output
    state = checkpoint(tmp_path / "refused")
    assert state["holdout"]["champion"] == "g1c1" and state["verdict"]["promote"] is False
    assert state["verdict"]["test"] == "floor" and state["start_champion"] is None
    assert registry() == [] and "registered as champion" not in refused.stdout

    # The same challenger with a 6-task holdout is promoted, and registered.
    run_dir = tmp_path / "promoted"
    promoted = evolve(monkeypatch, world(3, 6), run_dir)
    assert promoted.exit_code == 0, promoted.output
    assert checkpoint(run_dir)["verdict"]["promote"] is True
    assert "g1c1 registered as champion 1" in promoted.stdout
    [entry] = registry()
    assert (entry.kind, entry.name, entry.source) == ("promotion", "g1c1", DEPTH)
    assert entry.run_id == str(run_dir.resolve()) and entry.previous is None
    assert entry.verdict is not None and entry.verdict["promote"] is True
    assert entry.verdict["test"] == "mcnemar-exact" and entry.verdict["ci_low"] > 0
    assert [(i["name"], i["generation"]) for i in entry.lineage] == [("g1c1", 1), ("sample", 0)]
    assert entry.budget == 2 and entry.record["solver_model"] == "scripted-solver"

    # The next run starts from champion 1: it plays first in generation 0 and is the
    # gate's reference; an equal candidate is no challenger, so nothing new is registered.
    again_dir = tmp_path / "again"
    again = evolve(monkeypatch, world(3, 6), again_dir)
    assert again.exit_code == 0, again.output
    assert "starting from strategy champion 1 (g1c1)" in again.stderr
    state = checkpoint(again_dir)
    assert state["start_champion"]["id"] == 1 and state["start_champion"]["source"] == DEPTH
    gen0 = state["generations"][0]
    assert [r["name"] for r in gen0["rows"]] == [
        "champion-1",
        "sample",
        "refine",
        "sample_then_refine",
    ]
    assert gen0["rows"][0]["score"] == 1.0 and gen0["rows"][0]["status"] == "champion"
    assert state["baseline_incumbent"] == "champion-1" and state["incumbent"] == "champion-1"
    assert state["verdict"]["promote"] is False and state["verdict"]["test"] == "none"
    assert "registered champion 1" in again.stdout  # the report names the reference
    assert len(registry()) == 1


def test_a_promotion_over_a_registered_champion_inherits_its_lineage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(Settings().database_path()) as store:
        weak = champions.register(
            store,
            name="g1c1",
            source=HOPELESS,
            verdict={"promote": True, "reason": "an earlier run", "n": 6},
            lineage=[{"name": "g1c1", "generation": 1, "run_id": "/runs/old"}],
            run_id="/runs/old",
            proven_against=None,
        )
    run_dir = tmp_path / "run"
    result = evolve(monkeypatch, world(3, 6), run_dir)
    assert result.exit_code == 0, result.output
    state = checkpoint(run_dir)
    # every gen-0 strategy scores 0; the registered champion keeps its place (first on ties)
    assert state["generations"][0]["champion"] == "champion-1"
    archive = {n["name"]: n for n in state["archive"]}
    assert archive["g1c1"]["parent"] == "champion-1"
    assert state["holdout"]["baseline"] == "champion-1"  # the gate faced the champion
    assert state["verdict"]["promote"] is True
    first, second = registry()
    assert first == weak and second.previous == weak.id and second.source == DEPTH
    assert second.lineage == [
        {"name": "g1c1", "generation": 1, "run_id": str(run_dir.resolve())},
        {"name": "g1c1", "generation": 1, "run_id": "/runs/old", "champion_id": weak.id},
    ]
