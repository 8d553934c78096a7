"""Starter tier of cluster `data_analysis`: a figure per region, per month, per department.

Each starter draws its task from a family first (`_kit.variant`): what to
compute (the function's name follows it) and the argument or result shape.
Hidden cases are redrawn until they tell the drawn task from the near-miss and
from every other task of the family (`data_analysis_family.separated`).
"""

from __future__ import annotations

import random
import textwrap
from fractions import Fraction
from functools import partial
from typing import Any

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    Case,
    Parts,
    RenderError,
    call,
    function_parts,
    shown_example,
    variant,
)
from nightschool.challenges._templates.data_analysis_family import close, separated

_REGIONS = ("north", "south", "east", "west", "central")
_close6 = partial(close, tol=1e-6)


def _doc(*sentences: str) -> str:
    """A docstring text: the sentences joined and wrapped."""
    return textwrap.fill(" ".join(sentences), 84, break_on_hyphens=False)


# --------------------------------------------------------------------------- region_sales

SALES_MEASURES = ("revenue", "units", "largest", "average")
"""What the function computes per region (its name says which)."""
SALES_INPUTS = ("csv", "rows")
"""The argument: CSV text with a header, or a list of (region, units, price) tuples."""
SALES_RESULTS = ("dict", "ranked")
"""The result: a dict by region, or (region, value) pairs, largest value first."""

_SALES_FUNCS = {
    "revenue": "region_revenue",
    "units": "region_units",
    "largest": "largest_order_by_region",
    "average": "average_order_by_region",
}

_SALES_SOURCE = """
    import csv  #+csv
    import io  #+csv
    #+csv
    #+csv
    def FUNC(csv_text):  #+csv
    def FUNC(rows):  #+rows
        orders = {}
        for row in csv.DictReader(io.StringIO(csv_text)):  #+csv
            region, units, price = row["region"], int(row["units"]), float(row["price"])  #+csv
        for region, units, price in rows:  #+rows
            orders.setdefault(region, []).append((units, price))
        result = {}
        for region, pairs in orders.items():
            value = sum(u * p for u, p in pairs)  #=revenue&!bug
            value = sum(p for u, p in pairs)  #=revenue&bug
            value = sum(u for u, p in pairs)  #=units&!bug
            value = len(pairs)  #=units&bug
            value = max(u * p for u, p in pairs)  #=largest&!bug
            value = max(p for u, p in pairs)  #=largest&bug
            value = sum(u * p for u, p in pairs) / len(pairs)  #=average&!bug
            value = sum(u * p for u, p in pairs) / sum(u for u, p in pairs)  #=average&bug
            result[region] = round(value, 2)  #-units
            result[region] = value  #+units
        return result  #+dict
        return sorted(result.items(), key=lambda item: (-item[1], item[0]))  #+ranked
"""

_SALES_SPECS = {
    "revenue": "The revenue of a row is units * price. Total the revenue of each region",
    "units": "Total the units sold in each region",
    "largest": "The value of a row is units * price. Find each region's largest row value",
    "average": "The value of a row is units * price. Average it over each region's rows",
}


def _sales_rows(text: str) -> list[tuple[str, int, str]]:
    rows = [line.split(",") for line in text.splitlines()[1:]]
    return [(region, int(units), price) for region, units, price in rows]


def _sales_value(rows: list[tuple[str, int, str]], tags: set[str]) -> dict[str, Any]:
    """Each region's value as the function returns it (exact, then rounded)."""
    bug = "bug" in tags
    orders: dict[str, list[tuple[int, Fraction]]] = {}
    for region, units, price in rows:
        orders.setdefault(region, []).append((units, Fraction(price)))
    result: dict[str, Any] = {}
    for region, pairs in orders.items():
        rows_value = [p if bug and "average" not in tags else u * p for u, p in pairs]
        if "units" in tags:
            result[region] = len(pairs) if bug else sum(u for u, _p in pairs)
            continue
        if "largest" in tags:
            exact = max(rows_value)
        elif "average" in tags:
            exact = sum(rows_value, Fraction(0)) / (
                sum(u for u, _p in pairs) if bug else len(pairs)
            )
        else:
            exact = sum(rows_value, Fraction(0))
        if (exact * 100 - Fraction(1, 2)).denominator == 1:
            raise ValueError("a value on a rounding boundary")
        result[region] = round(float(exact), 2)
    return result


