"""Requests answered both ways, read from forced-route eval runs: the chat router's data.

`nightschool learn chat-router` and the idle watchdog pass these pairs to
`learners.chat_router.learn_chat_router`.
"""

from __future__ import annotations

from nightschool.evals._storage import list_runs, load_run
from nightschool.learn.chat_router import ROUTES, ChatPair
from nightschool.store import Store

__all__ = ["chat_pairs"]


def chat_pairs(store: Store) -> list[ChatPair]:
    """Requests of `store` answered both ways: eval runs forced `--route direct` and `full`.

    For each (suite, task) the newest completed or interrupted run of each
    route counts; the request is the stored (redacted) trajectory's, else the
    task id. Results without a trajectory are left out.
    """
    latest: dict[tuple[str, str, str], tuple[bool, float, str | None]] = {}
    for run in reversed(list_runs(store, limit=10_000)):  # oldest first: newer overwrite
        route = run.config.get("route")
        if route not in ROUTES or run.status == "aborted":
            continue
        for result in load_run(store, run.id).results:
            tokens = float(result.tokens_in + result.tokens_out)
            latest[(run.suite, result.task_id, route)] = (
                result.passed,
                tokens,
                result.trajectory_id,
            )
    pairs: list[ChatPair] = []
    for (suite, task_id, route), (passed, tokens, trajectory_id) in sorted(latest.items()):
        if route != "direct" or (suite, task_id, "full") not in latest:
            continue
        full_passed, full_tokens, full_trajectory = latest[(suite, task_id, "full")]
        request = ""
        for tid in (trajectory_id, full_trajectory):
            if tid and not request:
                trajectory = store.get_trajectory(tid)
                request = trajectory.user_request if trajectory is not None else ""
        if request:
            pairs.append(
                ChatPair(f"{suite}/{task_id}", request, passed, tokens, full_passed, full_tokens)
            )
    return pairs
