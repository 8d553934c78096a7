"""Template `data_analysis.region_sales`: one figure per group of a sales CSV.

A seed draws its task from a family (`variant`): the figure (`revenue` total
units * price, `units` total units, `largest` single order, `average` order
value), the grouping column (`region` or `product`) and the order of the lines
(`desc`: biggest figure first, `name`: alphabetical).
"""

from __future__ import annotations

import random
from collections import defaultdict
from fractions import Fraction
from functools import partial

from nightschool.challenges._templates._kit import (
    Parts,
    RenderError,
    TemplateBase,
    files_setup,
    near_miss,
    prompt,
    select,
    stdout_validator,
    twists,
    variant,
)
from nightschool.challenges._templates.data_analysis_family import separated
from nightschool.challenges._templates.starters import data_analysis as starters

MEASURES = ("revenue", "units", "largest", "average")
"""What to compute per group: total revenue, total units, largest order, average order."""
GROUPS = ("region", "product")
"""The column to group by."""
ORDERS = ("desc", "name")
"""Line order: biggest figure first (ties by name), or by name."""
AXES = (MEASURES, GROUPS, ORDERS)

_SOLUTION = """
    import csv

    groups = {}
    tops = {}  #+t3
    skipped = 0  #+t1
    with open("sales.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            key, other = row["region"], row["product"]  #+region
            key, other = row["product"], row["region"]  #+product
            key = key.strip().lower()  #+t2
            try:  #+t1
                units, price = int(row["units"]), float(row["price"])  #+t1
            except ValueError:  #+t1
                skipped += 1  #+t1
                continue  #+t1
            units, price = int(row["units"]), float(row["price"])  #-t1
            groups.setdefault(key, []).append((units, price))
            counts = tops.setdefault(key, {})  #+t3
            counts[other] = counts.get(other, 0) + units  #+t3


    def figure(orders):
        return sum(units * price for units, price in orders)  #=revenue&!bug
        return sum(price for units, price in orders)  #=revenue&bug
        return sum(units for units, price in orders)  #=units&!bug
        return len(orders)  #=units&bug
        return max(units * price for units, price in orders)  #=largest&!bug
        return max(price for units, price in orders)  #=largest&bug
        total = sum(units * price for units, price in orders)  #+average
        return total / len(orders)  #=average&!bug
        return total / sum(units for units, price in orders)  #=average&bug


    figures = {key: figure(orders) for key, orders in groups.items()}
    for key in sorted(figures, key=lambda k: (-figures[k], k)):  #+desc
    for key in sorted(figures):  #+name
        line = f"{key},{figures[key]}"  #+units
        line = f"{key},{figures[key]:.2f}"  #-units
        counts = tops[key]  #+t3
        line += "," + min(counts, key=lambda other: (-counts[other], other))  #+t3
        print(line)
    print(f"skipped,{skipped}")  #+t1
"""

_REGIONS = ("north", "south", "east", "west", "central", "coast")
_PRODUCTS = ("widget", "gadget", "sprocket", "gizmo", "doohickey", "bracket")


def _figure(orders: list[tuple[int, Fraction]], features: set[str]) -> Fraction:
    bug = "bug" in features
    if "units" in features:
        return Fraction(len(orders) if bug else sum(u for u, _p in orders))
    if "largest" in features:
        return max(p if bug else u * p for u, p in orders)
    total = sum((p if bug and "revenue" in features else u * p for u, p in orders), Fraction(0))
    if "average" in features:
        return total / (sum(u for u, _p in orders) if bug else len(orders))
    return total


def _figures(rows: list[list[str]], features: set[str]) -> tuple[dict[str, Fraction], list[str]]:
    """Each group's figure and the t3 column's values, in the order of the output."""
    groups: dict[str, list[tuple[int, Fraction]]] = defaultdict(list)
    tops: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for _date, region, product, units, price in rows:
        key, other = (region, product) if "region" in features else (product, region)
        key = key.strip().lower() if "t2" in features else key
        if not (units.isdigit() and price.replace(".", "", 1).isdigit()):
            if "t1" not in features:
                raise ValueError(units)
            continue
        groups[key].append((int(units), Fraction(round(float(price) * 100), 100)))
        tops[key][other] += int(units)
    figures = {key: _figure(orders, features) for key, orders in groups.items()}
    if "desc" in features:
        keys = sorted(figures, key=lambda k: (-figures[k], k))
    else:
        keys = sorted(figures)
    best = [min(tops[k], key=lambda p: (-tops[k][p], p)) for k in keys]
    return {k: figures[k] for k in keys}, best


