"""Cluster `sql`: sqlite3 queries (joins, GROUP BY, window functions) on a setup-built database."""

from __future__ import annotations

import random
from collections import defaultdict
from functools import partial

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    WORDS,
    Parts,
    RenderError,
    TemplateBase,
    differs,
    near_miss,
    prompt,
    select,
    sqlite_setup,
    stdout_validator,
    twists,
)
from nightschool.challenges._templates.starters import sql as starters

_HOW = (
    "Use Python's `sqlite3` module (SQL does most of the work; window functions such as "
    "`RANK() OVER (...)` are available)."
)

# --------------------------------------------------------------------------- customer_totals

_SHOP_SCHEMA = """
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL,
                         amount_cents INTEGER NOT NULL, status TEXT NOT NULL);
"""

_SHOP_SOLUTION = '''
    import sqlite3

    con = sqlite3.connect("shop.db")
    totals = """
        SELECT c.name, c.city, COALESCE(SUM(o.amount_cents), 0) AS total
        FROM customers c
        JOIN orders o ON o.customer_id = c.id  #-t2
        LEFT JOIN orders o ON o.customer_id = c.id AND o.status = 'paid'  #+t2
        WHERE o.status = 'paid'  #=t1&!t2
        GROUP BY c.id
    """
    query = f"SELECT name, total FROM ({totals}) ORDER BY total DESC, name"  #-t3|t3bug|bug
    query = f"SELECT name, total FROM ({totals}) ORDER BY total, name"  #+bug
    query = f"""  #+t3|t3bug
        SELECT name, city, total,  #+t3|t3bug
               RANK() OVER (PARTITION BY city ORDER BY total DESC) AS place  #+t3
               ROW_NUMBER() OVER (PARTITION BY city ORDER BY total DESC) AS place  #+t3bug
        FROM ({totals})  #+t3|t3bug
        ORDER BY total DESC, name  #+t3|t3bug
    """  #+t3|t3bug
    for row in con.execute(query):
        print(*row)
'''

_CITIES = ("Oslo", "Lima", "Kyoto", "Perth", "Quito")


def _shop(
    customers: list[tuple[int, str, str]],
    orders: list[tuple[int, int, int, str]],
    features: set[str],
) -> list[str]:
    totals: dict[int, int] = {}
    if "t2" in features:
        totals = {cid: 0 for cid, _, _ in customers}
    for _oid, cid, amount, status in orders:
        if "t1" in features and status != "paid":
            continue
        totals[cid] = totals.get(cid, 0) + amount
    info = {cid: (name, city) for cid, name, city in customers}
    ranked = sorted(totals.items(), key=lambda item: (-item[1], info[item[0]][0]))
    if "bug" in features:
        ranked = sorted(totals.items(), key=lambda item: (item[1], info[item[0]][0]))
    lines = []
    seen: dict[str, int] = defaultdict(int)
    for cid, total in ranked:
        name, city = info[cid]
        if "t3" in features:
            place = 1 + sum(1 for c, t in totals.items() if info[c][1] == city and t > total)
            lines.append(f"{name} {city} {total} {place}")
        elif "t3bug" in features:
            seen[city] += 1
            lines.append(f"{name} {city} {total} {seen[city]}")
        else:
            lines.append(f"{name} {total}")
    return lines


