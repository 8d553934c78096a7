"""Regression and post_learning suites: determinism, coverage, scoring."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nightschool.challenges import CLUSTERS, TIERS
from nightschool.errors import UserError
from nightschool.evals import AgentReply, ToolCallView, get_suite
from nightschool.evals._post_learning import discovered_before_reading
from nightschool.evals._regression import regression_challenges
from nightschool.sandbox import Sandbox


def test_regression_covers_every_cluster_and_tier_once() -> None:
    suite = get_suite("regression", seed=0)
    assert len(suite.tasks) == len(CLUSTERS) * len(TIERS) == 40
    pairs = {(t.meta["cluster"], t.meta["tier"]) for t in suite.tasks}
    assert pairs == {(c, t) for c in CLUSTERS for t in TIERS}
    assert all(t.id.endswith(":0") for t in suite.tasks)


def test_regression_is_deterministic_across_processes() -> None:
    here = [(t.id, t.prompt) for t in get_suite("regression", seed=7).tasks]
    code = (
        "import json; from nightschool.evals import get_suite; "
        "print(json.dumps([[t.id, t.prompt] for t in get_suite('regression', seed=7).tasks]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    import json

    assert [tuple(x) for x in json.loads(out.stdout)] == here


def test_regression_seed_changes_the_tasks() -> None:
    a = [t.prompt for t in get_suite("regression", seed=0).tasks]
    b = [t.prompt for t in get_suite("regression", seed=1).tasks]
    assert a != b


@pytest.mark.parametrize("index", [0, 13, 27, 37])  # 37: a web_automation task
def test_regression_reference_passes_and_wrong_fails(sandbox: Sandbox, index: int) -> None:
    challenge = regression_challenges(0)[index]
    task = get_suite("regression", 0).tasks[index]
    lang = "bash" if challenge.solution_file.endswith(".sh") else "python"
    good = AgentReply(text=f"```{lang}\n{challenge.reference_solution}\n```")
    bad = AgentReply(text=f"```{lang}\n{challenge.wrong_solution}\n```")
    assert task.scorer(good, sandbox).passed
    verdict = task.scorer(bad, sandbox)
    assert not verdict.passed and verdict.error


def test_select_by_ids_and_limit() -> None:
    suite = get_suite("humaneval")
    chosen = suite.select(["HumanEval/5", "HumanEval/1"])
    assert [t.id for t in chosen] == ["HumanEval/1", "HumanEval/5"]  # suite order kept
    assert len(suite.select(limit=3)) == 3
    with pytest.raises(UserError, match="no task"):
        suite.select(["HumanEval/999"])


def test_unknown_suite_is_a_user_error() -> None:
    with pytest.raises(UserError, match="known suites"):
        get_suite("nope")


def view(*names: str, command: str | None = None) -> tuple[ToolCallView, ...]:
    return tuple(
        ToolCallView(name, arguments={"command": command} if command else {}) for name in names
    )


def test_discovery_before_reading_rules() -> None:
    assert discovered_before_reading(view("list_files", "read_file"))
    assert discovered_before_reading(view("list_files"))
    assert not discovered_before_reading(view("read_file", "list_files"))
    assert not discovered_before_reading(view())
    assert not discovered_before_reading(view("run_python"))
    assert discovered_before_reading(view("run_shell", command="find . -name '*.yaml'"))
    assert not discovered_before_reading(view("run_shell", command="cat config.yaml"))


def test_post_learning_scores_tool_calls_when_visible() -> None:
    task = next(t for t in get_suite("post_learning").tasks if t.id.endswith("config-port"))
    assert "deploy/config.yaml" in task.workspace_files
    good = AgentReply("The port is 8123.", view("list_files", "read_file"), True)
    blind = AgentReply("I will find it: the port is 8123.", view("read_file"), True)
    silent = AgentReply("Port 8080.", (), True)
    s_good, s_blind, s_silent = (task.scorer(r, None) for r in (good, blind, silent))  # type: ignore[arg-type]
    assert s_good.passed and s_good.score == 1.0
    assert not s_blind.passed and s_blind.score == 0.5 and "read_file" in (s_blind.error or "")
    assert not s_silent.passed and s_silent.score == 0.0


def test_post_learning_falls_back_to_keywords_without_tool_calls() -> None:
    task = get_suite("post_learning").tasks[0]
    assert task.scorer(AgentReply("Let me list the workspace first."), None).passed  # type: ignore[arg-type]
    assert task.scorer(AgentReply("I located deploy/config.yaml: 8123"), None).passed  # type: ignore[arg-type]
    assert not task.scorer(AgentReply("The port is 80."), None).passed  # type: ignore[arg-type]
