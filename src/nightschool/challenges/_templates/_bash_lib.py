"""Helpers shared by the `bash` cluster's template modules."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from nightschool.challenges._templates._kit import differs

SH = "solution.sh"
"""The solution file of every `bash` challenge."""


def separates(
    emulate: Callable[[set[str]], object], tags: set[str], axes: Sequence[Sequence[str]]
) -> bool:
    """True when the data behind `emulate` tells the drawn task from every one-axis neighbour.

    For each axis, every other tag of that axis (the rest of `tags` unchanged)
    must give a different emulated result, so that a seed which drew the
    neighbouring task fails this seed's validator.

    Args:
        emulate: tags -> the expected output (stdout lines, a folder) on this seed's data.
        tags: the seed's drawn tags (variant and twists).
        axes: the axes to check, each a sequence of tags; one of each is in `tags`.
    """
    want = emulate(tags)
    for axis in axes:
        own = tags & set(axis)
        for other in axis:
            if other in own:
                continue
            if not differs(lambda: want, partial(emulate, tags - own | {other})):
                return False
    return True
