"""PRM-guided search over solver attempts: repair the most promising failure.

The default solver retries at rising temperature, each retry repairing the
latest failure. With `PrmRepair`, a retry repairs the failed attempt the
process reward model values highest (best-first search over the tree of
repairs, the PRM as its fast value function, in the spirit of LATS,
Zhou et al. 2023, with the executable checker as the only judge of a pass).
The budget is unchanged: one model call per attempt, the same resampling.

It is engaged only when a PRM checkpoint is loaded; with none (or any error
while scoring) the solver falls back to the latest failure, as the
`RepairPolicy` protocol requires. Public re-runs found retrying at rising
temperature matched LATS on HumanEval at about 1/50 of the cost (Kapoor et
al. 2024), so `bench/bench_search.py` measures the two at equal budget
before either becomes the default.
"""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.learners._checkpoint import LivePrm, PrmParams
from nightschool.learners.steps import step_states
from nightschool.trajectory import Trajectory

__all__ = ["PrmRepair"]


class PrmRepair:
    """`selfplay.solver.RepairPolicy` that repairs the failure the PRM values highest.

    Args:
        prm: a `LivePrm` (follows retrains) or fixed `PrmParams`.

    Each candidate is valued as if it were the latest attempt (the calls
    before the latest one, then the candidate's call), so every candidate is
    scored with the same history and the same step index: the PRM compares
    the failures themselves (how far the checker got, the error kind, the
    code), not the moment they happened. Ties go to the latest failure, so a
    PRM that cannot tell the failures apart behaves exactly like
    retry-the-latest.
    """

    name = "prm"

    def __init__(self, prm: LivePrm | PrmParams) -> None:
        self.prm = prm

    def _params(self) -> PrmParams | None:
        return self.prm.params if isinstance(self.prm, LivePrm) else self.prm

    def values(self, partial: Trajectory, candidates: Sequence[int]) -> dict[int, float] | None:
        """Each candidate's value as the latest attempt of `partial` (None: no PRM loaded)."""
        params = self._params()
        if params is None:
            return None
        calls = partial.tool_calls
        before = calls[:-1]
        values: dict[int, float] = {}
        for index in candidates:
            hypothetical = partial.model_copy(update={"tool_calls": [*before, calls[index]]})
            values[index] = params.score(step_states(hypothetical)[-1].features)
        return values

    def pick(self, partial: Trajectory, candidates: Sequence[int]) -> int | None:
        """The candidate failure with the highest value (latest on ties); None without a PRM."""
        if not candidates:
            return None
        values = self.values(partial, candidates)
        if values is None:
            return None
        return max(candidates, key=lambda index: (values[index], index))
