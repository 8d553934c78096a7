"""Self-play: the frontier tracker, the solver and the dream loop."""

from nightschool.selfplay.dream import CycleResult, DreamLoop, summarize
from nightschool.selfplay.frontier import ClusterState, FrontierRun, FrontierTracker, SeedPick
from nightschool.selfplay.solver import Solver, SolverConfig, SolveResult, extract_code

__all__ = [
    "ClusterState",
    "CycleResult",
    "DreamLoop",
    "FrontierRun",
    "FrontierTracker",
    "SeedPick",
    "SolveResult",
    "Solver",
    "SolverConfig",
    "extract_code",
    "summarize",
]
