"""Strategy evolution: promotion gates, and the loop that searches for better strategies.

The gates (`promotion_gate`, `SequentialGate`) decide whether a candidate
replaces the incumbent; `Evolution` runs `nightschool evolve`.
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
from nightschool.evolution.gate import GateConfig, PairedResult, Verdict, promotion_gate
from nightschool.evolution.harness import BudgetExhausted, Harness
from nightschool.evolution.sequential import SequentialGate
from nightschool.evolution.tasks import TaskSpec, draw_holdout, draw_train

__all__ = [
    "BASELINES",
    "CONTRACT_TEXT",
    "AuthoringFailedError",
    "BudgetExhausted",
    "ContractViolation",
    "Evolution",
    "EvolutionConfig",
    "GateConfig",
    "Harness",
    "Node",
    "PairedResult",
    "SequentialGate",
    "StrategyContractError",
    "TaskResult",
    "TaskSpec",
    "Verdict",
    "check_strategy",
    "draw_holdout",
    "draw_train",
    "lint_strategy",
    "promotion_gate",
    "select_champion",
]
