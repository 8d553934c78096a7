"""Frontier weighting: practise where the PRM is least sure and the history is thinnest.

Seed 000/002's `pick_frontier_seed`:

    cluster weight = PRM_uncertainty(cluster) x trajectory_rarity(cluster)
                     (1 - 2 |p - 0.5|)          (1 / (1 + log1p(count)))

where `p` is the PRM's mean value over the states of the cluster's latest
self-play trajectories (`RECENT`), and `count` its self-play trajectories.
Saturated clusters weigh 0. A 20% uniform floor hands the pick back to the
legacy `FrontierTracker.pick_seed` (so a wrong PRM cannot lock practice onto
one cluster and starve the others of the data that would correct it), and so
do a cold start (no PRM checkpoint, no signal), all-zero weights and any
error: frontier weighting never blocks a cycle. A frontier pick's reason
starts `FRONTIER TARGET (PRM-weighted)` so the log attributes it.

PRIOR-ART.md: the prior system's frontier weighting tied uniform picking in
its own ablation and was switched off, so here it is off by default (`dream
--frontier brittle`) until an ablation of learning speed says otherwise.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from pathlib import Path

from nightschool.challenges import CLUSTERS, WEB_CLUSTER, practice_clusters, web_problem
from nightschool.dream.frontier import FrontierTracker, SeedPick
from nightschool.errors import UserError
from nightschool.learn._checkpoint import LivePrm, PrmParams, prm_path
from nightschool.learn.steps import step_states
from nightschool.store import Store

__all__ = [
    "FRONTIER_PREFIX",
    "PICKERS",
    "PrmFrontierTracker",
    "cluster_weights",
    "make_tracker",
    "pick_frontier_seed",
]

logger = logging.getLogger("nightschool.learn")

FRONTIER_PREFIX = "FRONTIER TARGET (PRM-weighted)"
"""How a frontier pick's reason begins (seed 000)."""
UNIFORM_FLOOR = 0.2
"""Chance a pick goes to the legacy picker instead (seed 000's sanity floor)."""
RECENT = 20
"""Latest self-play trajectories per cluster whose states give `p`."""


def cluster_weights(
    store: Store, params: PrmParams, tracker: FrontierTracker
) -> dict[str, tuple[float, float, float]]:
    """Per tracked cluster: (weight, uncertainty, rarity); saturated clusters weigh 0.

    A cluster with no self-play trajectory has no `p`: its uncertainty is 1
    (nothing known), its rarity 1.
    """
    out: dict[str, tuple[float, float, float]] = {}
    for state in tracker.states():
        cluster = state.cluster
        rows = store.query(
            "SELECT id FROM trajectories WHERE task_kind = 'selfplay' AND cluster = ? "
            "ORDER BY timestamp DESC LIMIT ?",
            (cluster, RECENT),
        )
        count = store.query(
            "SELECT COUNT(*) FROM trajectories WHERE task_kind = 'selfplay' AND cluster = ?",
            (cluster,),
        )[0][0]
        values: list[float] = []
        for (trajectory_id,) in rows:
            trajectory = store.get_trajectory(trajectory_id)
            if trajectory is not None:
                values += [params.score(s.features) for s in step_states(trajectory)]
        uncertainty = 1.0 if not values else 1.0 - 2.0 * abs(sum(values) / len(values) - 0.5)
        rarity = 1.0 / (1.0 + math.log1p(count))
        weight = 0.0 if state.saturated else uncertainty * rarity
        out[cluster] = (weight, uncertainty, rarity)
    return out


def pick_frontier_seed(
    store: Store, params: PrmParams, tracker: FrontierTracker, rng: random.Random
) -> SeedPick | None:
    """A cluster drawn with probability proportional to its weight; None when all weigh 0."""
    weights = cluster_weights(store, params, tracker)
    pool = [(c, w) for c, (w, _, _) in weights.items() if w > 0]
    if not pool:
        return None
    cluster = rng.choices([c for c, _ in pool], weights=[w for _, w in pool])[0]
    weight, uncertainty, rarity = weights[cluster]
    saturated = tuple(c for c, (w, _, _) in weights.items() if w == 0)
    return SeedPick(
        cluster,
        tracker.difficulty_tier(cluster),
        "frontier",
        f"{FRONTIER_PREFIX}: uncertainty {uncertainty:.2f} x rarity {rarity:.2f} = {weight:.3f}",
        saturated,
    )


class PrmFrontierTracker(FrontierTracker):
    """A `FrontierTracker` whose `pick_seed` is `pick_frontier_seed` when it can be.

    Args:
        store: the open database.
        prm: the live PRM (engaged only while a checkpoint is loaded).
        uniform_floor: chance a pick goes to the legacy picker.
        clusters: clusters to track (default: every template-bank cluster).
    """

    def __init__(
        self,
        store: Store,
        prm: LivePrm,
        *,
        uniform_floor: float = UNIFORM_FLOOR,
        clusters: Sequence[str] = CLUSTERS,
    ):
        super().__init__(store, clusters=clusters)
        self.prm = prm
        self.uniform_floor = uniform_floor

    def pick_seed(self, rng: random.Random) -> SeedPick:
        """Frontier-weighted pick, or the legacy pick (floor roll, cold start, any error)."""
        if rng.random() >= self.uniform_floor:
            try:
                params = self.prm.params
                if params is not None:
                    pick = pick_frontier_seed(self._store, params, self, rng)
                    if pick is not None:
                        return pick
            except Exception as exc:
                logger.warning("frontier weighting failed, using the legacy pick: %s", exc)
        return super().pick_seed(rng)


PICKERS = ("brittle", "prm")
"""Cluster pickers of a dream: `FrontierTracker.pick_seed` and `PrmFrontierTracker`."""


def check_picker(frontier: str) -> None:
    """Refuse a cluster picker that is not one of `PICKERS`.

    Raises:
        UserError: `frontier` is unknown (exit code 2).
    """
    if frontier not in PICKERS:
        raise UserError(f"unknown frontier picker {frontier!r}; use one of {', '.join(PICKERS)}")


def make_tracker(store: Store, frontier: str, home: Path | None) -> FrontierTracker:
    """The dream's tracker for picker `frontier` (`prm` needs `home`, else `brittle`).

    It tracks `challenges.practice_clusters()`: `web_automation` only where
    Chromium and Playwright are installed (a warning says so otherwise).

    Raises:
        UserError: `frontier` is not one of `PICKERS`.
    """
    check_picker(frontier)
    clusters = practice_clusters()
    if WEB_CLUSTER not in clusters:
        logger.warning("%s is left out of practice: %s", WEB_CLUSTER, web_problem())
    if frontier == "prm" and home is not None:
        return PrmFrontierTracker(store, LivePrm(prm_path(home)), clusters=clusters)
    return FrontierTracker(store, clusters=clusters)
