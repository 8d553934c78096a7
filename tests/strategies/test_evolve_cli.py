"""`nightschool evolve` as a user runs it: the console script in a subprocess, real sandbox."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from nightschool.errors import EXIT_CODES
from nightschool.strategies.author import AUTHOR_SYSTEM
from nightschool.strategies.tasks import draw_holdout, draw_train

SCRIPT = Path(sys.executable).with_name("nightschool")
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
MAGIC = "MAGIC: read the task twice"
DEPTH = f'def solve(task, harness):\n    return harness.sample(prompt_extra="{MAGIC}")\n'


def evolve(
    *args: str, home: Path, env_extra: dict[str, str] | None = None, timeout: float = 800
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "160", **(env_extra or {})}
    return subprocess.run(
        [str(SCRIPT), "evolve", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_misuse_exits_2_before_any_work(tmp_path: Path) -> None:
    bad = evolve("--champion", "best", home=tmp_path)
    assert bad.returncode == EXIT_CODES["usage"] and "--champion" in bad.stderr
    missing = evolve("--resume", str(tmp_path / "nope"), home=tmp_path)
    assert missing.returncode == EXIT_CODES["usage"]
    assert "no evolution checkpoint" in missing.stderr
    mixed = evolve(
        "--holdout-gate", "sequential", "--gate-mode", "noninferiority_cheaper", home=tmp_path
    )
    assert mixed.returncode == EXIT_CODES["usage"] and "superiority only" in mixed.stderr


@needs_bwrap
@pytest.mark.e2e
def test_evolve_over_http_promotes_a_scripted_strategy(
    tmp_path: Path, openai_stub: Callable[..., AbstractContextManager[str]]
) -> None:
    """Real HTTP model server (scripted replies), real sandbox, the CLI end to end."""
    train = draw_train(3, seed=4, clusters=["python_general"])
    holdout = draw_holdout(6, train, seed=4, clusters=["python_general"])
    known = {t.render().prompt: t.render() for t in train + holdout}

    def reply(messages: list[dict[str, Any]]) -> str:
        if messages[0]["content"] == AUTHOR_SYSTEM:
            return f"```python\n{DEPTH}```"
        for prompt, challenge in known.items():
            if prompt in messages[1]["content"]:
                good = MAGIC in messages[-1]["content"]
                body = challenge.reference_solution if good else challenge.wrong_solution
                return f"```python\n{body}\n```"
        return "unknown task"

    run_dir = tmp_path / "run"
    with openai_stub(reply) as base_url:
        result = evolve(
            *("--generations", "1", "--population", "1", "--train", "3", "--holdout", "6"),
            *("--budget", "2", "--seed", "4", "--cluster", "python_general", "--champion"),
            *("score", "--run-dir", str(run_dir), "--base-url", base_url, "--model", "stub"),
            home=tmp_path / "home",
        )
    assert result.returncode == 0, result.stderr
    assert "generation 0" in result.stdout and "generation 1" in result.stdout
    assert "archive lineage" in result.stdout and "PROMOTE" in result.stdout
    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == "done" and report["incumbent"] == "g1c1"
    assert report["verdict"]["promote"] is True and report["verdict"]["n"] == 6
    assert "PROMOTE" in (run_dir / "report.md").read_text()
    # Resuming a finished run reprints the same verdict without new work.
    with openai_stub(lambda _m: "unused") as base_url:
        again = evolve(
            "--resume",
            str(run_dir),
            "--base-url",
            base_url,
            "--model",
            "stub",
            home=tmp_path / "home",
        )
    assert again.returncode == 0 and "PROMOTE" in again.stdout


@needs_bwrap
@pytest.mark.e2e
def test_evolve_on_the_embedded_model_records_a_coherent_outcome(tmp_path: Path) -> None:
    """SmolLM2-135M authors (probably badly); whatever happens must be recorded coherently."""
    run_dir = tmp_path / "run"
    result = evolve(
        *("--generations", "1", "--population", "1", "--train", "2", "--holdout", "6"),
        *("--budget", "1", "--seed", "0", "--cluster", "python_general"),
        *("--run-dir", str(run_dir)),
        home=tmp_path / "home",
        env_extra={"NIGHTSCHOOL_MAX_TOKENS": "128"},
    )
    assert result.returncode in (EXIT_CODES["ok"], EXIT_CODES["error"]), result.stderr
    state = json.loads((run_dir / "checkpoint.json").read_text())
    report = json.loads((run_dir / "report.json").read_text())
    assert (run_dir / "report.md").is_file() and report["status"] == state["status"]
    assert state["models"]["solver"] == "smollm2-135m"
    gen0 = state["generations"][0]
    assert [r["name"] for r in gen0["rows"]] == ["sample", "refine", "sample_then_refine"]
    for row in gen0["rows"]:
        assert 0.0 <= row["score"] <= 1.0 and row["cost"] > 0  # the model really was called
        assert all(r["model_calls"] <= 1 for r in row["results"])  # budget 1, enforced
        assert row["score"] == sum(r["passed"] for r in row["results"]) / 2
    if result.returncode == EXIT_CODES["error"]:  # authoring failed: recorded, run stopped
        assert state["status"] == "failed" and state["generations_completed"] == 0
        [row] = state["failed_generation"]["rows"]
        assert row["status"] == "author_failed" and row["score"] is None
        assert row["detail"].count("smollm2-135m:") == 2  # primary + one retry
        assert "all 1 candidate(s) failed" in result.stderr
        assert state["verdict"] is None and state["holdout"] is None
    else:
        assert state["status"] == "done" and state["generations_completed"] == 1
        rows = {r["name"]: r for r in state["generations"][1]["rows"]}
        assert set(rows) == {state["baseline_incumbent"], "g1c1"}
        verdict = state["verdict"]
        if state["incumbent"] == state["baseline_incumbent"]:
            assert verdict["test"] == "none" and verdict["promote"] is False
        else:
            assert verdict["n"] == 6 and len(state["holdout"]["pairs"]) == 6
        assert "promotion decision" in result.stdout
