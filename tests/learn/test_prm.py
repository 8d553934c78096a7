"""The process reward model: step features, labels, training, checkpoints, hot swap."""

from __future__ import annotations

import itertools
import json
import math
import random
import threading
from pathlib import Path

import numpy as np
import pytest

from nightschool.learn import (
    CHECKPOINT_SCHEMA,
    FEATURE_NAMES,
    CheckpointError,
    LivePrm,
    NotEnoughDataError,
    PrmConfig,
    PrmParams,
    label_states,
    learn_prm,
    load_checkpoint,
    prm_path,
    save_checkpoint,
    step_states,
    train_prm,
)
from nightschool.learn.steps import REQUEST_FEATURES
from nightschool.store import Store
from nightschool.trajectory import Correction, Outcome, ToolCall, Trajectory

CLUSTERS = ("algo", "sql", "python_general", "regex_parse")
_HASHES = itertools.count()


def attempt(
    code: str, *, passed: bool = False, k: int = 1, n: int = 8, **extra: object
) -> ToolCall:
    """A `run_solution` call; a failure names the failing test `k` of `n`."""
    if passed:
        return ToolCall(name="run_solution", arguments={"code": code, **extra}, result="passed")
    error = f"FAIL: f(3) returned 1, expected 2 (test {k} of {n})"
    return ToolCall(
        name="run_solution", arguments={"code": code, **extra}, result="failed", error=error
    )


def episode(
    calls: list[ToolCall], outcome: Outcome, *, cluster: str = "algo", **kw: object
) -> Trajectory:
    return Trajectory(
        task_kind=str(kw.pop("task_kind", "selfplay")),
        cluster=cluster,
        tier="basic",
        user_request="Write f.",
        tool_calls=calls,
        outcome=outcome,
        failure_reason=None if outcome != Outcome.FAILED else "validator rejected",
        extra={"challenge_hash": kw.pop("challenge_hash", None) or f"h{next(_HASHES)}"},
    )


def synthetic(n: int, seed: int = 0) -> list[Trajectory]:
    """Episodes whose recovery depends on the step, not the request.

    After a first failure, the episode recovers when that failure got far
    through the checker (test 7 or 8 of 8) and stays failed when it broke
    early (test 1 or 2); clusters are drawn independently of the outcome,
    and about a third pass at once.
    """
    rng = random.Random(seed)
    items = []
    for i in range(n):
        cluster = rng.choice(CLUSTERS)
        code = f"def f(x):\n    return x + {i}\n"
        roll = rng.random()
        if roll < 0.3:
            items.append(episode([attempt(code, passed=True)], Outcome.PASSED, cluster=cluster))
        elif roll < 0.65:
            first = attempt(code, k=rng.choice((7, 8)))
            calls = [first, attempt(code + "# fixed\n", passed=True)]
            items.append(episode(calls, Outcome.PASSED, cluster=cluster))
        else:
            calls = [attempt(code, k=rng.choice((1, 2))) for _ in range(3)]
            items.append(episode(calls, Outcome.FAILED, cluster=cluster))
    return items


def test_features_change_from_step_to_step_and_never_read_the_outcome() -> None:
    calls = [
        attempt("def f(x):\n    return 0\n", k=1),
        attempt("def f(x):\n    return x\n", k=6, temperature=0.55),
        attempt("def f(x):\n    return x + 1\n", passed=True, temperature=0.9),
    ]
    passed = episode(calls, Outcome.PASSED)
    states = step_states(passed)
    assert [s.index for s in states] == [0, 1, 2]
    assert len({s.features for s in states}) == 3  # not one state per turn (PRIOR-ART's flaw)
    assert all(len(s.features) == len(FEATURE_NAMES) for s in states)
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    assert [s.features[col["test_progress"]] for s in states] == [0.0, 5 / 8, 1.0]
    assert [s.features[col["prior_failures"]] for s in states] == [0.0, 1.0, 2.0]
    assert states[1].features[col["temperature"]] == 0.55
    assert [s.passed_here for s in states] == [False, False, True]
    # The same steps under another outcome give the same states: nothing looks ahead.
    failed = passed.model_copy(update={"outcome": Outcome.FAILED, "failure_reason": "x"})
    assert [s.features for s in step_states(failed)] == [s.features for s in states]
    # Request features are the same at every step.
    request = [col[name] for name in REQUEST_FEATURES]
    assert len({tuple(s.features[i] for i in request) for s in states}) == 1


