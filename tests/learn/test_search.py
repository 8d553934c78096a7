"""Search over solver attempts: the solver's repair hook and the PRM-guided policy."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from nightschool.challenges import render, templates
from nightschool.learn import FEATURE_NAMES, LivePrm, PrmParams
from nightschool.learn.search import POLICIES, BestOfN, PrmMcts, PrmRepair, parents, uct_select
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.solver.core import Solver, SolverConfig
from nightschool.solver.repair import ROOT
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


# --- Best-of-N and MCTS: tree policies ------------------------------------------------


def test_parents_read_the_recorded_tree_and_default_to_the_retry_line() -> None:
    calls = [failure("a = 1", 2), failure("b = 2", 3), failure("c = 3", 4), failure("d", 5)]
    calls[1].arguments["parent"] = ROOT
    calls[2].arguments["parent"] = 0
    calls[3].arguments["parent"] = 3  # not an earlier call: ignored, the latest failure instead
    assert parents(partial(calls)) == [ROOT, ROOT, 0, 2]
    plain = [failure("a = 1", 2), ToolCall(name="run_solution", arguments={}, error="no code")]
    plain.append(failure("b = 2", 3))
    assert parents(partial(plain)) == [ROOT, 0, 0]


@pytest.mark.parametrize(
    ("tree", "values", "expandable", "expected"),
    [
        ([ROOT], [0.1], {0}, 0),  # one failure: repair it
        ([ROOT, 0], [0.1, 0.3], {0, 1}, 1),  # the repair improved: repair the repair
        ([ROOT, 0], [0.3, 0.1], {0, 1}, ROOT),  # it got worse: a fresh sample of the task
        ([ROOT, ROOT, 0], [0.1, 0.4, 0.1], {0, 1, 2}, 1),  # the best fresh sample's line
        ([ROOT, 0, 1], [0.2, 0.2, 0.2], {0, 1, 2}, ROOT),  # flat: exploration widens the root
        ([ROOT, 0], [0.1, 0.9], {0}, 0),  # a child that cannot be repaired is never entered
    ],
)
def test_uct_select(
    tree: list[int], values: list[float], expandable: set[int], expected: int
) -> None:
    assert uct_select(tree, values, expandable) == expected


def test_uct_select_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="2 parents but 1 values"):
        uct_select([ROOT, 0], [0.1], {0})


def test_best_of_n_always_samples_afresh() -> None:
    policy = BestOfN()
    assert policy.tree and policy.pick(partial([failure("a", 2)]), [ROOT, 0]) == ROOT
    assert policy.pick(partial([failure("a", 2)]), [0]) is None


def test_mcts_follows_the_prm_and_falls_back_without_one(tmp_path: Path) -> None:
    improved = [failure("a = 1", 2), failure("b = 2", 7)]
    improved[1].arguments["parent"] = 0
    worse = [failure("a = 1", 7), failure("b = 2", 2)]
    worse[1].arguments["parent"] = 0
    policy = PrmMcts(progress_prm())
    assert policy.pick(partial(improved), [ROOT, 0, 1]) == 1
    assert policy.pick(partial(worse), [ROOT, 0, 1]) == ROOT
    assert policy.pick(partial(worse), []) is None
    unloaded = PrmMcts(LivePrm(tmp_path / "learners" / "prm.json"))
    assert unloaded.pick(partial(worse), [ROOT, 0, 1]) is None


class TreeFixed(Fixed):
    """A tree policy that always answers the same."""

    tree = True


@needs_bwrap
def test_best_of_n_solver_prompts_the_task_alone_at_rising_temperature() -> None:
    challenge, replies = wrongs()
    model = ScriptedModel(replies)
    solver = Solver(
        model, Sandbox(), SolverConfig(max_attempts=3, max_resamples=0), search=BestOfN()
    )
    result = solver.solve(challenge)  # type: ignore[arg-type]
    assert result.attempts == 3 and not result.passed and result.model_calls == 3
    assert [call.messages[-1]["content"] for call in model.calls] == [challenge.prompt] * 3  # type: ignore[attr-defined]
    assert [c.temperature for c in model.calls] == pytest.approx([0.2, 0.55, 0.9])
    assert [c.arguments["parent"] for c in result.trajectory.tool_calls] == [ROOT] * 3
    search = result.trajectory.extra["search"]
    assert search == {
        "policy": "best-of-n",
        "repaired": [ROOT, ROOT],
        "switched": 2,
        "fresh_samples": 2,
    }


@needs_bwrap
def test_a_tree_policy_is_asked_from_the_first_retry_and_its_pick_is_repaired() -> None:
    challenge, replies = wrongs()
    model = ScriptedModel(replies)
    policy = TreeFixed(0)
    solver = Solver(model, Sandbox(), SolverConfig(max_attempts=3, max_resamples=0), search=policy)
    result = solver.solve(challenge)  # type: ignore[arg-type]
    assert policy.seen == [[ROOT, 0], [ROOT, 0, 1]]
    assert [c.arguments["parent"] for c in result.trajectory.tool_calls] == [ROOT, 0, 0]
    assert "_second" not in model.calls[2].messages[-1]["content"]
    assert challenge.wrong_solution.strip() in model.calls[2].messages[-1]["content"]  # type: ignore[attr-defined]
    assert result.trajectory.extra["search"]["switched"] == 1  # attempt 3 went back to 1


def test_solver_hooks_build_each_search(tmp_path: Path) -> None:
    from nightschool.errors import UserError
    from nightschool.learn import solver_hooks

    kinds = {name: type(solver_hooks(tmp_path, search=name)[0]) for name in POLICIES}
    assert kinds == {
        "retry": type(None),
        "prm": PrmRepair,
        "best-of-n": BestOfN,
        "mcts": PrmMcts,
    }
    with pytest.raises(UserError, match="use one of retry, prm, best-of-n, mcts"):
        solver_hooks(tmp_path, search="lats")


def test_one_check_per_choice_refuses_unknown_names() -> None:
    from nightschool.errors import UserError
    from nightschool.learn.frontier import PICKERS, check_picker
    from nightschool.learn.search import check_search

    for name in POLICIES:
        check_search(name)
    for name in PICKERS:
        check_picker(name)
    with pytest.raises(UserError, match="unknown search 'lats'; use one of retry, prm"):
        check_search("lats")
    with pytest.raises(UserError, match="unknown frontier picker 'rare'; use one of brittle, prm"):
        check_picker("rare")
