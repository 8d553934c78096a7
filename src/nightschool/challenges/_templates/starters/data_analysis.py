"""Starter tier of cluster `data_analysis`: revenue by region, monthly totals, department summary."""

from __future__ import annotations

import random
from collections.abc import Callable

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    Case,
    Parts,
    RenderError,
    call,
    differs,
    function_parts,
    shown_example,
)

_REGIONS = ("north", "south", "east", "west", "central")


def _separate(
    emulate: Callable[..., object], args: list[tuple[object, ...]], template: str
) -> None:
    """Raise `RenderError` unless the near-miss (`bug=True`) differs on some case."""
    if not differs(
        lambda: [emulate(*a) for a in args], lambda: [emulate(*a, bug=True) for a in args]
    ):
        raise RenderError(f"{template}: starter cases do not separate the near-miss")


# --------------------------------------------------------------------------- region_sales

_SALES_SOURCE = """
    import csv
    import io


    def region_revenue(csv_text):
        revenue = {}
        for row in csv.DictReader(io.StringIO(csv_text)):
            amount = int(row["units"]) * float(row["price"])  #-bug
            amount = float(row["price"])  #+bug
            revenue[row["region"]] = revenue.get(row["region"], 0) + amount
        return {region: round(total, 2) for region, total in revenue.items()}
"""


def _revenue(text: str, bug: bool = False) -> dict[str, float]:
    cents: dict[str, int] = {}
    for line in text.splitlines()[1:]:
        region, units, price = line.split(",")
        value = round(float(price) * 100)
        cents[region] = cents.get(region, 0) + (value if bug else int(units) * value)
    return {region: total / 100 for region, total in cents.items()}


def _sales_csv(rng: random.Random, n: int) -> str:
    regions = rng.sample(_REGIONS, 3)
    rows = [
        f"{rng.choice(regions)},{rng.randint(1, 9)},{rng.randint(50, 1500) / 100:.2f}\n"
        for _ in range(n)
    ]
    return "region,units,price\n" + "".join(rows)


def _sales_example(rng: random.Random) -> Case:
    """Three rows of two regions, the first region twice."""
    one, two = rng.sample(_REGIONS, 2)
    rows = [
        f"{region},{rng.randint(1, 4)},{rng.randint(1, 40) * 25 / 100:.2f}\n"
        for region in (one, two, one)
    ]
    text = "region,units,price\n" + "".join(rows)
    return Case(call("region_revenue", text), _revenue(text))


def region_sales(rng: random.Random) -> Parts:
    """Starter of `data_analysis.region_sales`."""
    func = "region_revenue"
    single = f"{rng.choice(_REGIONS)},{rng.randint(2, 9)},{rng.randint(50, 1500) / 100:.2f}\n"
    texts = ["region,units,price\n", "region,units,price\n" + single]
    texts += [_sales_csv(rng, n) for n in (3, 5, 6, 8)]
    _separate(_revenue, [(t,) for t in texts], "data_analysis.region_sales")
    hidden = [Case(call(func, t), _revenue(t)) for t in texts]
    return function_parts(
        func=func,
        signature="def region_revenue(csv_text: str) -> dict[str, float]:",
        spec="""
            csv_text is CSV with the header `region,units,price` (units a whole number,
            price a decimal like 4.25). The revenue of a row is units * price. Return a dict
            mapping each region to its total revenue, rounded to 2 decimals.
        """,
        examples=[shown_example(rng, _sales_example, hidden)],
        cases=hidden,
        source=_SALES_SOURCE,
        tol=1e-6,
    )


# --------------------------------------------------------------------------- monthly_totals

_MONTHLY_SOURCE = """
    def monthly_totals(transactions):
        totals = {}
        for date, amount in transactions:
            month = date[:7]
            totals[month] = totals.get(month, 0) + amount
        return sorted(totals.items())  #-bug
        return list(totals.items())  #+bug
"""


def _monthly(transactions: list[tuple[str, int]], bug: bool = False) -> list[tuple[str, int]]:
    totals: dict[str, int] = {}
    for date, amount in transactions:
        totals[date[:7]] = totals.get(date[:7], 0) + amount
    return list(totals.items()) if bug else sorted(totals.items())


