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
)

CON = Expr("con")


def _prelude(db: str) -> str:
    return f'import sqlite3\ncon = sqlite3.connect("file:{db}?mode=ro", uri=True)\n'


def _schema_rule(db: str, schema: str) -> str:
    tables = textwrap.dedent(schema).strip()
    return f"`con` is connected to `{db}`:\n```sql\n{tables}\n```"


# --------------------------------------------------------------------------- customer_totals

_SHOP_SCHEMA = """
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER,
                         amount_cents INTEGER, status TEXT);
"""

_SHOP_SOURCE = '''
    def customer_total(con, name):
        row = con.execute(
            """
            SELECT COALESCE(SUM(o.amount_cents), 0)  #-bug
            SELECT SUM(o.amount_cents)  #+bug
            FROM customers c JOIN orders o ON o.customer_id = c.id
            WHERE c.name = ?
            """,
            (name,),
        ).fetchone()
        return row[0]
'''


def customer_totals(rng: random.Random) -> Parts:
    """Starter of `sql.customer_totals`."""
    func = "customer_total"
    names = rng.sample(FIRST_NAMES, 6)
    ids = rng.sample(range(1, 100), 5)
    customers = [
        (i, n, rng.choice(("Oslo", "Lima", "Kyoto"))) for i, n in zip(ids, names[:5], strict=True)
    ]
    orders = [
        (k + 1, rng.choice(ids[:-1]), rng.randint(5, 400) * 25, rng.choice(("paid", "pending")))
        for k in range(12)
    ]
    orders.append((13, ids[0], rng.randint(5, 400) * 25, "paid"))
    totals: dict[int, int] = defaultdict(int)
    for _oid, cid, amount, _status in orders:
        totals[cid] += amount
    by_name = {name: totals.get(cid, 0) for cid, name, _city in customers}
    asked = [names[0], names[4], names[5], names[2], names[3]]  # 4: no orders, 5: unknown
    cases = [Case(call(func, CON, name), by_name.get(name, 0)) for name in asked]
    return function_parts(
        func=func,
        signature="import sqlite3\n\n\ndef customer_total(con: sqlite3.Connection, name: str) -> int:",
        spec="""
            Return the total amount_cents of all orders of the customer called name
            (every status counts); 0 when they have no orders or do not exist.
        """,
        examples=[Case(call(func, CON, names[1]), by_name[names[1]])],
        cases=cases,
        source=_SHOP_SOURCE,
        prelude=_prelude("shop.db"),
        setup=sqlite_setup("shop.db", _SHOP_SCHEMA, {"customers": customers, "orders": orders}),
        rules=[_schema_rule("shop.db", _SHOP_SCHEMA)],
    )


# --------------------------------------------------------------------------- top_product

_STORE_SCHEMA = """
    CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, category TEXT);
    CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER, qty INTEGER,
                        day TEXT);
"""

_STORE_SOURCE = '''
    def best_seller(con, category):
        return con.execute(
            """
            SELECT p.name, SUM(s.qty) AS units  #-bug
            SELECT p.name, MAX(s.qty) AS units  #+bug
            FROM products p JOIN sales s ON s.product_id = p.id
            WHERE p.category = ?
            GROUP BY p.id
            ORDER BY units DESC
            LIMIT 1
            """,
            (category,),
        ).fetchone()
'''

_CATEGORIES = ("garden", "kitchen", "toys", "books", "sports", "music", "tools")


def _best(
    products: list[tuple[int, str, str]],
    sales: list[tuple[int, int, int, str]],
    category: str,
    bug: bool = False,
) -> tuple[str, int] | None:
    units: dict[int, int] = defaultdict(int)
    for _sid, pid, qty, _day in sales:
        units[pid] = max(units[pid], qty) if bug else units[pid] + qty
    items = [(units[pid], name) for pid, name, cat in products if cat == category and pid in units]
    if not items:
        return None
    best, name = max(items)
    return (name, best)


def _best_all(
    products: list[tuple[int, str, str]],
    sales: list[tuple[int, int, int, str]],
    asked: list[str],
    bug: bool,
) -> list[tuple[str, int] | None]:
    return [_best(products, sales, c, bug) for c in asked]


