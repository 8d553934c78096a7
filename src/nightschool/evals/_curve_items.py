"""The learning curve's held-out items, their results and what each arm shows them.

Split from `nightschool.evals.curve` (re-exported there) so that the parallel
measurement (`_curve_parallel`) and the curve both stand on it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from nightschool.challenges import CLUSTERS, Challenge, render, templates
from nightschool.errors import UserError
from nightschool.evals._curve_arms import placebo_recall
from nightschool.lessons.skills import Recall, recall
from nightschool.playbook import SkillMemory
from nightschool.trajectory import Trajectory

HELDOUT_SEED_BASE = 1_000_000_000
"""Held-out renderings use seeds from here up (the dream renders below 1,000,000;
verification from 500,000,000 to 600,000,000)."""

Arm = Literal["none", "lessons", "skills", "both", "placebo", "equal_compute"]
ARMS: tuple[Arm, ...] = ("none", "lessons", "skills", "both", "placebo", "equal_compute")
"""Arms: what `recall` may show the solver; `placebo` and `equal_compute` are the
control arms of `_curve_arms` (unrelated items shown; the dream's compute spent at
test time instead)."""


@dataclass(frozen=True)
class HeldOutItem:
    """One held-out task.

    Attributes:
        set_name: `a` (new seeds of practised templates) or `b` (unseen templates).
        challenge: the rendered challenge.
    """

    set_name: str
    challenge: Challenge

    @property
    def task_id(self) -> str:
        """`<set>:<template>:<tier>:<seed>`, unique within a curve."""
        c = self.challenge
        return f"{self.set_name}:{c.template}:{c.tier}:{c.seed}"


@dataclass(frozen=True)
class HeldOut:
    """The two held-out sets and the templates the dream must not practise."""

    set_a: tuple[HeldOutItem, ...]
    set_b: tuple[HeldOutItem, ...]
    unseen_templates: frozenset[str]

    @property
    def items(self) -> tuple[HeldOutItem, ...]:
        """Set (a) then set (b)."""
        return self.set_a + self.set_b


def build_heldout(tiers: Sequence[str], per_cell: int, seed: int = 0) -> HeldOut:
    """Build held-out sets (a) and (b) for `tiers`, `per_cell` items per cluster × tier.

    One template per cluster (drawn with `seed`) is held out for set (b); set (a)
    cycles through the cluster's other templates. Seeds are `HELDOUT_SEED_BASE`
    and up.

    Raises:
        UserError: `per_cell` < 1, no tiers, or a disjointness check failed.
    """
    if per_cell < 1 or not tiers:
        raise UserError("a held-out set needs at least one tier and --per-cell >= 1")
    rng = random.Random(f"heldout:{seed}")
    unseen: set[str] = set()
    set_a: list[HeldOutItem] = []
    set_b: list[HeldOutItem] = []
    counter = HELDOUT_SEED_BASE + seed * 100_000
    for cluster in CLUSTERS:
        names = [t.name for t in templates(cluster)]
        held = rng.choice(names)
        unseen.add(held)
        practised = [n for n in names if n != held]
        for tier in tiers:
            for index in range(per_cell):
                counter += 1
                name = practised[index % len(practised)]
                set_a.append(HeldOutItem("a", render(name, tier, counter)))
                counter += 1
                set_b.append(HeldOutItem("b", render(held, tier, counter)))
    heldout = HeldOut(tuple(set_a), tuple(set_b), frozenset(unseen))
    check_disjoint(heldout)
    return heldout


def check_disjoint(heldout: HeldOut, practised_hashes: Sequence[str] = ()) -> None:
    """Raise unless (a) and (b) share no challenge and nothing practised is held out.

    Checks (explicit `if`s, so they also hold under `python -O`): no challenge
    hash in both sets; no (b) template among (a)'s templates; every held-out
    seed at or above `HELDOUT_SEED_BASE`; no held-out hash in `practised_hashes`.

    Raises:
        UserError: naming the first violation.
    """
    a_hashes = {item.challenge.challenge_hash for item in heldout.set_a}
    b_hashes = {item.challenge.challenge_hash for item in heldout.set_b}
    if a_hashes & b_hashes:
        raise UserError("held-out sets (a) and (b) share a challenge")
    if {item.challenge.template for item in heldout.set_a} & heldout.unseen_templates:
        raise UserError("set (a) contains a template held out for set (b)")
    if any(item.challenge.seed < HELDOUT_SEED_BASE for item in heldout.items):
        raise UserError("a held-out seed lies in the range the dream renders")
    leaked = (a_hashes | b_hashes) & set(practised_hashes)
    if leaked:
        raise UserError(f"{len(leaked)} held-out challenge(s) were practised: {sorted(leaked)[:3]}")


@dataclass(frozen=True)
class ItemResult:
    """One held-out item solved in one arm."""

    task_id: str
    set_name: str
    cluster: str
    tier: str
    passed: bool
    tokens: int
    trajectory_id: str
    shown: int
    reused: bool = False


@dataclass
class Measurement:
    """One arm measured on both sets at one checkpoint."""

    checkpoint: int
    dream_s: float
    cycles: int
    arm: Arm
    results: list[ItemResult] = field(default_factory=list)

    def pass_rate(self, set_name: str) -> tuple[int, int]:
        """(passed, n) on one set."""
        mine = [r for r in self.results if r.set_name == set_name]
        return sum(r.passed for r in mine), len(mine)


def shown_for(memory: SkillMemory | None, heldout: HeldOut, item: HeldOutItem, arm: Arm) -> Recall:
    """What `recall` shows `item` under `arm`: 3 lessons and 2 skills where the arm allows them.

    Nothing for `none` and `equal_compute`; never a skill of one of the unseen
    templates (set b); for `placebo`, as many unrelated entries as `both`
    shows (`_curve_arms.placebo_recall`).
    """
    if arm == "placebo":
        both = shown_for(memory, heldout, item, "both")
        c = item.challenge
        return placebo_recall(memory, both, c.cluster, c.template, item.task_id)
    return recall(
        memory if arm not in ("none", "equal_compute") else None,
        item.challenge,
        lessons_k=3 if arm in ("lessons", "both") else 0,
        skills_k=2 if arm in ("skills", "both") else 0,
        exclude_templates=heldout.unseen_templates,
    )


def reusable(arm: Arm, shown: Recall) -> bool:
    """Whether an item's start result stands for `arm`: nothing shown, one attempt."""
    return arm != "equal_compute" and not (shown.lessons or shown.skills)


def as_eval(trajectory: Trajectory, checkpoint: int, arm: Arm, set_name: str) -> Trajectory:
    """`trajectory` recorded as a held-out solve (`task_kind` eval, `extra.learning_curve`)."""
    return trajectory.model_copy(
        update={
            "task_kind": "eval",
            "extra": {
                **trajectory.extra,
                "learning_curve": {"checkpoint": checkpoint, "arm": arm, "set": set_name},
            },
        }
    )


def item_row(
    item: HeldOutItem, shown: Recall, passed: bool, trajectory: Trajectory, trajectory_id: str
) -> ItemResult:
    """One item's result: pass, tokens of `trajectory`, how many lessons and skills it showed."""
    return ItemResult(
        task_id=item.task_id,
        set_name=item.set_name,
        cluster=item.challenge.cluster,
        tier=item.challenge.tier,
        passed=passed,
        tokens=trajectory.tokens_in + trajectory.tokens_out,
        trajectory_id=trajectory_id,
        shown=len(shown.lessons) + len(shown.skills),
    )
