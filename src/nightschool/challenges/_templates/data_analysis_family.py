"""Cluster `data_analysis`: checks that a seed's data tells its task apart from the family's.

Each template of the cluster draws its task with `_kit.variant` from a few
axes. Axes of *what to compute* (and of conventions such as ordering) are
separated by data: the template emulates every other task of the family on the
drawn data and retries until each one's output differs from the reference's
the way the validator sees it (`same_lines`: token by token, a decimal within
one unit of its last place; `close`: numbers within a relative tolerance).
Axes of input or output shape (file names, argument types) separate by
themselves: another task's program reads or writes files that are not there,
or cannot unpack the arguments.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from nightschool.challenges._templates import _kit

_TOKEN = re.compile(r"[^\s,;|]+|[,;|]")
_DECIMAL = re.compile(r"[-+]?\d*\.(\d+)")


def _same_token(want: str, got: str) -> bool:
    if want == got:
        return True
    match = _DECIMAL.fullmatch(want)
    if match is None or _DECIMAL.fullmatch(got) is None:
        return False
    return abs(float(want) - float(got)) <= 1.01 * 10.0 ** -len(match.group(1))


def same_lines(want: Sequence[str], got: Sequence[str]) -> bool:
    """True when the validator's `check_lines` would accept `got` for `want`.

    Lines are compared token by token (spaces ignored, `,;|` tokens of their
    own); a decimal may differ by one unit in its last place.
    """
    if len(want) != len(got):
        return False
    for one, two in zip(want, got, strict=True):
        left, right = _TOKEN.findall(one), _TOKEN.findall(two)
        if len(left) != len(right) or not all(map(_same_token, left, right)):
            return False
    return True


def close(want: Any, got: Any, tol: float) -> bool:
    """True when the starter checker would accept `got` for `want` (lists and tuples alike)."""
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, int | float) and isinstance(got, int | float):
        return abs(want - got) <= tol * max(1.0, abs(want))
    if isinstance(want, list | tuple) and isinstance(got, list | tuple):
        return len(want) == len(got) and all(
            close(w, g, tol) for w, g in zip(want, got, strict=True)
        )
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(close(want[k], got[k], tol) for k in want)
    return bool(want == got)


def separated(
    emulate: Callable[[set[str]], Any],
    reference: set[str],
    wrong: set[str],
    axes: Sequence[Sequence[str]],
    same: Callable[[Any, Any], bool] = same_lines,
) -> bool:
    """True when the drawn data rejects the near-miss and every rival task of the family.

    Args:
        emulate: the expected output for a set of tags (raising ValueError,
            KeyError, IndexError, TypeError or ZeroDivisionError where that
            program would crash).
        reference: the reference's tags (variant and twists).
        wrong: the near-miss's tags.
        axes: the axes that data must separate (see `_kit.family_rivals`).
        same: how the validator compares two outputs.
    """
    return _kit.separates(emulate, reference, [wrong, *_kit.family_rivals(reference, *axes)], same)
