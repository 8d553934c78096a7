"""Frontier tracker: per-cluster history of self-play runs and where to practise next.

A cluster is **brittle** while its recent runs show friction, **mastered** after
enough distinct first-try wins, and **saturated** when the last runs are
first-try passes that taught nothing. Its difficulty **tier** starts at
`starter` (function-sized tasks, see `challenges.TIERS`), unlocks one step
every few first-try wins at the current tier (starter -> basic -> intermediate
-> advanced -> expert) and never goes back down.

Every state is derived from the append-only `frontier_runs` table, so it
survives restarts and cannot drift from the history.

Constants are the ones PRIOR-ART.md reports working in an earlier system.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from nightschool.challenges import CLUSTERS, TIERS
from nightschool.store import Store

MASTERED_FIRST_TRY_WINS = 5
"""Non-duplicate first-try wins after which a cluster counts as mastered (PRIOR-ART)."""
BRITTLE_WINDOW = 3
"""Most recent runs that brittleness is scored over (PRIOR-ART)."""
SATURATION_WINDOW = 2
"""A cluster is saturated when this many latest runs are flat first-try passes
(PRIOR-ART: lowered from 3 after a 13-cycle loop produced no lessons)."""
SATURATION_DELTA = 0.001
"""Compression delta at or below which a first-try pass counts as flat (PRIOR-ART)."""
TIER_UNLOCK_WINS = 3
"""First-try wins at the current tier that unlock the next tier (PRIOR-ART)."""
EXPLORATION_PROBABILITY = 0.35
"""Chance that `pick_seed` ignores brittleness and picks uniformly (seed 000)."""
MAX_ATTEMPTS = 3
"""Solver attempts per challenge; a failed run costs MAX_ATTEMPTS + 1 in deltas."""
EFFICIENCY = {1: 1.0, 2: 0.5, 3: 0.2}
"""Self-play score efficiency term by attempts used (PRIOR-ART)."""
COOLDOWN_FLOOR_S = 5.0
"""Lower clamp of the adaptive cool-off between cycles, seconds (seed 000)."""
COOLDOWN_CEILING_S = 180.0
"""Upper clamp of the adaptive cool-off between cycles, seconds (seed 000)."""


@dataclass(frozen=True)
class FrontierRun:
    """One recorded self-play run (a row of `frontier_runs`)."""

    cluster: str
    template: str
    tier: str
    seed: int
    challenge_hash: str
    passed: bool
    attempts: int
    duplicate: bool
    compression_delta: float
    tool_errors: int
    score: float
    trajectory_id: str | None
    timestamp: float

    @property
    def first_try_win(self) -> bool:
        """Passed on the first attempt."""
        return self.passed and self.attempts == 1

    @property
    def flat(self) -> bool:
        """A first-try pass that compressed nothing (the saturation signal)."""
        return self.first_try_win and self.compression_delta <= SATURATION_DELTA


@dataclass(frozen=True)
class ClusterState:
    """Derived frontier state of one cluster."""

    cluster: str
    runs: int
    passes: int
    mean_attempts: float
    first_try_wins: int
    brittleness: int
    mastered: bool
    saturated: bool
    tier: str

    @property
    def brittle(self) -> bool:
        """Recent runs show friction (failures or multi-attempt wins)."""
        return self.brittleness > 0


@dataclass(frozen=True)
class SeedPick:
    """Where the next self-play cycle should practise.

    Attributes:
        cluster: cluster to draw a template from.
        tier: the cluster's unlocked difficulty tier.
        mode: `exploration` (random roll or everything saturated), `brittle`
            (weighted by brittleness), `cold_start` (a never-run cluster) or
            `coverage` (least-run unmastered cluster).
        reason: one readable sentence.
        saturated: clusters excluded as saturated.
    """

    cluster: str
    tier: str
    mode: str
    reason: str
    saturated: tuple[str, ...] = field(default_factory=tuple)


def brittleness(runs: Sequence[FrontierRun]) -> int:
    """Score friction in `runs` (the brittle window), PRIOR-ART's formula.

    2 per failure + 2 per win at ≥ 3 attempts + 1 per win at 2 attempts. A
    window whose latest run is a flat first-try pass scores 0 (recent-win decay
    guard, seed 000): the cluster has recovered.
    """
    if not runs or runs[-1].flat:
        return 0
    score = 0
    for run in runs:
        if not run.passed or run.attempts >= 3:
            score += 2
        elif run.attempts == 2:
            score += 1
    return score


def unlocked_tier(runs: Sequence[FrontierRun]) -> str:
    """Replay `runs` (oldest first) and return the unlocked tier.

    A cluster without runs is at `TIERS[0]` (`starter`). Every
    `TIER_UNLOCK_WINS` first-try wins at or above the current tier unlock the
    next one in `TIERS`; nothing ever lowers it.
    """
    level, wins = 0, 0
    for run in runs:
        if run.first_try_win and TIERS.index(run.tier) >= level:
            wins += 1
            if wins == TIER_UNLOCK_WINS and level < len(TIERS) - 1:
                level, wins = level + 1, 0
    return TIERS[level]


def selfplay_score(
    *, passed: bool, attempts: int, compression_delta: float, duplicate: bool, tool_errors: int
) -> float:
    """Correctness-weighted self-play score (PRIOR-ART).

    `1 + 0.4·Δcompression + 0.6·novelty + 0.3·efficiency − 0.1·tool_errors`,
    0 when failed; novelty is 1 for a never-seen challenge, efficiency is
    1 / 0.5 / 0.2 for 1 / 2 / 3 attempts.
    """
    if not passed:
        return 0.0
    novelty = 0.0 if duplicate else 1.0
    efficiency = EFFICIENCY.get(attempts, 0.0)
    return 1 + 0.4 * compression_delta + 0.6 * novelty + 0.3 * efficiency - 0.1 * tool_errors


def adaptive_cooldown(current_s: float, run: FrontierRun) -> float:
    """Next cool-off between loop cycles, seconds (seed 000 / PRIOR-ART).

    Halve after real progress (a pass with positive compression delta), ×0.75
    after a flat first-try win, ×2 after a failure; clamped to
    [`COOLDOWN_FLOOR_S`, `COOLDOWN_CEILING_S`].
    """
    if not run.passed:
        nxt = current_s * 2
    elif run.compression_delta > SATURATION_DELTA:
        nxt = current_s / 2
    elif run.flat:
        nxt = current_s * 0.75
    else:
        nxt = current_s
    return min(COOLDOWN_CEILING_S, max(COOLDOWN_FLOOR_S, nxt))


_COLUMNS = (
    "cluster, template, tier, seed, challenge_hash, passed, attempts, duplicate, "
    "compression_delta, tool_errors, score, trajectory_id, timestamp"
)


class FrontierTracker:
    """Reads and appends `frontier_runs`; derives cluster states and seed picks.

    Args:
        store: the open database.
        clusters: clusters to track (default: every template-bank cluster).
        exploration_probability: chance of a uniform pick in `pick_seed`.
    """

    def __init__(
        self,
        store: Store,
        *,
        clusters: Sequence[str] = CLUSTERS,
        exploration_probability: float = EXPLORATION_PROBABILITY,
    ) -> None:
        self._store = store
        self.clusters = tuple(clusters)
        self.exploration_probability = exploration_probability

    def runs(self, cluster: str) -> list[FrontierRun]:
        """All runs of `cluster`, oldest first."""
        return self._select("WHERE cluster = ? ORDER BY id", (cluster,))

    def _select(self, clause: str, params: tuple[object, ...]) -> list[FrontierRun]:
        rows = self._store.query(f"SELECT {_COLUMNS} FROM frontier_runs {clause}", params)
        return [
            FrontierRun(
                cluster=r[0],
                template=r[1],
                tier=r[2],
                seed=r[3],
                challenge_hash=r[4],
                passed=bool(r[5]),
                attempts=r[6],
                duplicate=bool(r[7]),
                compression_delta=r[8],
                tool_errors=r[9],
                score=r[10],
                trajectory_id=r[11],
                timestamp=r[12],
            )
            for r in rows
        ]

    def record_run(
        self,
        *,
        cluster: str,
        template: str,
        tier: str,
        seed: int,
        challenge_hash: str,
        passed: bool,
        attempts: int,
        tool_errors: int = 0,
        trajectory_id: str | None = None,
    ) -> FrontierRun:
        """Append one run; duplicate flag, compression delta and score are derived here.

        The compression delta is how many attempts this run saved against the
        cluster's previous run (a failure costs `MAX_ATTEMPTS + 1`), over
        `MAX_ATTEMPTS`, floored at 0: 0 for a first run or no improvement, 1 for
        a first-try win right after a failure. It stands in for the original
        system's compression signal: how much cheaper the cluster just got.

        Raises:
            ValueError: unknown cluster or tier, or attempts outside 1..MAX_ATTEMPTS.
        """
        if cluster not in self.clusters:
            raise ValueError(f"unknown cluster {cluster!r}; known: {', '.join(self.clusters)}")
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}; known: {', '.join(TIERS)}")
        if not 1 <= attempts <= MAX_ATTEMPTS:
            raise ValueError(f"attempts must be in 1..{MAX_ATTEMPTS}, got {attempts}")
        with self._store.transaction() as conn:
            previous = self._select("WHERE cluster = ? ORDER BY id DESC LIMIT 1", (cluster,))
            duplicate = (
                conn.execute(
                    "SELECT 1 FROM frontier_runs WHERE challenge_hash = ? LIMIT 1",
                    (challenge_hash,),
                ).fetchone()
                is not None
            )
            cost = attempts if passed else MAX_ATTEMPTS + 1
            delta = 0.0
            if previous:
                last = previous[0]
                last_cost = last.attempts if last.passed else MAX_ATTEMPTS + 1
                delta = max(0.0, (last_cost - cost) / MAX_ATTEMPTS)
            run = FrontierRun(
                cluster=cluster,
                template=template,
                tier=tier,
                seed=seed,
                challenge_hash=challenge_hash,
                passed=passed,
                attempts=attempts,
                duplicate=duplicate,
                compression_delta=round(delta, 6),
                tool_errors=tool_errors,
                score=selfplay_score(
                    passed=passed,
                    attempts=attempts,
                    compression_delta=delta,
                    duplicate=duplicate,
                    tool_errors=tool_errors,
                ),
                trajectory_id=trajectory_id,
                timestamp=time.time(),
            )
            conn.execute(
                f"INSERT INTO frontier_runs({_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.cluster,
                    run.template,
                    run.tier,
                    run.seed,
                    run.challenge_hash,
                    int(run.passed),
                    run.attempts,
                    int(run.duplicate),
                    run.compression_delta,
                    run.tool_errors,
                    run.score,
                    run.trajectory_id,
                    run.timestamp,
                ),
            )
        return run

    def state(self, cluster: str) -> ClusterState:
        """Derived state of one cluster (an untried cluster is at `starter`)."""
        runs = self.runs(cluster)
        wins = [r for r in runs if r.first_try_win]
        distinct_wins = {r.challenge_hash for r in wins if not r.duplicate}
        last = runs[-SATURATION_WINDOW:]
        return ClusterState(
            cluster=cluster,
            runs=len(runs),
            passes=sum(r.passed for r in runs),
            mean_attempts=sum(r.attempts for r in runs) / len(runs) if runs else 0.0,
            first_try_wins=len(wins),
            brittleness=brittleness(runs[-BRITTLE_WINDOW:]),
            mastered=len(distinct_wins) >= MASTERED_FIRST_TRY_WINS,
            saturated=len(last) == SATURATION_WINDOW and all(r.flat for r in last),
            tier=unlocked_tier(runs),
        )

    def states(self) -> list[ClusterState]:
        """State of every tracked cluster, in cluster order."""
        return [self.state(c) for c in self.clusters]

    def difficulty_tier(self, cluster: str) -> str:
        """The tier a cluster's challenges should be rendered at."""
        return unlocked_tier(self.runs(cluster))

    def pick_seed(self, rng: random.Random) -> SeedPick:
        """Choose the cluster for the next cycle.

        Order: a never-run cluster while there is one (cold start: the first
        cycles of a new agent spread over every cluster instead of returning
        to the first one that failed, as three `bash` starters in a row did
        for a newcomer's first `nightschool dream`); with
        `exploration_probability`, a uniform pick among unsaturated clusters;
        else brittle clusters weighted by brittleness; else the least-run
        unmastered cluster; when every cluster is saturated, a uniform pick
        over all of them (mode `exploration`, saturated list attached).
        """
        states = self.states()
        saturated = tuple(s.cluster for s in states if s.saturated)
        open_states = [s for s in states if not s.saturated]
        if not open_states:
            choice = rng.choice(states)
            return SeedPick(
                choice.cluster, choice.tier, "exploration", "every cluster is saturated", saturated
            )
        untried = [s for s in open_states if s.runs == 0]
        if untried:
            choice = rng.choice(untried)
            return SeedPick(
                choice.cluster, choice.tier, "cold_start", "never practised yet", saturated
            )
        if rng.random() < self.exploration_probability:
            choice = rng.choice(open_states)
            return SeedPick(
                choice.cluster, choice.tier, "exploration", "random exploration roll", saturated
            )
        brittle = [s for s in open_states if s.brittle]
        if brittle:
            choice = rng.choices(brittle, weights=[s.brittleness for s in brittle])[0]
            return SeedPick(
                choice.cluster,
                choice.tier,
                "brittle",
                f"brittleness {choice.brittleness} over the last {BRITTLE_WINDOW} runs",
                saturated,
            )
        pool = [s for s in open_states if not s.mastered] or open_states
        fewest = min(s.runs for s in pool)
        choice = rng.choice([s for s in pool if s.runs == fewest])
        return SeedPick(
            choice.cluster, choice.tier, "coverage", f"least practised ({fewest} runs)", saturated
        )
