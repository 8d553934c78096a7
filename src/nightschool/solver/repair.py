"""The solver's learned hooks: which failed attempt a retry repairs, and the budget.

`RepairPolicy` is the contract; `ask_policy` builds the episode so far as a
partial trajectory, asks the policy, and falls back to the latest failure on
any answer that is not a candidate and on any exception (a broken policy
must never cost the episode). `learners.search` holds the policies:
`PrmRepair` (best-first), `BestOfN` (independent samples) and `PrmMcts`
(Monte Carlo tree search with the PRM as its value).

With a policy, every attempt records `arguments["parent"]`: the failed
attempt its prompt repaired (an index into the trajectory's tool calls), or
`ROOT` (-1) for a prompt of the task alone. Those links are the search tree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from nightschool.challenges import Challenge
from nightschool.trajectory import ToolCall, Trajectory

__all__ = ["ROOT", "BudgetRouter", "RepairPolicy", "ask_policy", "ask_router"]

ROOT = -1
"""The tree's root, the task itself: a retry picked there is a fresh sample of the task."""


class BudgetRouter(Protocol):
    """Decides an episode's attempt budget from its request (`learners.router`)."""

    def decide(self, trajectory: Trajectory) -> tuple[str, float, float]:
        """(decision, p_first, p_any) for the request of `trajectory` (no calls yet)."""
        ...

    def budget(self, decision: str) -> int:
        """Attempts the decision allows (0: none)."""
        ...


class RepairPolicy(Protocol):
    """Chooses which failed attempt a retry repairs (search over attempts).

    The default solver repairs the latest failure (retry at rising
    temperature). A policy sees the episode so far and may send the retry back
    to an earlier failure that looks closer to a pass; it never changes the
    budget (one model call per attempt, the same resampling).

    A policy with a true `tree` attribute may also answer `ROOT`: the retry is
    then a fresh sample of the task (no failed code, no checker message); it
    is asked from the first retry on (one failure is enough).
    """

    name: str
    """Recorded in `extra["search"]["policy"]`."""

    def pick(self, partial: Trajectory, candidates: Sequence[int]) -> int | None:
        """The index into `partial.tool_calls` to repair, or None for the latest.

        Args:
            partial: the episode so far (request, lessons shown, the calls made;
                outcome `unknown`). Must not be mutated.
            candidates: indices of attempts that ran and failed (at least two),
                oldest first; for a `tree` policy `ROOT` first, then at least
                one failure.

        Returns:
            One of `candidates`, or None. Any other answer, or an exception,
            falls back to the latest failure.
        """
        ...


def ask_policy(
    policy: RepairPolicy,
    challenge: Challenge,
    calls: Sequence[ToolCall],
    candidates: Sequence[int],
    *,
    shown: tuple[Sequence[str], Sequence[str]] = ((), ()),
    notify: Callable[[str], None] = lambda _msg: None,
) -> int | None:
    """Ask `policy` which of `candidates` to repair; None means the latest.

    Args:
        policy: the search policy.
        challenge: the challenge being solved.
        calls: the episode's `run_solution` calls so far (copied, not shared).
        candidates: indices into `calls` of attempts that ran and failed.
        shown: ids of the lessons and of the skills in the prompt.
        notify: progress callback (told when the policy fails).

    Returns:
        One of `candidates`, or None.
    """
    lessons, skills = shown
    partial = Trajectory(
        task_kind="selfplay",
        cluster=challenge.cluster,
        tier=challenge.tier,
        user_request=challenge.prompt,
        tool_calls=[call.model_copy() for call in calls],
        extra={
            "challenge_hash": challenge.challenge_hash,
            "lessons_shown": list(lessons),
            "skills_shown": list(skills),
        },
    )
    try:
        pick = policy.pick(partial, list(candidates))
    except Exception as exc:
        notify(f"search policy {policy.name} failed ({exc}); repairing the latest failure")
        return None
    return pick if pick in candidates else None


def ask_router(
    router: BudgetRouter,
    challenge: Challenge,
    max_attempts: int,
    *,
    shown: tuple[Sequence[str], Sequence[str]] = ((), ()),
    notify: Callable[[str], None] = lambda _msg: None,
) -> tuple[int, dict[str, object] | None]:
    """The router's budget for `challenge` (at most `max_attempts`) and the record of it.

    Returns:
        (budget, record): the record (decision, budget, p_first, p_any, the
        router's version) goes to `extra["router"]`. Any router fault
        escalates to `max_attempts` with no record (the fail-safe).
    """
    lessons, skills = shown
    request = Trajectory(
        task_kind="selfplay",
        cluster=challenge.cluster,
        tier=challenge.tier,
        user_request=challenge.prompt,
        extra={"lessons_shown": list(lessons), "skills_shown": list(skills)},
    )
    try:
        decision, p_first, p_any = router.decide(request)
        budget = max(0, min(router.budget(decision), max_attempts))
    except Exception as exc:
        notify(f"router failed ({exc}); using the full budget")
        return max_attempts, None
    notify(f"router: {decision} ({budget} attempt(s))")
    record: dict[str, object] = {
        "decision": decision,
        "budget": budget,
        "p_first": round(p_first, 4),
        "p_any": round(p_any, 4),
        "version": getattr(router, "version", None),
    }
    return budget, record
