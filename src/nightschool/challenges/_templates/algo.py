"""Cluster `algo`: interval merging, top-k leaderboards, shortest paths.

Each template draws a seed's task from a family (see `_kit.variant`); the
families live in `algo_merge`, `algo_topk` and `algo_path` (program tiers) and
in `starters.algo` (the starter tier).
"""

from __future__ import annotations

import random

from nightschool.challenges._templates import algo_merge, algo_path, algo_topk
from nightschool.challenges._templates._kit import Parts, TemplateBase
from nightschool.challenges._templates.starters import algo as starters


class MergeIntervals(TemplateBase):
    """Interval tasks (see `algo_merge`); twists: reversed lines, junk lines, a total."""

    name = "algo.merge_intervals"
    cluster = "algo"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.merge_intervals(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        return algo_merge.build(level, rng)


class TopK(TemplateBase):
    """Leaderboard tasks (see `algo_topk`); twists: name tie-break, case folding, shared ranks."""

    name = "algo.top_k"
    cluster = "algo"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.top_k(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        return algo_topk.build(level, rng)


class ShortestPath(TemplateBase):
    """Route tasks on a road map (see `algo_path`); twists: unreachable, closed roads, route."""

    name = "algo.shortest_path"
    cluster = "algo"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.shortest_path(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        return algo_path.build(level, rng)


TEMPLATES = (MergeIntervals(), TopK(), ShortestPath())
