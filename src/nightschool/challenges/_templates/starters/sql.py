"""Starter tier of cluster `sql`: one query behind a function that gets an open connection.

The setup builds the database file; the validator's prelude opens it read-only
as `con` before each call, so one case cannot change the data of the next.
"""

from __future__ import annotations

import random
import textwrap
from collections import defaultdict
from functools import partial

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    WORDS,
    Case,
    Expr,
    Parts,
    RenderError,
    call,
    differs,
    function_parts,
    sqlite_setup,
    variant,
)
from nightschool.challenges._templates.sql_common import separated

CON = Expr("con")
_STATUSES = ("paid", "paid", "pending", "refunded")


def _prelude(db: str) -> str:
    return f'import sqlite3\ncon = sqlite3.connect("file:{db}?mode=ro", uri=True)\n'


def _schema_rule(db: str, schema: str) -> str:
    tables = textwrap.dedent(schema).strip()
    return f"`con` is connected to `{db}`:\n```sql\n{tables}\n```"


# --------------------------------------------------------------------------- customer_totals

SHOP_AXES = (("m_sum", "m_count", "m_max", "m_avg"), ("k_name", "k_city"), ("s_all", "s_paid"))
"""Starter family of `sql.customer_totals`: the figure, whose orders (a customer's or a
city's), and which orders count (every status, or `paid` only): 16 tasks."""

_SHOP_SCHEMA = """
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER,
                         amount_cents INTEGER, status TEXT);
"""

_SHOP_SOURCE = '''
    def FUNC(con, ARG):
        row = con.execute(
            """
            SELECT COALESCE(SUM(o.amount_cents), 0)  #=m_sum&!bug
            SELECT SUM(o.amount_cents)  #=m_sum&bug
            SELECT COUNT(o.id)  #=m_count&!bug
            SELECT COUNT(*)  #=m_count&bug
            SELECT COALESCE(MAX(o.amount_cents), 0)  #=m_max&!bug
            SELECT MAX(o.amount_cents)  #=m_max&bug
            SELECT COALESCE(SUM(o.amount_cents) / COUNT(o.id), 0)  #=m_avg&!bug
            SELECT SUM(o.amount_cents) / COUNT(o.id)  #=m_avg&bug
            FROM customers c LEFT JOIN orders o ON o.customer_id = c.id
                AND o.status = 'paid'  #+s_paid
            WHERE c.name = ?  #+k_name
            WHERE c.city = ?  #+k_city
            """,
            (ARG,),
        ).fetchone()
        return row[0]
'''

_SHOP_FUNCS = {
    "m_sum": ("total", "the total amount_cents of the orders of"),
    "m_count": ("order_count", "the number of orders of"),
    "m_max": ("largest_order", "the largest amount_cents among the orders of"),
    "m_avg": ("average_order", "the average amount_cents (rounded down) of the orders of"),
}
_SHOP_CITIES = ("Oslo", "Lima", "Kyoto", "Perth", "Quito", "Cairo", "Dakar")


def _shop_func(tags: set[str]) -> str:
    metric = next(m for m in SHOP_AXES[0] if m in tags)
    return ("customer_" if "k_name" in tags else "city_") + _SHOP_FUNCS[metric][0]


def _shop_values(
    customers: list[tuple[int, str, str]],
    orders: list[tuple[int, int, int, str]],
    keys: list[str],
    tags: set[str],
) -> tuple[str, list[int | None]]:
    field = 1 if "k_name" in tags else 2
    out: list[int | None] = []
    for key in keys:
        ids = {c[0] for c in customers if c[field] == key}
        amounts = [o[2] for o in orders if o[1] in ids and ("s_all" in tags or o[3] == "paid")]
        if not amounts:
            rows = sum(1 for c in customers if c[field] == key)
            out.append(
                rows if "m_count" in tags and "bug" in tags else (None if "bug" in tags else 0)
            )
        elif "m_count" in tags:
            out.append(len(amounts))
        elif "m_max" in tags:
            out.append(max(amounts))
        elif "m_avg" in tags:
            out.append(sum(amounts) // len(amounts))
        else:
            out.append(sum(amounts))
    return _shop_func(tags), out


def customer_totals(rng: random.Random) -> Parts:
    """Starter of `sql.customer_totals`: one figure of a customer's or a city's orders."""
    tags = variant(rng, *SHOP_AXES)
    func = _shop_func(tags)
    for _attempt in range(200):
        names = rng.sample(FIRST_NAMES, 9)  # 7: no orders, 8: unknown
        cities = rng.sample(_SHOP_CITIES, 6)  # 4: no orders, 5: unknown
        ids = rng.sample(range(1, 100), 8)
        customers = [(ids[k], names[k], cities[k % 4]) for k in range(7)]
        customers.append((ids[7], names[7], cities[4]))
        orders = [
            (k + 1, rng.choice(ids[:7]), rng.randint(5, 400) * 25, rng.choice(_STATUSES))
            for k in range(16)
        ]
        if "k_name" in tags:
            keys = [names[0], names[7], names[8], names[2], names[3], names[4], names[1]]
        else:
            keys = [cities[0], cities[4], cities[5], cities[2], cities[3], cities[1]]
        emulate = partial(_shop_values, customers, orders, keys[:-1])  # the hidden cases
        if (
            _shop_values(customers, orders, keys[-1:], tags)[1][0]  # the example is not 0
            and differs(partial(emulate, tags), partial(emulate, tags | {"bug"}))
            and separated(emulate, tags, SHOP_AXES)
        ):
            break
    else:
        raise RenderError(f"sql.customer_totals: no separating data for the starter {tags}")
    values = _shop_values(customers, orders, keys, tags)[1]
    cases = [Case(call(func, CON, key), value) for key, value in zip(keys, values, strict=True)]
    metric = next(m for m in SHOP_AXES[0] if m in tags)
    arg = "name" if "k_name" in tags else "city"
    whose = "the customer called name" if arg == "name" else "the customers in city"
    counted = "(every status counts)" if "s_all" in tags else "(only status 'paid' counts)"
    return function_parts(
        func=func,
        signature=f"import sqlite3\n\n\ndef {func}(con: sqlite3.Connection, {arg}: str) -> int:",
        spec=f"""
            Return {_SHOP_FUNCS[metric][1]} {whose}
            {counted}; 0 when there are none.
        """,
        examples=cases[-1:],
        cases=cases[:-1],
        source=_SHOP_SOURCE.replace("FUNC", func).replace("ARG", arg),
        prelude=_prelude("shop.db"),
        setup=sqlite_setup("shop.db", _SHOP_SCHEMA, {"customers": customers, "orders": orders}),
        rules=[_schema_rule("shop.db", _SHOP_SCHEMA)],
        features=tags,
    )


# --------------------------------------------------------------------------- top_product

STORE_AXES = (("w_units", "w_sales", "w_revenue"), ("d_top", "d_bottom"), ("z_skip", "z_zero"))
"""Starter family of `sql.top_product`: the measure, the best or the worst seller, and whether
products without sales are left out or count with 0: 12 tasks."""

_STORE_SCHEMA = """
    CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, category TEXT, price_cents INTEGER);
    CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER, qty INTEGER);
"""

_STORE_SOURCE = '''
    def FUNC(con, category):
        return con.execute(
            """
            SELECT p.name,
                   COALESCE(SUM(s.qty), 0) AS value  #=w_units&!bug
                   COALESCE(MAX(s.qty), 0) AS value  #=w_units&bug
                   COUNT(s.id) AS value  #=w_sales&!bug
                   COALESCE(SUM(s.qty), 0) AS value  #=w_sales&bug
                   COALESCE(SUM(s.qty * p.price_cents), 0) AS value  #=w_revenue&!bug
                   COALESCE(SUM(p.price_cents), 0) AS value  #=w_revenue&bug
            FROM products p JOIN sales s ON s.product_id = p.id  #+z_skip
            FROM products p LEFT JOIN sales s ON s.product_id = p.id  #+z_zero
            WHERE p.category = ?
            GROUP BY p.id
            ORDER BY value DESC, p.id  #+d_top
            ORDER BY value, p.id  #+d_bottom
            LIMIT 1
            """,
            (category,),
        ).fetchone()
'''

_STORE_MEASURES = {
    "w_units": ("units", "units sold (sum of qty)"),
    "w_sales": ("sales", "sales (count of its rows in sales)"),
    "w_revenue": ("revenue", "revenue (sum of qty * price_cents)"),
}
_CATEGORIES = ("garden", "kitchen", "toys", "books", "sports", "music", "tools")

Product = tuple[int, str, str, int]
Sale = tuple[int, int, int]


def _store_func(tags: set[str]) -> str:
    measure = next(m for m in STORE_AXES[0] if m in tags)
    end = "best" if "d_top" in tags else "worst"
    return f"{end}_seller_by_{_STORE_MEASURES[measure][0]}"


def _store_value(qtys: list[int], price: int, tags: set[str]) -> int:
    bug = "bug" in tags
    if "w_sales" in tags:
        return sum(qtys) if bug else len(qtys)
    if "w_revenue" in tags:
        return price * max(len(qtys), 1) if bug else price * sum(qtys)
    return max(qtys, default=0) if bug else sum(qtys)


def _store_items(
    products: list[Product], sales: list[Sale], category: str, tags: set[str]
) -> list[tuple[int, int, str]]:
    qtys: dict[int, list[int]] = defaultdict(list)
    for _sid, pid, qty in sales:
        qtys[pid].append(qty)
    sign = -1 if "d_top" in tags else 1
    return sorted(
        (sign * _store_value(qtys[pid], price, tags), pid, name)
        for pid, name, cat, price in products
        if cat == category and ("z_zero" in tags or pid in qtys)
    )


def _store_values(
    products: list[Product], sales: list[Sale], asked: list[str], tags: set[str]
) -> tuple[str, list[tuple[str, int] | None]]:
    out: list[tuple[str, int] | None] = []
    for category in asked:
        items = _store_items(products, sales, category, tags)
        out.append((items[0][2], abs(items[0][0])) if items else None)
    return _store_func(tags), out


def top_product(rng: random.Random) -> Parts:
    """Starter of `sql.top_product`: the best or worst seller of a category by some measure."""
    tags = variant(rng, *STORE_AXES)
    func = _store_func(tags)
    categories = rng.sample(_CATEGORIES, 6)
    sold, unsold, absent = categories[:4], categories[4], categories[5]
    asked = [*sold[1:], unsold, absent, sold[0]]  # the last one is the example
    for _attempt in range(300):
        names = rng.sample(WORDS, 10)
        products = [(i + 1, names[i], sold[i % 4], rng.randint(4, 40) * 25) for i in range(9)]
        products.append((10, names[9], unsold, rng.randint(4, 40) * 25))
        sales = [(k + 1, rng.randint(1, 8), rng.randint(1, 9)) for k in range(24)]  # 9: none
        ends = [_store_items(products, sales, c, tags)[:2] for c in sold]
        emulate = partial(_store_values, products, sales, asked[:-1])  # the hidden cases
        if (
            all(len(e) == 2 and e[0][0] != e[1][0] for e in ends)  # no ties
            and differs(partial(emulate, tags), partial(emulate, tags | {"bug"}))
            and separated(emulate, tags, STORE_AXES)
        ):
            break
    else:
        raise RenderError(f"sql.top_product: no separating data for the starter {tags}")
    values = _store_values(products, sales, asked, tags)[1]
    cases = [Case(call(func, CON, c), v) for c, v in zip(asked, values, strict=True)]
    measure = next(m for m in STORE_AXES[0] if m in tags)
    most = "most" if "d_top" in tags else "fewest" if measure != "w_revenue" else "least"
    zero = "are left out" if "z_skip" in tags else "count with 0"
    return function_parts(
        func=func,
        signature=f"import sqlite3\n\n\ndef {func}(con: sqlite3.Connection, category: str) -> tuple[str, int] | None:",
        spec=f"""
            Return (name, value) for the product of category with the {most}
            {_STORE_MEASURES[measure][1]}; products without sales {zero}.
            No ties; None if no product qualifies.
        """,
        examples=cases[-1:],
        cases=cases[:-1],
        source=_STORE_SOURCE.replace("FUNC", func),
        prelude=_prelude("store.db"),
        setup=sqlite_setup("store.db", _STORE_SCHEMA, {"products": products, "sales": sales}),
        rules=[_schema_rule("store.db", _STORE_SCHEMA)],
        features=tags,
    )


# --------------------------------------------------------------------------- running_balance

BANK_AXES = (("g_txn", "g_day", "g_month"), ("b_zero", "b_opening"), ("o_old", "o_new"))
"""Starter family of `sql.running_balance`: a balance per transaction, per day or per month,
starting from zero or from the opening balance, listed oldest or newest first: 12 tasks."""

_BANK_SCHEMA = """
    CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT, opening_cents INTEGER);
    CREATE TABLE txns (id INTEGER PRIMARY KEY, account_id INTEGER, day TEXT, amount_cents INTEGER);
"""

_BALANCE_SOURCE = '''
    def FUNC(con, owner):
        rows = con.execute(
            """
            SELECT a.opening_cents, t.day, t.amount_cents  #+g_txn
            SELECT a.opening_cents, t.day, SUM(t.amount_cents)  #+g_day
            SELECT a.opening_cents, substr(t.day, 1, 7), SUM(t.amount_cents)  #+g_month
            FROM txns t JOIN accounts a ON a.id = t.account_id
            WHERE a.owner = ?
            GROUP BY t.day  #+g_day
            GROUP BY substr(t.day, 1, 7)  #+g_month
            ORDER BY t.day, t.id  #=g_txn&!bug
            ORDER BY 2  #=!g_txn&!bug
            ORDER BY MIN(t.id)  #=!g_txn&bug
            ORDER BY t.id  #=g_txn&bug
            """,
            (owner,),
        ).fetchall()
        result, balance = [], 0  #+b_zero
        result, balance = [], rows[0][0] if rows else 0  #+b_opening
        for _opening, period, amount in rows:
            balance += amount
            result.append((period, amount, balance))
        result.reverse()  #+o_new
        return result
'''

_BANK_FUNCS = {
    "g_txn": ("running_balances", "(day, amount_cents, balance) per transaction"),
    "g_day": ("daily_balances", "(day, net, balance) per day with transactions"),
    "g_month": (
        "monthly_balances",
        "(month, net, balance) per month ('2024-03') with transactions",
    ),
}
_BANK_NET = {
    "g_txn": "",
    "g_day": "net = the day's total; ",
    "g_month": "net = the month's total; ",
}

Account = tuple[int, str, int]
Txn = tuple[int, int, str, int]


def _running(
    accounts: list[Account], txns: list[Txn], owner: str, tags: set[str]
) -> list[tuple[str, int, int]]:
    ids = {aid: opening for aid, name, opening in accounts if name == owner}
    periods: dict[str, list[Txn]] = {}
    for txn in sorted(t for t in txns if t[1] in ids):
        key = txn[2][:7] if "g_month" in tags else txn[2]
        periods.setdefault(f"{key}#{txn[0]}" if "g_txn" in tags else key, []).append(txn)
    rows = [
        (group[0][2][:7] if "g_month" in tags else group[0][2], group) for group in periods.values()
    ]
    rows.sort(key=(lambda r: r[1][0][0]) if "bug" in tags else (lambda r: (r[0], r[1][0][0])))
    balance = next(iter(ids.values()), 0) if "b_opening" in tags else 0
    out = []
    for period, group in rows:
        net = sum(t[3] for t in group)
        balance += net
        out.append((period, net, balance))
    return out[::-1] if "o_new" in tags else out


def _running_all(
    accounts: list[Account], txns: list[Txn], asked: list[str], tags: set[str]
) -> tuple[str, list[list[tuple[str, int, int]]]]:
    grain = next(g for g in BANK_AXES[0] if g in tags)
    return _BANK_FUNCS[grain][0], [_running(accounts, txns, o, tags) for o in asked]


def running_balance(rng: random.Random) -> Parts:
    """Starter of `sql.running_balance`: an account's balances per transaction, day or month."""
    tags = variant(rng, *BANK_AXES)
    grain = next(g for g in BANK_AXES[0] if g in tags)
    func = _BANK_FUNCS[grain][0]
    for _attempt in range(300):
        owners = rng.sample(FIRST_NAMES, 7)
        accounts = [(i + 1, owner, rng.randint(1, 40) * 100) for i, owner in enumerate(owners[:6])]
        txns = []
        for k in range(16):
            day = f"2024-0{rng.randint(1, 3)}-{rng.randint(10, 28)}"
            amount = rng.randint(-60, 40) * 100 - rng.randint(0, 99)
            txns.append((k + 1, rng.randint(1, 5), day, amount))  # owners[5] has none
        for aid in (2, 3):  # a second transaction on a day the account has one
            days = [t[2] for t in txns if t[1] == aid]
            if days:
                txns.append((len(txns) + 1, aid, rng.choice(days), rng.randint(-40, 40) * 100 + 7))
        asked = [owners[5], owners[6], owners[1], owners[2], owners[3], owners[4]]  # 6: unknown
        emulate = partial(_running_all, accounts, txns, asked)
        if (
            all(_running(accounts, txns, o, tags) for o in owners[:5])
            and len(_running(accounts, txns, owners[0], tags)) >= 2  # the example has more
            and differs(partial(emulate, tags), partial(emulate, tags | {"bug"}))
            and separated(emulate, tags, BANK_AXES)
        ):
            break
    else:
        raise RenderError(f"sql.running_balance: no separating data for the starter {tags}")
    start = "0" if "b_zero" in tags else "opening_cents"
    order = "oldest first" if "o_old" in tags else "newest first"
    tie = " (same day: lower id first)" if grain == "g_txn" else ""
    example = _running(accounts, txns, owners[0], tags)[:1]
    return function_parts(
        func=func,
        signature=f"import sqlite3\n\n\ndef {func}(con: sqlite3.Connection, owner: str) -> list[tuple[str, int, int]]:",
        spec=f"""
            Return owner's {_BANK_FUNCS[grain][1]},
            {order}; {_BANK_NET[grain]}balance = running total from {start}
            in date order{tie}. No transactions: [].
        """,
        examples=[Case(call(func, CON, owners[0]), [*example, Expr("...")])],
        cases=[Case(call(func, CON, o), _running(accounts, txns, o, tags)) for o in asked],
        source=_BALANCE_SOURCE.replace("FUNC", func),
        prelude=_prelude("bank.db"),
        setup=sqlite_setup("bank.db", _BANK_SCHEMA, {"accounts": accounts, "txns": txns}),
        rules=[_schema_rule("bank.db", _BANK_SCHEMA)],
        features=tags,
    )
