"""Template `sql.customer_totals`: one figure per customer from their orders (GROUP BY, RANK).

Family (`AXES`): which figure (total spent, number of orders, largest order,
average order), the line order (by the figure, highest first, or by name) and
the output format (space-separated lines or a CSV table with a header): 16
tasks at every program tier. Twists on top: paid orders only, customers
without orders listed with 0, the rank within the city.
"""

from __future__ import annotations

import random
from collections import defaultdict
from functools import partial

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
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

METRICS = ("m_sum", "m_count", "m_max", "m_avg")
"""What to compute per customer: total amount, number of orders, largest order, average order."""

ORDERS = ("o_value", "o_name")
"""Line order: by the figure (highest first, ties by name), or by customer name."""

FORMATS = ("f_plain", "f_csv")
"""Output: space-separated lines, or a CSV table with a header line."""

AXES = (METRICS, ORDERS, FORMATS)
"""The axes of the program tiers' family (`_kit.variant`)."""

_COLUMN = {"m_sum": "total", "m_count": "orders", "m_max": "largest", "m_avg": "average"}
_MEANING = {
    "m_sum": "the sum of their orders' amount_cents",
    "m_count": "the number of their orders",
    "m_max": "the largest amount_cents among their orders",
    "m_avg": "the average amount_cents of their orders, rounded down to a whole cent",
}

_SHOP_SCHEMA = """
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL,
                         amount_cents INTEGER NOT NULL, status TEXT NOT NULL);
"""

_SHOP_SOLUTION = '''
    import sqlite3

    con = sqlite3.connect("shop.db")
    totals = """
        SELECT c.name, c.city,
               COALESCE(SUM(o.amount_cents), 0) AS value  #+m_sum
               COUNT(o.id) AS value  #+m_count
               COALESCE(MAX(o.amount_cents), 0) AS value  #+m_max
               COALESCE(SUM(o.amount_cents) / COUNT(o.id), 0) AS value  #+m_avg
        FROM customers c
        JOIN orders o ON o.customer_id = c.id  #-t2
        LEFT JOIN orders o ON o.customer_id = c.id AND o.status = 'paid'  #+t2
        WHERE o.status = 'paid'  #=t1&!t2
        GROUP BY c.id
    """
    order = "value DESC, name"  #=o_value&!bug
    order = "value, name"  #=o_value&bug
    order = "name"  #=o_name&!bug
    order = "name DESC"  #=o_name&bug
    query = f"SELECT name, value FROM ({totals}) ORDER BY {order}"  #-t3|t3bug
    query = f"""  #+t3|t3bug
        SELECT name, city, value,  #+t3|t3bug
               RANK() OVER (PARTITION BY city ORDER BY value DESC) AS place  #+t3
               ROW_NUMBER() OVER (PARTITION BY city ORDER BY value DESC) AS place  #+t3bug
        FROM ({totals})  #+t3|t3bug
        ORDER BY {order}  #+t3|t3bug
    """  #+t3|t3bug
    print("<HEADER>")  #+f_csv
    for row in con.execute(query):
        print(*row)  #+f_plain
        print(*row, sep=",")  #+f_csv
'''

_CITIES = ("Oslo", "Lima", "Kyoto", "Perth", "Quito")


def _figure(amounts: list[int], features: set[str]) -> int:
    if not amounts:
        return 0
    if "m_count" in features:
        return len(amounts)
    if "m_max" in features:
        return max(amounts)
    if "m_avg" in features:
        return sum(amounts) // len(amounts)
    return sum(amounts)


def _columns(features: set[str]) -> list[str]:
    metric = next(_COLUMN[m] for m in METRICS if m in features)
    return ["name", "city", metric, "rank"] if features & {"t3", "t3bug"} else ["name", metric]


