"""Search over solver attempts: the solver's repair hook and the PRM-guided policy."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from nightschool.challenges import render, templates
from nightschool.learners import FEATURE_NAMES, LivePrm, PrmParams
from nightschool.learners.search import PrmRepair
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.selfplay.solver import Solver, SolverConfig
from nightschool.trajectory import ToolCall, Trajectory

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def failure(code: str, k: int, n: int = 8) -> ToolCall:
    error = f"FAIL: f(1) returned 0, expected 1 (test {k} of {n})"
    return ToolCall(name="run_solution", arguments={"code": code}, result="failed", error=error)


def progress_prm() -> PrmParams:
    """A PRM that values only how far the checker got."""
    weights = np.zeros(len(FEATURE_NAMES))
    weights[FEATURE_NAMES.index("test_progress")] = 4.0
    return PrmParams(weights, -2.0, np.zeros(len(FEATURE_NAMES)))


def partial(calls: list[ToolCall]) -> Trajectory:
    return Trajectory(task_kind="selfplay", cluster="algo", tier="basic", tool_calls=calls)


def test_prm_repair_picks_the_failure_that_got_furthest() -> None:
    policy = PrmRepair(progress_prm())
    calls = [failure("a = 1", 7), failure("b = 2", 2), failure("c = 3", 3)]
    assert policy.pick(partial(calls), [0, 1, 2]) == 0
    values = policy.values(partial(calls), [0, 1, 2])
    assert values is not None and values[0] > values[2] > values[1]
    # Ties (a PRM that cannot tell them apart) go to the latest: plain retry.
    flat = PrmRepair(PrmParams(np.zeros(len(FEATURE_NAMES)), 0.0, np.zeros(len(FEATURE_NAMES))))
    assert flat.pick(partial(calls), [0, 1, 2]) == 2
    assert policy.pick(partial(calls), []) is None


def test_prm_repair_without_a_checkpoint_falls_back(tmp_path: Path) -> None:
    policy = PrmRepair(LivePrm(tmp_path / "learners" / "prm.json"))
    calls = [failure("a = 1", 7), failure("b = 2", 2)]
    assert policy.pick(partial(calls), [0, 1]) is None


class Fixed:
    """A repair policy that always answers the same (or raises)."""

    name = "fixed"

    def __init__(self, answer: int | Exception | None) -> None:
        self.answer = answer
        self.seen: list[Sequence[int]] = []

    def pick(self, partial: Trajectory, candidates: Sequence[int]) -> int | None:
        self.seen.append(list(candidates))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def wrongs() -> tuple[object, list[str]]:
    name = next(t.name for t in templates() if t.name.startswith("python_general."))
    challenge = render(name, "basic", 1)
    first = challenge.wrong_solution
    second = challenge.wrong_solution + "\n_second = 2\n"
    third = challenge.wrong_solution + "\n_third = 3\n"
    replies = [f"```python\n{code}\n```" for code in (first, second, third)]
    return challenge, replies


@needs_bwrap
@pytest.mark.parametrize(
    ("answer", "repaired_marker", "absent_marker"),
    [(0, None, "_second"), (None, "_second", None), (RuntimeError("boom"), "_second", None)],
)
def test_solver_repairs_what_the_policy_picks(
    answer: int | Exception | None, repaired_marker: str | None, absent_marker: str | None
) -> None:
    challenge, replies = wrongs()
    model = ScriptedModel(replies)
    policy = Fixed(answer)
    solver = Solver(model, Sandbox(), SolverConfig(max_attempts=3, max_resamples=0), search=policy)
    result = solver.solve(challenge)  # type: ignore[arg-type]
    assert result.attempts == 3 and not result.passed
    assert policy.seen == [[0, 1]]  # asked once: before attempt 3, with two failures
    third_prompt = model.calls[2].messages[-1]["content"]
    if repaired_marker:
        assert repaired_marker in third_prompt
    if absent_marker:
        assert absent_marker not in third_prompt
    search = result.trajectory.extra["search"]
    assert search["policy"] == "fixed"
    assert search["repaired"] == ([0] if answer == 0 else [])
    assert search["switched"] == (1 if answer == 0 else 0)
    # The budget is unchanged: one call per attempt, the same rising temperatures.
    assert [c.temperature for c in model.calls] == pytest.approx([0.2, 0.55, 0.9])


@needs_bwrap
def test_without_a_policy_nothing_changes() -> None:
    challenge, replies = wrongs()
    model = ScriptedModel(replies)
    result = Solver(model, Sandbox(), SolverConfig(max_attempts=3, max_resamples=0)).solve(
        challenge  # type: ignore[arg-type]
    )
    assert "search" not in result.trajectory.extra
    assert "_second" in model.calls[2].messages[-1]["content"]
