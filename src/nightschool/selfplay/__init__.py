"""Self-play: the frontier tracker, curriculum sources and the dream loop.

The solver itself is `nightschool.solver`; `nightschool.practice` wires a session.
"""

from nightschool.selfplay.dream import CycleResult, DreamLoop, summarize
from nightschool.selfplay.frontier import ClusterState, FrontierRun, FrontierTracker, SeedPick

__all__ = [
    "ClusterState",
    "CycleResult",
    "DreamLoop",
    "FrontierRun",
    "FrontierTracker",
    "SeedPick",
    "summarize",
]
