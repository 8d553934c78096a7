"""End to end: `nightschool dream --search best-of-n|mcts` through the installed CLI,
a real HTTP model server on loopback, the real sandbox, the real database, and a
PRM checkpoint file read by the running command."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nightschool.learn import FEATURE_NAMES, PrmParams, prm_path, save_checkpoint
from nightschool.solver.repair import ROOT

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

SCRIPT = Path(sys.executable).with_name("nightschool")

REPLIES = (
    "```python\nprint('first try')\n```",
    "```python\ndef broken(:\n    pass\n```",  # the repair makes it worse: a syntax error
    "```python\nprint('third try')\n```",
)


def syntax_averse_prm() -> PrmParams:
    """A PRM that values a state lower when its run ended in a syntax error."""
    weights = np.zeros(len(FEATURE_NAMES))
    weights[FEATURE_NAMES.index("err_syntax")] = -4.0
    return PrmParams(weights, -1.0, np.zeros(len(FEATURE_NAMES)))


def dream(home: Path, base_url: str, search: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "160"}
    args = ["dream", "--cycles", "1", "--seed", "5", "--cluster", "python_general"]
    args += ["--tier", "basic", "--no-lessons", "--no-skills", "--verify-k", "0"]
    args += ["--templates-only", "--no-router", "--search", search]
    args += ["--base-url", base_url, "--model", "stub"]
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300
    )


def stored(home: Path) -> dict[str, Any]:
    conn = sqlite3.connect(home / "nightschool.db")
    try:
        [(record,)] = conn.execute(
            "SELECT record FROM trajectories WHERE task_kind = 'selfplay'"
        ).fetchall()
    finally:
        conn.close()
    return dict(json.loads(str(record)))


def run(
    tmp_path: Path, openai_stub: Callable[..., Any], search: str, prm: bool
) -> tuple[dict[str, Any], list[str]]:
    """One dream cycle; (the stored trajectory, the user message of each model call)."""
    home = tmp_path / f"{search}-{prm}"
    if prm:
        save_checkpoint(prm_path(home), syntax_averse_prm())
    prompts: list[str] = []

    def reply(messages: list[dict[str, str]]) -> str:
        prompts.append(messages[-1]["content"])
        return REPLIES[min(len(prompts), len(REPLIES)) - 1]

    with openai_stub(reply) as base_url:
        result = dream(home, base_url, search)
    assert result.returncode == 0, result.stderr
    return stored(home), prompts


def test_mcts_samples_afresh_when_the_prm_says_the_repair_got_worse(
    tmp_path: Path, openai_stub: Callable[..., Any]
) -> None:
    record, prompts = run(tmp_path, openai_stub, "mcts", prm=True)
    assert record["outcome"] == "failed" and len(prompts) == 3
    assert [call["arguments"]["parent"] for call in record["tool_calls"]] == [ROOT, 0, ROOT]
    assert "SyntaxError" in (record["tool_calls"][1]["error"] or "")
    assert prompts[2] == prompts[0] != prompts[1]  # the task alone, not the broken repair
    assert record["extra"]["search"] == {
        "policy": "mcts",
        "repaired": [0, ROOT],
        "switched": 1,
        "fresh_samples": 1,
    }


def test_mcts_without_a_prm_repairs_the_latest_failure(
    tmp_path: Path, openai_stub: Callable[..., Any]
) -> None:
    record, prompts = run(tmp_path, openai_stub, "mcts", prm=False)
    assert [call["arguments"]["parent"] for call in record["tool_calls"]] == [ROOT, 0, 1]
    assert "def broken(:" in prompts[2]  # the retry repairs the syntax error, as retry does
    assert record["extra"]["search"]["switched"] == 0


def test_best_of_n_prompts_the_task_alone_every_time(
    tmp_path: Path, openai_stub: Callable[..., Any]
) -> None:
    record, prompts = run(tmp_path, openai_stub, "best-of-n", prm=False)
    assert len(prompts) == 3 and len(set(prompts)) == 1
    assert [call["arguments"]["parent"] for call in record["tool_calls"]] == [ROOT] * 3
    assert record["extra"]["search"]["fresh_samples"] == 2


def test_an_unknown_search_is_refused(tmp_path: Path) -> None:
    result = dream(tmp_path / "h", "http://127.0.0.1:9/v1", "lats")
    assert result.returncode == 2
    assert "unknown search 'lats'" in result.stderr and "Traceback" not in result.stderr
