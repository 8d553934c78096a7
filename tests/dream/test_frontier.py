from __future__ import annotations

import random
from collections import Counter

import pytest

from nightschool.challenges import TIERS
from nightschool.dream.frontier import (
    COOLDOWN_CEILING_S,
    COOLDOWN_FLOOR_S,
    FrontierRun,
    FrontierTracker,
    adaptive_cooldown,
    brittleness,
    selfplay_score,
)
from nightschool.store import Store

_counter = iter(range(10**9))


def record(
    tracker: FrontierTracker,
    cluster: str,
    *,
    passed: bool,
    attempts: int,
    tier: str = "starter",
    fresh: bool = True,
) -> FrontierRun:
    n = next(_counter)
    return tracker.record_run(
        cluster=cluster,
        template=f"{cluster}.t",
        tier=tier,
        seed=n,
        challenge_hash=f"h{n}" if fresh else "same",
        passed=passed,
        attempts=attempts,
    )


def run(passed: bool, attempts: int, delta: float = 0.0) -> FrontierRun:
    return FrontierRun(
        "algo", "algo.t", "basic", 0, "h", passed, attempts, False, delta, 0, 0.0, None, 0.0
    )


def test_brittleness_formula() -> None:
    assert brittleness([run(False, 3), run(True, 3), run(True, 2)]) == 2 + 2 + 1
    assert brittleness([]) == 0
    # recent-win decay guard: a clean flat first-try win ends the brittle spell
    assert brittleness([run(False, 3), run(False, 3), run(True, 1)]) == 0


def test_score_formula() -> None:
    assert (
        selfplay_score(
            passed=False, attempts=1, compression_delta=1, duplicate=False, tool_errors=0
        )
        == 0
    )
    assert selfplay_score(
        passed=True, attempts=1, compression_delta=0.5, duplicate=False, tool_errors=1
    ) == pytest.approx(1 + 0.2 + 0.6 + 0.3 - 0.1)
    assert selfplay_score(
        passed=True, attempts=3, compression_delta=0, duplicate=True, tool_errors=0
    ) == pytest.approx(1 + 0.3 * 0.2)


def test_a_fresh_cluster_starts_at_the_starter_tier(store: Store) -> None:
    tracker = FrontierTracker(store)
    assert TIERS[0] == "starter"
    assert tracker.difficulty_tier("sql") == "starter"
    assert tracker.state("sql").tier == "starter"
    record(tracker, "sql", passed=True, attempts=1)
    record(tracker, "sql", passed=False, attempts=3)
    assert tracker.difficulty_tier("sql") == "starter"


def test_tier_unlocks_every_three_first_try_wins_and_never_drops(store: Store) -> None:
    tracker = FrontierTracker(store)
    assert tracker.difficulty_tier("sql") == "starter"
    for _ in range(3):
        record(tracker, "sql", passed=True, attempts=1)
    assert tracker.difficulty_tier("sql") == "basic"
    for _ in range(3):
        record(tracker, "sql", passed=True, attempts=1, tier="basic")
    assert tracker.difficulty_tier("sql") == "intermediate"
    for _ in range(5):
        record(tracker, "sql", passed=False, attempts=3, tier="intermediate")
    assert tracker.difficulty_tier("sql") == "intermediate"
    # wins below the unlocked tier do not count toward the next unlock
    for _ in range(3):
        record(tracker, "sql", passed=True, attempts=1, tier="basic")
    for _ in range(3):
        record(tracker, "sql", passed=True, attempts=1, tier="starter")
    assert tracker.difficulty_tier("sql") == "intermediate"
    for _ in range(9):
        record(tracker, "sql", passed=True, attempts=1, tier="expert")
    assert tracker.difficulty_tier("sql") == "expert"


def test_the_unlock_path_walks_every_tier_in_order(store: Store) -> None:
    tracker = FrontierTracker(store)
    seen = [tracker.difficulty_tier("algo")]
    for _ in range(len(TIERS) + 1):
        for _ in range(3):
            record(tracker, "algo", passed=True, attempts=1, tier=seen[-1])
        seen.append(tracker.difficulty_tier("algo"))
    assert seen[: len(TIERS)] == list(TIERS)
    assert seen[len(TIERS) - 1 :] == ["expert", "expert", "expert"]


def test_mastered_needs_five_distinct_first_try_wins(store: Store) -> None:
    tracker = FrontierTracker(store)
    for _ in range(6):
        record(tracker, "bash", passed=True, attempts=1, fresh=False)
    assert not tracker.state("bash").mastered  # one distinct challenge, rest duplicates
    for _ in range(4):
        record(tracker, "bash", passed=True, attempts=1)
    assert tracker.state("bash").mastered


