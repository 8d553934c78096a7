"""Self-play through the registered champion: real sandbox, scripted model, real dream loop."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from nightschool.agent.pipeline import ChatPipeline
from nightschool.challenges import Challenge, render, templates
from nightschool.dream.frontier import FrontierTracker
from nightschool.errors import ModelUnavailableError
from nightschool.llm import Message, ScriptedModel
from nightschool.practice import Practice, open_practice
from nightschool.sandbox import Sandbox
from nightschool.solver.core import SYSTEM_PROMPT, Solver
from nightschool.store import Store
from nightschool.strategies import champions
from nightschool.strategies.champion_solver import ChampionSolver
from nightschool.trajectory import Outcome, Trajectory

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

MAGIC = "MAGIC: read the task twice"
CHECKED = f'''def solve(task, harness):
    code = harness.sample(prompt_extra="{MAGIC}")
    if harness.run_tests(code) == "PASSED":
        return code
    return harness.refine(code, "try again")
'''
CRASHES = "def solve(task, harness):\n    return task.nothing\n"
VERDICT = {"promote": True, "reason": "won the holdout", "n": 6, "test": "mcnemar-exact"}


class Oracle:
    """Answers with the right solution of the challenge in play only when the prompt has MAGIC."""

    def __init__(self, practice: Practice) -> None:
        self.current: Challenge | None = None
        loop = practice.loop
        original = loop.next_challenge

        def spy(pick):  # type: ignore[no-untyped-def]
            self.current = original(pick)
            return self.current

        loop.next_challenge = spy  # type: ignore[method-assign]

    def __call__(self, messages: Sequence[Message]) -> str:
        assert self.current is not None
        good = any(MAGIC in m["content"] for m in messages if m["role"] == "user")
        body = self.current.reference_solution if good else self.current.wrong_solution
        return f"```python\n{body}\n```"


def register(store: Store, source: str = CHECKED, budget: int = 2) -> champions.ChampionEntry:
    now = champions.current(store)
    return champions.register(
        store,
        name="g1c1",
        source=source,
        verdict=VERDICT,
        lineage=[{"name": "g1c1", "generation": 1, "run_id": "/runs/r"}],
        run_id="/runs/r",
        record={"budget": budget},
        proven_against=None if now is None else now.id,
    )


@contextmanager
def practice(store: Store) -> Iterator[tuple[Practice, ScriptedModel, Oracle]]:
    model = ScriptedModel(["unused"], name="scripted-solver")
    with open_practice(
        store, model, Sandbox(), lessons=False, skills=False, verify_k=0, curriculum=False, seed=4
    ) as opened:
        oracle = Oracle(opened)
        model = ScriptedModel(oracle, name="scripted-solver")
        opened.loop.solver.model = model
        yield opened, model, oracle


def stored(store: Store, trajectory_id: str) -> Trajectory:
    found = store.get_trajectory(trajectory_id)
    assert found is not None
    return found


def test_a_cycle_solves_through_the_champion_and_a_rollback_returns_to_the_solver(
    store: Store,
) -> None:
    champion = register(store)
    with practice(store) as (opened, model, oracle):
        assert isinstance(opened.loop.solver, ChampionSolver)
        cycle = opened.loop.run_cycle(cluster="python_general")
        assert cycle.passed and cycle.attempts == 1 and cycle.infrastructure_error is None
        traj = stored(store, cycle.trajectory_id)
        assert traj.outcome == Outcome.PASSED and traj.task_kind == "selfplay"
        assert traj.extra["strategy"] == {
            "champion_id": champion.id,
            "name": "g1c1",
            "budget": 2,
            "status": "ok",
            "detail": "",
        }
        assert [c.arguments["via"] for c in traj.tool_calls] == ["run_tests", "final"]
        assert all(c.name == "run_solution" and c.result == "passed" for c in traj.tool_calls)
        assert oracle.current is not None and oracle.current.template == cycle.template
        code = traj.tool_calls[-1].arguments["code"]
        assert code.strip() == oracle.current.reference_solution.strip()
        assert traj.extra["model_calls"] == 1 and traj.extra["test_runs"] == 1
        assert traj.n_steps == 1 and traj.tokens_in > 0 and traj.tokens_out > 0
        assert traj.validator_signal == "pass" and traj.model == "scripted-solver"
        [call] = model.calls  # one metered call, made through the strategy's harness
        assert call.messages[0]["content"] == SYSTEM_PROMPT
        assert call.messages[1]["content"].endswith(MAGIC) and call.max_tokens == 512
        [run] = FrontierTracker(store).runs("python_general")
        assert run.passed and run.attempts == 1 and run.trajectory_id == traj.id

        champions.rollback(store)  # takes effect at the next cycle of the same loop
        cycle = opened.loop.run_cycle(cluster="python_general")
        traj = stored(store, cycle.trajectory_id)
        assert not cycle.passed and traj.outcome == Outcome.FAILED
        assert traj.extra["strategy"] == {"champion_id": None, "name": "solver"}
        assert traj.extra["retry_mode"] == "fresh"  # the default Solver's record
        assert not any(MAGIC in m["content"] for c in model.calls[1:] for m in c.messages)


def test_a_crashing_champion_is_a_failed_episode_not_a_fault(store: Store) -> None:
    register(store, CRASHES)
    with practice(store) as (opened, model, _oracle):
        cycle = opened.loop.run_cycle(cluster="python_general")
    traj = stored(store, cycle.trajectory_id)
    assert not cycle.passed and cycle.attempts == 1 and cycle.infrastructure_error is None
    assert traj.outcome == Outcome.FAILED and traj.extra["strategy"]["status"] == "error"
    assert "AttributeError" in traj.extra["strategy"]["detail"]
    [final] = traj.tool_calls
    assert final.arguments["via"] == "final" and final.error is not None
    assert final.error.startswith("strategy error:") and traj.failure_reason is not None
    assert "strategy champion 1 (g1c1) failed" in traj.failure_reason
    assert model.calls == [] and traj.tokens_in == 0
    assert len(FrontierTracker(store).runs("python_general")) == 1


def test_a_model_outage_under_the_champion_is_recorded_as_infrastructure(store: Store) -> None:
    register(store)
    with practice(store) as (opened, _model, _oracle):
        opened.loop.solver.model = ScriptedModel([ModelUnavailableError("connection refused")])
        with pytest.raises(ModelUnavailableError):
            opened.loop.run_cycle(cluster="python_general")
    [traj] = store.iter_trajectories()
    assert traj.outcome == Outcome.UNKNOWN and traj.extra["strategy"]["champion_id"] == 1
    assert "ModelUnavailableError" in traj.extra["infrastructure_error"]
    assert FrontierTracker(store).runs("python_general") == []


def test_a_registered_source_the_lint_now_refuses_falls_back_to_the_solver(
    store: Store,
) -> None:
    store.connection.execute(  # as an older version might have written it
        "INSERT INTO strategy_champions(timestamp, kind, name, source, verdict) "
        "VALUES (0, 'promotion', 'old', ?, ?)",
        ("import os\ndef solve(task, harness):\n    return ''\n", json.dumps(VERDICT)),
    )
    with practice(store) as (opened, _model, _oracle):
        cycle = opened.loop.run_cycle(cluster="python_general")
    strategy = stored(store, cycle.trajectory_id).extra["strategy"]
    assert strategy["champion_id"] is None and strategy["name"] == "solver"
    assert "champion 1 fails the contract lint" in strategy["champion_skipped"]


def test_worked_examples_reach_the_strategy_harness_prompt(store: Store) -> None:
    register(store)
    seen: list[Sequence[Message]] = []

    def reply(messages: Sequence[Message]) -> str:
        seen.append(messages)
        return "no code"

    solver = ChampionSolver(Solver(ScriptedModel(reply), Sandbox()), store)
    challenge = render(templates("python_general")[0].name, "basic", 7)
    result = solver.solve(
        challenge,
        skills=["### WORKED EXAMPLES\nexample body"],
        skill_ids=["skill-1"],
    )
    assert seen and seen[0][0]["content"] == f"{SYSTEM_PROMPT}\n\n### WORKED EXAMPLES\nexample body"
    assert result.trajectory.extra["skills_shown"] == ["skill-1"]
    assert not result.passed and result.trajectory.extra["strategy"]["champion_id"] == 1
    with pytest.raises(ValueError, match="skill ids but no skill section"):
        solver.solve(challenge, skill_ids=["skill-1"])


def test_chat_turns_record_the_champion_current_at_the_time(store: Store, tmp_path: Path) -> None:
    pipeline = ChatPipeline(
        model=ScriptedModel(["Hello there."]),
        store=store,
        sandbox=Sandbox(),
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "workspaces",
        wake_up=False,
    )
    try:
        before = pipeline.handle([{"role": "user", "content": "hi"}], session_id="s1")
        champion = register(store)
        pipeline.model = ScriptedModel(["Hello again."])
        after = pipeline.handle([{"role": "user", "content": "hi again"}], session_id="s1")
    finally:
        pipeline.close()
    assert before.trajectory.extra["strategy"] == {
        "champion_id": None,
        "name": "agent_loop",
        "current_champion_id": None,
    }
    assert after.trajectory.extra["strategy"]["current_champion_id"] == champion.id
    assert stored(store, after.trajectory.id).extra["strategy"]["name"] == "agent_loop"