def test_labels_discount_towards_the_end_and_skip_unknown() -> None:
    good = episode(
        [attempt("a", k=2), attempt("b", k=3), attempt("c", passed=True)], Outcome.PASSED
    )
    bad = episode([attempt("a", k=2), attempt("b", k=2)], Outcome.FAILED)
    unknown = episode([attempt("a", k=2)], Outcome.UNKNOWN)
    empty = episode([], Outcome.FAILED)
    data = label_states([good, bad, unknown, empty], gamma=0.9)
    assert data.values == pytest.approx([0.81, 0.9, 1.0, 0.0, 0.0])
    assert data.eventual == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert (data.skipped_unknown, data.skipped_empty) == (1, 1)
    with pytest.raises(ValueError, match="gamma"):
        label_states([good], gamma=0.0)


def test_training_learns_recovery_where_the_request_only_baseline_cannot() -> None:
    params, report = train_prm(synthetic(120))
    assert report.trajectories == 120
    assert report.open_positive > 10
    assert report.auc_open is not None and report.auc_open > 0.9
    assert report.baseline_auc_open is not None and report.baseline_auc_open < 0.7
    assert report.beats_baseline()
    assert report.auc_prefix is not None and report.auc_prefix > report.baseline_auc_prefix
    # A far-through failure is worth more than an early break on the same request.
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    near = list(step_states(episode([attempt("x", k=8)], Outcome.FAILED))[0].features)
    early = list(near)
    early[col["test_progress"]] = 0.0
    early[col["best_progress_so_far"]] = 0.0
    early[col["progress_delta"]] = 0.0
    assert params.score(near) > params.score(early) + 0.2


def test_not_enough_data_is_a_clear_error() -> None:
    with pytest.raises(NotEnoughDataError, match="at least 20"):
        train_prm(synthetic(10))
    only_failures = [t for t in synthetic(200) if t.outcome == Outcome.FAILED]
    with pytest.raises(NotEnoughDataError, match="0 passed"):
        train_prm(only_failures)
    evals = [t.model_copy(update={"task_kind": "eval"}) for t in synthetic(60)]
    with pytest.raises(NotEnoughDataError):  # eval items are never learned from
        train_prm(evals)


def test_checkpoint_round_trip_and_rejections(tmp_path: Path) -> None:
    params, _report = train_prm(synthetic(60))
    path = tmp_path / "prm.json"
    save_checkpoint(path, PrmParams(params.weights, params.bias, params.means, version=3))
    loaded = load_checkpoint(path)
    assert loaded.version == 3
    x = np.asarray([s.features for t in synthetic(5, seed=9) for s in step_states(t)])
    assert np.allclose(loaded.score_batch(x), params.score_batch(x))
    assert [loaded.score(tuple(row)) for row in x] == pytest.approx(list(params.score_batch(x)))
    assert not list(tmp_path.glob(".prm.json.*"))  # no temp file left behind

    data = json.loads(path.read_text())
    for change, message in (
        ({"schema": "other/1"}, "schema"),
        ({"feature_names": [*data["feature_names"][:-1], "new_feature"]}, "other features"),
        ({"weights": data["weights"][:-1]}, "weights"),
        ({"means": [*data["means"][:-1], "x"]}, "means"),
        ({"bias": None}, "bias"),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**data, **change}))
        with pytest.raises(CheckpointError, match=message):
            load_checkpoint(bad)
    bad.write_text(json.dumps(data).replace(str(data["weights"][0]), "NaN", 1))
    with pytest.raises(CheckpointError, match="non-finite"):
        load_checkpoint(bad)
    bad.write_text("{not json")
    with pytest.raises(CheckpointError, match="unreadable"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="no PRM checkpoint"):
        load_checkpoint(tmp_path / "missing.json")
    nan = PrmParams(params.weights * np.nan, 0.0, params.means)
    with pytest.raises(CheckpointError, match="non-finite"):
        save_checkpoint(tmp_path / "never.json", nan)
    assert not (tmp_path / "never.json").exists()
    assert data["schema"] == CHECKPOINT_SCHEMA and data["report"] == {}