def test_saturated_after_two_flat_first_try_wins(store: Store) -> None:
    tracker = FrontierTracker(store)
    record(tracker, "algo", passed=False, attempts=3)
    first = record(tracker, "algo", passed=True, attempts=1)
    assert first.compression_delta > 0  # progress after a failure
    assert not tracker.state("algo").saturated
    record(tracker, "algo", passed=True, attempts=1)
    record(tracker, "algo", passed=True, attempts=1)
    state = tracker.state("algo")
    assert state.saturated and not state.brittle


def test_duplicate_detected_by_hash(store: Store) -> None:
    tracker = FrontierTracker(store)
    assert not record(tracker, "sql", passed=True, attempts=1, fresh=False).duplicate
    assert record(tracker, "sql", passed=True, attempts=1, fresh=False).duplicate


def test_record_run_validates(store: Store) -> None:
    tracker = FrontierTracker(store)
    with pytest.raises(ValueError):
        record(tracker, "nope", passed=True, attempts=1)
    with pytest.raises(ValueError):
        record(tracker, "sql", passed=True, attempts=4)
    with pytest.raises(ValueError):
        record(tracker, "sql", passed=True, attempts=1, tier="legendary")


def test_pick_seed_prefers_brittle_and_skips_saturated(store: Store) -> None:
    tracker = FrontierTracker(store, exploration_probability=0.0)
    for cluster in tracker.clusters:
        record(tracker, cluster, passed=True, attempts=1)
        record(tracker, cluster, passed=True, attempts=1)  # now saturated
    record(tracker, "regex_parse", passed=False, attempts=3)
    picks = Counter(tracker.pick_seed(random.Random(i)).cluster for i in range(50))
    assert picks == Counter({"regex_parse": 50})
    assert tracker.pick_seed(random.Random(0)).mode == "brittle"


def test_pick_seed_cold_start_then_exploration_when_all_saturated(store: Store) -> None:
    tracker = FrontierTracker(store, exploration_probability=0.0)
    pick = tracker.pick_seed(random.Random(1))
    assert pick.mode == "cold_start" and pick.tier == "starter"
    for cluster in tracker.clusters:
        record(tracker, cluster, passed=True, attempts=1)
        record(tracker, cluster, passed=True, attempts=1)
    pick = tracker.pick_seed(random.Random(1))
    assert pick.mode == "exploration" and set(pick.saturated) == set(tracker.clusters)


def test_cold_start_spreads_over_every_cluster_before_returning_to_a_failure(
    store: Store,
) -> None:
    tracker = FrontierTracker(store)  # the default exploration roll
    rng = random.Random(0)
    seen = []
    for _ in range(len(tracker.clusters)):
        pick = tracker.pick_seed(rng)
        assert pick.mode == "cold_start" and pick.cluster not in seen
        seen.append(pick.cluster)
        record(tracker, pick.cluster, passed=False, attempts=3)  # every one fails
    assert sorted(seen) == sorted(tracker.clusters)
    assert tracker.pick_seed(rng).mode in ("brittle", "exploration")


def test_exploration_roll_is_uniformish(store: Store) -> None:
    tracker = FrontierTracker(store, exploration_probability=1.0)
    for cluster in tracker.clusters:
        record(tracker, cluster, passed=True, attempts=2)
    record(tracker, "sql", passed=False, attempts=3)
    picks = Counter(tracker.pick_seed(random.Random(i)).cluster for i in range(700))
    assert len(picks) == len(tracker.clusters)
    assert all(p.mode == "exploration" for p in [tracker.pick_seed(random.Random(3))])


def test_state_survives_reopen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "f.db"
    with Store.open(path) as first:
        tracker = FrontierTracker(first)
        for _ in range(3):
            record(tracker, "concurrency", passed=True, attempts=1)
    with Store.open(path) as second:
        assert FrontierTracker(second).difficulty_tier("concurrency") == "basic"


def test_adaptive_cooldown() -> None:
    assert adaptive_cooldown(60, run(False, 3)) == 120
    assert adaptive_cooldown(60, run(True, 1, delta=0.5)) == 30
    assert adaptive_cooldown(60, run(True, 1)) == 45
    assert adaptive_cooldown(COOLDOWN_CEILING_S, run(False, 3)) == COOLDOWN_CEILING_S
    assert adaptive_cooldown(COOLDOWN_FLOOR_S, run(True, 1, delta=1)) == COOLDOWN_FLOOR_S
