"""End to end: solver episodes judged in the real sandbox, stored in the real
database, trained by the installed `nightschool learn prm` command, the
checkpoint scored by a `LivePrm`, and the idle `retrain` phase on the same code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nightschool.challenges import render, templates
from nightschool.learn import LivePrm, load_checkpoint, prm_path, step_states
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.solver.core import Solver, SolverConfig
from nightschool.store import Store
from nightschool.watchdog.work import NightschoolWork

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

SCRIPT = Path(sys.executable).with_name("nightschool")


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def learn(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "160"}
    return subprocess.run(
        [str(SCRIPT), "learn", "prm", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def solve_some(store: Store, n: int) -> None:
    """`n` episodes of starter Python challenges: pass at once, recover, or fail thrice."""
    sandbox = Sandbox()
    names = [t.name for t in templates() if t.name.startswith(("algo.", "python_general."))]
    for i in range(n):
        challenge = render(names[i % len(names)], "starter", i)
        right, wrong = fenced(challenge.reference_solution), fenced(challenge.wrong_solution)
        replies = [
            [right],
            [wrong, right],
            [wrong, fenced(challenge.wrong_solution + "\n_x = 1"), wrong + "\n"],
        ][i % 3]
        model = ScriptedModel(replies + [wrong] * 6)
        solver = Solver(model, sandbox, SolverConfig(max_attempts=3, max_resamples=0))
        store.append_trajectory(solver.solve(challenge).trajectory)


def test_learn_prm_on_sandboxed_episodes_and_the_retrain_phase(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with Store.open(home / "nightschool.db") as store:
        solve_some(store, 4)
    too_few = learn(home)
    assert too_few.returncode == 2, too_few.stderr
    assert "at least 20 labelled trajectories" in too_few.stderr
    assert not prm_path(home).exists()
    with Store.open(home / "nightschool.db") as store:
        waiting = NightschoolWork(store, ScriptedModel([]), Sandbox(), home=home).run("retrain")
    assert waiting.status == "skipped" and "at least 20" in waiting.detail

    with Store.open(home / "nightschool.db") as store:
        solve_some(store, 11)
        trajectories = list(store.iter_trajectories())
    outcomes = {t.outcome.value for t in trajectories}
    assert outcomes == {"passed", "failed"}
    assert max(len(t.tool_calls) for t in trajectories) == 3

    result = learn(home, "--min-trajectories", "6", "--folds", "3", "--force", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["trajectories"] == 15 and report["saved"] and report["version"] == 1
    assert report["states"] == sum(len(t.tool_calls) for t in trajectories)
    assert report["by_kind"] == {"selfplay": 15}
    params = load_checkpoint(prm_path(home))
    assert params.version == 1 and params.report["trajectories"] == 15

    live = LivePrm(prm_path(home))
    states = step_states(trajectories[0])
    scores = [live.score(s.features) for s in states]
    assert all(score is not None and 0.0 < score < 1.0 for score in scores)

    # The idle retrain phase runs the same code (default settings: 20 or more
    # trajectories) and the live scorer picks up what it saves.
    with Store.open(home / "nightschool.db") as store:
        solve_some(store, 6)
        work = NightschoolWork(store, ScriptedModel([]), Sandbox(), home=home)
        assert work.unavailable("retrain") is None
        phase = work.run("retrain")
        assert NightschoolWork(store, ScriptedModel([]), Sandbox()).unavailable("retrain")
    assert phase.status == "ok" and "PRM on 21 trajectories" in phase.detail
    assert phase.record["prm"]["trajectories"] == 21
    assert "router: a router needs at least 30" in phase.detail
    assert "chat router: a chat router needs at least 20 requests" in phase.detail
    if phase.record["prm"]["saved"]:
        assert live.refresh() and live.params is not None and live.params.version == 2
    else:
        assert not live.refresh() and live.params is not None and live.params.version == 1