class CustomerTotals(TemplateBase):
    """Spend per customer; twists: paid only, customers without orders, rank within city."""

    name = "sql.customer_totals"
    cluster = "sql"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.customer_totals(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n_customers, n_orders = (5, 8, 10, 14)[level], (12, 24, 32, 44)[level]
        ref = twists(level)
        wrong = {"t1", "t2", "t3bug"} if level == 3 else near_miss(level)
        for _attempt in range(100):
            names = rng.sample(FIRST_NAMES, n_customers)
            ids = rng.sample(range(1, 100), n_customers)
            customers = [(i, n, rng.choice(_CITIES[:3])) for i, n in zip(ids, names, strict=True)]
            buyers = ids[:-1] if level >= 2 else ids  # the last customer never orders
            orders = []
            for k in range(n_orders):
                status = (
                    "paid"
                    if level == 0 or rng.random() < 0.7
                    else rng.choice(("refunded", "pending"))
                )
                orders.append((k + 1, rng.choice(buyers), rng.randint(5, 400) * 25, status))
            if level >= 2:  # a customer whose only order was refunded
                orders = [o for o in orders if o[1] != buyers[-1]]
                orders.append((n_orders + 1, buyers[-1], 999, "refunded"))
            if level >= 3:  # two customers of one city with the same total
                a = customers[0]
                b = next((c for c in customers[1:-2] if c[2] == a[2]), None)
                if b is None:
                    continue
                orders = [o for o in orders if o[1] not in (a[0], b[0])]
                orders += [(n_orders + 2, a[0], 5000, "paid"), (n_orders + 3, b[0], 5000, "paid")]
            if differs(
                partial(_shop, customers, orders, ref),
                partial(_shop, customers, orders, wrong),
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task = f"Report how much each customer spent. {_HOW}"
        inputs = """
            the SQLite database `shop.db` with tables `customers(id, name, city)` and
            `orders(id, customer_id, amount_cents, status)`; amounts are whole cents.
        """
        output = """
            print one line per customer that has orders, as `NAME TOTAL` where TOTAL is the sum
            of their orders' amount_cents (like `alice 12500`), highest total first; equal totals
            ordered by name.
        """
        rules = [
            "Only orders with status `paid` count (`refunded` and `pending` do not); customers "
            "with no paid orders are left out.",
            "List every customer, also those without paid orders (TOTAL 0).",
            "Print `NAME CITY TOTAL RANK`, where RANK is the customer's place within their city "
            "by total, highest first: 1 for the top; equal totals share a rank and the next "
            "rank is skipped (like SQL `RANK()`). Keep the same line order.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=sqlite_setup(
                "shop.db", _SHOP_SCHEMA, {"customers": customers, "orders": orders}
            ),
            validation_script=stdout_validator(_shop(customers, orders, ref)),
            reference_solution=select(_SHOP_SOLUTION, ref),
            wrong_solution=select(_SHOP_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- top_product

_STORE_SCHEMA = """
    CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL);
    CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL,
                        qty INTEGER NOT NULL, day TEXT NOT NULL);
"""

_STORE_SOLUTION = '''
    import sqlite3

    con = sqlite3.connect("store.db")
    query = """
        WITH units AS (
            SELECT p.id, p.name, p.category, SUM(s.qty) AS units  #-bug
            SELECT p.id, p.name, p.category, MAX(s.qty) AS units  #+bug
            FROM products p JOIN sales s ON s.product_id = p.id
            WHERE s.day BETWEEN '{first}' AND '{last}'  #+t2
            GROUP BY p.id
        ), ranked AS (
            SELECT *,
                   ROW_NUMBER() OVER (PARTITION BY category ORDER BY units DESC, id) AS pos,  #-t1
                   ROW_NUMBER() OVER (PARTITION BY category ORDER BY units DESC, name) AS pos,  #+t1
                   SUM(units) OVER (PARTITION BY category) AS category_units
            FROM units
        )
        SELECT category, name, units, category_units FROM ranked WHERE pos = 1 ORDER BY category
    """
    for category, name, units, category_units in con.execute(query):
        print(category, name, units)  #-t3|t3bug
        print(category, name, units, f"{{100 * units / category_units:.1f}}%")  #+t3
        print(category, name, units, f"{{100 * units // category_units:.1f}}%")  #+t3bug
'''

_CATEGORY_NAMES = ("garden", "kitchen", "toys", "books", "sports")


def _store(
    products: list[tuple[int, str, str]],
    sales: list[tuple[int, int, int, str]],
    window: tuple[str, str],
    features: set[str],
) -> list[str]:
    units: dict[int, int] = defaultdict(int)
    for _sid, pid, qty, day in sales:
        if "t2" in features and not window[0] <= day <= window[1]:
            continue
        units[pid] = max(units[pid], qty) if "bug" in features else units[pid] + qty
    by_category: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for pid, name, category in products:
        if pid in units:
            by_category[category].append((pid, name, units[pid]))
    lines = []
    for category in sorted(by_category):
        items = by_category[category]
        tie = (lambda p: (-p[2], p[1])) if "t1" in features else (lambda p: (-p[2], p[0]))
        pid, name, best = min(items, key=tie)
        total = sum(p[2] for p in items)
        if "t3" in features:
            lines.append(f"{category} {name} {best} {100 * best / total:.1f}%")
        elif "t3bug" in features:
            lines.append(f"{category} {name} {best} {100 * best // total:.1f}%")
        else:
            lines.append(f"{category} {name} {best}")
    return lines


class TopProduct(TemplateBase):
    """Best seller per category; twists: name tie-break, a date range, share of the category."""

    name = "sql.top_product"
    cluster = "sql"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.top_product(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n_products, n_sales = (6, 9, 12, 15)[level], (20, 40, 60, 80)[level]
        ref = twists(level)
        wrong = {"t1", "t2", "t3bug"} if level == 3 else near_miss(level)
        month = rng.randint(2, 11)
        window = (f"2024-{month:02d}-01", f"2024-{month:02d}-28")
        categories = rng.sample(_CATEGORY_NAMES, 3)
        for _attempt in range(200):
            names = rng.sample(WORDS, n_products)
            products = [(i + 1, names[i], categories[i % 3]) for i in range(n_products)]
            sales = []
            for k in range(n_sales):
                day_month = (
                    month if level < 2 or rng.random() < 0.6 else rng.choice((month - 1, month + 1))
                )
                day = f"2024-{day_month:02d}-{rng.randint(1, 28):02d}"
                sales.append((k + 1, rng.randint(1, n_products), rng.randint(1, 9), day))
            if level >= 1:  # a tie where the alphabetically first product has the larger id
                first, second = sorted(products[:n_products:3][:2], key=lambda p: p[1])
                if first[0] < second[0]:
                    first, second = second, first
                sales = [s for s in sales if s[1] not in (first[0], second[0])]
                for pid in (first[0], second[0]):
                    sales += [
                        (1000 + 10 * pid, pid, 60, window[0]),
                        (1001 + 10 * pid, pid, 40, window[1]),
                    ]
            if level >= 3:
                shares = [
                    float(line.split()[3][:-1]) for line in _store(products, sales, window, ref)
                ]
                if all(abs(s - round(s)) < 0.2 for s in shares):
                    continue
            if differs(
                partial(_store, products, sales, window, ref),
                partial(_store, products, sales, window, wrong),
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task = f"Find the best-selling product of each category. {_HOW}"
        inputs = """
            the SQLite database `store.db` with tables `products(id, name, category)` and
            `sales(id, product_id, qty, day)`; day is text like `2024-03-05`.
        """
        output = """
            for each category that has sales, print `CATEGORY PRODUCT UNITS`: the product with
            the most units sold (the sum of qty over its sales) and that sum. One line per
            category, sorted by category name.
        """
        rules = [
            "When products tie on units, pick the alphabetically first product name.",
            f"Only count sales from {window[0]} to {window[1]} (both days included).",
            "Add the product's share of its category's units (counted the same way) as a "
            "percentage with one decimal and a `%` sign: `CATEGORY PRODUCT UNITS SHARE`, like "
            "`toys kettle 30 42.9%`.",
        ]
        source = _STORE_SOLUTION.replace("{first}", window[0]).replace("{last}", window[1])
        source = source.replace("{{", "{").replace("}}", "}")
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=sqlite_setup(
                "store.db", _STORE_SCHEMA, {"products": products, "sales": sales}
            ),
            validation_script=stdout_validator(_store(products, sales, window, ref)),
            reference_solution=select(source, ref),
            wrong_solution=select(source, wrong),
        )


# --------------------------------------------------------------------------- running_balance

_BANK_SCHEMA = """
    CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL,
                           opening_cents INTEGER NOT NULL);
    CREATE TABLE txns (id INTEGER PRIMARY KEY, account_id INTEGER NOT NULL,
                       day TEXT NOT NULL, amount_cents INTEGER NOT NULL);
"""

_BALANCE_SOLUTION = '''
    import sqlite3

    con = sqlite3.connect("bank.db")
    query = """
        WITH running AS (
            SELECT a.owner, t.day, t.amount_cents, t.id, a.opening_cents AS opening,
                   SUM(t.amount_cents) OVER (ORDER BY t.day, t.id) AS balance  #=!t1&!bug
                   SUM(t.amount_cents) OVER (ORDER BY t.id) AS balance  #+bug
                   SUM(t.amount_cents) OVER (ORDER BY a.owner, t.day, t.id) AS balance  #+nopart
                   SUM(t.amount_cents) OVER per_account AS balance  #=t1&!t2&!nopart
                   a.opening_cents + SUM(t.amount_cents) OVER per_account AS balance  #+t2
            FROM txns t JOIN accounts a ON a.id = t.account_id
            WHERE a.owner = '{owner}'  #-t1
            WINDOW per_account AS (PARTITION BY a.id ORDER BY t.day, t.id)  #+t1
        ), marked AS (  #+t3|t3bug
            SELECT *,  #+t3|t3bug
                   LAG(balance, 1, opening)  #+t3|t3bug
                       OVER (PARTITION BY owner ORDER BY day, id) AS before  #+t3|t3bug
            FROM running  #+t3|t3bug
        )
        SELECT day, amount_cents, balance FROM running ORDER BY day, id  #=!t1&!bug
        SELECT day, amount_cents, balance FROM running ORDER BY id  #+bug
        SELECT owner, day, amount_cents, balance FROM running  #=t1&!t3&!t3bug
        ORDER BY owner, day, id  #=t1&!t3&!t3bug
        SELECT owner, day, amount_cents, balance FROM marked  #+t3|t3bug
        WHERE balance < 0 AND before >= 0  #+t3
        WHERE balance < 0  #+t3bug
        ORDER BY owner, day, id  #+t3|t3bug
    """
    for row in con.execute(query):
        print(*row)
'''


def _balances(
    accounts: list[tuple[int, str, int]],
    txns: list[tuple[int, int, str, int]],
    owner: str,
    features: set[str],
) -> list[str]:
    info = {aid: (name, opening) for aid, name, opening in accounts}
    if "bug" in features:
        aid = next(a for a, n, _ in accounts if n == owner)
        rows = sorted(t for t in txns if t[1] == aid)
        balance = 0
        out = []
        for _tid, _, day, amount in rows:
            balance += amount
            out.append(f"{day} {amount} {balance}")
        return out
    selected = [t for t in txns if "t1" in features or info[t[1]][0] == owner]
    selected.sort(key=lambda t: (info[t[1]][0], t[2], t[0]))
    lines: list[str] = []
    balances: dict[int, int] = {}
    for _tid, aid, day, amount in selected:
        start = info[aid][1] if "t2" in features else 0
        key = 0 if "nopart" in features else aid
        before = balances.get(key, start)
        balances[key] = before + amount
        after = balances[key]
        if "t3" in features and not (after < 0 <= before):
            continue
        if "t3bug" in features and after >= 0:
            continue
        prefix = f"{info[aid][0]} " if "t1" in features else ""
        lines.append(f"{prefix}{day} {amount} {after}")
    return lines


class RunningBalance(TemplateBase):
    """Running balances (window functions); twists: all accounts, opening balances, overdrafts."""

    name = "sql.running_balance"
    cluster = "sql"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.running_balance(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n_accounts, n_txns = (3, 4, 5, 6)[level], (15, 24, 32, 40)[level]
        ref = twists(level)
        wrong = {1: {"t1", "nopart"}, 3: {"t1", "t2", "t3bug"}}.get(level, near_miss(level))
        for _attempt in range(200):
            owners = rng.sample(FIRST_NAMES, n_accounts)
            accounts = [(i + 1, owner, rng.randint(0, 40) * 100) for i, owner in enumerate(owners)]
            txns = []
            for k in range(n_txns):
                day = f"2024-0{rng.randint(1, 3)}-{rng.randint(10, 28)}"
                amount = rng.randint(-60, 40) * 100 - rng.randint(0, 99)
                txns.append((k + 1, rng.randint(1, n_accounts), day, amount))
            owner = owners[0]
            if differs(
                partial(_balances, accounts, txns, owner, ref),
                partial(_balances, accounts, txns, owner, wrong),
            ) and _balances(accounts, txns, owner, ref):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task = f"Compute running balances of bank accounts. {_HOW}"
        inputs = """
            the SQLite database `bank.db` with tables `accounts(id, owner, opening_cents)` and
            `txns(id, account_id, day, amount_cents)`; day is text like `2024-03-05`, amounts
            are whole cents (negative for money going out).
        """
        output = f"""
            for the account of `{owner}`, print each of its transactions in date order (same
            day: lower id first) as `DAY AMOUNT BALANCE`, where BALANCE is the running total of
            the amounts so far, this one included (like `2024-01-12 -2500 1300`).
        """
        rules = [
            "Do this for every account, not only one: print `OWNER DAY AMOUNT BALANCE`, sorted "
            "by owner, then date, then id; each account's running total starts again from zero.",
            "Each account's running total starts from its opening_cents instead of zero.",
            "Print only the overdraft moments: the rows whose transaction takes the balance from "
            "0 or more to below 0.",
        ]
        source = _BALANCE_SOLUTION.replace("{owner}", owner)
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=sqlite_setup(
                "bank.db", _BANK_SCHEMA, {"accounts": accounts, "txns": txns}
            ),
            validation_script=stdout_validator(_balances(accounts, txns, owner, ref)),
            reference_solution=select(source, ref),
            wrong_solution=select(source, wrong),
        )


TEMPLATES = (CustomerTotals(), TopProduct(), RunningBalance())
