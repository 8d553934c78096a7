"""Train and holdout task slices drawn from the challenge template bank.

A task is `(template, tier, seed)`, rendered with `nightschool.challenges.render`.
Train seeds come from `[0, HOLDOUT_SEED_BASE)` and holdout seeds from
`[HOLDOUT_SEED_BASE, 2 * HOLDOUT_SEED_BASE)`, so the slices cannot share a
task id; `draw_holdout` also asserts that no rendered challenge (by content
hash) of the holdout appears in train. The evolution engine calls
`draw_holdout` only after all authoring is done (no adaptive reuse of
evaluation data enters the promotion verdict).

With a holdout *offset* (`evolve --holdout-offset N`) the holdout's render
seeds are consecutive, `HOLDOUT_SEED_BASE + N`, `+ N + 1`, ...: two runs whose
offsets differ by at least the holdout size play disjoint holdouts (no shared
task id), whatever their run seeds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from nightschool.challenges import Challenge, render, templates

__all__ = ["HOLDOUT_SEED_BASE", "TaskSpec", "assert_disjoint", "draw_holdout", "draw_train"]

HOLDOUT_SEED_BASE = 1_000_000
"""Render seeds at or above this are reserved for holdout tasks."""


@dataclass(frozen=True)
class TaskSpec:
    """One task of a slice.

    Attributes:
        template: template name, `cluster.short`.
        tier: challenge tier.
        seed: render seed.
    """

    template: str
    tier: str
    seed: int

    @property
    def task_id(self) -> str:
        """`template/tier/seed`, unique per rendered challenge."""
        return f"{self.template}/{self.tier}/{self.seed}"

    @property
    def cluster(self) -> str:
        """The template's cluster."""
        return self.template.split(".", 1)[0]

    def render(self) -> Challenge:
        """Render the challenge (deterministic)."""
        return render(self.template, self.tier, self.seed)

    def to_json(self) -> dict[str, object]:
        """JSON-ready dict."""
        return {"template": self.template, "tier": self.tier, "seed": self.seed}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> TaskSpec:
        """Inverse of `to_json`."""
        seed = data["seed"]
        assert isinstance(seed, int)
        return cls(str(data["template"]), str(data["tier"]), seed)


def _names(rng: random.Random, clusters: Sequence[str] | None) -> list[str]:
    names = [t.name for t in templates() if clusters is None or t.cluster in clusters]
    if not names:
        raise ValueError(f"no templates in clusters {list(clusters or [])}")
    rng.shuffle(names)
    return names


def _draw(
    n: int, rng: random.Random, tier: str, seeds: range, clusters: Sequence[str] | None
) -> list[TaskSpec]:
    names = _names(rng, clusters)
    chosen: list[TaskSpec] = []
    used: set[int] = set()
    for index in range(n):
        seed = rng.randrange(seeds.start, seeds.stop)
        while seed in used:
            seed = rng.randrange(seeds.start, seeds.stop)
        used.add(seed)
        chosen.append(TaskSpec(names[index % len(names)], tier, seed))
    return chosen


def draw_train(
    n: int, *, seed: int, tier: str = "basic", clusters: Sequence[str] | None = None
) -> list[TaskSpec]:
    """Draw `n` train tasks, cycling over the (shuffled) templates.

    Raises:
        ValueError: `n` < 1, or no template matches `clusters`.
    """
    if n < 1:
        raise ValueError("the train slice needs at least one task")
    return _draw(n, random.Random(f"train:{seed}"), tier, range(0, HOLDOUT_SEED_BASE), clusters)


def assert_disjoint(train: Sequence[TaskSpec], holdout: Sequence[TaskSpec]) -> None:
    """Assert that no holdout task (by id or by rendered content) is a train task.

    Raises:
        AssertionError: the slices overlap.
    """
    # Explicit raises, not `assert`: `python -O` strips assert statements.
    overlap = {t.task_id for t in train} & {t.task_id for t in holdout}
    if overlap:
        raise AssertionError(f"holdout overlaps train: {sorted(overlap)}")
    train_hashes = {t.render().challenge_hash for t in train}
    same = [t.task_id for t in holdout if t.render().challenge_hash in train_hashes]
    if same:
        raise AssertionError(f"holdout renders the same challenge as train: {same}")


def draw_holdout(
    n: int,
    train: Sequence[TaskSpec],
    *,
    seed: int,
    tier: str = "basic",
    clusters: Sequence[str] | None = None,
    offset: int | None = None,
) -> list[TaskSpec]:
    """Draw `n` holdout tasks disjoint from `train` (asserted).

    Call only after all authoring is done.

    Args:
        n: holdout size.
        train: the run's train slice.
        seed: the run's seed (shuffles the templates; without `offset` it also
            draws the render seeds).
        tier: challenge tier.
        clusters: restrict to these clusters (None: all).
        offset: None: render seeds drawn at random from the holdout range.
            An int: the consecutive render seeds `HOLDOUT_SEED_BASE + offset + i`
            for i < n, so holdouts at offsets at least `n` apart share no task.

    Raises:
        ValueError: `n` < 1, or `offset` outside `[0, HOLDOUT_SEED_BASE - n]`.
        AssertionError: the drawn slice overlaps `train` (cannot happen by
            construction; checked anyway).
    """
    if n < 1:
        raise ValueError("the holdout slice needs at least one task")
    rng = random.Random(f"holdout:{seed}")
    if offset is None:
        holdout = _draw(n, rng, tier, range(HOLDOUT_SEED_BASE, 2 * HOLDOUT_SEED_BASE), clusters)
    else:
        if not 0 <= offset <= HOLDOUT_SEED_BASE - n:
            raise ValueError(f"holdout offset {offset} outside [0, {HOLDOUT_SEED_BASE - n}]")
        names = _names(rng, clusters)
        base = HOLDOUT_SEED_BASE + offset
        holdout = [TaskSpec(names[i % len(names)], tier, base + i) for i in range(n)]
    assert_disjoint(train, holdout)
    return holdout
