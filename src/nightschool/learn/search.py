"""Search over solver attempts: which failure a retry repairs, or a fresh sample.

The default solver retries at rising temperature, each retry repairing the
latest failure. Three `RepairPolicy` alternatives, at the same budget (one
model call per attempt, the same resampling, the same rising temperatures):

- `PrmRepair` (`--search prm`): best-first. A retry repairs the failed
  attempt the process reward model values highest.
- `BestOfN` (`--search best-of-n`): every attempt is an independent sample
  of the task, no feedback; the checker judges each. With an executable
  checker on every attempt no value model is needed to choose among them.
- `PrmMcts` (`--search mcts`): Monte Carlo tree search over the tree of
  repairs (root: the task; a child: a repair of its parent, or at the root
  a fresh sample), UCT selection, the PRM as the leaf value instead of
  rollouts (in the spirit of LATS, Zhou et al. 2023), the executable
  checker the only judge of a pass.

The PRM policies are engaged only when a PRM checkpoint is loaded; with none
(or any error while scoring) the solver falls back to the latest failure, as
the `RepairPolicy` protocol requires. Public re-runs found retrying at rising
temperature matched LATS on HumanEval at about 1/50 of the cost (Kapoor et
al. 2024), so `bench/bench_search.py` measures every policy against retry at
equal budget before one becomes the default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nightschool.errors import UserError
from nightschool.learn._checkpoint import LivePrm, PrmParams
from nightschool.learn.steps import step_states
from nightschool.solver.repair import ROOT
from nightschool.trajectory import Trajectory

__all__ = [
    "POLICIES",
    "BestOfN",
    "PrmMcts",
    "PrmRepair",
    "check_search",
    "parents",
    "uct_select",
]

POLICIES = ("retry", "prm", "best-of-n", "mcts")
"""The solver's search choices (`dream --search`); `retry` is no policy."""


def check_search(search: str) -> None:
    """Refuse a search that is not one of `POLICIES`.

    Raises:
        UserError: `search` is unknown (exit code 2).
    """
    if search not in POLICIES:
        raise UserError(f"unknown search {search!r}; use one of {', '.join(POLICIES)}")


EXPLORATION = 1.0
"""UCT's exploration weight on min-max normalised values: LATS's w = 1 (Zhou et
al. 2023). Normalising is MuZero's (Schrittwieser et al. 2020): PRM values of
failed states are small and close together (median 0.009, median spread within
one trajectory 0.023, measured on 216 failed attempts of this project's stores),
so raw values would leave the search to the exploration term alone."""