def _sales_result(text: str, tags: set[str]) -> Any:
    result = _sales_value(_sales_rows(text), tags)
    if "ranked" not in tags:
        return result
    values = list(result.values())
    if "units" not in tags and len(set(values)) < len(values):
        raise ValueError("equal rounded values")
    return sorted(result.items(), key=lambda it: (-it[1], it[0]))


def _sales_arg(text: str, tags: set[str]) -> object:
    if "csv" in tags:
        return text
    return [(region, units, float(price)) for region, units, price in _sales_rows(text)]


def _price(rng: random.Random) -> str:
    """A price in multiples of 8 cents.

    No region's average over at most 8 rows is then a half cent, so rounding it
    to 2 decimals never hinges on float error.
    """
    return f"{rng.randint(7, 187) * 8 / 100:.2f}"


def _sales_csv(rng: random.Random, n: int) -> str:
    regions = rng.sample(_REGIONS, 3)
    rows = [f"{region},{rng.randint(1, 9)},{_price(rng)}\n" for region in regions]
    rows += [f"{rng.choice(regions)},{rng.randint(1, 9)},{_price(rng)}\n" for _ in range(n - 3)]
    rng.shuffle(rows)
    return "region,units,price\n" + "".join(rows[:n])


def region_sales(rng: random.Random) -> Parts:
    """Starter of `data_analysis.region_sales`: one of `family_size` tasks, drawn first."""
    tags = variant(rng, SALES_MEASURES, SALES_INPUTS, SALES_RESULTS)
    measure = next(m for m in SALES_MEASURES if m in tags)
    func = _SALES_FUNCS[measure]
    for _attempt in range(50):
        single = f"{rng.choice(_REGIONS)},{rng.randint(2, 9)},{_price(rng)}\n"
        texts = ["region,units,price\n", "region,units,price\n" + single]
        texts += [_sales_csv(rng, n) for n in (4, 5, 6, 8)]

        def emulate(features: set[str], texts: list[str] = texts) -> list[Any]:
            return [_sales_result(t, features) for t in texts]

        try:
            if separated(emulate, tags, tags | {"bug"}, [SALES_MEASURES], _close6):
                break
        except ValueError:
            continue
    else:
        raise RenderError("data_analysis.region_sales: starter cases do not separate the tasks")

    def draw(rng: random.Random) -> Case:
        """Four rows of two regions, the first region three times."""
        while True:
            one, two = rng.sample(_REGIONS, 2)
            rows = [
                f"{region},{rng.randint(1, 4)},{rng.randint(1, 40) * 25 / 100:.2f}\n"
                for region in (one, two, one, one)
            ]
            text = "region,units,price\n" + "".join(rows)
            try:
                return Case(call(func, _sales_arg(text, tags)), _sales_result(text, tags))
            except ValueError:
                continue

    hidden = [Case(call(func, _sales_arg(t, tags)), _sales_result(t, tags)) for t in texts]
    arg = "csv_text: str" if "csv" in tags else "rows: list[tuple[str, int, float]]"
    value = "int" if measure == "units" else "float"
    result = f"dict[str, {value}]" if "dict" in tags else f"list[tuple[str, {value}]]"
    given = (
        "csv_text is CSV with the header `region,units,price`"
        if "csv" in tags
        else "rows holds (region, units, price) tuples"
    )
    rounding = "" if measure == "units" else " rounded to 2 decimals"
    returns = (
        f"Return a dict mapping each region to that value{rounding}."
        if "dict" in tags
        else f"Return (region, value) pairs with the value{rounding}, largest value first "
        "(equal values by region name)."
    )
    return function_parts(
        func=func,
        signature=f"def {func}({arg}) -> {result}:",
        spec=_doc(
            f"{given} (units a whole number, price a decimal like 4.25).",
            f"{_SALES_SPECS[measure]}.",
            returns,
        ),
        examples=[shown_example(rng, draw, hidden)],
        cases=hidden,
        source=_SALES_SOURCE.replace("FUNC", func),
        tol=1e-6,
        features=tags,
    )


# --------------------------------------------------------------------------- monthly_totals

