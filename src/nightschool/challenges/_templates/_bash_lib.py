"""Helpers shared by the `bash` cluster's template modules."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nightschool.challenges._templates import _kit

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
    return _kit.separates(emulate, tags, _kit.axis_neighbours(tags, *axes))
