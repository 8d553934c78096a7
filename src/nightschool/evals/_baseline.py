"""Frozen baselines and the paired comparison of a run against one.

A baseline is a JSON file written atomically (temp file in the same directory,
fsync, `os.replace`) holding the provenance (model, suite, seed, runner,
nightschool version, timestamp, task ids), every per-task result and pass@1
with its 95% Wilson interval.

Regression rule of `compare` (pairs = tasks present in both):
    b = tasks the baseline passed and the run failed, c = the reverse;
    drop = (b - c) / n, the paired pass-rate drop.
    The promotion gate (`nightschool.strategies.promotion_gate`) is asked
    whether the *baseline* beats the *run* (incumbent = run, candidate =
    baseline, pass/fail scores, so its exact one-sided McNemar test on the
    discordant pairs decides: p = P(Binomial(b + c, 1/2) >= b)).
    A regression is declared when the drop exceeds `tolerance` AND the gate
    finds it significant at `alpha` ("material and not chance"). With
    `strict`, any drop beyond `tolerance` is a regression (no test: for
    deterministic, temperature-0 runs where every flip is real).
    At alpha = 0.05 the exact test needs at least 5 discordant pairs, all
    against the run, before it can declare anything (0.5^5 = 0.031).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nightschool.errors import UserError
from nightschool.evals._model import EvalRun, PassRate, TaskResult, pass_at_1
from nightschool.gate import GateConfig, PairedResult, Verdict, promotion_gate

BASELINE_FORMAT = 1
"""Version of the baseline file format written here."""

BASELINE_KIND = "nightschool-eval-baseline"
"""Value of the `kind` field that marks a baseline file."""


class BaselineMismatchError(UserError):
    """The run and the baseline are not comparable (other model or suite)."""


@dataclass(frozen=True)
class Baseline:
    """A loaded baseline file.

    Attributes:
        path: where it was read from.
        provenance: model, suite, seed, runner, version, created_at, run_id,
            task_ids, config.
        results: per-task results in the frozen run's order.
    """

    path: Path
    provenance: Mapping[str, Any]
    results: tuple[TaskResult, ...]

    @property
    def model(self) -> str:
        """Model of the frozen run."""
        return str(self.provenance["model"])

    @property
    def suite(self) -> str:
        """Suite of the frozen run."""
        return str(self.provenance["suite"])

    @property
    def seed(self) -> int:
        """Suite seed of the frozen run."""
        return int(self.provenance["seed"])

    @property
    def task_ids(self) -> list[str]:
        """Task ids with a frozen result, in order."""
        return [result.task_id for result in self.results]

    @property
    def pass_rate(self) -> PassRate:
        """pass@1 of the frozen results."""
        return pass_at_1(sum(r.passed for r in self.results), len(self.results))


def baseline_document(run: EvalRun) -> dict[str, Any]:
    """The JSON document `freeze` writes for `run` (results must be loaded)."""
    rate = run.pass_rate
    return {
        "kind": BASELINE_KIND,
        "format_version": BASELINE_FORMAT,
        "provenance": {
            "model": run.model,
            "suite": run.suite,
            "seed": run.seed,
            "runner": run.runner,
            "nightschool_version": run.version,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "run_id": run.id,
            "run_started_at": run.started_at,
            "run_status": run.status,
            "task_ids": [result.task_id for result in run.results],
            "config": dict(run.config),
        },
        "summary": {
            "n": rate.n,
            "passed": rate.passed,
            "pass_at_1": rate.rate,
            "ci_low": rate.low,
            "ci_high": rate.high,
            "ci_method": rate.method,
            "confidence": rate.confidence,
        },
        "results": [
            {
                "task_id": r.task_id,
                "passed": r.passed,
                "score": r.score,
                "tokens_in": r.tokens_in,
                "tokens_out": r.tokens_out,
                "duration_s": r.duration_s,
                "error": r.error,
                "trajectory_id": r.trajectory_id,
            }
            for r in run.results
        ],
    }


def write_baseline(run: EvalRun, path: Path) -> Path:
    """Write the baseline of `run` to `path` atomically (never a half-written file).

    Raises:
        UserError: the run has no results, or the file cannot be written.
    """
    if not run.results:
        raise UserError(f"run {run.id} has no results to freeze")
    text = json.dumps(baseline_document(run), indent=2, ensure_ascii=False) + "\n"
    path = path.expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise UserError(f"cannot write the baseline {path}: {exc}") from exc
    return path


def load_baseline(path: Path) -> Baseline:
    """Read and validate a baseline file.

    Raises:
        UserError: the file is missing, unreadable, not JSON, not a baseline,
            of a newer format, or its results are malformed.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read the baseline {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"the baseline {path} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise UserError(
            f"{path} is not a nightschool eval baseline",
            hint="write one with `nightschool eval freeze`",
        )
    version = data.get("format_version")
    if not isinstance(version, int) or version > BASELINE_FORMAT:
        raise UserError(
            f"the baseline {path} has format {version!r}; this nightschool reads "
            f"format {BASELINE_FORMAT}"
        )
    try:
        provenance = data["provenance"]
        missing = [key for key in ("model", "suite", "seed") if key not in provenance]
        if missing:
            raise KeyError(", ".join(missing))
        results = tuple(
            TaskResult(
                task_id=str(row["task_id"]),
                passed=bool(row["passed"]),
                score=float(row["score"]),
                tokens_in=int(row.get("tokens_in", 0)),
                tokens_out=int(row.get("tokens_out", 0)),
                duration_s=float(row.get("duration_s", 0.0)),
                error=row.get("error"),
                trajectory_id=row.get("trajectory_id"),
            )
            for row in data["results"]
        )
        int(provenance["seed"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"the baseline {path} is malformed ({type(exc).__name__}: {exc})") from exc
    if not results:
        raise UserError(f"the baseline {path} holds no results")
    if len({r.task_id for r in results}) != len(results):
        raise UserError(f"the baseline {path} has duplicate task ids")
    return Baseline(path=path, provenance=provenance, results=results)


def check_compatible(baseline: Baseline, run: EvalRun) -> None:
    """Refuse to compare runs of another model or suite, or a stub run with a real one.

    Raises:
        BaselineMismatchError: suite or model differ, or exactly one of the two was
            run by the stub runner (an echo is not a model, whatever it is named)
            (CLI exit 2).
    """
    if baseline.suite != run.suite:
        raise BaselineMismatchError(
            f"suite mismatch: the baseline is suite {baseline.suite!r}, the run is {run.suite!r}"
        )
    if baseline.model != run.model:
        raise BaselineMismatchError(
            f"model mismatch: the baseline was run with {baseline.model!r}, this run with "
            f"{run.model!r}",
            hint="compare runs of the same model, or freeze a new baseline for this model",
        )
    stubs = (baseline.provenance.get("runner") == "stub", run.runner == "stub")
    if stubs[0] != stubs[1]:
        which = ("the baseline", "the run") if stubs[0] else ("the run", "the baseline")
        raise BaselineMismatchError(
            f"runner mismatch: {which[0]} was run by the stub runner (an echo, no model), "
            f"{which[1]} was not",
            hint="a stub run pairs only with a stub baseline (--runner stub)",
        )


@dataclass(frozen=True)
class Comparison:
    """A run paired task by task with a baseline.

    Attributes:
        n: paired tasks (present in both).
        baseline_rate: pass@1 of the baseline on the paired tasks.
        current_rate: pass@1 of the run on the paired tasks.
        baseline_only: b, tasks the baseline passed and the run failed.
        current_only: c, tasks the run passed and the baseline failed.
        drop: (b - c) / n, the paired pass-rate drop (negative: improvement).
        verdict: the promotion gate's verdict on "baseline beats run".
        regression: whether the regression rule fired (module docstring).
        reason: one sentence explaining `regression`.
        missing: baseline tasks the run has no result for.
        regressed_tasks: ids counted in b.
        improved_tasks: ids counted in c.
    """

    n: int
    baseline_rate: PassRate
    current_rate: PassRate
    baseline_only: int
    current_only: int
    drop: float
    verdict: Verdict
    regression: bool
    reason: str
    missing: tuple[str, ...]
    regressed_tasks: tuple[str, ...]
    improved_tasks: tuple[str, ...]


def compare(
    baseline: Baseline,
    run: EvalRun,
    *,
    tolerance: float = 0.0,
    alpha: float = 0.05,
    strict: bool = False,
) -> Comparison:
    """Pair `run` with `baseline` task by task and decide whether it regressed.

    Args:
        baseline: the frozen baseline.
        run: a run with results loaded.
        tolerance: largest acceptable paired pass-rate drop (0.05 = 5 points).
        alpha: one-sided level of the exact McNemar test, in (0, 0.5).
        strict: declare any drop beyond `tolerance` a regression, without the test.

    Returns:
        The `Comparison`.

    Raises:
        BaselineMismatchError: suite or model differ.
        UserError: no task in common, or `tolerance`/`alpha` out of range.
    """
    check_compatible(baseline, run)
    if not 0.0 <= tolerance < 1.0:
        raise UserError(f"--tolerance must be in [0, 1), got {tolerance:g}")
    if not 0.0 < alpha < 0.5:
        raise UserError(f"--alpha must be in (0, 0.5), got {alpha:g}")
    current = {result.task_id: result for result in run.results}
    paired = [(b, current[b.task_id]) for b in baseline.results if b.task_id in current]
    missing = tuple(b.task_id for b in baseline.results if b.task_id not in current)
    if not paired:
        raise BaselineMismatchError(
            f"the run and the baseline have no task in common (baseline seed {baseline.seed}, "
            f"run seed {run.seed})"
        )
    pairs = [
        PairedResult(
            task_id=old.task_id,
            incumbent_score=float(new.passed),
            candidate_score=float(old.passed),
            incumbent_cost=float(new.tokens_in + new.tokens_out),
            candidate_cost=float(old.tokens_in + old.tokens_out),
        )
        for old, new in paired
    ]
    verdict = promotion_gate(pairs, GateConfig(alpha=alpha, min_pairs=1))
    regressed = tuple(old.task_id for old, new in paired if old.passed and not new.passed)
    improved = tuple(old.task_id for old, new in paired if new.passed and not old.passed)
    n = len(paired)
    drop = (len(regressed) - len(improved)) / n
    material = drop > tolerance + 1e-12
    if strict:
        regression = material
        reason = (
            f"pass rate dropped {drop:.1%} > tolerance {tolerance:.1%} (strict)"
            if regression
            else f"pass-rate drop {drop:.1%} within tolerance {tolerance:.1%} (strict)"
        )
    else:
        significant = verdict.promote
        regression = material and significant
        p = "n/a" if verdict.p_value is None else f"{verdict.p_value:.3g}"
        if regression:
            reason = (
                f"pass rate dropped {drop:.1%} > tolerance {tolerance:.1%} and the drop is "
                f"significant (exact McNemar p={p} <= {alpha:g})"
            )
        elif not material:
            reason = f"pass-rate drop {drop:.1%} within tolerance {tolerance:.1%}"
        else:
            reason = (
                f"pass rate dropped {drop:.1%} but not significantly (exact McNemar p={p} > "
                f"{alpha:g}, {len(regressed)} vs {len(improved)} discordant tasks)"
            )
    return Comparison(
        n=n,
        baseline_rate=pass_at_1(sum(old.passed for old, _ in paired), n),
        current_rate=pass_at_1(sum(new.passed for _, new in paired), n),
        baseline_only=len(regressed),
        current_only=len(improved),
        drop=drop,
        verdict=verdict,
        regression=regression,
        reason=reason,
        missing=missing,
        regressed_tasks=regressed,
        improved_tasks=improved,
    )
