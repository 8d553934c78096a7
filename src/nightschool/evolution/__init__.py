"""Strategy evolution: the loop that searches for better strategies (`nightschool evolve`).

`Evolution` runs it; whether a candidate replaces the incumbent is the
promotion gate's verdict (`nightschool.gate`).
"""

from nightschool.evolution.archive import AuthoringFailedError, Node, TaskResult, select_champion
from nightschool.evolution.baselines import BASELINES
from nightschool.evolution.contract import (
    CONTRACT_TEXT,
    ContractViolation,
    StrategyContractError,
    check_strategy,
    lint_strategy,
)
from nightschool.evolution.engine import Evolution, EvolutionConfig
from nightschool.evolution.harness import BudgetExhausted, Harness
from nightschool.evolution.tasks import TaskSpec, draw_holdout, draw_train

__all__ = [
    "BASELINES",
    "CONTRACT_TEXT",
    "AuthoringFailedError",
    "BudgetExhausted",
    "ContractViolation",
    "Evolution",
    "EvolutionConfig",
    "Harness",
    "Node",
    "StrategyContractError",
    "TaskResult",
    "TaskSpec",
    "check_strategy",
    "draw_holdout",
    "draw_train",
    "lint_strategy",
    "select_champion",
]
