"""pass@1 intervals, baseline files, and the paired regression rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nightschool.errors import UserError
from nightschool.evals import (
    BaselineMismatchError,
    EvalRun,
    TaskResult,
    compare,
    load_baseline,
    pass_at_1,
    write_baseline,
)


def make_run(
    outcomes: list[bool],
    *,
    model: str = "m",
    suite: str = "humaneval",
    seed: int = 0,
    runner: str = "inprocess",
) -> EvalRun:
    results = tuple(
        TaskResult(f"T/{k}", ok, float(ok), 5, 7, 0.1, None if ok else "failed", f"tr{k}")
        for k, ok in enumerate(outcomes)
    )
    return EvalRun(
        id="r" * 32,
        suite=suite,
        runner=runner,
        model=model,
        seed=seed,
        version="0.1.0",
        started_at="2026-11-21T08:00:00+00:00",
        finished_at="2026-11-21T08:01:00+00:00",
        status="completed",
        n=len(results),
        passed=sum(outcomes),
        config={"limit": None},
        results=results,
    )


def test_wilson_interval_matches_published_values() -> None:
    # Brown, Cai & DasGupta (2001) / standard tables: 5 of 10 -> [0.2366, 0.7634].
    rate = pass_at_1(5, 10)
    assert rate.rate == 0.5
    assert rate.low == pytest.approx(0.2366, abs=1e-4)
    assert rate.high == pytest.approx(0.7634, abs=1e-4)
    zero = pass_at_1(0, 20)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.1611, abs=1e-4)
    assert pass_at_1(20, 20).high == 1.0
    assert (pass_at_1(0, 0).low, pass_at_1(0, 0).high) == (0.0, 1.0)
    with pytest.raises(ValueError):
        pass_at_1(3, 2)


def test_freeze_writes_provenance_atomically_and_round_trips(tmp_path: Path) -> None:
    run = make_run([True, False, True])
    path = write_baseline(run, tmp_path / "deep" / "base.json")
    data = json.loads(path.read_text())
    prov = data["provenance"]
    assert (prov["model"], prov["suite"], prov["seed"], prov["runner"]) == (
        "m",
        "humaneval",
        0,
        "inprocess",
    )
    assert prov["nightschool_version"] == "0.1.0" and prov["created_at"]
    assert prov["task_ids"] == ["T/0", "T/1", "T/2"]
    assert data["summary"]["ci_method"] == "wilson" and data["summary"]["passed"] == 2
    assert os.listdir(path.parent) == ["base.json"]  # no temp file left behind
    loaded = load_baseline(path)
    assert loaded.results == run.results
    assert loaded.pass_rate == run.pass_rate


@pytest.mark.parametrize(
    "content",
    [
        "",
        "{not json",
        "[]",
        '{"kind": "other"}',
        '{"kind": "nightschool-eval-baseline", '
        '"format_version": 1, "provenance": {"model": "m"}, "results": []}',
        '{"kind": "nightschool-eval-baseline", "format_version": 99}',
    ],
)
def test_corrupt_baseline_is_a_clear_user_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(UserError, match=str(path)):
        load_baseline(path)


def test_missing_baseline_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read"):
        load_baseline(tmp_path / "absent.json")


def frozen(tmp_path: Path, outcomes: list[bool], **kw: object) -> object:
    return load_baseline(write_baseline(make_run(outcomes, **kw), tmp_path / "b.json"))  # type: ignore[arg-type]


def test_same_results_no_regression(tmp_path: Path) -> None:
    base = frozen(tmp_path, [True] * 6 + [False] * 4)
    result = compare(base, make_run([True] * 6 + [False] * 4))  # type: ignore[arg-type]
    assert not result.regression and result.drop == 0.0 and result.n == 10


def test_significant_drop_is_a_regression(tmp_path: Path) -> None:
    base = frozen(tmp_path, [True] * 8 + [False] * 2)
    result = compare(base, make_run([False] * 6 + [True] * 2 + [False] * 2))  # type: ignore[arg-type]
    assert result.baseline_only == 6 and result.current_only == 0
    assert result.verdict.test == "mcnemar-exact"
    assert result.verdict.p_value == pytest.approx(0.5**6)
    assert result.regression and "significant" in result.reason
    assert result.regressed_tasks == tuple(f"T/{k}" for k in range(6))


def test_small_drop_is_not_significant_unless_strict(tmp_path: Path) -> None:
    base = frozen(tmp_path, [True] * 5 + [False] * 5)
    run = make_run([False, False] + [True] * 3 + [False] * 5)
    assert not compare(base, run).regression  # type: ignore[arg-type]
    strict = compare(base, run, strict=True)  # type: ignore[arg-type]
    assert strict.regression and strict.drop == pytest.approx(0.2)
    assert not compare(base, run, strict=True, tolerance=0.25).regression  # type: ignore[arg-type]


def test_tolerance_absorbs_a_significant_but_small_drop(tmp_path: Path) -> None:
    base = frozen(tmp_path, [True] * 100)
    run = make_run([False] * 6 + [True] * 94)
    assert compare(base, run).regression  # type: ignore[arg-type]
    assert not compare(base, run, tolerance=0.10).regression  # type: ignore[arg-type]


def test_improvement_is_not_a_regression(tmp_path: Path) -> None:
    base = frozen(tmp_path, [False] * 8)
    result = compare(base, make_run([True] * 8))  # type: ignore[arg-type]
    assert not result.regression and result.drop == -1.0 and result.current_only == 8


def test_model_and_suite_mismatch(tmp_path: Path) -> None:
    base = frozen(tmp_path, [True, False])
    with pytest.raises(BaselineMismatchError, match="model mismatch"):
        compare(base, make_run([True, False], model="other"))  # type: ignore[arg-type]
    with pytest.raises(BaselineMismatchError, match="suite mismatch"):
        compare(base, make_run([True, False], suite="regression"))  # type: ignore[arg-type]
    assert BaselineMismatchError("x").exit_code == 2


def test_a_stub_run_never_pairs_with_a_real_one_whatever_the_model_is_named(
    tmp_path: Path,
) -> None:
    real = frozen(tmp_path, [True, False], model="stub")  # a real model that happens to be "stub"
    with pytest.raises(BaselineMismatchError, match="runner mismatch: the run was run by the stub"):
        compare(real, make_run([True, False], model="stub", runner="stub"))  # type: ignore[arg-type]
    stub = frozen(tmp_path, [True, False], model="stub", runner="stub")
    with pytest.raises(BaselineMismatchError, match="runner mismatch: the baseline was run by"):
        compare(stub, make_run([True, False], model="stub"))  # type: ignore[arg-type]
    same = compare(stub, make_run([True, False], model="stub", runner="stub"))  # type: ignore[arg-type]
    assert same.n == 2 and not same.regression


def test_pairs_only_common_tasks(tmp_path: Path) -> None:
    base = frozen(tmp_path, [True, True, False, True])
    result = compare(base, make_run([True, True]))  # type: ignore[arg-type]
    assert result.n == 2 and result.missing == ("T/2", "T/3")
