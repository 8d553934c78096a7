"""Helpers shared by the `regex_parse` templates: a seed's task against its family."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence


def separates(result: Callable[[set[str]], object], own: set[str], *axes: Sequence[str]) -> bool:
    """True when the seed's data tells its task apart from every other task over `axes`.

    Args:
        result: the emulated expected output for a set of feature tags (the
            seed's data is bound in it).
        own: the seed's tags (its `variant` tags plus twist tags).
        axes: the axes whose other tags to try; the tags of `own` outside them stay.

    Returns:
        False if some other combination of tags gives the same result as `own`;
        a combination whose emulation raises counts as different (that program
        would crash or print something else).
    """
    fixed = own - {tag for axis in axes for tag in axis}
    mine = result(own)
    for combo in itertools.product(*axes):
        tags = fixed | set(combo)
        if tags == own:
            continue
        try:
            if result(tags) == mine:
                return False
        except (ValueError, KeyError, IndexError, TypeError, ZeroDivisionError):
            continue
    return True