def _shop(
    customers: list[tuple[int, str, str]],
    orders: list[tuple[int, int, int, str]],
    features: set[str],
) -> list[str]:
    amounts: dict[int, list[int]] = defaultdict(list)
    if "t2" in features:
        amounts = {cid: [] for cid, _, _ in customers}
    for _oid, cid, amount, status in orders:
        if "t1" in features and status != "paid":
            continue
        amounts.setdefault(cid, []).append(amount)
    info = {cid: (name, city) for cid, name, city in customers}
    values = {cid: _figure(a, features) for cid, a in amounts.items()}
    if "o_name" in features:
        ranked = sorted(values, key=lambda c: info[c][0], reverse="bug" in features)
    else:
        sign = 1 if "bug" in features else -1
        ranked = sorted(values, key=lambda c: (sign * values[c], info[c][0]))
    rows: list[list[object]] = []
    seen: dict[str, int] = defaultdict(int)
    for cid in ranked:
        name, city = info[cid]
        value = values[cid]
        if "t3" in features:
            place = 1 + sum(1 for c, v in values.items() if info[c][1] == city and v > value)
            rows.append([name, city, value, place])
        elif "t3bug" in features:
            seen[city] += 1
            rows.append([name, city, value, seen[city]])
        else:
            rows.append([name, value])
    return table(_columns(features), rows, "f_csv" in features)


def _data(
    rng: random.Random, level: int
) -> tuple[list[tuple[int, str, str]], list[tuple[int, int, int, str]]]:
    n_customers, n_orders = (5, 8, 10, 14)[level], (12, 24, 32, 44)[level]
    names = rng.sample(FIRST_NAMES, n_customers)
    ids = rng.sample(range(1, 100), n_customers)
    customers = [(i, n, rng.choice(_CITIES[:3])) for i, n in zip(ids, names, strict=True)]
    buyers = ids[:-1] if level >= 2 else ids  # the last customer never orders
    orders = []
    for k in range(n_orders):
        paid = level == 0 or rng.random() < 0.7
        status = "paid" if paid else rng.choice(("refunded", "pending"))
        orders.append((k + 1, rng.choice(buyers), rng.randint(5, 400) * 25, status))
    if level >= 2:  # a customer whose only order was refunded
        orders = [o for o in orders if o[1] != buyers[-1]]
        orders.append((n_orders + 1, buyers[-1], 999, "refunded"))
    if level >= 3:  # two customers of one city with the same figure, whichever it is
        a = customers[0]
        b = next((c for c in customers[1:-2] if c[2] == a[2]), None)
        if b is not None:
            orders = [o for o in orders if o[1] not in (a[0], b[0])]
            orders += [(n_orders + 2, a[0], 5000, "paid"), (n_orders + 3, b[0], 5000, "paid")]
    return customers, orders


class CustomerTotals(TemplateBase):
    """One figure per customer (family: `AXES`); twists: paid only, zero rows, rank in city."""

    name = "sql.customer_totals"
    cluster = "sql"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.customer_totals(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref = tags | twists(level)
        wrong = tags | ({"t1", "t2", "t3bug"} if level == 3 else near_miss(level))
        for _attempt in range(200):
            customers, orders = _data(rng, level)
            emulate = partial(_shop, customers, orders)
            if rejects(emulate, ref, wrong) and separated(
                emulate, tags, AXES, twists(level), same_lines
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level} for {tags}")
        metric = next(m for m in METRICS if m in tags)
        column = _COLUMN[metric].upper()
        csv = "f_csv" in tags
        order = (
            f"highest {column} first, equal values ordered by name"
            if "o_value" in tags
            else "ordered by name (alphabetically)"
        )
        task = f"Report, for each customer, {_MEANING[metric]}. {HOW}"
        inputs = """
            the SQLite database `shop.db` with tables `customers(id, name, city)` and
            `orders(id, customer_id, amount_cents, status)`; amounts are whole cents.
        """
        output = (
            f"print {describe_rows(['name', _COLUMN[metric]], csv)}: one line per customer that "
            f"has orders, where {column} is {_MEANING[metric]}; lines {order}."
        )
        rules = [
            "Only orders with status `paid` count (`refunded` and `pending` do not); customers "
            "with no paid orders are left out.",
            f"List every customer, also those without paid orders ({column} 0).",
            f"Print {describe_rows(_columns({metric, 't3'}), csv)} instead, where RANK is "
            f"the customer's place within their city by {column}, highest first: 1 for the top; "
            "equal values share a rank and the next rank is skipped (like SQL `RANK()`). Keep "
            "the same line order.",
        ]
        source = _SHOP_SOLUTION.replace("<HEADER>", ",".join(_columns(ref)))
        return sql_parts(
            prompt(task, inputs, output, rules, level),
            ("shop.db", _SHOP_SCHEMA, {"customers": customers, "orders": orders}),
            _shop(customers, orders, ref),
            source,
            ref,
            wrong,
        )
