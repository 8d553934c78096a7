"""Small models trained on the agent's own history: the PRM and the router.

`steps` turns a trajectory into per-step states, features and value labels;
`prm` trains and measures the process reward model (scikit-learn) and writes
its checkpoint; `LivePrm` scores with the current checkpoint and picks up a
retrained one; `search.PrmRepair` is PRM-guided search over solver attempts;
`router` learns each request's attempt budget and is saved only when the
promotion gate says it saves tokens without losing passes; `chat_router`
does the same for chat turns (answer directly, or run the agent loop).
`solver_hooks` hands the solver what a home has earned.
"""

import logging
from pathlib import Path
from typing import Any

from nightschool.learners._checkpoint import (
    CHECKPOINT_SCHEMA,
    CheckpointError,
    LivePrm,
    PrmParams,
    load_checkpoint,
    prm_path,
    save_checkpoint,
)
from nightschool.learners.prm import NotEnoughDataError, PrmConfig, PrmReport, learn_prm, train_prm
from nightschool.learners.router import (
    RouterConfig,
    RouterParams,
    RouterReport,
    learn_router,
    load_router,
    router_path,
    train_router,
)
from nightschool.learners.steps import FEATURE_NAMES, GAMMA, StepState, label_states, step_states

__all__ = [
    "CHECKPOINT_SCHEMA",
    "FEATURE_NAMES",
    "GAMMA",
    "CheckpointError",
    "LivePrm",
    "NotEnoughDataError",
    "PrmConfig",
    "PrmParams",
    "PrmReport",
    "RouterConfig",
    "RouterParams",
    "RouterReport",
    "StepState",
    "label_states",
    "learn_prm",
    "learn_router",
    "load_checkpoint",
    "load_router",
    "prm_path",
    "router_path",
    "save_checkpoint",
    "solver_hooks",
    "step_states",
    "train_prm",
    "train_router",
]


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
    from nightschool.learners.search import BestOfN, PrmMcts, PrmRepair, check_search

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
            logging.getLogger("nightschool.learners").warning("router not used: %s", exc)
    return policy, routed
