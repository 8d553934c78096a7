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

from nightschool.learn._checkpoint import (
    CHECKPOINT_SCHEMA,
    CheckpointError,
    LivePrm,
    PrmParams,
    load_checkpoint,
    prm_path,
    save_checkpoint,
)
from nightschool.learn._hooks import solver_hooks
from nightschool.learn.prm import NotEnoughDataError, PrmConfig, PrmReport, learn_prm, train_prm
from nightschool.learn.router import (
    RouterConfig,
    RouterParams,
    RouterReport,
    learn_router,
    load_router,
    router_path,
    train_router,
)
from nightschool.learn.steps import FEATURE_NAMES, GAMMA, StepState, label_states, step_states

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
