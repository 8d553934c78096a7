"""Self-play: the frontier tracker, curriculum sources and the dream loop.

The solver itself is `nightschool.solver`; `nightschool.practice` wires a session.
"""

from nightschool.dream.frontier import ClusterState, FrontierRun, FrontierTracker, SeedPick
from nightschool.dream.loop import CycleResult, DreamLoop, summarize

__all__ = [
    "ClusterState",
    "CycleResult",
    "DreamLoop",
    "FrontierRun",
    "FrontierTracker",
    "SeedPick",
    "summarize",
]
