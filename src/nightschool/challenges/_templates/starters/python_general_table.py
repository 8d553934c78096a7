"""Starter of `python_general.text_table`: (name, qty) rows as text-table lines.

The family: what the table holds (`TABLE_KIND`) times its layout (`TABLE_STYLE`,
shared with the program tiers).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import partial

from nightschool.challenges._templates._kit import (
    WORDS,
    Case,
    Parts,
    RenderError,
    call,
    function_parts,
    shown_example,
    variant,
)
from nightschool.challenges._templates.starters.python_general import pick, separates, wrap

TABLE_KIND = ("plain_rows", "total_row", "ranked", "by_name")
"""Starter tables: the rows as given, then a TOTAL line, sorted by qty, sorted by name."""
TABLE_STYLE = ("pipe", "markdown", "spaced")
"""Layouts: ` | ` with a `-+-` rule, Markdown table rows, two spaces with an `=` rule."""

_FUNC = {"plain_rows": "format_table", "total_row": "format_table_with_total",
         "ranked": "format_ranked_table", "by_name": "format_table_by_name"}  # fmt: skip


def layout(
    rows: Sequence[Sequence[str] | None],
    right: Sequence[bool],
    style: str,
    sized: Sequence[Sequence[str]] | None = None,
) -> list[str]:
    """Lay out a text table in `style`: each column as wide as its longest cell.

    Args:
        rows: the table's rows, each one cell per column; `None` is a rule line.
        right: per column, True when it is right-aligned.
        style: one of `TABLE_STYLE`.
        sized: the rows that set the widths (default: every row of `rows`).

    Returns:
        The lines, trailing spaces removed.
    """
    measured = [row for row in (rows if sized is None else sized) if row is not None]
    widths = [max(len(row[i]) for row in measured) for i in range(len(right))]
    out = []
    for row in rows:
        if row is None:
            if style == "markdown":
                cells = [("-" * (w - 1) + ":") if r else (":" + "-" * (w - 1))
                         for w, r in zip(widths, right, strict=True)]  # fmt: skip
            else:
                cells = [("=" if style == "spaced" else "-") * w for w in widths]
        else:
            cells = [
                c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)
            ]
        if style == "pipe":
            out.append(("-+-" if row is None else " | ").join(cells))
        elif style == "markdown":
            out.append("| " + " | ".join(cells) + " |")
        else:
            out.append("  ".join(cells))
    return [line.rstrip() for line in out]


_STYLE_TEXT = {
    "pipe": "Cells are joined by ' | ', the rule's dashes by '-+-'.",
    "markdown": "Lines are '| ' + cells joined by ' | ' + ' |'; rule cells are dashes with "
    "':' first for names, last for quantities.",
    "spaced": "Cells are joined by two spaces; the rule is '=' per column, joined the same.",
}
_KIND_TEXT = {
    "plain_rows": "a line per row",
    "total_row": "a line per row, then 'TOTAL' with the qty sum",
    "ranked": "a line per row, largest qty first (ties by name)",
    "by_name": "a line per row, sorted by name",
}
_SOURCE = """
    def format_table(rows):  #+plain_rows
    def format_table_with_total(rows):  #+total_row
    def format_ranked_table(rows):  #+ranked
    def format_table_by_name(rows):  #+by_name
        rows = sorted(rows, key=lambda row: (-row[1], row[0]))  #+ranked
        rows = sorted(rows)  #+by_name
        body = [(name, str(qty)) for name, qty in rows]
        body.append(("TOTAL", str(sum(qty for _, qty in rows))))  #+total_row
        cells = [("Name", "Qty")] + body
        width = max(len(c[0]) for c in cells)
        qty_width = max(len(c[1]) for c in cells)  #-bug
        qty_width = max([len(c[1]) for c in body] + [0])  #+bug
        rule = "-" * width + "-+-" + "-" * qty_width  #+pipe
        rule = "| :" + "-" * (width - 1) + " | " + "-" * (qty_width - 1) + ": |"  #+markdown
        rule = "=" * width + "  " + "=" * qty_width  #+spaced
        lines = []
        for name, qty in [("Name", "Qty")] + body:
            lines.append(name.ljust(width) + " | " + qty.rjust(qty_width))  #+pipe
            lines.append("| " + name.ljust(width) + " | " + qty.rjust(qty_width) + " |")  #+markdown
            lines.append(name.ljust(width) + "  " + qty.rjust(qty_width))  #+spaced
        return lines[:1] + [rule] + lines[1:]
"""


def _table(rows: list[tuple[str, int]], tags: set[str]) -> list[str]:
    if "ranked" in tags:
        rows = sorted(rows, key=lambda row: (-row[1], row[0]))
    if "by_name" in tags:
        rows = sorted(rows)
    body = [[name, str(qty)] for name, qty in rows]
    if "total_row" in tags:
        body.append(["TOTAL", str(sum(qty for _, qty in rows))])
    header = ["Name", "Qty"]
    sized = [["Name", ""], *body] if "bug" in tags else None  # Qty's header not measured
    return layout([header, None, *body], [False, True], pick(tags, TABLE_STYLE), sized)


def _example(tags: set[str], rng: random.Random) -> Case:
    """A one-word name with a 1-digit qty, a two-word name with a 2-digit one."""
    one, two, three = rng.sample([w for w in WORDS if len(w) <= 5], 3)  # short: a 2-line limit
    rows = [(one, rng.randint(1, 9)), (f"{two} {three}", rng.randint(10, 99))]
    rng.shuffle(rows)
    return Case(call(_FUNC[pick(tags, TABLE_KIND)], rows), _table(rows, tags))


def text_table(rng: random.Random) -> Parts:
    """Starter of `python_general.text_table`: one of `TABLE_KIND` x `TABLE_STYLE`."""
    axes = (TABLE_KIND, TABLE_STYLE)
    tags = variant(rng, *axes)
    kind, style = (pick(tags, axis) for axis in axes)
    func = _FUNC[kind]
    short = [w for w in WORDS if len(w) <= 4]
    inputs: list[list[tuple[str, int]]] = [
        [],
        [(rng.choice(short), rng.randint(1, 9))],
        [(w, rng.randint(1, 99)) for w in rng.sample(WORDS, 3)],
        [(w, rng.randint(100, 2500)) for w in rng.sample(WORDS, 2)],
        [(f"{a} {b}", rng.randint(1, 60)) for a, b in (rng.sample(WORDS, 2), rng.sample(WORDS, 2))],
        [(w, rng.randint(1, 40)) for w in rng.sample(WORDS, 5)],
    ]

    def result(variant_tags: set[str]) -> list[list[str]]:
        return [_table(rows, variant_tags) for rows in inputs]

    if not separates(result, tags, tags | {"bug"}, TABLE_STYLE):
        raise RenderError("python_general.text_table: starter cases do not separate")
    hidden = [Case(call(func, rows), _table(rows, tags)) for rows in inputs]
    spec = (
        f"Return a text table of (name, qty) rows as lines: header ('Name', 'Qty'), rule, "
        f"{_KIND_TEXT[kind]}. Columns are as wide as their longest cell; names left-aligned, "
        f"quantities right-aligned. {_STYLE_TEXT[style]}"
    )
    return function_parts(
        func=func,
        signature=f"def {func}(rows: list[tuple[str, int]]) -> list[str]:",
        spec=wrap(spec),
        examples=[shown_example(rng, partial(_example, tags), hidden)],
        cases=hidden,
        source=_SOURCE,
        features=tags,
    )
