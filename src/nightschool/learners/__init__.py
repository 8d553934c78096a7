"""Small models trained on the agent's own history: the process reward model.

`steps` turns a trajectory into per-step states, features and value labels;
`prm` trains and measures the PRM (scikit-learn) and writes its checkpoint;
`LivePrm` scores with the current checkpoint and picks up a retrained one.
"""

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
    "StepState",
    "label_states",
    "learn_prm",
    "load_checkpoint",
    "prm_path",
    "save_checkpoint",
    "step_states",
    "train_prm",
]
