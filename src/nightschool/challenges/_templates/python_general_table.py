"""Template `python_general.text_table`: a product list printed as a fixed-width text table.

The family: which columns the table computes (`TABLE_WHAT`) times its layout
(`TABLE_STYLE`) times how money is written (`TABLE_MONEY`).
"""

from __future__ import annotations

import random
import textwrap
from functools import partial

from nightschool.challenges._templates._kit import (
    WORDS,
    Parts,
    RenderError,
    TemplateBase,
    files_setup,
    near_miss,
    prompt,
    select,
    twists,
    validator_script,
    variant,
)
from nightschool.challenges._templates.starters import python_general_table as starter
from nightschool.challenges._templates.starters.python_general import pick, separates
from nightschool.challenges._templates.starters.python_general_table import TABLE_STYLE, layout

TABLE_WHAT = ("price", "value", "share")
"""Columns: Name/Qty/Price, Name/Qty/Value (qty * price), Name/Value/Share (% of all value)."""
TABLE_MONEY = ("bare", "dollar")
"""Money cells: `12.50`, or `$12.50`."""

_SOLUTION = """
    import csv

    with open("products.csv", newline="") as handle:
        products = [(r["name"], int(r["qty"]), float(r["price"])) for r in csv.DictReader(handle)]
    total_qty = sum(qty for _, qty, _ in products)  #-share
    total_value = sum(qty * price for _, qty, price in products)
    products.sort(key=lambda p: (-p[2], p[0]))  #=t1&price
    products.sort(key=lambda p: (-p[1] * p[2], p[0]))  #=t1&!price


    def money(amount):
        return f"{amount:.2f}"  #+bare
        return f"${amount:.2f}"  #+dollar


    header = ["Name", "Qty", "Price"]  #+price
    header = ["Name", "Qty", "Value"]  #+value
    header = ["Name", "Value", "Share"]  #+share
    rows = [[name, str(qty), money(price)] for name, qty, price in products]  #+price
    rows = [[name, str(qty), money(qty * price)] for name, qty, price in products]  #+value
    rows = [[name, money(qty * price), f"{100 * qty * price / total_value:.1f}%"] for name, qty, price in products]  #+share
    rows = [[row[0] if len(row[0]) <= 16 else row[0][:13] + "...", *row[1:]] for row in rows]  #+t3
    total = ["TOTAL", str(total_qty), money(total_value)]  #=t2&!share
    total = ["TOTAL", money(total_value), "100.0%"]  #=t2&share
    sized = [header] + rows  #-t2
    sized = [header] + rows + [total]  #+t2
    widths = [max(len(row[i]) for row in sized) for i in range(3)]


    def line(cells):
        cells = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]  #-bug
        cells = [c.ljust(w) for c, w in zip(cells, widths)]  #+bug
        return " | ".join(cells).rstrip()  #+pipe
        return ("| " + " | ".join(cells) + " |").rstrip()  #+markdown
        return "  ".join(cells).rstrip()  #+spaced


    rule = "-+-".join("-" * w for w in widths)  #+pipe
    rule = "| :" + "-" * (widths[0] - 1) + "".join(f" | {'-' * (w - 1)}:" for w in widths[1:]) + " |"  #+markdown
    rule = "  ".join("=" * w for w in widths)  #+spaced
    print(line(header))
    print(rule)
    for row in rows:
        print(line(row))
    print(rule)  #=t2&!markdown
    print(line(total))  #+t2
"""

_HEADERS = {"price": ["Name", "Qty", "Price"], "value": ["Name", "Qty", "Value"],
            "share": ["Name", "Value", "Share"]}  # fmt: skip


def _table(products: list[tuple[str, int, str]], tags: set[str]) -> list[str]:
    """Emulate the drawn task on (name, qty, price text) products: the printed lines."""
    items = [(name, qty, float(price)) for name, qty, price in products]
    total_qty = sum(qty for _, qty, _ in items)
    total_value = sum(qty * price for _, qty, price in items)
    what = pick(tags, TABLE_WHAT)
    if "t1" in tags:
        items.sort(key=lambda p: (-(p[2] if what == "price" else p[1] * p[2]), p[0]))
    sign = "$" if "dollar" in tags else ""

    def money(amount: float) -> str:
        return f"{sign}{amount:.2f}"

    rows = [
        {
            "price": [name, str(qty), money(price)],
            "value": [name, str(qty), money(qty * price)],
            "share": [name, money(qty * price), f"{100 * qty * price / total_value:.1f}%"],
        }[what]
        for name, qty, price in items
    ]
    if "t3" in tags:
        rows = [[r[0] if len(r[0]) <= 16 else r[0][:13] + "...", *r[1:]] for r in rows]
    total = (
        ["TOTAL", money(total_value), "100.0%"]
        if what == "share"
        else ["TOTAL", str(total_qty), money(total_value)]
    )
    style = pick(tags, TABLE_STYLE)
    table: list[list[str] | None] = [_HEADERS[what], None, *rows]
    if "t2" in tags:
        table += [total] if style == "markdown" else [None, total]
    right = [False, True, True] if "bug" not in tags else [False, False, False]
    return layout(table, right, style)


