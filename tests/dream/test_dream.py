from __future__ import annotations

import random
import shutil

import pytest

from nightschool.challenges import Challenge
from nightschool.dream import DreamLoop, FrontierTracker, summarize
from nightschool.errors import ModelUnavailableError, UserError
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver
from nightschool.store import Store
from nightschool.trajectory import Outcome

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


class Oracle:
    """Answers with the reference solution of whatever challenge was asked (or a wrong one)."""

    def __init__(self, loop: DreamLoop, *, correct: bool) -> None:
        self.current: Challenge | None = None
        self.correct = correct
        original = loop.next_challenge

        def spy(pick):  # type: ignore[no-untyped-def]
            self.current = original(pick)
            return self.current

        loop.next_challenge = spy  # type: ignore[method-assign]

    def __call__(self, messages: list[Message]) -> str:
        assert self.current is not None
        code = self.current.reference_solution if self.correct else self.current.wrong_solution
        return f"```\n{code}\n```"


def make_loop(store: Store, model: ScriptedModel | None = None, seed: int = 0) -> DreamLoop:
    tracker = FrontierTracker(store)
    solver = Solver(model or ScriptedModel(["x"]), Sandbox())
    return DreamLoop(store, solver, tracker, rng=random.Random(seed))


def test_cycles_store_trajectories_and_frontier(store: Store) -> None:
    loop = make_loop(store)
    oracle = Oracle(loop, correct=True)
    loop.solver.model = ScriptedModel(oracle)
    results = loop.run(4)
    assert all(r.passed and r.attempts == 1 for r in results)
    counts = store.counts()
    assert counts["trajectories"] == 4 and counts["passed"] == 4 and counts["frontier_runs"] == 4
    stored = list(store.iter_trajectories())
    assert {t.session_id for t in stored} == {loop.session_id}
    assert all(t.task_kind == "selfplay" and t.tool_calls for t in stored)
    rows = summarize(results, loop.tracker)
    assert sum(int(r["runs"]) for r in rows) == 4  # type: ignore[call-overload]


def test_cluster_and_tier_overrides(store: Store) -> None:
    loop = make_loop(store)
    oracle = Oracle(loop, correct=False)
    loop.solver.model = ScriptedModel(oracle)
    [result] = loop.run(1, cluster="regex_parse", tier="expert")
    assert result.cluster == "regex_parse" and result.tier == "expert" and not result.passed
    assert result.attempts == 3
    [traj] = store.iter_trajectories()
    assert traj.outcome == Outcome.FAILED and traj.extra["pick_mode"] == "user"
    with pytest.raises(UserError):
        loop.run(1, cluster="astrology")
    with pytest.raises(UserError):
        loop.run(1, tier="godlike")


def test_model_outage_recorded_as_infrastructure_and_stops(store: Store) -> None:
    loop = make_loop(store, ScriptedModel([ModelUnavailableError("connection refused")]))
    with pytest.raises(ModelUnavailableError):
        loop.run(3)
    counts = store.counts()
    assert counts["trajectories"] == 1 and counts["unknown"] == 1
    assert counts["frontier_runs"] == 0  # never counted against the agent


def test_interrupt_mid_cycle_writes_nothing(store: Store) -> None:
    loop = make_loop(store, ScriptedModel([KeyboardInterrupt()]))  # type: ignore[list-item]
    with pytest.raises(KeyboardInterrupt):
        loop.run(1)
    assert store.counts() == {
        "trajectories": 0,
        "passed": 0,
        "failed": 0,
        "unknown": 0,
        "corrections": 0,
        "frontier_runs": 0,
    }