def top_product(rng: random.Random) -> Parts:
    """Starter of `sql.top_product`."""
    func = "best_seller"
    categories = rng.sample(_CATEGORIES, 6)
    sold, unsold, absent = categories[:4], categories[4], categories[5]
    for _attempt in range(200):
        names = rng.sample(WORDS, 10)
        products = [(i + 1, names[i], sold[i % 4]) for i in range(9)] + [(10, names[9], unsold)]
        sales = [
            (k + 1, rng.randint(1, 9), rng.randint(1, 9), f"2024-03-{rng.randint(1, 28):02d}")
            for k in range(24)
        ]
        unique = True
        for category in sold:
            totals: dict[int, int] = defaultdict(int)
            for _sid, pid, qty, _day in sales:
                if products[pid - 1][2] == category:
                    totals[pid] += qty
            ranked = sorted(totals.values(), reverse=True)
            unique = unique and len(ranked) >= 2 and ranked[0] != ranked[1]
        asked = [*sold[1:], unsold, absent, sold[0]]  # the last one is the example
        if unique and differs(
            partial(_best_all, products, sales, asked, False),
            partial(_best_all, products, sales, asked, True),
        ):
            break
    else:
        raise RenderError("sql.top_product: no separating data for the starter")
    cases = [Case(call(func, CON, c), _best(products, sales, c)) for c in asked[:-1]]
    return function_parts(
        func=func,
        signature="import sqlite3\n\n\ndef best_seller(con: sqlite3.Connection, category: str) -> tuple[str, int] | None:",
        spec="""
            Return (name, units) for the product of category with the most units sold,
            where units is the sum of qty over the product's sales (no two products tie).
            Return None when no product of category has sales.
        """,
        examples=[Case(call(func, CON, sold[0]), _best(products, sales, sold[0]))],
        cases=cases,
        source=_STORE_SOURCE,
        prelude=_prelude("store.db"),
        setup=sqlite_setup("store.db", _STORE_SCHEMA, {"products": products, "sales": sales}),
        rules=[_schema_rule("store.db", _STORE_SCHEMA)],
    )


# --------------------------------------------------------------------------- running_balance

_BANK_SCHEMA = """
    CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT);
    CREATE TABLE txns (id INTEGER PRIMARY KEY, account_id INTEGER, day TEXT,
                       amount_cents INTEGER);
"""

_BALANCE_SOURCE = '''
    def running_balances(con, owner):
        rows = con.execute(
            """
            SELECT t.day, t.amount_cents FROM txns t JOIN accounts a ON a.id = t.account_id
            WHERE a.owner = ?
            ORDER BY t.day, t.id  #-bug
            ORDER BY t.id  #+bug
            """,
            (owner,),
        ).fetchall()
        result, balance = [], 0
        for day, amount in rows:
            balance += amount
            result.append((day, amount, balance))
        return result
'''


def _running(
    accounts: list[tuple[int, str]],
    txns: list[tuple[int, int, str, int]],
    owner: str,
    bug: bool = False,
) -> list[tuple[str, int, int]]:
    ids = {aid for aid, name in accounts if name == owner}
    rows = [t for t in txns if t[1] in ids]
    rows.sort(key=(lambda t: t[0]) if bug else (lambda t: (t[2], t[0])))
    out, balance = [], 0
    for _tid, _aid, day, amount in rows:
        balance += amount
        out.append((day, amount, balance))
    return out


def _running_all(
    accounts: list[tuple[int, str]],
    txns: list[tuple[int, int, str, int]],
    asked: list[str],
    bug: bool,
) -> list[list[tuple[str, int, int]]]:
    return [_running(accounts, txns, o, bug) for o in asked]


def running_balance(rng: random.Random) -> Parts:
    """Starter of `sql.running_balance`."""
    func = "running_balances"
    for _attempt in range(200):
        owners = rng.sample(FIRST_NAMES, 7)
        accounts = [(i + 1, owner) for i, owner in enumerate(owners[:6])]
        txns = []
        for k in range(16):
            day = f"2024-0{rng.randint(1, 3)}-{rng.randint(10, 28)}"
            amount = rng.randint(-60, 40) * 100 - rng.randint(0, 99)
            txns.append((k + 1, rng.randint(1, 5), day, amount))  # owners[5] has none
        asked = [owners[5], owners[6], owners[1], owners[2], owners[3], owners[4]]  # 6: unknown
        if all(_running(accounts, txns, o) for o in owners[:5]) and differs(
            partial(_running_all, accounts, txns, asked, False),
            partial(_running_all, accounts, txns, asked, True),
        ):
            break
    else:
        raise RenderError("sql.running_balance: no separating data for the starter")
    return function_parts(
        func=func,
        signature="import sqlite3\n\n\ndef running_balances(con: sqlite3.Connection, owner: str) -> list[tuple[str, int, int]]:",
        spec="""
            For owner's account, return (day, amount_cents, balance) per transaction,
            in date order (same day: lower id first); balance is the running total so
            far, this one included. No transactions: [].
        """,
        examples=[
            Case(
                call(func, CON, owners[0]), [*_running(accounts, txns, owners[0])[:1], Expr("...")]
            )
        ],
        cases=[Case(call(func, CON, o), _running(accounts, txns, o)) for o in asked],
        source=_BALANCE_SOURCE,
        prelude=_prelude("bank.db"),
        setup=sqlite_setup("bank.db", _BANK_SCHEMA, {"accounts": accounts, "txns": txns}),
        rules=[_schema_rule("bank.db", _BANK_SCHEMA)],
    )
