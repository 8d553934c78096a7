"""Starter tier of cluster `algo`: a function drawn from each template's family.

The families live in `algo_merge` (interval tasks), `algo_topk` (leaderboards)
and `algo_path` (routes on a road map); each function takes the template's
seeded `random.Random` and returns the starter's `Parts`.
"""

from __future__ import annotations

from nightschool.challenges._templates.starters.algo_merge import (
    build_starter as merge_intervals,
)
from nightschool.challenges._templates.starters.algo_path import build_starter as shortest_path
from nightschool.challenges._templates.starters.algo_topk import build_starter as top_k

__all__ = ["merge_intervals", "shortest_path", "top_k"]
