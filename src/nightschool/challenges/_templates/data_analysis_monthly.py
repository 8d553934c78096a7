"""Template `data_analysis.monthly_totals`: one figure per calendar month of a ledger.

A seed draws its task from a family (`variant`): the figure (`total` of the
amounts, `count` of transactions, `largest` transaction, `running` balance at
the month's end), the order of the months (`oldest` or `newest` first) and how
a month is written (`iso` as `2024-03`, `named` as `March 2024:`).
"""

from __future__ import annotations

import random
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

MEASURES = ("total", "count", "largest", "running")
"""What to compute per month: sum, number of transactions, largest amount, running balance."""
ORDERS = ("oldest", "newest")
"""Month order: calendar order, or reverse calendar order."""
LABELS = ("iso", "named")
"""How a month is written: `2024-03`, or `March 2024:`."""
AXES = (MEASURES, ORDERS, LABELS)

_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip

_SOLUTION = """
    import csv

    NAMES = [  #+named
        "January", "February", "March", "April", "May", "June", "July",  #+named
        "August", "September", "October", "November", "December",  #+named
    ]  #+named
    amounts = {}
    with open("transactions.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            date = row["date"]
            if "/" in date:  #+t2
                day, month, year = date.split("/")  #+t2
                date = f"{year}-{month}-{day}"  #+t2
            amount = int(row["amount"])
            if row["category"] == "refund":  #+t1
                amount = -amount  #=t1&!count&!largest
                continue  #=t1&!total&!running
            amounts.setdefault(date[:7], []).append(amount)
    if amounts:  #+t3
        year, month = map(int, min(amounts).split("-"))  #+t3
        while f"{year:04d}-{month:02d}" < max(amounts):  #+t3
            amounts.setdefault(f"{year:04d}-{month:02d}", [])  #+t3
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)  #+t3
    values = {}
    balance = 0  #+running
    for month in sorted(amounts):  #-bug
    for month in amounts:  #+bug
        values[month] = sum(amounts[month])  #+total
        values[month] = len(amounts[month])  #+count
        values[month] = max(amounts[month], default=0)  #+largest
        balance += sum(amounts[month])  #+running
        values[month] = balance  #+running
    months = list(values)
    months.reverse()  #+newest
    for month in months:
        print(month, values[month])  #+iso
        year, number = month.split("-")  #+named
        print(f"{NAMES[int(number) - 1]} {year}: {values[month]}")  #+named
"""

_CATEGORIES = ("food", "rent", "travel", "books", "tools")


def _next(year: int, month: int) -> tuple[int, int]:
    return (year + 1, 1) if month == 12 else (year, month + 1)


def _monthly(rows: list[tuple[str, str, int, str]], features: set[str]) -> list[str]:
    """The expected stdout for `rows` (iso date, shown date, amount, category)."""
    amounts: dict[str, list[int]] = {}
    for iso, shown, amount, category in rows:
        if "/" in shown and "t2" not in features:
            raise ValueError(shown)
        if "t1" in features and category == "refund":
            if features & {"count", "largest"}:
                continue
            amount = -amount
        amounts.setdefault(iso[:7], []).append(amount)
    if "t3" in features:
        year, month = map(int, min(amounts).split("-"))
        while f"{year:04d}-{month:02d}" < max(amounts):
            amounts.setdefault(f"{year:04d}-{month:02d}", [])
            year, month = _next(year, month)
    values: dict[str, int] = {}
    balance = 0
    measure = next(m for m in MEASURES if m in features)
    for key in list(amounts) if "bug" in features else sorted(amounts):
        balance += sum(amounts[key])
        values[key] = {
            "total": sum(amounts[key]),
            "count": len(amounts[key]),
            "largest": max(amounts[key], default=0),
            "running": balance,
        }[measure]
    months = list(values)
    if "newest" in features:
        months.reverse()
    if "iso" in features:
        return [f"{m} {values[m]}" for m in months]
    return [f"{_MONTH_NAMES[int(m[5:]) - 1]} {m[:4]}: {values[m]}" for m in months]


def _rows(rng: random.Random, level: int) -> list[tuple[str, str, int, str]]:
    n, span = (14, 30, 50, 80)[level], (4, 6, 9, 14)[level]
    year, month = rng.choice((2022, 2023)), rng.randint(1, 12)
    months = []
    for _k in range(span):
        months.append((year, month))
        year, month = _next(year, month)
    if level >= 3:  # an empty month inside the range
        del months[rng.randrange(1, span - 1)]
    rows = []
    for i in range(n):
        year, month = months[i] if i < len(months) else rng.choice(months)
        day = rng.randint(1, 28)
        iso = shown = f"{year:04d}-{month:02d}-{day:02d}"
        if level >= 2 and rng.random() < 0.4:
            shown = f"{day:02d}/{month:02d}/{year:04d}"
        category = rng.choice(_CATEGORIES)
        if level >= 1 and (i == len(months) or (i > len(months) and rng.random() < 0.15)):
            category = "refund"  # never a month's only transaction
        rows.append((iso, shown, rng.randint(5, 900), category))
    rng.shuffle(rows)
    return rows


_TASKS = {
    "total": "Total the transaction amounts of each calendar month.",
    "count": "Count the transactions of each calendar month.",
    "largest": "Find the largest transaction amount of each calendar month.",
    "running": "Show the running balance at the end of each calendar month: the sum of all "
    "amounts from the first transaction up to and including that month.",
}
_REFUNDS = {
    "total": "subtract their amount instead of adding it (totals can be negative).",
    "running": "subtract their amount instead of adding it (the balance can go down).",
    "count": "they are not transactions of the month: leave them out of the counts.",
    "largest": "they are not purchases: leave them out when looking for the largest amount.",
}


def _texts(tags: set[str]) -> tuple[str, str, list[str]]:
    """The task, output and rule texts of the drawn variant."""
    measure = next(m for m in MEASURES if m in tags)
    value = {"total": "1250", "count": "7", "largest": "640", "running": "8830"}[measure]
    line = f"`YYYY-MM VALUE` (like `2024-03 {value}`)"
    if "named" in tags:
        line = f"`MONTH YEAR: VALUE` with the month's English name (like `March 2024: {value}`)"
    order = "in calendar order, oldest first" if "oldest" in tags else "newest month first"
    output = f"print one line per month that has transactions, as {line}, {order}."
    empty = "the running balance unchanged" if measure == "running" else "value 0"
    rules = [
        f"Rows with category `refund` are money coming back: {_REFUNDS[measure]}",
        "Some dates are written day first as `DD/MM/YYYY` (`05/03/2024` is 5 March 2024).",
        "Also list every month between the first and the last month that has no "
        f"transactions, with {empty}.",
    ]
    return _TASKS[measure], output, rules


class MonthlyTotals(TemplateBase):
    """One figure per calendar month; twists: refunds, a second date format, empty months."""

    name = "data_analysis.monthly_totals"
    cluster = "data_analysis"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.monthly_totals(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref, wrong = tags | twists(level), tags | near_miss(level)
        for _attempt in range(100):
            rows = _rows(rng, level)
            if separated(partial(_monthly, rows), ref, wrong, AXES):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        text = "id,date,category,amount\n" + "".join(
            f"{i + 1},{shown},{category},{amount}\n"
            for i, (_iso, shown, amount, category) in enumerate(rows)
        )
        task, output, rules = _texts(tags)
        inputs = """
            `transactions.csv` with the header `id,date,category,amount`; dates look like
            `2024-03-05` (year-month-day); amounts are whole numbers.
        """
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"transactions.csv": text}),
            validation_script=stdout_validator(_monthly(rows, ref)),
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )
