"""Starter tier of `algo.merge_intervals`: one function from a family of interval tasks.

Axes (see `_kit.variant`): what the function returns (`merge` the blocks,
`gaps` the uncovered stretches between them, `longest` the longest block,
`cover` the covered length; the function is named after it), the interval
convention (`span`: stretches of a line, touching intervals merge; `days`:
inclusive day ranges, adjacent ranges merge too) and the argument shape
(`pairs`: `[start, end]` lists; `text`: strings like `"3-7"`, results in the
same form). Every seed's hidden cases hold an adjacent pair, which tells the
two conventions apart for every function.
"""

from __future__ import annotations

import itertools
import random
import textwrap
from functools import partial
from typing import Any

from nightschool.challenges._templates._kit import (
    Case,
    Parts,
    RenderError,
    call,
    differs,
    function_parts,
    shown_example,
    variant,
)

_FUNC = {
    "merge": "merge_intervals",
    "gaps": "interval_gaps",
    "longest": "longest_block",
    "cover": "covered_length",
}
WHAT = tuple(_FUNC)
"""What the function returns (the function is named after it)."""
UNIT = ("span", "days")
"""Interval convention: stretches of a line, or inclusive ranges of whole days."""
SHAPE = ("pairs", "text")
"""Argument shape: `[start, end]` lists, or `"start-end"` strings."""

_SOURCE = """
    def {func}(intervals):
        pairs = sorted(intervals)  #+pairs
        pairs = sorted(tuple(map(int, item.split("-"))) for item in intervals)  #+text
        blocks = []
        for start, end in pairs:
            if blocks and start <= blocks[-1][1]:  #+span
            if blocks and start <= blocks[-1][1] + 1:  #+days
                blocks[-1][1] = max(blocks[-1][1], end)  #-bug
                blocks[-1][1] = end  #+bug
            else:
                blocks.append([start, end])
        return blocks  #=merge&pairs
        return [f"{a}-{b}" for a, b in blocks]  #=merge&text
        gaps = [[x[1], y[0]] for x, y in zip(blocks, blocks[1:])]  #=gaps&span
        gaps = [[x[1] + 1, y[0] - 1] for x, y in zip(blocks, blocks[1:])]  #=gaps&days
        return gaps  #=gaps&pairs
        return [f"{a}-{b}" for a, b in gaps]  #=gaps&text
        best = max(blocks, key=lambda block: block[1] - block[0])  #+longest
        return best  #=longest&pairs
        return f"{best[0]}-{best[1]}"  #=longest&text
        return sum(end - start for start, end in blocks)  #=cover&span
        return sum(end - start + 1 for start, end in blocks)  #=cover&days
"""


def _answer(intervals: list[list[int]], tags: set[str]) -> Any:
    """What the function with `tags` returns for `intervals` (given as pairs)."""
    days = int("days" in tags)
    blocks: list[list[int]] = []
    for a, b in sorted(intervals):
        if blocks and a <= blocks[-1][1] + days:
            blocks[-1][1] = b if "bug" in tags else max(blocks[-1][1], b)
        else:
            blocks.append([a, b])
    if "cover" in tags:
        return sum(b - a + days for a, b in blocks)
    if "longest" in tags:
        result: list[list[int]] = [max(blocks, key=lambda block: block[1] - block[0])]
    elif "gaps" in tags:
        result = [[x[1] + days, y[0] - days] for x, y in itertools.pairwise(blocks)]
    else:
        result = blocks
    if "text" in tags:
        shown: Any = [f"{a}-{b}" for a, b in result]
        return shown[0] if "longest" in tags else shown
    return result[0] if "longest" in tags else result


def _arg(intervals: list[list[int]], tags: set[str]) -> list[Any]:
    return [f"{a}-{b}" for a, b in intervals] if "text" in tags else intervals


