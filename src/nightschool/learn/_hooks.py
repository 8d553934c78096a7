"""`solver_hooks`: what a home has earned (repair policy, router), handed to the solver."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from nightschool.learn._checkpoint import CheckpointError, LivePrm, prm_path
from nightschool.learn.router import load_router, router_path
from nightschool.learn.search import BestOfN, PrmMcts, PrmRepair, check_search


def solver_hooks(home: Path, *, search: str = "retry", router: bool = True) -> tuple[Any, Any]:
    """(repair policy, router) a home has earned, for `Solver(search=..., router=...)`.

    Args:
        home: the nightschool home (its `learners/` checkpoints).
        search: one of `search.POLICIES`: `retry` (no policy: repair the
            latest failure), `prm` (`PrmRepair`), `best-of-n` (`BestOfN`,
            independent samples, no model needed) or `mcts` (`PrmMcts`); the
            PRM policies read the live PRM checkpoint and, without one, fall
            back to the latest failure at every retry.
        router: use the router checkpoint when there is one (it exists only
            when the gate promoted it, or with `learn router --force`); an
            unreadable one is ignored with a warning.

    Raises:
        UserError: `search` is not one of `search.POLICIES`.
    """
    check_search(search)
    policy: Any = None
    if search == "prm":
        policy = PrmRepair(LivePrm(prm_path(home)))
    elif search == "mcts":
        policy = PrmMcts(LivePrm(prm_path(home)))
    elif search == "best-of-n":
        policy = BestOfN()
    routed = None
    path = router_path(home)
    if router and path.exists():
        try:
            routed = load_router(path)
        except CheckpointError as exc:
            logging.getLogger("nightschool.learn").warning("router not used: %s", exc)
    return policy, routed
