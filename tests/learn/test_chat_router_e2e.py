"""The chat router end to end: two real eval runs, `learn chat-router`, a routed chat turn.

Real parts: the installed `nightschool` command, the embedded model
(smollm2-135m), bubblewrap, SQLite and the packaged MiniLM embedder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.learn.chat_router import chat_router_path, load_chat_router
from nightschool.store import Store

SCRIPT = Path(sys.executable).with_name("nightschool")


def nightschool(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    env.setdefault("NIGHTSCHOOL_MAX_TOKENS", "192")  # a function fits; SmolLM2 rambles to any cap
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=900
    )


@pytest.mark.e2e
def test_two_routed_eval_runs_train_a_chat_router_that_routes_chat_turns(
    _isolated_home: Path,
) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    pytest.importorskip("llama_cpp")
    home = _isolated_home
    common = ("eval", "run", "--suite", "humaneval", "--limit", "2", "--timeout", "300")
    for route in ("direct", "full"):
        done = nightschool(*common, "--route", route, home=home)
        assert done.returncode == 0, done.stdout + done.stderr

    with Store.open(home / "nightschool.db") as store:
        routes = [row[0] for row in store.query("SELECT config FROM eval_runs ORDER BY rowid")]
        turns = list(store.iter_trajectories(task_kind="eval"))
    assert ['"route": "direct"' in r for r in routes] == [True, False]
    direct = [t for t in turns if t.extra["router"]["decision"] == "direct"]
    # one model call, no tools; plus the redraws where the answer failed its prompt's doctests
    redraws = [int(t.extra.get("examples", {}).get("redraws", 0)) for t in direct]
    assert len(direct) == 2 and not any(t.tool_calls for t in direct)
    assert [t.n_steps for t in direct] == [1 + k for k in redraws]
    assert all(t.extra["router"]["reason"] == "forced (direct)" for t in direct)
    assert sum(t.extra["router"]["decision"] == "full" for t in turns) == 2

    # two pairs cannot show non-inferiority: measured, not written (exit 1)
    learned = nightschool("learn", "chat-router", "--min-pairs", "2", home=home)
    assert learned.returncode == 1, learned.stdout + learned.stderr
    assert "direct" in learned.stdout and "not saved" in learned.stdout
    assert not chat_router_path(home).exists()
    too_few = nightschool("learn", "chat-router", home=home)
    assert too_few.returncode == 2 and "--route direct" in too_few.stdout + too_few.stderr
    forced = nightschool("learn", "chat-router", "--min-pairs", "2", "--force", home=home)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    params = load_chat_router(chat_router_path(home))
    assert params.vectors.shape[0] == 2 and params.version == 1

    # `nightschool chat` (in process, with the playbook's embedder) routes with it
    result = CliRunner().invoke(
        app,
        ["chat", "--session", "routed"],
        input="Write a Python function that returns the sum of a list.\n/exit\n",
        env={"NIGHTSCHOOL_HOME": str(home), "NIGHTSCHOOL_MAX_TOKENS": "48"},
    )
    assert result.exit_code == 0, result.output
    with Store.open(home / "nightschool.db") as store:
        [turn] = store.iter_trajectories(task_kind="chat")
    route = turn.extra["router"]
    assert route["decision"] in ("direct", "full") and route["version"] == 1
    assert route["p_direct"] is not None and route["p_full"] is not None