def _transactions(rng: random.Random, n: int) -> list[tuple[str, int]]:
    year, month = rng.choice((2022, 2023)), rng.randint(1, 12)
    months = [(year + (month - 1 + k) // 12, (month - 1 + k) % 12 + 1) for k in range(4)]
    picks = [months[rng.randrange(1, 4)], months[0]]  # a later month comes first
    picks += [rng.choice(months) for _ in range(n - 2)]
    return [
        (f"{y:04d}-{m:02d}-{rng.randint(1, 28):02d}", rng.randint(5, 900)) for y, m in picks[:n]
    ]


def _monthly_example(rng: random.Random) -> Case:
    """Three transactions in two months of one year, the later month first."""
    year = rng.randint(2021, 2025)
    early, late = sorted(rng.sample(range(1, 13), 2))
    first, second, third = rng.sample(range(1, 29), 3)
    days = [(late, first), (early, second), (late, third)]
    example = [(f"{year}-{m:02d}-{d:02d}", rng.randint(1, 40) * 5) for m, d in days]
    return Case(call("monthly_totals", example), _monthly(example))


def monthly_totals(rng: random.Random) -> Parts:
    """Starter of `data_analysis.monthly_totals`."""
    func = "monthly_totals"
    inputs = [[], _transactions(rng, 1), *(_transactions(rng, n) for n in (3, 5, 6, 8))]
    _separate(_monthly, [(t,) for t in inputs], "data_analysis.monthly_totals")
    hidden = [Case(call(func, t), _monthly(t)) for t in inputs]
    return function_parts(
        func=func,
        signature=(
            "def monthly_totals(transactions: list[tuple[str, int]]) -> list[tuple[str, int]]:"
        ),
        spec="""
            Each transaction is (date, amount) with date like '2024-03-05' (year-month-day).
            Return one (month, total) pair per month that has transactions, month written
            'YYYY-MM' and total the sum of its amounts, oldest month first.
        """,
        examples=[shown_example(rng, _monthly_example, hidden)],
        cases=hidden,
        source=_MONTHLY_SOURCE,
    )


# --------------------------------------------------------------------------- dept_summary

_DEPT_SOURCE = """
    def dept_summary(employees, departments):
        salaries = {}
        for name, dept_id, salary in employees:
            salaries.setdefault(departments[dept_id], []).append(salary)
        return [
            (dept, len(pay), round(sum(pay) / len(pay), 2))  #-bug
            (dept, len(pay), round(sum(pay) // len(pay), 2))  #+bug
            for dept, pay in sorted(salaries.items())
        ]
"""

_DEPARTMENTS = ("Engineering", "Sales", "Support", "Finance", "Legal", "Design")


def _dept(
    employees: list[tuple[str, str, int]], departments: dict[str, str], bug: bool = False
) -> list[tuple[str, int, float]]:
    pay: dict[str, list[int]] = {}
    for _name, dept_id, salary in employees:
        pay.setdefault(departments[dept_id], []).append(salary)
    return [
        (dept, len(p), float(sum(p) // len(p)) if bug else round(sum(p) / len(p), 2))
        for dept, p in sorted(pay.items())
    ]


def _dept_example(rng: random.Random) -> Case:
    """Three employees in two departments; the shared one's average is not whole."""
    ids = [f"D{k}" for k in rng.sample(range(1, 10), 2)]
    departments = dict(zip(ids, rng.sample(_DEPARTMENTS, 2), strict=True))
    one, two, three = rng.sample([n for n in FIRST_NAMES if len(n) <= 4], 3)
    pay = [rng.randint(30, 90) * 1000 for _ in range(3)]
    employees = [(one, ids[0], pay[0]), (two, ids[1], pay[1]), (three, ids[0], pay[2] + 1)]
    return Case(call("dept_summary", employees, departments), _dept(employees, departments))


def dept_summary(rng: random.Random) -> Parts:
    """Starter of `data_analysis.dept_summary`."""
    func = "dept_summary"
    args: list[tuple[list[tuple[str, str, int]], dict[str, str]]] = []
    for n_depts, n_people in ((1, 0), (1, 1), (2, 3), (2, 4), (3, 5), (3, 6)):
        ids = [f"D{k}" for k in rng.sample(range(10, 99), n_depts)]
        departments = dict(zip(ids, rng.sample(_DEPARTMENTS, n_depts), strict=True))
        people = rng.sample(FIRST_NAMES, n_people)
        employees = [(p, rng.choice(ids), rng.randint(300, 900) * 100) for p in people]
        if n_people >= 3:  # three in one department, total not divisible by 3
            employees = [(p, ids[0], s) for p, _d, s in employees[:3]] + employees[3:]
            if sum(s for _p, _d, s in employees[:3]) % 3 == 0:
                employees[0] = (employees[0][0], ids[0], employees[0][2] + 100)
        args.append((employees, departments))
    _separate(_dept, list(args), "data_analysis.dept_summary")
    hidden = [Case(call(func, e, d), _dept(e, d)) for e, d in args]
    return function_parts(
        func=func,
        signature=(
            "def dept_summary(employees: list[tuple[str, str, int]], departments: dict[str, str])"
            " -> list[tuple[str, int, float]]:"
        ),
        spec="""
            employees holds (name, dept_id, salary); departments maps dept_id to the
            department's name. Return one (department name, headcount, average salary
            rounded to 2 decimals) tuple per department that has employees, sorted by name.
        """,
        examples=[shown_example(rng, _dept_example, hidden)],
        cases=hidden,
        source=_DEPT_SOURCE,
        tol=1e-7,
    )
