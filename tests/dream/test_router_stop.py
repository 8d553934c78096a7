"""A saved budget router that says `stop`: the dream cycle is skipped, not crashed, not failed.

Before issue 30's audit fix the solver's 0 attempts reached
`FrontierTracker.record_run`, which raised `ValueError` inside the cycle.
"""

from __future__ import annotations

from pathlib import Path

from nightschool.cli._dream import _mark
from nightschool.dream import summarize
from nightschool.dream.samples import Sampler
from nightschool.learn.router import RouterParams, _Logit, router_path, save_router
from nightschool.learn.steps import REQUEST_FEATURES
from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.practice import open_practice, run_loop
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Outcome


def save_stop_router(home: Path) -> None:
    """A checkpoint whose p_first and p_any are ~0 for every request: always `stop`."""
    never = _Logit(tuple([0.0] * len(REQUEST_FEATURES)), -10.0)
    save_router(router_path(home), RouterParams(never, never, 0.8, 0.05, 3, version=1))


def test_a_stopped_cycle_is_skipped_and_recorded_as_such(store: Store, tmp_path: Path) -> None:
    home = tmp_path / "home"
    save_stop_router(home)
    model = ScriptedModel([])  # any model call would raise: a stop spends nothing
    playbook = SkillMemory(store, HashingEmbedder())
    playbook.learn(
        trigger="When a task asks for a sorted result",
        anti_pattern="",
        correct_pattern="sort before printing",
        domains=["algo"],
        source="manual",
    )
    with open_practice(
        store, model, Sandbox(), playbook=playbook, lessons=True, skills=True, verify_k=2,
        seed=4, curriculum=False, home=home,
    ) as practice:  # fmt: skip
        loop = practice.loop
        assert loop.solver.router is not None
        cycles = loop.run(2)  # raised ValueError from record_run before the fix
        more = run_loop(
            practice, should_stop=lambda: False, sleep=lambda _s: False, max_cycles=1,
            cooldown_scale=0.0,
        )  # fmt: skip
        sample = Sampler(store, loop.solver, 3, session_id=loop.session_id).sample(cycles[0])
    assert model.calls == []
    for cycle in [*cycles, *more]:
        assert cycle.skipped is not None and "router said stop" in cycle.skipped
        assert not cycle.passed and cycle.attempts == 0 and cycle.infrastructure_error is None
        assert cycle.skill is None and cycle.lesson is None
        stored = store.get_trajectory(cycle.trajectory_id)
        assert stored is not None
        assert stored.outcome == Outcome.UNKNOWN and stored.failure_reason is None  # no verdict
        assert stored.extra["skipped"] == cycle.skipped
        assert stored.extra["router"]["decision"] == "stop"
        assert stored.extra["router"]["budget"] == 0 and stored.tool_calls == []
    counts = store.counts()
    assert counts["trajectories"] == 3 and counts["unknown"] == 3
    assert counts["failed"] == 0 and counts["passed"] == 0
    assert counts["frontier_runs"] == 0  # not evidence about the agent: the frontier is as before
    assert all(state.runs == 0 for state in loop.tracker.states())
    assert playbook.count(kind="skill") == 0 and playbook.count(kind="lesson") == 1
    assert all(lesson.times_shown == 0 for lesson in playbook.list())  # nothing was shown
    assert sample.skipped == "the cycle was not attempted (router: stop)" and sample.passed == ()
    rows = summarize([*cycles, *more], loop.tracker)
    assert sum(int(str(r["runs"])) for r in rows) == 0  # neither a pass nor a failure
    assert sum(int(str(r["skipped"])) for r in rows) == 3
    assert all(r["passes"] == 0 and r["infra_errors"] == 0 for r in rows)
    mark = _mark(cycles[0])  # what `nightschool dream` prints for the cycle
    assert mark.startswith("[dim]- skipped: the budget router said stop") and "failed" not in mark
