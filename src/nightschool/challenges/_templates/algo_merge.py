"""Template `algo.merge_intervals`: a family of interval-merging tasks.

A seed draws one task (see `_kit.variant`) from three axes:

- what to compute (`WHAT`): `merge` the merged blocks; `gaps` the uncovered
  stretches between blocks; `longest` the number of blocks and the longest one;
  `cover` the total length covered;
- the interval convention (`UNIT`): `span` stretches of a line (length
  END - START; touching intervals merge, `[1, 3]` and `[4, 6]` do not) or
  `days` inclusive ranges of whole days (length END - START + 1; adjacent ranges
  such as `[1, 3]` and `[4, 6]` merge);
- the input file (`SHAPE`): `txt` `intervals.txt` with `START END` lines, `csv`
  `intervals.csv` with a `start,end` header, `dots` `ranges.txt` with
  `START..END` lines.

Every rendering holds an adjacent pair of blocks, so the two conventions give
different outputs for every `WHAT`; the outputs of different `WHAT`s differ in
shape; the input files have different names.
"""

from __future__ import annotations

import itertools
import random
from functools import partial

from nightschool.challenges._templates._kit import (
    Parts,
    RenderError,
    differs,
    files_setup,
    near_miss,
    prompt,
    select,
    stdout_validator,
    twists,
    variant,
)

WHAT = ("merge", "gaps", "longest", "cover")
"""What to compute from the intervals."""
UNIT = ("span", "days")
"""Interval convention: stretches of a line, or inclusive ranges of whole days."""
SHAPE = ("txt", "csv", "dots")
"""Input file and line format."""

_FILE = {"txt": "intervals.txt", "csv": "intervals.csv", "dots": "ranges.txt"}
_SEP = {"txt": " ", "csv": ",", "dots": ".."}

_SOLUTION = """
    def length(a, b):
        return b - a  #=span&!t3bug
        return b - a  #=days&t3bug
        return b - a + 1  #=days&!t3bug
        return b - a + 1  #=span&t3bug


    intervals = []
    with open("intervals.txt") as handle:  #+txt
    with open("intervals.csv") as handle:  #+csv
    with open("ranges.txt") as handle:  #+dots
        next(handle)  #+csv
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):  #+t2
                continue  #+t2
            parts = line.split()  #+txt
            parts = line.split(",")  #+csv
            parts = line.split("..")  #+dots
            if len(parts) != 2:  #+t2
                continue  #+t2
            try:  #+t2
                a, b = int(parts[0]), int(parts[1])  #+t2
            except ValueError:  #+t2
                continue  #+t2
            a, b = int(parts[0]), int(parts[1])  #-t2
            if a > b:  #+t1
                a, b = b, a  #+t1
            intervals.append((a, b))
    intervals.sort()
    blocks = []
    for a, b in intervals:
        if blocks and a <= blocks[-1][1]:  #+span
        if blocks and a <= blocks[-1][1] + 1:  #+days
            blocks[-1][1] = max(blocks[-1][1], b)  #-bug
            blocks[-1][1] = b  #+bug
        else:
            blocks.append([a, b])
    gaps = [(x[1], y[0]) for x, y in zip(blocks, blocks[1:])]  #=span&!merge&!longest
    gaps = [(x[1] + 1, y[0] - 1) for x, y in zip(blocks, blocks[1:])]  #=days&!merge&!longest
    for a, b in blocks:  #+merge
        print(a, b)  #+merge
    for a, b in gaps:  #+gaps
        print(a, b)  #+gaps
    print("blocks", len(blocks))  #+longest
    best = max(blocks, key=lambda block: length(*block))  #+longest
    print("longest", best[0], best[1])  #+longest
    print("covered", sum(length(a, b) for a, b in blocks))  #+cover
    print("total", sum(length(a, b) for a, b in blocks))  #=t3&!gaps&!cover
    print("total", sum(length(a, b) for a, b in blocks))  #=t3bug&!gaps&!cover
    print("total", sum(length(a, b) for a, b in gaps))  #=t3&gaps
    print("total", sum(length(a, b) for a, b in gaps))  #=t3bug&gaps
    print("uncovered", sum(length(a, b) for a, b in gaps))  #=t3&cover
    print("uncovered", sum(length(a, b) for a, b in gaps))  #=t3bug&cover
"""


def emulate(pairs: list[tuple[int, int]], features: set[str]) -> list[str]:
    """The stdout lines a solution with `features` prints for `pairs` (as written in the file)."""
    days = "days" in features
    extra = int(days) ^ int("t3bug" in features)

    def length(a: int, b: int) -> int:
        return b - a + extra

    intervals = sorted((min(a, b), max(a, b)) if "t1" in features else (a, b) for a, b in pairs)
    blocks: list[list[int]] = []
    for a, b in intervals:
        if blocks and a <= blocks[-1][1] + int(days):
            blocks[-1][1] = b if "bug" in features else max(blocks[-1][1], b)
        else:
            blocks.append([a, b])
    gaps = [[x[1] + int(days), y[0] - int(days)] for x, y in itertools.pairwise(blocks)]
    summary = "t3" in features or "t3bug" in features
    if "merge" in features:
        lines = [f"{a} {b}" for a, b in blocks]
        total = ("total", blocks)
    elif "gaps" in features:
        lines = [f"{a} {b}" for a, b in gaps]
        total = ("total", gaps)
    elif "longest" in features:
        best = max(blocks, key=lambda block: length(*block))
        lines = [f"blocks {len(blocks)}", f"longest {best[0]} {best[1]}"]
        total = ("total", blocks)
    else:
        lines = [f"covered {sum(length(a, b) for a, b in blocks)}"]
        total = ("uncovered", gaps)
    if summary:
        lines.append(f"{total[0]} {sum(length(a, b) for a, b in total[1])}")
    return lines