_LONG = ("stainless steel kettle", "ergonomic office chair", "wireless noise headphones",
         "cast iron skillet set", "bamboo cutting boards")  # fmt: skip
_COLUMNS = {
    "price": "`Name`, `Qty`, `Price` (the unit price)",
    "value": "`Name`, `Qty`, `Value` (qty * price)",
    "share": "`Name`, `Value` (qty * price) and `Share` (the product's value as a percentage of "
    "the value of all products, 1 decimal and a `%` sign, e.g. `12.5%`)",
}
_STYLE = {
    "pipe": "Cells are joined by ` | `. The rule row is `-` repeated to each column's width, "
    "joined by `-+-`.",
    "markdown": "Every row is a Markdown table row: `| ` + the cells joined by ` | ` + ` |`. The "
    "rule row has the same shape; its cells are `-` repeated to the column's width, except "
    "that the first character of the Name cell and the last character of the other cells are "
    "`:`.",
    "spaced": "Cells are joined by two spaces. The rule row is `=` repeated to each column's "
    "width, joined by two spaces.",
}
_MONEY = {"bare": "Money has 2 decimals (`7.50`).",
          "dollar": "Money has a `$` sign and 2 decimals (`$7.50`)."}  # fmt: skip


class TextTable(TemplateBase):
    """Fixed-width text table; family: `TABLE_WHAT` x `TABLE_STYLE` x `TABLE_MONEY`.

    Twists: sorted rows, a total row, truncated names.
    """

    name = "python_general.text_table"
    cluster = "python_general"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starter.text_table(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        axes = (TABLE_WHAT, TABLE_STYLE, TABLE_MONEY)
        tags = variant(rng, *axes)
        what, style, _money = (pick(tags, axis) for axis in axes)
        ref, wrong = tags | twists(level), tags | near_miss(level)
        n = (4, 6, 8, 10)[level]
        for _attempt in range(100):
            names = rng.sample(WORDS, n)
            if level >= 3:
                names[:2] = rng.sample(_LONG, 2)
            products = [(name, rng.randint(1, 60), rng.randint(99, 9999)) for name in names]
            if level >= 1:  # a tie in price and in value
                products[1] = (products[1][0], products[0][1], products[0][2])
            rows = [(n, q, f"{c // 100}.{c % 100:02d}") for n, q, c in products]
            if separates(partial(_table, rows), ref, wrong, TABLE_MONEY):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        text = "name,qty,price\n" + "".join(f"{n},{q},{p}\n" for n, q, p in rows)
        sample = [("apple", 3, "0.50"), ("banana bread", 12, "4.25")]
        example = "".join(f"\n    {row}" for row in _table(sample, tags | ({"t1", "t2"} & ref)))
        task = "Print a product list as a fixed-width text table."
        inputs = """
            `products.csv` with the header `name,qty,price` (qty a whole number, price with 2
            decimals).
        """
        output = f"""
            print the table to standard output, exactly in this layout: a header row with the
            cells {_COLUMNS[what]}; a rule row; then one row per product in file order. Each
            column is as wide as its longest cell (header included); Name is left-aligned, the
            other columns right-aligned. {_MONEY[_money]} {_STYLE[style]} Trailing spaces do not
            matter. Example:
        """
        output = textwrap.fill(" ".join(output.split()), 90) + "\n" + example
        key = "unit price" if what == "price" else "value (qty * price)"
        total_cells = {
            "price": "Qty the sum of all quantities, Price the total value (sum of qty * price)",
            "value": "Qty the sum of all quantities, Value the total value",
            "share": "Value the total value, Share `100.0%`",
        }[what]
        rule_first = "a total row" if style == "markdown" else "another rule row and a total row"
        rules = [
            f"Order the rows by {key}, highest first; equal ones by name.",
            f"After the rows print {rule_first}: Name `TOTAL`, {total_cells}. The total row "
            "counts for the column widths too.",
            "Names longer than 16 characters are cut to their first 13 characters followed by "
            "`...` (16 characters in all).",
        ]
        body = """
            out, _ = run_solution(SOLUTION)
            check_lines(out, DATA, "stdout", exact=True)
            passed()
        """
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"products.csv": text}),
            validation_script=validator_script(body, _table(rows, ref)),
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )
