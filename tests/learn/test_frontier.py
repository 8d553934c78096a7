"""Frontier weighting: PRM uncertainty x rarity, the floor, the fallbacks, the dream's use."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from nightschool.challenges import CLUSTERS
from nightschool.dream.frontier import FrontierTracker
from nightschool.learn import FEATURE_NAMES, LivePrm, PrmParams, frontier, prm_path, save_checkpoint
from nightschool.learn.frontier import (
    FRONTIER_PREFIX,
    PrmFrontierTracker,
    cluster_weights,
    make_tracker,
    pick_frontier_seed,
)
from nightschool.llm import ScriptedModel
from nightschool.practice import open_practice
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Outcome, ToolCall, Trajectory


def verdict_prm() -> PrmParams:
    """A PRM that reads the step's verdict: passed states near 1, failed near 0."""
    weights = np.zeros(len(FEATURE_NAMES))
    weights[FEATURE_NAMES.index("verdict_passed")] = 8.0
    return PrmParams(weights, -4.0, np.zeros(len(FEATURE_NAMES)))


def episode(cluster: str, passed: bool) -> Trajectory:
    call = ToolCall(
        name="run_solution",
        arguments={"code": "x = 1"},
        result="passed" if passed else "failed",
        error=None if passed else "FAIL (test 1 of 3)",
    )
    return Trajectory(
        task_kind="selfplay",
        cluster=cluster,
        tier="starter",
        tool_calls=[call],
        outcome=Outcome.PASSED if passed else Outcome.FAILED,
        failure_reason=None if passed else "rejected",
    )


def stock(store: Store) -> None:
    """algo always passes (certain), sql passes half the time (uncertain), both well
    practised; bash has two episodes (rare); the rest never ran."""
    items = [episode("algo", True) for _ in range(30)]
    items += [episode("sql", i % 2 == 0) for i in range(30)]
    items += [episode("bash", False), episode("bash", True)]
    store.append_trajectories(items)


def test_weights_favour_uncertain_and_rare_clusters(store: Store) -> None:
    stock(store)
    weights = cluster_weights(store, verdict_prm(), FrontierTracker(store))
    assert set(weights) == set(CLUSTERS)
    algo, sql, bash, never = (
        weights["algo"],
        weights["sql"],
        weights["bash"],
        weights["regex_parse"],
    )
    assert algo[1] < 0.1 and sql[1] > 0.9  # certain vs uncertain
    assert bash[2] > sql[2] and never[2] == 1.0  # rarer
    assert never[0] > bash[0] > sql[0] > algo[0]


def test_saturated_clusters_weigh_nothing(store: Store) -> None:
    stock(store)
    tracker = FrontierTracker(store)
    for seed in range(3):  # flat first-try passes: saturated
        tracker.record_run(
            cluster="sql", template="sql.top_product", tier="starter", seed=seed,
            challenge_hash=f"s{seed}", passed=True, attempts=1,
        )  # fmt: skip
    assert tracker.state("sql").saturated
    assert cluster_weights(store, verdict_prm(), tracker)["sql"][0] == 0.0
    picks = Counter(
        pick_frontier_seed(store, verdict_prm(), tracker, random.Random(i)).cluster  # type: ignore[union-attr]
        for i in range(200)
    )
    assert "sql" not in picks


def test_picks_follow_the_weights_and_say_so(store: Store) -> None:
    stock(store)
    tracker = FrontierTracker(store, clusters=("algo", "sql"))
    picks = [
        pick_frontier_seed(store, verdict_prm(), tracker, random.Random(i)) for i in range(300)
    ]
    counts = Counter(p.cluster for p in picks if p is not None)
    assert counts["sql"] > 10 * max(1, counts["algo"])
    assert all(p is not None and p.reason.startswith(FRONTIER_PREFIX) for p in picks)
    assert all(p is not None and p.mode == "frontier" for p in picks)


