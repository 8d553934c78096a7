"""Task families (re-exported by `_kit`).

Each seed draws its task from a template's family, and its data must tell the
drawn task from every other one (`variant`, `family_rivals`, `separates`).
"""

from __future__ import annotations

import itertools
import operator
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def variant(rng: random.Random, *axes: Sequence[str]) -> set[str]:
    """Draw the seed's task from a template's family: one feature tag from each axis.

    Seeds must make different tasks, not new data for one task (issue "Transfer,
    measured honestly": at commit 4a3794a a seed's reference passed another
    seed's validator in 95.7% of pairs). A template lists its axes of variation
    (what to compute, input shape, output format, edge-case convention), each a
    sequence of feature tags that `select` and the template's emulation read;
    two seeds that draw different tags on any axis are different tasks, and the
    validator of one must reject the other's reference. Call it first in
    `build`/`build_starter`, before any data is drawn.

    Args:
        rng: the seed's generator.
        axes: the template's axes, each a non-empty sequence of tags; tags are
            unique across axes.

    Returns:
        The drawn tags, one per axis.
    """
    return {rng.choice(list(axis)) for axis in axes}


def pick(tags: set[str], axis: Sequence[str]) -> str:
    """The tag `variant` drew from `axis` (one of `tags`).

    Raises:
        StopIteration: no tag of `axis` is in `tags` (the axis was not drawn).
    """
    return next(iter(tags & set(axis)))


def family_size(*axes: Sequence[str]) -> int:
    """How many different tasks `variant` can draw from `axes` (the product of their sizes)."""
    size = 1
    for axis in axes:
        size *= len(axis)
    return size


def family_rivals(drawn: set[str], *axes: Sequence[str]) -> list[set[str]]:
    """Every other task of the family: each combination of `axes`' tags but the drawn one.

    Tags of `drawn` outside `axes` (twists) stay in every rival.
    """
    ours = {tag for axis in axes for tag in axis}
    kept = drawn - ours
    rivals = [kept | set(combo) for combo in itertools.product(*axes)]
    return [tags for tags in rivals if tags != drawn]


def axis_neighbours(drawn: set[str], *axes: Sequence[str]) -> list[set[str]]:
    """The tasks one axis away from `drawn`: the same draw with one axis's tag swapped."""
    out: list[set[str]] = []
    for axis in axes:
        mine = drawn & set(axis)
        out += [(drawn - mine) | {alt} for alt in axis if alt not in mine]
    return out


def separates(
    emulate: Callable[[set[str]], object],
    drawn: set[str],
    rivals: Iterable[set[str]],
    same: Callable[[Any, Any], bool] = operator.eq,
) -> bool:
    """True when the seed's data tells the drawn task from each of `rivals`.

    Args:
        emulate: feature tags -> the expected output on this seed's data (it
            raises ValueError, KeyError, IndexError, TypeError or
            ZeroDivisionError where that program would crash: a crash counts
            as different).
        drawn: the reference's tags.
        rivals: the other tasks' tags (`family_rivals`, `axis_neighbours`, the
            near-miss's tags).
        same: whether the validator accepts the second output for the first.
    """
    want = emulate(drawn)
    for tags in rivals:
        try:
            got = emulate(tags)
        except (ValueError, KeyError, IndexError, TypeError, ZeroDivisionError):
            continue
        if same(want, got):
            return False
    return True


def differs(reference: Callable[[], object], wrong: Callable[[], object]) -> bool:
    """True when the near-miss's emulated result differs from the reference's (or raises)."""
    try:
        miss = wrong()
    except (ValueError, KeyError, IndexError, TypeError, ZeroDivisionError):
        return True
    return reference() != miss