def _sales(rows: list[list[str]], features: set[str]) -> list[str]:
    """The expected stdout for `rows` (date, region, product, units, price) and `features`."""
    figures, best = _figures(rows, features)
    lines = []
    for (key, value), top in zip(figures.items(), best, strict=True):
        line = f"{key},{int(value)}" if "units" in features else f"{key},{float(value):.2f}"
        lines.append(line + f",{top}" * ("t3" in features))
    if "t1" in features:
        skipped = sum(not (r[3].isdigit() and r[4].replace(".", "", 1).isdigit()) for r in rows)
        lines.append(f"skipped,{skipped}")
    return lines


def _ties(rows: list[list[str]], features: set[str]) -> bool:
    """True when two groups have equal figures for a measure computed in floats."""
    for measure in ("revenue", "largest", "average"):
        values = list(_figures(rows, (features - set(MEASURES)) | {measure})[0].values())
        if len(set(values)) < len(values):
            return True
    return False


def _rows(rng: random.Random, level: int, keys: list[str], group: str) -> list[list[str]]:
    n = (15, 40, 70, 100)[level]
    rows = []
    for i in range(n):
        key = keys[i] if i < len(keys) else rng.choice(keys)
        if level >= 2 and rng.random() < 0.4:
            key = rng.choice((key.upper(), f" {key}", key.capitalize() + " "))
        other = rng.choice(_PRODUCTS if group == "region" else _REGIONS)
        units, price = str(rng.randint(1, 20)), f"{rng.randint(50, 2500) / 100:.2f}"
        if level >= 1 and (i == n // 2 or rng.random() < 0.08):
            units, price = rng.choice(((units, "n/a"), ("", price), ("three", price)))
        date = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        region, product = (key, other) if group == "region" else (other, key)
        rows.append([date, region, product, units, price])
    if level >= 3:  # a tie for the top product (region) of the first group
        for other in rng.sample(_PRODUCTS if group == "region" else _REGIONS, 2):
            region, product = (keys[0], other) if group == "region" else (other, keys[0])
            rows.append(["2024-06-01", region, product, "500", "1.00"])
    rng.shuffle(rows)
    return rows


_TASKS = {
    "revenue": "Total the revenue of each {group}. The revenue of a row is units * price.",
    "units": "Total the units sold of each {group} (the sum of the units column).",
    "largest": "Find the largest single order of each {group}: the highest units * price "
    "of any one of its rows.",
    "average": "Compute the average order value of each {group}: the sum of units * price "
    "over its rows divided by its number of rows.",
}


def _texts(tags: set[str]) -> tuple[str, str, list[str]]:
    """The task, output and rule texts of the drawn variant."""
    group = "region" if "region" in tags else "product"
    other = "product" if group == "region" else "region"
    key = "north" if group == "region" else "widget"
    up = group.upper()
    measure = next(m for m in MEASURES if m in tags)
    value = (
        f"a whole number (like `{key},42`)"
        if measure == "units"
        else f"with 2 decimals (like `{key},1234.50`)"
    )
    order = (
        f"largest VALUE first; equal values by {group} name"
        if "desc" in tags
        else f"sorted by {group} name (alphabetically)"
    )
    output = f"print one line per {group} as `{up},VALUE`, VALUE {value}, {order}."
    shown = key.capitalize()
    rules = [
        "Some rows are broken: units or price is empty or not a number (like `n/a`). Skip "
        "those rows, and after the other lines print one more line `skipped,N` with the "
        "number of skipped rows.",
        f"{group.capitalize()} names are messy: ignore surrounding spaces and letter case "
        f"(` {shown}`, `{key.upper()}` and `{key}` are one {group}), and print them in "
        "lowercase.",
        f"Add a third column, the {group}'s best-selling {other} by total units: "
        f"`{up},VALUE,{other.upper()}`. If several tie on units, take the alphabetically "
        "first.",
    ]
    return _TASKS[measure].format(group=group), output, rules


class RegionSales(TemplateBase):
    """One figure per region or product; twists: bad rows, messy names, top-seller column."""

    name = "data_analysis.region_sales"
    cluster = "data_analysis"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.region_sales(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref, wrong = tags | twists(level), tags | near_miss(level)
        group = "region" if "region" in tags else "product"
        for _attempt in range(100):
            keys = rng.sample(_REGIONS if group == "region" else _PRODUCTS, 3 + level)
            rows = _rows(rng, level, keys, group)
            if not _ties(rows, ref) and separated(partial(_sales, rows), ref, wrong, AXES):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        text = "date,region,product,units,price\n" + "".join(",".join(r) + "\n" for r in rows)
        task, output, rules = _texts(tags)
        inputs = """
            `sales.csv` with the header `date,region,product,units,price` (units an integer,
            price a decimal number such as `4.25`).
        """
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"sales.csv": text}),
            validation_script=stdout_validator(_sales(rows, ref)),
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )
