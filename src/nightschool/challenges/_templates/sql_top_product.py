"""Template `sql.top_product`: the extreme product of each category (GROUP BY, ROW_NUMBER).

Family (`AXES`): what is measured per product (units sold, number of sales,
revenue), which end is wanted (the best or the worst seller among products with
sales), the line order (by category or by the measure) and the output format
(space-separated lines or a CSV table): 24 tasks at every program tier. Twists on top: ties by name, a date range, the share of
the category.
"""

from __future__ import annotations

import random
from collections import defaultdict
from functools import partial

from nightschool.challenges._templates._kit import (
    WORDS,
    Parts,
    RenderError,
    TemplateBase,
    near_miss,
    prompt,
    twists,
    variant,
)
from nightschool.challenges._templates.sql_common import (
    HOW,
    describe_rows,
    rejects,
    same_lines,
    separated,
    sql_parts,
    table,
)
from nightschool.challenges._templates.starters import sql as starters

MEASURES = ("w_units", "w_sales", "w_revenue")
"""What is measured per product: units sold (sum of qty), number of sales, revenue in cents."""

ENDS = ("d_top", "d_bottom")
"""Which product of the category: the one with the largest measure, or the smallest."""

SORTS = ("s_category", "s_value")
"""Line order: by category name, or by the measure (highest first, ties by category name)."""

FORMATS = ("f_plain", "f_csv")
"""Output: space-separated lines, or a CSV table with a header line."""

AXES = (MEASURES, ENDS, SORTS, FORMATS)
"""The axes of the program tiers' family (`_kit.variant`)."""

_COLUMN = {"w_units": "units", "w_sales": "sales", "w_revenue": "revenue"}
_MEANING = {
    "w_units": "the sum of qty over the product's sales",
    "w_sales": "the number of the product's sales (its rows in `sales`)",
    "w_revenue": "the sum of qty * price_cents over the product's sales, in cents",
}

_STORE_SCHEMA = """
    CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                           price_cents INTEGER NOT NULL);
    CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL,
                        qty INTEGER NOT NULL, day TEXT NOT NULL);
"""

_STORE_SOLUTION = '''
    import sqlite3

    con = sqlite3.connect("store.db")
    query = """
        WITH stats AS (
            SELECT p.id, p.name, p.category,
                   SUM(s.qty) AS value  #=w_units&!bug
                   MAX(s.qty) AS value  #=w_units&bug
                   COUNT(*) AS value  #=w_sales&!bug
                   SUM(s.qty) AS value  #=w_sales&bug
                   SUM(s.qty * p.price_cents) AS value  #=w_revenue&!bug
                   SUM(p.price_cents) AS value  #=w_revenue&bug
            FROM products p JOIN sales s ON s.product_id = p.id
            WHERE s.day BETWEEN '<FIRST>' AND '<LAST>'  #+t2
            GROUP BY p.id
        ), ranked AS (
            SELECT *,
                   ROW_NUMBER() OVER (PARTITION BY category ORDER BY
                       value DESC, id) AS pos,  #=d_top&!t1
                       value DESC, name) AS pos,  #=d_top&t1
                       value, id) AS pos,  #=d_bottom&!t1
                       value, name) AS pos,  #=d_bottom&t1
                   SUM(value) OVER (PARTITION BY category) AS category_value
            FROM stats
        )
        SELECT category, name, value, category_value FROM ranked WHERE pos = 1
        ORDER BY category  #+s_category
        ORDER BY value DESC, category  #+s_value
    """
    print("<HEADER>")  #+f_csv
    for category, name, value, category_value in con.execute(query):
        row = [category, name, value]
        row.append(f"{100 * value / category_value:.1f}%")  #+t3
        row.append(f"{100 * value // category_value:.1f}%")  #+t3bug
        print(*row)  #+f_plain
        print(*row, sep=",")  #+f_csv
'''

_CATEGORY_NAMES = ("garden", "kitchen", "toys", "books", "sports")

Product = tuple[int, str, str, int]
Sale = tuple[int, int, int, str]


def _columns(features: set[str]) -> list[str]:
    measure = next(_COLUMN[m] for m in MEASURES if m in features)
    share = ["share"] if features & {"t3", "t3bug"} else []
    return ["category", "product", measure, *share]


def _measure(qtys: list[int], price: int, features: set[str]) -> int:
    bug = "bug" in features
    if "w_sales" in features:
        return sum(qtys) if bug else len(qtys)
    if "w_revenue" in features:
        return price * (len(qtys) if bug else sum(qtys))
    return max(qtys) if bug else sum(qtys)


def _store(
    products: list[Product], sales: list[Sale], window: tuple[str, str], features: set[str]
) -> list[str]:
    qtys: dict[int, list[int]] = defaultdict(list)
    for _sid, pid, qty, day in sales:
        if "t2" not in features or window[0] <= day <= window[1]:
            qtys[pid].append(qty)
    by_category: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for pid, name, category, price in products:
        if pid in qtys:
            by_category[category].append((pid, name, _measure(qtys[pid], price, features)))
    sign = -1 if "d_top" in features else 1
    rows: list[tuple[int, list[object]]] = []
    for category in sorted(by_category):
        items = by_category[category]
        if "t1" in features:
            pid, name, best = min(items, key=lambda p: (sign * p[2], p[1]))
        else:
            pid, name, best = min(items, key=lambda p: (sign * p[2], p[0]))
        row: list[object] = [category, name, best]
        total = sum(p[2] for p in items)
        if "t3" in features:
            row.append(f"{100 * best / total:.1f}%")
        elif "t3bug" in features:
            row.append(f"{100 * best // total:.1f}%")
        rows.append((best, row))
    if "s_value" in features:
        rows.sort(key=lambda r: -r[0])  # stable: equal values stay in category order
    return table(_columns(features), [row for _, row in rows], "f_csv" in features)


def _data(
    rng: random.Random, level: int, month: int, categories: list[str], top: bool
) -> tuple[list[Product], list[Sale]]:
    n_products, n_sales = (6, 9, 12, 15)[level], (20, 40, 60, 80)[level]
    window = (f"2024-{month:02d}-01", f"2024-{month:02d}-28")
    names = rng.sample(WORDS, n_products)
    products = [
        (i + 1, names[i], categories[i % 3], rng.randint(4, 40) * 25) for i in range(n_products)
    ]
    sales = []
    for k in range(n_sales):
        outside = level >= 2 and rng.random() < 0.4
        day_month = rng.choice((month - 1, month + 1)) if outside else month
        day = f"2024-{day_month:02d}-{rng.randint(1, 28):02d}"
        sales.append((k + 1, rng.randint(1, n_products), rng.randint(1, 9), day))
    if level >= 1:  # a tie at the wanted end where the alphabetically first has the larger id
        first, second = sorted(products[:n_products:3][:2], key=lambda p: p[1])
        if first[0] < second[0]:
            first, second = second, first
        price = 1200 if top else 50
        products = [(p[0], p[1], p[2], price) if p in (first, second) else p for p in products]
        sales = [s for s in sales if s[1] not in (first[0], second[0])]
        qtys = [9, 9, 8, 9, 9, 8, 9, 9] if top else [1]
        for pid in (first[0], second[0]):
            for j, qty in enumerate(qtys):
                sales.append((1000 + 10 * pid + j, pid, qty, window[j % 2]))
    return products, sales


class TopProduct(TemplateBase):
    """The best or worst seller per category (family: `AXES`); twists: ties, dates, share."""

    name = "sql.top_product"
    cluster = "sql"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.top_product(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref = tags | twists(level)
        wrong = tags | ({"t1", "t2", "t3bug"} if level == 3 else near_miss(level))
        month = rng.randint(2, 11)
        window = (f"2024-{month:02d}-01", f"2024-{month:02d}-28")
        categories = rng.sample(_CATEGORY_NAMES, 3)
        for _attempt in range(300):
            products, sales = _data(rng, level, month, categories, "d_top" in tags)
            emulate = partial(_store, products, sales, window)
            if level >= 3 and same_lines(  # shares that floor to themselves hide the near-miss
                emulate(ref), emulate(tags | {"t1", "t2", "t3bug"})
            ):
                continue
            if rejects(emulate, ref, wrong) and separated(
                emulate, tags, AXES, twists(level), same_lines
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level} for {tags}")
        measure = next(m for m in MEASURES if m in tags)
        column = _COLUMN[measure].upper()
        top = "d_top" in tags
        most = "largest" if top else "smallest"
        task = (
            f"Find the {'best' if top else 'worst'}-selling product of each category by "
            f"{_COLUMN[measure]}: the product with the {most} {column}. {HOW}"
        )
        inputs = """
            the SQLite database `store.db` with tables `products(id, name, category,
            price_cents)` and `sales(id, product_id, qty, day)`; day is text like
            `2024-03-05`; a sale sells qty units of the product at its price_cents each.
        """
        output = (
            f"print {describe_rows(_columns(tags), 'f_csv' in tags)}: one line for each "
            f"category that has sales, with the product of that category that has the {most} "
            f"{column} among its products with sales (products without sales do not count), "
            f"where {column} is {_MEANING[measure]}; when products tie, the lower id wins. "
            + (
                "Lines sorted by category name."
                if "s_category" in tags
                else f"Lines sorted by {column}, highest first; equal values by category name."
            )
        )
        rules = [
            f"When products tie on {column}, pick the alphabetically first product name "
            "(instead of the lower id).",
            f"Only count sales from {window[0]} to {window[1]} (both days included); products "
            "without sales in that range do not count.",
            f"Add SHARE, the product's {column} as a percentage of the sum of {column} over its "
            "category's products (those that count), with one decimal and a `%` sign: print "
            f"{describe_rows(_columns({measure, 't3'}), 'f_csv' in tags)}, like `42.9%`.",
        ]
        source = _STORE_SOLUTION.replace("<FIRST>", window[0]).replace("<LAST>", window[1])
        source = source.replace("<HEADER>", ",".join(_columns(ref)))
        return sql_parts(
            prompt(task, inputs, output, rules, level),
            ("store.db", _STORE_SCHEMA, {"products": products, "sales": sales}),
            _store(products, sales, window, ref),
            source,
            ref,
            wrong,
        )
