"""The `stub` runner (echoes prompts) and the `default` suite (regression + post_learning)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.evals import (
    SUITES,
    AgentReply,
    Runner,
    StubRunner,
    Task,
    TaskResult,
    get_suite,
    load_run,
    run_eval,
)
from nightschool.evals._storage import add_result, create_run, finish_run
from nightschool.sandbox import Sandbox
from nightschool.store import Store

STARTER = "algo.shortest_path:starter:0"
"""A starter-tier task of seed 0: its prompt holds the function skeleton in a code block."""


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, " ".join(result.output.split())  # Rich wraps to its terminal


class Silent(StubRunner):
    """A runner that does not echo: an empty reply (what the stub must not be)."""

    def ask(self, task: Task, *, session_id: str, timeout_s: float) -> AgentReply:
        return AgentReply(text="", tool_calls_visible=True, model=self.model_name)


def test_stub_runner_echoes_the_prompt() -> None:
    stub = StubRunner()
    assert isinstance(stub, Runner) and stub.name == "stub" and stub.model_name == "stub"
    stub.check()
    task = get_suite("post_learning").tasks[0]
    reply = stub.ask(task, session_id="s", timeout_s=1.0)
    assert reply == AgentReply(text=task.prompt, tool_calls_visible=True, model="stub")
    assert (reply.tool_calls, reply.tokens_in, reply.tokens_out) == ((), 0, 0)
    stub.close()


def test_default_suite_is_regression_then_post_learning() -> None:
    for seed in (0, 3):
        default = get_suite("default", seed)
        parts = get_suite("regression", seed).tasks + get_suite("post_learning", seed).tasks
        assert default.seed == seed and len(default.tasks) == 46
        assert [(t.id, t.prompt, dict(t.workspace_files)) for t in default.tasks] == [
            (t.id, t.prompt, dict(t.workspace_files)) for t in parts
        ]
        assert len({t.id for t in default.tasks}) == 46
    assert [t.id for t in get_suite("default", 0).tasks] != [t.id for t in default.tasks]
    assert SUITES["regression"].startswith(f"{len(get_suite('regression').tasks)} ")
    assert "46" in SUITES["default"]


def test_an_echo_scores_nothing_on_post_learning_because_tool_calls_are_visible() -> None:
    """Finding: two prompts hold discovery keywords ("listed", "list").

    The stub declares its (absent) tool calls visible, so `post_learning` judges
    tool use and fails all six. An echo judged by keywords (tool calls not
    visible, as from a plain OpenAI-compatible server) would pass csv-count
    and todo-first with score 0.5 each: the keyword fallback rewards a parrot.
    """
    tasks = get_suite("post_learning").tasks
    scores = [t.scorer(StubRunner().ask(t, session_id="s", timeout_s=1), None) for t in tasks]  # type: ignore[arg-type]
    assert [(s.passed, s.score) for s in scores] == [(False, 0.0)] * 6
    assert {s.error for s in scores} == {"read without discovering first (no tool calls)"}
    by_keywords = [t.scorer(AgentReply(t.prompt), None) for t in tasks]  # type: ignore[arg-type]
    passed = [t.id for t, s in zip(tasks, by_keywords, strict=True) if s.passed]
    assert passed == ["post_learning/csv-count", "post_learning/todo-first"]


def test_an_echo_submits_a_starter_skeleton_and_an_empty_reply_submits_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    suite = get_suite("default", 0)
    with Store.open(tmp_path / "db.sqlite") as store:
        echo = run_eval(suite, StubRunner(), store, sandbox, task_ids=[STARTER])
        silent = run_eval(suite, Silent(), store, sandbox, task_ids=[STARTER])
    assert (echo.runner, echo.model, silent.runner) == ("stub", "stub", "stub")
    assert not echo.results[0].passed and not silent.results[0].passed
    assert silent.results[0].error == "no code in reply"
    assert (echo.results[0].error or "").startswith("FAIL: fewest_roads(")  # the skeleton ran


def test_stub_misuse_exits_2() -> None:
    code, out = invoke("eval", "run", "-s", "default", "--runner", "stub", "--server", "x")
    assert code == 2 and "--server is only for --runner http" in out, out
    code, out = invoke("eval", "run", "-s", "default", "--runner", "stub", "--no-playbook")
    assert code == 2 and "--no-playbook" in out, out
    code, out = invoke("eval", "run", "-s", "default", "--runner", "stub", "--route", "direct")
    assert code == 2 and "the stub only echoes" in out, out
    code, out = invoke("eval", "run", "-s", "default", "--runner", "stub", "--backend", "ray")
    assert code == 2 and "drop --runner stub" in out, out
    code, out = invoke("eval", "run", "-s", "default", "--runner", "nope")
    assert code == 2 and "inprocess, http, stub" in out, out


def real_model_run(home: Path) -> str:
    """A stored run of suite `default` by a (pretend) real model, one result."""
    with Store.open(home / "nightschool.db") as store:
        run_id = create_run(
            store, suite="default", runner="inprocess", model="qwen", seed=0, version="0", config={}
        )
        add_result(store, run_id, TaskResult(STARTER, True, 1.0, 3, 4, 0.5))
        finish_run(store, run_id, "completed")
    return run_id


@pytest.mark.e2e
def test_e2e_default_suite_with_the_stub_runner_runs_freezes_and_compares(
    _isolated_home: Path, tmp_path: Path
) -> None:
    """`eval run --suite default --runner stub`, then `freeze` and `compare` (real sandbox, SQLite).

    An echo earns 0/46: the 32 regression tasks above starter have no code
    block in their prompt ("no code in reply"); the 8 starter prompts hold one
    (a function skeleton, or for bash.access_log the CSV sample), which is
    judged and rejected (the web starter starts Chromium, ~6 s); the 6
    post_learning tasks fail on tool use (see the keyword finding above).
    """
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    from nightschool.challenges._webrun import web_problem

    if (problem := web_problem()) is not None:  # the web starter's skeleton needs a browser
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Chromium: {problem}")
        pytest.skip(problem)
    code, out = invoke("eval", "run", "--suite", "default", "--runner", "stub")
    assert code == 0 and "0/46" in out, out
    with Store.open(_isolated_home / "nightschool.db") as store:
        (row,) = store.query("SELECT id FROM eval_runs")
        run = load_run(store, row[0])
    assert (run.suite, run.runner, run.model, run.status) == (
        "default",
        "stub",
        "stub",
        "completed",
    )
    assert [r.task_id for r in run.results] == [t.id for t in get_suite("default").tasks]
    errors = [r.error or "" for r in run.results]
    assert sum(not r.passed for r in run.results) == 46
    assert errors.count("no code in reply") == 32
    starters = [e for r, e in zip(run.results, errors, strict=True) if ":starter:" in r.task_id]
    assert len(starters) == 8 and all(e.startswith("FAIL") for e in starters), starters
    assert errors[40:] == ["read without discovering first (no tool calls)"] * 6

    baseline = tmp_path / "stub.json"
    code, out = invoke("eval", "freeze", "--run", run.id, "--output", str(baseline))
    assert code == 0, out
    provenance = json.loads(baseline.read_text())["provenance"]
    assert (provenance["runner"], provenance["model"], len(provenance["task_ids"])) == (
        "stub",
        "stub",
        46,
    )
    code, out = invoke("eval", "compare", "--baseline", str(baseline))  # reruns with the stub
    assert code == 0 and "no regression" in out and "paired tasks 46" in out, out

    real = real_model_run(_isolated_home)
    code, out = invoke("eval", "compare", "--baseline", str(baseline), "--run", real)
    assert code == 2 and "model mismatch" in out, out
    real_baseline = tmp_path / "real.json"
    assert invoke("eval", "freeze", "--run", real, "--output", str(real_baseline))[0] == 0
    code, out = invoke("eval", "compare", "--baseline", str(real_baseline), "--runner", "stub")
    assert code == 2 and "would use 'stub'" in out and "stub baseline" in out, out
    with Store.open(_isolated_home / "nightschool.db") as store:
        runners = [r[0] for r in store.query("SELECT runner FROM eval_runs")]
    assert sorted(runners) == ["inprocess", "stub", "stub"]  # the refused compare ran nothing
