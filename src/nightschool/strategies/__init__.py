"""Strategy evolution: the loop that searches for better strategies (`nightschool evolve`).

`Evolution` runs it; whether a candidate replaces the incumbent is the
promotion gate's verdict (`nightschool.gate`).
"""

from nightschool.strategies.archive import AuthoringFailedError, Node, TaskResult, select_champion
from nightschool.strategies.baselines import BASELINES
from nightschool.strategies.contract import (
    CONTRACT_TEXT,
    ContractViolation,
    StrategyContractError,
    check_strategy,
    lint_strategy,
)
from nightschool.strategies.engine import Evolution, EvolutionConfig
from nightschool.strategies.harness import BudgetExhausted, Harness
from nightschool.strategies.hooks import PlayEvent, PlayHooks
from nightschool.strategies.tasks import TaskSpec, draw_holdout, draw_train

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
    "PlayEvent",
    "PlayHooks",
    "StrategyContractError",
    "TaskResult",
    "TaskSpec",
    "check_strategy",
    "draw_holdout",
    "draw_train",
    "lint_strategy",
    "select_champion",
]