def test_non_finite_inputs_are_neutralised() -> None:
    params, _ = train_prm(synthetic(60))
    row = list(step_states(synthetic(1, seed=4)[0])[0].features)
    col = FEATURE_NAMES.index("log_code_lines")
    neutral = list(row)
    neutral[col] = float(params.means[col])
    for bad in (math.nan, math.inf, -math.inf):
        row[col] = bad
        assert params.score(row) == pytest.approx(params.score(neutral))
        assert params.score_batch(np.asarray([row]))[0] == pytest.approx(params.score(neutral))
    with pytest.raises(ValueError, match="features"):
        params.score(row[:-1])


def test_hot_swap_while_scoring_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "prm.json"
    a, _ = train_prm(synthetic(60, seed=1))
    b, _ = train_prm(synthetic(60, seed=2), PrmConfig(c=0.05))
    save_checkpoint(path, PrmParams(a.weights, a.bias, a.means, version=1))
    live = LivePrm(path)
    row = step_states(synthetic(1, seed=3)[0])[0].features
    expected = {round(a.score(row), 12), round(b.score(row), 12)}
    assert len(expected) == 2
    seen: set[float] = set()
    errors: list[BaseException] = []
    stop = threading.Event()

    def score() -> None:
        try:
            while not stop.is_set():
                value = live.score(row)
                assert value is not None
                seen.add(round(value, 12))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=score) for _ in range(3)]
    for t in threads:
        t.start()
    for version in range(2, 12):
        p = b if version % 2 == 0 else a
        save_checkpoint(path, PrmParams(p.weights, p.bias, p.means, version=version))
        live.refresh()
    stop.set()
    for t in threads:
        t.join()
    assert not errors
    assert seen <= expected and len(seen) == 2
    assert live.params is not None and live.params.version == 11
    path.write_text("{broken")  # a bad file never replaces a good model
    assert live.params is not None and live.params.version == 11
    assert LivePrm(tmp_path / "none.json").score(row) is None


def test_learn_prm_saves_only_what_beats_the_baseline(store: Store, tmp_path: Path) -> None:
    home = tmp_path / "home"
    store.append_trajectories(synthetic(80))
    report = learn_prm(store, home)
    assert report.saved and report.version == 1 and Path(report.path) == prm_path(home)
    assert load_checkpoint(prm_path(home)).report["auc_open"] == report.auc_open
    assert learn_prm(store, home).version == 2

    # Outcomes that no step predicts: the PRM has nothing to beat the baseline with.
    noise = tmp_path / "noise.db"
    with Store.open(noise) as other:
        rng = random.Random(5)
        items = []
        for _ in range(80):
            calls = [attempt("x", k=3) for _ in range(2)]
            calls.append(attempt("y", k=3) if rng.random() < 0.5 else attempt("y", passed=True))
            outcome = Outcome.PASSED if calls[-1].result == "passed" else Outcome.FAILED
            items.append(episode(calls, outcome, cluster=rng.choice(CLUSTERS)))
        other.append_trajectories(items)
        unsaved = learn_prm(other, tmp_path / "h2")
        assert not unsaved.saved and "does not beat" in unsaved.reason
        assert not prm_path(tmp_path / "h2").exists()
        forced = learn_prm(other, tmp_path / "h2", force=True)
        assert forced.saved and prm_path(tmp_path / "h2").exists()


def test_corrections_relabel_what_the_prm_learns(store: Store, tmp_path: Path) -> None:
    items = synthetic(40)
    store.append_trajectories(items)
    target = next(t for t in items if t.outcome == Outcome.PASSED)
    before = label_states(store.iter_trajectories())
    store.add_correction(
        Correction(
            trajectory_id=target.id, outcome=Outcome.FAILED, source="user", authority="human"
        )
    )
    after = label_states(store.iter_trajectories())
    index = [i for i, s in enumerate(after.states) if s.trajectory_id == target.id]
    assert all(before.eventual[i] == 1.0 for i in index)
    assert all(after.eventual[i] == 0.0 and after.values[i] == 0.0 for i in index)
