"""The budget router: replay, training, the gate's decision, checkpoints, the solver's use."""

from __future__ import annotations

import itertools
import json
import random
import shutil
from pathlib import Path

import pytest

from nightschool.challenges import render, templates
from nightschool.learn import (
    CheckpointError,
    RouterConfig,
    learn_router,
    load_router,
    router_path,
    solver_hooks,
    train_router,
)
from nightschool.learn.router import replay
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.solver.core import Solver, SolverConfig
from nightschool.store import Store
from nightschool.trajectory import Outcome, ToolCall, Trajectory

_IDS = itertools.count()


def run(passed: bool) -> ToolCall:
    return ToolCall(
        name="run_solution",
        arguments={"code": "x = 1"},
        result="passed" if passed else "failed",
        error=None if passed else "FAIL: wrong (test 1 of 4)",
    )


def episode(cluster: str, first_pass_at: int | None, *, kind: str = "selfplay") -> Trajectory:
    """An episode that passes at attempt `first_pass_at` (None: fails all 3); 100 tokens a call."""
    n = first_pass_at or 3
    calls = [run(first_pass_at == i + 1) for i in range(n)]
    passed = first_pass_at is not None
    return Trajectory(
        task_kind=kind,
        cluster=cluster,
        tier="basic",
        user_request=f"task in {cluster}",
        tool_calls=calls,
        tokens_in=60 * n,
        tokens_out=40 * n,
        outcome=Outcome.PASSED if passed else Outcome.FAILED,
        failure_reason=None if passed else "rejected",
        extra={"challenge_hash": f"h{next(_IDS)}", "model_calls": n},
    )


def world(n: int, seed: int = 0) -> list[Trajectory]:
    """`algo` passes at once; `sql` never passes; `python_general` needs retries."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        cluster = rng.choice(("algo", "sql", "python_general"))
        if cluster == "algo":
            items.append(episode(cluster, 1))
        elif cluster == "sql":
            items.append(episode(cluster, None))
        else:
            items.append(episode(cluster, rng.choice((2, 3, None))))
    return items


def test_replay_cuts_an_episode_to_a_smaller_budget() -> None:
    late = episode("sql", 3)
    assert replay(late, 3) == (True, 300.0)
    assert replay(late, 1) == (False, 100.0)
    assert replay(late, 0) == (False, 0.0)
    assert replay(episode("algo", 1), 3) == (True, 100.0)


def test_router_learns_where_budget_is_wasted_and_the_gate_promotes_it() -> None:
    params, report = train_router(world(600))
    assert report.episodes == 600
    assert report.decisions["stop"] > 100 and report.decisions["retry"] > 100
    assert report.pass_routed == report.pass_full  # only hopeless episodes were cut
    assert report.savings > 0.3
    assert report.promote and "PROMOTE" in report.verdict
    decision, _, p_any = params.decide(episode("sql", None))
    assert decision == "stop" and p_any < 0.05
    assert params.decide(episode("python_general", 2))[0] == "retry"
    assert params.decide(episode("algo", 1))[0] == "direct"


def test_a_router_that_loses_passes_is_not_promoted() -> None:
    # sql passes at the third attempt one time in four: stopping it loses passes.
    rng = random.Random(3)
    items = [
        episode("sql", 3 if rng.random() < 0.25 else None) if i % 2 else episode("algo", 1)
        for i in range(300)
    ]
    _, report = train_router(items, RouterConfig(stop_at=0.3))
    assert report.pass_routed < report.pass_full
    assert not report.promote


def test_not_enough_data_and_what_is_never_learned_from() -> None:
    from nightschool.learn import NotEnoughDataError

    with pytest.raises(NotEnoughDataError, match="at least 30"):
        train_router(world(10))
    evals = [t.model_copy(update={"task_kind": "eval"}) for t in world(100)]
    with pytest.raises(NotEnoughDataError):
        train_router(evals)
    samples = [t.model_copy(update={"extra": {**t.extra, "sample_of": "x"}}) for t in world(100)]
    with pytest.raises(NotEnoughDataError):
        train_router(samples)


def test_learn_router_saves_only_what_the_gate_promotes(store: Store, tmp_path: Path) -> None:
    store.append_trajectories(world(400))
    report = learn_router(store, tmp_path)
    assert report.saved and report.version == 1
    params = load_router(router_path(tmp_path))
    assert params.version == 1 and params.report["savings"] == report.savings
    assert params.decide(episode("sql", None))[0] == "stop"
    _, routed = solver_hooks(tmp_path)
    assert routed is not None
    assert solver_hooks(tmp_path, router=False) == (None, None)

    bad = tmp_path / "bad"
    with Store.open(tmp_path / "other.db") as other:
        rng = random.Random(1)
        other.append_trajectories(
            [episode(rng.choice(("algo", "sql")), rng.choice((1, 2, 3, None))) for _ in range(80)]
        )
        unsaved = learn_router(other, bad)
        assert not unsaved.saved and not router_path(bad).exists()


def test_router_checkpoint_rejections(store: Store, tmp_path: Path) -> None:
    store.append_trajectories(world(300))
    learn_router(store, tmp_path, force=True)
    path = router_path(tmp_path)
    data = json.loads(path.read_text())
    for change in (
        {"schema": "x/1"},
        {"feature_names": ["a"]},
        {"first": {"weights": [1.0], "bias": 0.0}},
        {"any_pass": {**data["any_pass"], "bias": float("nan")}},
    ):
        path.write_text(json.dumps({**data, **change}))
        with pytest.raises(CheckpointError):
            load_router(path)
    _, routed = solver_hooks(tmp_path)  # an unreadable router is ignored, not fatal
    assert routed is None


class FixedRouter:
    version = 7

    def __init__(self, decision: str) -> None:
        self.decision = decision

    def decide(self, trajectory: Trajectory) -> tuple[str, float, float]:
        if self.decision == "boom":
            raise RuntimeError("broken")
        return self.decision, 0.5, 0.5

    def budget(self, decision: str) -> int:
        return {"direct": 1, "retry": 3, "stop": 0}[decision]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
@pytest.mark.parametrize(
    ("decision", "calls"), [("direct", 1), ("retry", 3), ("stop", 0), ("boom", 3)]
)
def test_the_solver_spends_what_the_router_allows(decision: str, calls: int) -> None:
    name = next(t.name for t in templates() if t.name.startswith("algo."))
    challenge = render(name, "basic", 2)
    wrong = f"```python\n{challenge.wrong_solution}\n```"
    model = ScriptedModel([wrong, wrong + "\n", wrong + "\n\n", wrong, wrong, wrong, wrong])
    solver = Solver(
        model,
        Sandbox(),
        SolverConfig(max_attempts=3, max_resamples=0),
        router=FixedRouter(decision),
    )
    result = solver.solve(challenge)
    assert len(model.calls) == result.model_calls == calls
    traj = result.trajectory
    assert traj.outcome == Outcome.FAILED
    if decision == "boom":
        assert "router" not in traj.extra  # a broken router escalates to the full budget
    else:
        assert traj.extra["router"]["decision"] == decision
        assert traj.extra["router"]["version"] == 7
    if decision == "stop":
        assert "not attempted" in (traj.failure_reason or "")