MONTHLY_MEASURES = ("total", "count", "largest", "running")
"""What the function computes per month (its name says which)."""
MONTHLY_ORDERS = ("oldest", "newest")
"""The order of the result: oldest month first, or newest first."""
MONTHLY_DATES = ("iso", "dmy")
"""How the argument's dates are written: `2024-03-05`, or day first `05/03/2024`."""

_MONTHLY_FUNCS = {
    "total": "monthly_totals",
    "count": "monthly_counts",
    "largest": "monthly_largest",
    "running": "monthly_running_balance",
}

_MONTHLY_SOURCE = """
    def FUNC(transactions):
        amounts = {}
        for date, amount in transactions:
            month = date[:7]  #+iso
            day, number, year = date.split("/")  #+dmy
            month = f"{year}-{number}"  #+dmy
            amounts.setdefault(month, []).append(amount)
        result = []
        balance = 0  #+running
        for month in sorted(amounts):  #-bug
        for month in amounts:  #+bug
            result.append((month, sum(amounts[month])))  #+total
            result.append((month, len(amounts[month])))  #+count
            result.append((month, max(amounts[month])))  #+largest
            balance += sum(amounts[month])  #+running
            result.append((month, balance))  #+running
        result.reverse()  #+newest
        return result
"""

_MONTHLY_SPECS = {
    "total": "the sum of its amounts",
    "count": "its number of transactions",
    "largest": "its largest amount",
    "running": "the running balance: the sum of all amounts up to the end of that month",
}


def _monthly(transactions: list[tuple[str, int]], tags: set[str]) -> list[tuple[str, int]]:
    """The function's result; `transactions` hold ISO dates."""
    amounts: dict[str, list[int]] = {}
    for date, amount in transactions:
        amounts.setdefault(date[:7], []).append(amount)
    result, balance = [], 0
    for month in list(amounts) if "bug" in tags else sorted(amounts):
        balance += sum(amounts[month])
        figures = {
            "total": sum(amounts[month]),
            "count": len(amounts[month]),
            "largest": max(amounts[month]),
            "running": balance,
        }
        result.append((month, figures[next(m for m in MONTHLY_MEASURES if m in tags)]))
    return result[::-1] if "newest" in tags else result


def _dated(transactions: list[tuple[str, int]], tags: set[str]) -> list[tuple[str, int]]:
    """The argument as the function gets it: ISO dates, or day first."""
    if "iso" in tags:
        return transactions
    return [(f"{d[8:10]}/{d[5:7]}/{d[:4]}", amount) for d, amount in transactions]