def test_tracker_falls_back_without_a_prm_on_the_floor_roll_and_on_errors(
    store: Store, tmp_path: Path
) -> None:
    stock(store)
    path = tmp_path / "learners" / "prm.json"
    cold = PrmFrontierTracker(store, LivePrm(path))
    assert {cold.pick_seed(random.Random(i)).mode for i in range(50)} <= {
        "exploration", "brittle", "cold_start", "coverage",
    }  # fmt: skip
    save_checkpoint(path, verdict_prm())
    warm = PrmFrontierTracker(store, LivePrm(path))
    modes = Counter(warm.pick_seed(random.Random(i)).mode for i in range(400))
    assert 0.7 < modes["frontier"] / 400 < 0.9  # the 20% floor goes to the legacy picker

    class Broken(LivePrm):
        @property
        def params(self) -> PrmParams | None:
            raise RuntimeError("scorer down")

    broken = PrmFrontierTracker(store, Broken(path))
    assert all(broken.pick_seed(random.Random(i)).mode != "frontier" for i in range(50))


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_a_dream_cycle_practises_where_the_frontier_points(store: Store, tmp_path: Path) -> None:
    stock(store)
    home = tmp_path / "home"
    save_checkpoint(prm_path(home), verdict_prm())
    model = ScriptedModel(lambda _messages: "```python\nprint('no idea')\n```")
    with open_practice(
        store, model, Sandbox(), lessons=False, skills=False, verify_k=0, seed=3,
        curriculum=False, home=home, frontier="prm",
    ) as practice:  # fmt: skip
        assert isinstance(practice.loop.tracker, PrmFrontierTracker)
        cycles = [practice.loop.run_cycle() for _ in range(4)]
    stored = [store.get_trajectory(c.trajectory_id) for c in cycles]
    modes = [t.extra["pick_mode"] for t in stored if t is not None]
    assert "frontier" in modes
    reasons = [t.extra["pick_reason"] for t in stored if t is not None]
    assert any(r.startswith(FRONTIER_PREFIX) for r in reasons)
    with open_practice(store, model, Sandbox(), lessons=False, skills=False, verify_k=0,
                       curriculum=False, home=home) as practice:  # fmt: skip
        assert not isinstance(practice.loop.tracker, PrmFrontierTracker)  # off by default


def test_practice_keeps_the_search_and_router_it_was_asked_for(
    store: Store, tmp_path: Path
) -> None:
    from nightschool.learn.router import RouterParams, _Logit, save_router
    from nightschool.learn.search import PrmRepair
    from nightschool.learn.steps import REQUEST_FEATURES

    home = tmp_path / "home"
    zero = _Logit(tuple([0.0] * len(REQUEST_FEATURES)), 0.0)
    save_router(home / "learners" / "router.json", RouterParams(zero, zero, 0.8, 0.05, 3))
    model = ScriptedModel(["x"])
    with open_practice(
        store, model, Sandbox(), lessons=False, skills=False, verify_k=0,
        curriculum=False, home=home, search="prm",
    ) as practice:  # fmt: skip
        assert isinstance(practice.loop.solver.search, PrmRepair)
        assert practice.loop.solver.router is not None
    with open_practice(
        store, model, Sandbox(), lessons=False, skills=False, verify_k=0,
        curriculum=False, home=home, router=False,
    ) as practice:  # fmt: skip
        assert practice.loop.solver.search is None and practice.loop.solver.router is None


@pytest.mark.parametrize("picker", ["brittle", "prm"])
def test_the_dream_practises_web_automation_only_where_a_browser_runs(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    picker: str,
) -> None:
    monkeypatch.setattr(frontier, "web_problem", lambda: "no chromium here")
    monkeypatch.setattr(frontier, "practice_clusters", lambda: CLUSTERS[:-1])
    without = make_tracker(store, picker, tmp_path)
    assert "web_automation" not in without.clusters and "sql" in without.clusters
    assert "web_automation is left out of practice: no chromium here" in caplog.text
    monkeypatch.setattr(frontier, "practice_clusters", lambda: CLUSTERS)
    assert make_tracker(store, picker, tmp_path).clusters == CLUSTERS