def _groups(rng: random.Random, count: int, adjacent: bool = True) -> list[list[int]]:
    """Intervals forming `count` groups, often with an inner piece late in a group.

    With `adjacent`, two consecutive groups are adjacent (`[a, b]`, `[b + 1, c]`).
    """
    pos, pieces = rng.randint(0, 9), []
    join = rng.randrange(count - 1) if adjacent and count > 1 else -1
    for index in range(count):
        end = pos + rng.randint(4, 9)
        cut = rng.randint(pos + 1, end - 2)
        pieces += [[pos, rng.randint(cut, end - 1)], [cut, end]]
        if rng.random() < 0.5:
            inner = rng.randint(cut + 1, end - 1)
            pieces.append([inner, inner])
        pos = end + 1 if index == join else end + rng.randint(2, 5)
    rng.shuffle(pieces)
    return pieces


def build_starter(rng: random.Random) -> Parts:
    """The starter of `algo.merge_intervals` (`TemplateBase.build_starter`).

    Raises:
        RenderError: if no drawn cases separate the near-miss from the reference.
    """
    tags = variant(rng, WHAT, UNIT, SHAPE)
    (what,) = tags & set(WHAT)
    func = _FUNC[what]
    for _attempt in range(100):
        a = rng.randint(0, 20)
        b, c = a + rng.randint(2, 5), a + rng.randint(7, 12)
        inputs = [
            [[b + 1, c], [a, b]],  # adjacent: one block only for `days`
            [[a, c], [a + 1, b]],  # contained
            [[a, b], [b, c], [c + 2, c + 4]],  # touching
            _groups(rng, 2),
            _groups(rng, 3),
            _groups(rng, 4),
        ]
        inputs.insert(0, [] if what != "longest" else [[a, b]])
        if differs(
            partial(lambda xs, t: [_answer(x, t) for x in xs], inputs, tags),
            partial(lambda xs, t: [_answer(x, t) for x in xs], inputs, tags | {"bug"}),
        ):
            break
    else:
        raise RenderError("algo.merge_intervals: starter cases do not separate the near-miss")
    hidden = [Case(call(func, _arg(x, tags)), _answer(x, tags)) for x in inputs]

    def draw(r: random.Random) -> Case:
        x = _groups(r, 2, adjacent=False)
        return Case(call(func, _arg(x, tags)), _answer(x, tags))

    example = shown_example(rng, draw, hidden)
    shape = "text" in tags

    def show(a: int, b: int) -> str:
        return f'"{a}-{b}"' if shape else f"[{a}, {b}]"

    spec = (
        'Intervals are strings "start-end" (start <= end, any order).'
        if shape
        else "Intervals are [start, end] lists (start <= end, any order)."
    )
    if "days" in tags:
        spec += (
            f" Each is an inclusive range of whole days ({show(3, 5)} is days 3, 4, 5: length"
            f" 3); ranges that overlap or are adjacent ({show(1, 3)} and {show(4, 6)}) join"
            " into one block."
        )
    else:
        spec += (
            f" Each is a stretch of length end - start; intervals that overlap or touch"
            f" ({show(1, 3)} and {show(3, 5)}) join into one block, {show(1, 3)} and"
            f" {show(4, 6)} do not."
        )
    form = " (in the input's form)" if shape else ""
    spec += {
        "merge": f" Return the blocks sorted by start{form}.",
        "gaps": f" Return the gaps between consecutive blocks, sorted{form}: "
        + (
            "[first free day, last free day]."
            if "days" in tags
            else "[end of one block, start of the next]."
        ),
        "longest": f" Return the longest block{form}; on a tie, the first one.",
        "cover": " Return the total length of the blocks.",
    }[what]
    kind = "list[str]" if shape else "list[list[int]]"
    returns = {"merge": kind, "gaps": kind, "cover": "int"}.get(
        what, "str" if shape else "list[int]"
    )
    return function_parts(
        func=func,
        signature=f"def {func}(intervals: {kind}) -> {returns}:",
        spec=textwrap.fill(spec, 84),
        examples=[example],
        cases=hidden,
        source=_SOURCE.replace("{func}", func),
        features=tags,
    )