class PrmRepair:
    """`solver.RepairPolicy` that repairs the failure the PRM values highest.

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


class BestOfN:
    """`RepairPolicy` whose every retry is an independent sample of the task.

    Best-of-N at the solver's budget: attempt k samples the task prompt alone
    at the k-th rising temperature and seed, without the failed code or the
    checker's message. Needs no model: the checker judges every sample.
    """

    name = "best-of-n"
    tree = True

    def pick(self, partial: Trajectory, candidates: Sequence[int]) -> int | None:
        """`ROOT` whenever it is offered (a fresh sample), else None (the latest)."""
        return ROOT if ROOT in candidates else None


def parents(partial: Trajectory) -> list[int]:
    """Each call's parent in the search tree: `arguments["parent"]`, or the retry default.

    A call without a recorded parent builds on the latest earlier call that
    ran and failed (what retry-the-latest does), or on `ROOT` when none did.
    """
    found: list[int] = []
    latest = ROOT
    for index, call in enumerate(partial.tool_calls):
        parent = call.arguments.get("parent")
        valid = isinstance(parent, int) and not isinstance(parent, bool) and ROOT <= parent < index
        found.append(parent if valid else latest)  # type: ignore[arg-type]
        if call.name == "run_solution" and call.result == "failed":
            latest = index
    return found


def uct_select(
    tree: Sequence[int],
    values: Sequence[float],
    expandable: set[int],
    exploration: float = EXPLORATION,
) -> int:
    """The node MCTS expands next: descend from the root by UCT, stop where expanding wins.

    Args:
        tree: each call's parent (`parents`), so call i is a child of `tree[i]`.
        values: each call's value (the PRM's), same length as `tree`.
        expandable: the calls a retry may repair (those that ran and failed).
        exploration: UCT's weight c.

    At node x, each expandable child y scores `Q(y) + c * sqrt(ln N(x) / N(y))`,
    where N counts y and its descendants and Q is the mean normalised value
    over them; expanding x itself scores the mean value of x's children (x's
    own value when it has none: first-play urgency) plus
    `c * sqrt(ln N(x) / (children + 1))`. Values are min-max normalised over
    the tree (all equal: 0.5 each). Ties go to descending, then to the latest
    child. With values that tell nothing apart the exploration term alone
    decides: one failure is repaired, and a line of repairs that grows
    makes a fresh sample win (after three failures in one line).

    Returns:
        `ROOT` (a fresh sample) or a member of `expandable`.

    Raises:
        ValueError: `tree` and `values` differ in length.
    """
    if len(tree) != len(values):
        raise ValueError(f"{len(tree)} parents but {len(values)} values")
    low, high = min(values, default=0.0), max(values, default=0.0)
    spread = high - low
    norm = [(v - low) / spread if spread > 1e-12 else 0.5 for v in values]
    children: dict[int, list[int]] = {}
    for index, parent in enumerate(tree):
        children.setdefault(parent, []).append(index)

    def subtree(node: int) -> list[int]:
        found = [] if node == ROOT else [node]
        for child in children.get(node, []):
            found += subtree(child)
        return found

    def visits(node: int) -> int:
        return len(subtree(node)) + (1 if node == ROOT else 0)

    def mean(nodes: Sequence[int]) -> float:
        return sum(norm[n] for n in nodes) / len(nodes)

    node = ROOT
    while True:
        kids = children.get(node, [])
        log_n = math.log(visits(node))
        first_play = mean(kids) if kids else (norm[node] if node != ROOT else 0.5)
        best = (first_play + exploration * math.sqrt(log_n / (len(kids) + 1)), 0, node)
        for kid in kids:
            if kid in expandable:
                score = mean(subtree(kid)) + exploration * math.sqrt(log_n / visits(kid))
                best = max(best, (score, 1, kid))
        if best[1] == 0:
            return node
        node = best[2]


class PrmMcts:
    """`RepairPolicy`: Monte Carlo tree search over repairs with the PRM as its value.

    Args:
        prm: a `LivePrm` (follows retrains) or fixed `PrmParams`.
        exploration: UCT's weight on normalised values (`EXPLORATION`).

    The tree is the episode's `parent` links (`parents`). Every call is
    valued by the PRM as if it were the latest attempt (`PrmRepair.values`);
    `uct_select` picks the node to expand: a failed attempt (the retry
    repairs it) or `ROOT` (a fresh sample of the task). A pass ends the
    episode, so only failures are ever valued. Without a PRM it answers None
    (the latest failure).
    """

    name = "mcts"
    tree = True

    def __init__(self, prm: LivePrm | PrmParams, exploration: float = EXPLORATION) -> None:
        self.values = PrmRepair(prm).values
        self.exploration = exploration

    def pick(self, partial: Trajectory, candidates: Sequence[int]) -> int | None:
        """The node to expand (`ROOT` or a failed attempt); None without a PRM."""
        if not candidates:
            return None
        values = self.values(partial, range(len(partial.tool_calls)))
        if values is None:
            return None
        ordered = [values[index] for index in range(len(partial.tool_calls))]
        expandable = {index for index in candidates if index != ROOT}
        return uct_select(parents(partial), ordered, expandable, self.exploration)