def _pieces(rng: random.Random, groups: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Intervals of `groups` groups: one pair touches, one is adjacent, the rest apart.

    Returns the intervals and the index of each group's first piece. A group
    often holds a late piece inside it (the near-miss that forgets `max` loses
    the group's end there).
    """
    joins = rng.sample(range(groups - 1), 2)
    pos = rng.randint(0, 9)
    pieces: list[tuple[int, int]] = []
    firsts: list[int] = []
    for index in range(groups):
        start, end = pos, pos + rng.randint(5, 14)
        cuts = sorted(rng.sample(range(start + 1, end - 2), rng.randint(1, 2)))
        points = [start, *cuts]
        firsts.append(len(pieces))
        for i, point in enumerate(points):
            stop = end if i == len(points) - 1 else min(points[i + 1] + rng.randint(0, 2), end)
            pieces.append((point, stop))
        if rng.random() < 0.6:
            inner = rng.randint(points[-1] + 1, end - 1)
            pieces.append((inner, rng.randint(inner, end - 1)))
        gap = rng.randint(2, 8)
        pos = end if index == joins[0] else end + 1 if index == joins[1] else end + gap
    return pieces, firsts


def _junk(rng: random.Random, shape: str) -> list[str]:
    sep = _SEP[shape]
    return ["", "# exported by the scheduler", f"{rng.randint(1, 50)}{sep}x", "none",
            f"1{sep}2{sep}3"]  # fmt: skip


_TASK = {
    "merge": "Merge the intervals into blocks.",
    "gaps": "Find the gaps: the stretches between the merged blocks that no interval covers.",
    "longest": "Count the merged blocks and find the longest one.",
    "cover": "Find the total length covered by the intervals (overlapping parts count once).",
}
_UNIT = {
    "span": "Each interval is a stretch of the number line from START to END, of length END - "
    "START. Intervals that overlap or touch (like [1, 3] and [3, 5]) merge into one block "
    "([1, 5]); [1, 3] and [4, 6] stay separate blocks.",
    "days": "Each interval is an inclusive range of whole days: [3, 5] means days 3, 4 and 5 "
    "(length 3). Ranges that overlap or are adjacent (like [1, 3] and [4, 6]) merge into one "
    "block ([1, 6]); [1, 3] and [5, 6] stay separate blocks (day 4 is free).",
}
_INPUT = {
    "txt": "`intervals.txt`, one interval per line: two integers `START END` separated by a "
    "space, with START <= END.",
    "csv": "`intervals.csv`: a header line `start,end`, then one interval per line as "
    "`START,END` (integers, START <= END).",
    "dots": "`ranges.txt`, one interval per line written `START..END` (integers, START <= END; "
    "for example `4..9`).",
}
_OUTPUT = {
    "merge": "print the merged blocks to standard output, one per line as `START END`, sorted "
    "by START.",
    "gaps": "print each gap between two consecutive blocks to standard output, in order, one "
    "per line as `START END`: {gap}.",
    "longest": "print two lines to standard output: `blocks N` (the number of merged blocks) "
    "and `longest START END` (the longest block; on a tie, the one that starts first).",
    "cover": "print one line `covered N` to standard output, where N is the total length of "
    "the merged blocks.",
}
_GAP = {
    "span": "from the END of one block to the START of the next one",
    "days": "the first and the last free day between the two blocks",
}
_TOTAL = {
    "merge": "After the blocks print one more line `total N`: the sum of the blocks' lengths.",
    "gaps": "After the gaps print one more line `total N`: the sum of the gaps' lengths.",
    "longest": "After the two lines print one more line `total N`: the sum of the lengths of "
    "all blocks.",
    "cover": "After the `covered` line print one more line `uncovered N`: the sum of the "
    "lengths of the gaps between consecutive blocks.",
}
_EXAMPLE = [(5, 8), (1, 3), (2, 4), (9, 12), (15, 16)]


def _prompt(tags: set[str], level: int, junk: list[str]) -> str:
    (what,) = tags & set(WHAT)
    (unit,) = tags & set(UNIT)
    (shape,) = tags & set(SHAPE)
    shown = ", ".join(f"[{a}, {b}]" for a, b in _EXAMPLE)
    result = ", ".join(f"`{line}`" for line in emulate(_EXAMPLE, tags)) or "nothing"
    task = f"{_TASK[what]} {_UNIT[unit]}"
    output = _OUTPUT[what].format(gap=_GAP[unit]) + f" Example: intervals {shown} give {result}."
    rules = [
        "Some lines are written backwards (END before START, the first number is larger): "
        "treat them as the interval from the smaller to the larger number.",
        "Skip blank lines, comment lines starting with `#`, and malformed lines that are not "
        "exactly two integers (for example " + ", ".join(f"`{j}`" for j in junk[2:]) + ").",
        _TOTAL[what],
    ]
    return prompt(task, _INPUT[shape], output, rules, level)


def build(level: int, rng: random.Random) -> Parts:
    """The program tiers of `algo.merge_intervals` (`TemplateBase.build`).

    Raises:
        RenderError: if no drawn data separates the near-miss from the reference.
    """
    tags = variant(rng, WHAT, UNIT, SHAPE)
    (shape,) = tags & set(SHAPE)
    sep = _SEP[shape]
    ref = tags | twists(level)
    wrong = tags | ({"t1", "t2", "t3bug"} if level == 3 else near_miss(level))
    groups = (5, 6, 8, 10)[level]
    for _attempt in range(300):
        pieces, firsts = _pieces(rng, groups)
        written = list(pieces)
        if level >= 1:  # some intervals backwards, always one that starts a group
            forced = firsts[rng.randrange(groups)]
            written = [
                (b, a) if i == forced or rng.random() < 0.25 else (a, b)
                for i, (a, b) in enumerate(pieces)
            ]
        rng.shuffle(written)
        if level == 2:  # the near-miss crashes on the malformed lines
            break
        if differs(partial(emulate, written, ref), partial(emulate, written, wrong)):
            break
    else:
        raise RenderError(f"algo.merge_intervals: no separating data at level {level}")
    lines = [f"{a}{sep}{b}" for a, b in written]
    junk = _junk(rng, shape)
    if level >= 2:
        for item in junk:
            lines.insert(rng.randrange(len(lines) + 1), item)
        lines.insert(0, "# intervals")
    if shape == "csv":
        lines.insert(0, "start,end")
    return Parts(
        prompt=_prompt(tags, level, junk),
        setup_script=files_setup({_FILE[shape]: "\n".join(lines) + "\n"}),
        validation_script=stdout_validator(emulate(written, ref)),
        reference_solution=select(_SOLUTION, ref),
        wrong_solution=select(_SOLUTION, wrong),
    )