def _transactions(rng: random.Random, n: int) -> list[tuple[str, int]]:
    year, month = rng.choice((2022, 2023)), rng.randint(1, 12)
    months = [(year + (month - 1 + k) // 12, (month - 1 + k) % 12 + 1) for k in range(4)]
    picks = [months[rng.randrange(1, 4)], months[0]]  # a later month comes first
    picks += [rng.choice(months) for _ in range(n - 2)]
    return [
        (f"{y:04d}-{m:02d}-{rng.randint(1, 28):02d}", rng.randint(5, 900)) for y, m in picks[:n]
    ]


def monthly_totals(rng: random.Random) -> Parts:
    """Starter of `data_analysis.monthly_totals`: one of `family_size` tasks, drawn first."""
    tags = variant(rng, MONTHLY_MEASURES, MONTHLY_ORDERS, MONTHLY_DATES)
    measure = next(m for m in MONTHLY_MEASURES if m in tags)
    func = _MONTHLY_FUNCS[measure]
    for _attempt in range(50):
        inputs = [[], _transactions(rng, 1), *(_transactions(rng, n) for n in (3, 5, 6, 8))]
        emulate = partial(lambda xs, features: [_monthly(x, features) for x in xs], inputs)
        if separated(emulate, tags, tags | {"bug"}, [MONTHLY_MEASURES, MONTHLY_ORDERS], _close6):
            break
    else:
        raise RenderError("data_analysis.monthly_totals: starter cases do not separate the tasks")

    def draw(rng: random.Random) -> Case:
        """Three transactions in two months of one year, the later month first."""
        year = rng.randint(2021, 2025)
        early, late = sorted(rng.sample(range(1, 13), 2))
        first, second, third = rng.sample(range(1, 29), 3)
        days = [(late, first), (early, second), (late, third)]
        example = [(f"{year}-{m:02d}-{d:02d}", rng.randint(1, 40) * 5) for m, d in days]
        return Case(call(func, _dated(example, tags)), _monthly(example, tags))

    hidden = [Case(call(func, _dated(x, tags)), _monthly(x, tags)) for x in inputs]
    date = "'2024-03-05' (year-month-day)" if "iso" in tags else "'05/03/2024' (day first)"
    order = "oldest month first" if "oldest" in tags else "newest month first"
    return function_parts(
        func=func,
        signature=(f"def {func}(transactions: list[tuple[str, int]]) -> list[tuple[str, int]]:"),
        spec=_doc(
            f"Each transaction is (date, amount) with date like {date}.",
            "Return one (month, value) pair per month that has transactions, month written",
            f"'YYYY-MM' and value {_MONTHLY_SPECS[measure]}; {order}.",
        ),
        examples=[shown_example(rng, draw, hidden)],
        cases=hidden,
        source=_MONTHLY_SOURCE.replace("FUNC", func),
        features=tags,
    )


# --------------------------------------------------------------------------- dept_summary

DEPT_STATS = ("average", "median", "highest", "payroll")
"""The salary statistic per department (the function's name says which)."""
DEPT_RESULTS = ("name", "size", "value", "mapping")
"""The result: tuples sorted by name, by headcount or by the statistic (both descending),
or a dict department -> (headcount, statistic)."""

_DEPT_FUNCS = {
    "average": "dept_average_salary",
    "median": "dept_median_salary",
    "highest": "dept_highest_salary",
    "payroll": "dept_payroll",
}

_DEPT_SOURCE = """
    def FUNC(employees, departments):
        salaries = {}
        for name, dept_id, salary in employees:
            salaries.setdefault(departments[dept_id], []).append(salary)
        result = []
        for dept, pay in sorted(salaries.items()):
            value = round(sum(pay) / len(pay), 2)  #=average&!bug
            value = float(sum(pay) // len(pay))  #=average&bug
            ordered = sorted(pay)  #+median
            middle = len(ordered) // 2  #+median
            value = float(ordered[middle])  #=median&bug
            if len(ordered) % 2:  #=median&!bug
                value = float(ordered[middle])  #=median&!bug
            else:  #=median&!bug
                value = round((ordered[middle - 1] + ordered[middle]) / 2, 2)  #=median&!bug
            value = max(pay)  #=highest&!bug
            value = pay[-1]  #=highest&bug
            value = sum(pay)  #=payroll&!bug
            value = sum(set(pay))  #=payroll&bug
            result.append((dept, len(pay), value))
        result.sort(key=lambda row: row[1], reverse=True)  #+size
        result.sort(key=lambda row: row[2], reverse=True)  #+value
        return result  #-mapping
        return {dept: (count, value) for dept, count, value in result}  #+mapping
"""

_DEPARTMENTS = ("Engineering", "Sales", "Support", "Finance", "Legal", "Design")
_DEPT_TEXTS = {
    "average": "average salary rounded to 2 decimals",
    "median": "median salary (even headcount: the mean of the two middle ones)",
    "highest": "highest salary",
    "payroll": "payroll (the sum of the salaries)",
}
_DEPT_ORDER_TEXTS = {
    "name": "sorted by name",
    "size": "largest headcount first, equal headcounts by name",
    "value": "largest value first, equal values by name",
}
_DEPT_RETURNS = {
    "mapping": "Return a dict mapping each department with employees to (headcount, {value}).",
    "tuples": "Return a (department, headcount, {value}) tuple per department with "
    "employees, {order}.",
}

Staff = list[tuple[str, str, int]]


def _dept(employees: Staff, departments: dict[str, str], tags: set[str]) -> Any:
    """The function's result for `employees` (name, dept_id, salary)."""
    bug = "bug" in tags
    pay: dict[str, list[int]] = {}
    for _name, dept_id, salary in employees:
        pay.setdefault(departments[dept_id], []).append(salary)
    result: list[tuple[Any, ...]] = []
    for dept, salaries in sorted(pay.items()):
        n, ordered, mid = len(salaries), sorted(salaries), len(salaries) // 2
        value: float
        if "average" in tags:
            exact = Fraction(sum(salaries), n)
            if (exact * 100 - Fraction(1, 2)).denominator == 1:
                raise ValueError("an average on a rounding boundary")
            value = float(sum(salaries) // n) if bug else round(float(exact), 2)
        elif "median" in tags:
            even = n % 2 == 0 and not bug
            value = (ordered[mid - 1] + ordered[mid]) / 2 if even else float(ordered[mid])
        elif "highest" in tags:
            value = salaries[-1] if bug else max(salaries)
        else:
            value = sum(set(salaries)) if bug else sum(salaries)
        result.append((dept, n, value))
    if "size" in tags:
        result.sort(key=lambda row: row[1], reverse=True)
    if "value" in tags:
        result.sort(key=lambda row: row[2], reverse=True)
    if "mapping" in tags:
        return {dept: (count, value) for dept, count, value in result}
    return result


def _staff(rng: random.Random, n_depts: int, n_people: int) -> tuple[Staff, dict[str, str]]:
    ids = [f"D{k}" for k in rng.sample(range(10, 99), n_depts)]
    departments = dict(zip(ids, rng.sample(_DEPARTMENTS, n_depts), strict=True))
    people = rng.sample(FIRST_NAMES, n_people)
    employees = [(p, rng.choice(ids), rng.randint(30, 90) * 1000) for p in people]
    if n_people >= 3:  # two people of one department with the same pay
        employees[1] = (employees[1][0], employees[0][1], employees[0][2])
    return employees, departments


def dept_summary(rng: random.Random) -> Parts:
    """Starter of `data_analysis.dept_summary`: one of `family_size` tasks, drawn first."""
    tags = variant(rng, DEPT_STATS, DEPT_RESULTS)
    stat = next(s for s in DEPT_STATS if s in tags)
    func = _DEPT_FUNCS[stat]
    sizes = ((1, 0), (1, 1), (2, 4), (3, 5), (3, 7), (4, 8))
    for _attempt in range(50):
        args = [_staff(rng, d, p) for d, p in sizes]
        emulate = partial(lambda xs, features: [_dept(e, d, features) for e, d in xs], args)
        try:
            if separated(emulate, tags, tags | {"bug"}, [DEPT_STATS, DEPT_RESULTS], _close6):
                break
        except ValueError:
            continue
    else:
        raise RenderError("data_analysis.dept_summary: starter cases do not separate the tasks")

    def draw(rng: random.Random) -> Case:
        """Three employees in two departments; the shared one's values are not whole."""
        ids = [f"D{k}" for k in rng.sample(range(1, 10), 2)]
        departments = dict(zip(ids, rng.sample(_DEPARTMENTS, 2), strict=True))
        one, two, three = rng.sample([n for n in FIRST_NAMES if len(n) <= 4], 3)
        pay = [rng.randint(30, 90) * 1000 for _ in range(3)]
        employees = [(one, ids[0], pay[0]), (two, ids[1], pay[1]), (three, ids[0], pay[2] + 1)]
        return Case(call(func, employees, departments), _dept(employees, departments, tags))

    hidden = [Case(call(func, e, d), _dept(e, d, tags)) for e, d in args]
    value = "float" if stat in ("average", "median") else "int"
    result = (
        f"dict[str, tuple[int, {value}]]"
        if "mapping" in tags
        else f"list[tuple[str, int, {value}]]"
    )
    order = next(o for o in DEPT_RESULTS if o in tags)
    returns = _DEPT_RETURNS["mapping" if order == "mapping" else "tuples"].format(
        value=_DEPT_TEXTS[stat], order=_DEPT_ORDER_TEXTS.get(order, "")
    )
    return function_parts(
        func=func,
        signature=(
            f"def {func}(employees: list[tuple[str, str, int]], departments: dict[str, str])"
            f" -> {result}:"
        ),
        spec=_doc(
            "employees: (name, dept_id, salary) tuples; departments: dept_id -> department",
            "name.",
            returns,
        ),
        examples=[shown_example(rng, draw, hidden)],
        cases=hidden,
        source=_DEPT_SOURCE.replace("FUNC", func),
        tol=1e-7,
        features=tags,
    )
