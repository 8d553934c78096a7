"""Template `sql.running_balance`: running balances of bank accounts (GROUP BY, window SUM, LAG).

Family (`AXES`): the granularity (a balance after every transaction, at the
end of every day, at the end of every month), the line order (oldest or newest
first; balances always accumulate from the oldest) and the unit of the printed
amounts (cents or dollars): 12 tasks at every program tier. Twists on top:
every account, opening balances, only the overdraft moments.
"""

from __future__ import annotations

import random
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
    rejects,
    same_lines,
    separated,
    sql_parts,
)
from nightschool.challenges._templates.starters import sql as starters

GRAINS = ("g_txn", "g_day", "g_month")
"""One line per transaction, per day with transactions, or per month with transactions."""

ORDERS = ("o_old", "o_new")
"""Lines oldest first, or newest first."""

UNITS = ("u_cents", "u_dollars")
"""Amounts printed as whole cents, or as dollars with two decimals."""

AXES = (GRAINS, ORDERS, UNITS)
"""The axes of the program tiers' family (`_kit.variant`)."""

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
        WITH periods AS (
            SELECT a.id AS aid, a.owner, a.opening_cents AS opening,
                   t.day AS period, t.amount_cents AS net, t.id AS first_id  #+g_txn
                   t.day AS period, SUM(t.amount_cents) AS net, MIN(t.id) AS first_id  #+g_day
                   substr(t.day, 1, 7) AS period, SUM(t.amount_cents) AS net,  #+g_month
                   MIN(t.id) AS first_id  #+g_month
            FROM txns t JOIN accounts a ON a.id = t.account_id
            WHERE a.owner = '<OWNER>'  #-t1
            GROUP BY a.id, t.day  #+g_day
            GROUP BY a.id, substr(t.day, 1, 7)  #+g_month
        ), running AS (
            SELECT *,
                   SUM(net) OVER (  #-t2
                   opening + SUM(net) OVER (  #+t2
                       PARTITION BY aid ORDER BY period, first_id  #=t1&!nopart
                       ORDER BY owner, period, first_id  #+nopart
                       ORDER BY period, first_id  #=!t1&!bug
                       ORDER BY first_id  #+bug
                   ) AS balance
            FROM periods
        ), marked AS (  #+t3|t3bug
            SELECT *, LAG(balance, 1, opening)  #+t3|t3bug
                          OVER (PARTITION BY aid ORDER BY period, first_id) AS before  #+t3|t3bug
            FROM running  #+t3|t3bug
        )
        SELECT owner, period, net, balance FROM running  #-t3|t3bug
        SELECT owner, period, net, balance FROM marked  #+t3|t3bug
        WHERE balance < 0 AND before >= 0  #+t3
        WHERE balance < 0  #+t3bug
        ORDER BY owner, period, first_id  #=o_old&!bug
        ORDER BY owner, period DESC, first_id DESC  #=o_new&!bug
        ORDER BY first_id  #=o_old&bug
        ORDER BY first_id DESC  #=o_new&bug
    """
    for owner, period, net, balance in con.execute(query):
        row = [period, net, balance]  #+u_cents
        row = [period, f"{net / 100:.2f}", f"{balance / 100:.2f}"]  #+u_dollars
        print(owner, *row)  #+t1
        print(*row)  #-t1
'''

Account = tuple[int, str, int]
Txn = tuple[int, int, str, int]


def _periods(
    accounts: list[Account], txns: list[Txn], owner: str, features: set[str]
) -> list[tuple[str, str, int, int, int]]:
    """(owner, period, net, first id, account id) of the selected accounts, one per period."""
    info = {aid: (name, opening) for aid, name, opening in accounts}
    grouped: dict[tuple[int, str], list[Txn]] = {}
    for txn in sorted(txns):
        tid, aid, day, _amount = txn
        if "t1" not in features and info[aid][0] != owner:
            continue
        period = day[:7] if "g_month" in features else day
        key = (aid, f"{day}#{tid}") if "g_txn" in features else (aid, period)
        grouped.setdefault(key, []).append(txn)
    return [
        (info[aid][0], group[0][2][:7] if "g_month" in features else group[0][2],
         sum(t[3] for t in group), group[0][0], aid)
        for (aid, _), group in grouped.items()
    ]  # fmt: skip


def _balances(
    accounts: list[Account], txns: list[Txn], owner: str, features: set[str]
) -> list[str]:
    openings = {aid: opening for aid, _, opening in accounts}
    rows = _periods(accounts, txns, owner, features)
    if "bug" in features:
        rows.sort(key=lambda r: r[3])
    else:
        rows.sort(key=lambda r: (r[0], r[1], r[3]))
    kept: list[tuple[str, str, int, int, int]] = []
    balances: dict[int, int] = {}
    for name, period, net, first_id, aid in rows:
        key = 0 if "nopart" in features else aid
        before = balances.get(key, openings[aid] if "t2" in features else 0)
        balances[key] = after = before + net
        if "t3" in features and not after < 0 <= before:
            continue
        if "t3bug" in features and after >= 0:
            continue
        kept.append((name, period, net, after, first_id))
    if "bug" in features:
        kept.sort(key=lambda r: r[4], reverse="o_new" in features)
    elif "o_new" in features:
        kept.sort(key=lambda r: (r[1], r[4]), reverse=True)
        kept.sort(key=lambda r: r[0])
    lines = []
    for name, period, net, after, _ in kept:
        shown = [str(net), str(after)]
        if "u_dollars" in features:
            shown = [f"{net / 100:.2f}", f"{after / 100:.2f}"]
        prefix = f"{name} " if "t1" in features else ""
        lines.append(f"{prefix}{period} {' '.join(shown)}")
    return lines


def _data(rng: random.Random, level: int) -> tuple[list[Account], list[Txn]]:
    n_accounts, n_txns = (3, 4, 5, 6)[level], (15, 24, 32, 40)[level]
    owners = rng.sample(FIRST_NAMES, n_accounts)
    accounts = [(i + 1, owner, rng.randint(0, 40) * 100) for i, owner in enumerate(owners)]
    txns = []
    for k in range(n_txns):
        day = f"2024-0{rng.randint(1, 4)}-{rng.randint(10, 28)}"
        amount = rng.randint(-60, 40) * 100 - rng.randint(0, 99)
        txns.append((k + 1, rng.randint(1, n_accounts), day, amount))
    for aid in range(1, n_accounts + 1):  # a second transaction on a day the account has one
        days = [t[2] for t in txns if t[1] == aid]
        if days:
            amount = rng.randint(-40, 40) * 100 + rng.randint(1, 99)
            txns.append((len(txns) + 1, aid, rng.choice(days), amount))
    return accounts, txns


_LINE = {
    "g_txn": (
        "each of its transactions as `DAY AMOUNT BALANCE`, where BALANCE is the running total "
        "of the amounts so far, this one included"
    ),
    "g_day": (
        "one line per day on which it has transactions, as `DAY NET BALANCE`: NET is the sum of "
        "that day's amounts and BALANCE the running total of the amounts at the end of that day"
    ),
    "g_month": (
        "one line per month in which it has transactions, as `MONTH NET BALANCE` (MONTH like "
        "`2024-03`): NET is the sum of that month's amounts and BALANCE the running total of "
        "the amounts at the end of that month"
    ),
}
_MOMENT = {"g_txn": "transaction", "g_day": "day", "g_month": "month"}


def _output(tags: set[str], owner: str) -> str:
    grain = next(g for g in GRAINS if g in tags)
    same_day = grain == "g_txn"
    order = (
        "Lines oldest first" + " (same day: lower id first)." * same_day + "." * (not same_day)
        if "o_old" in tags
        else "Lines newest first" + " (same day: higher id first)" * same_day + ", while the "
        "running total still adds the amounts up from the oldest"
        + " (same day: lower id first)" * same_day
        + "."
    )
    unit = (
        "Amounts and balances in whole cents (like `-2599`)."
        if "u_cents" in tags
        else "Amounts and balances in dollars with two decimals (cents / 100, like `-25.99`)."
    )
    return f"for the account of `{owner}`, print {_LINE[grain]}. {order} {unit}"


class RunningBalance(TemplateBase):
    """Running balances (family: `AXES`); twists: all accounts, opening balances, overdrafts."""

    name = "sql.running_balance"
    cluster = "sql"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.running_balance(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref = tags | twists(level)
        wrong = tags | {1: {"t1", "nopart"}, 3: {"t1", "t2", "t3bug"}}.get(level, near_miss(level))
        for _attempt in range(300):
            accounts, txns = _data(rng, level)
            owner = accounts[0][1]
            emulate = partial(_balances, accounts, txns, owner)
            if (
                emulate(ref)
                and rejects(emulate, ref, wrong)
                and separated(emulate, tags, AXES, twists(level), same_lines)
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level} for {tags}")
        task = f"Compute running balances of bank accounts. {HOW}"
        inputs = """
            the SQLite database `bank.db` with tables `accounts(id, owner, opening_cents)` and
            `txns(id, account_id, day, amount_cents)`; day is text like `2024-03-05`, amounts
            are whole cents (negative for money going out).
        """
        moment = _MOMENT[next(g for g in GRAINS if g in tags)]
        rules = [
            "Do this for every account, not only one: start each line with the OWNER, sort the "
            "lines by owner first (then as above); each account's running total starts again "
            "from zero.",
            "Each account's running total starts from its opening_cents instead of zero.",
            f"Print only the overdraft moments: the lines whose {moment} takes the balance from "
            "0 or more to below 0.",
        ]
        source = _BALANCE_SOLUTION.replace("<OWNER>", owner)
        return sql_parts(
            prompt(task, inputs, _output(tags, owner), rules, level),
            ("bank.db", _BANK_SCHEMA, {"accounts": accounts, "txns": txns}),
            _balances(accounts, txns, owner, ref),
            source,
            ref,
            wrong,
        )
