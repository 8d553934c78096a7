"""Cluster `data_analysis`: CSV aggregation by group, by month, and over a join."""

from __future__ import annotations

import random
from collections import defaultdict
from functools import partial

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    Parts,
    RenderError,
    TemplateBase,
    differs,
    file_validator,
    files_setup,
    near_miss,
    prompt,
    select,
    stdout_validator,
    twists,
)
from nightschool.challenges._templates.starters import data_analysis as starters

# --------------------------------------------------------------------------- region_sales

_SALES_SOLUTION = """
    import csv

    revenue = {}
    units_by = {}  #+t3
    skipped = 0  #+t1
    with open("sales.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            region = row["region"]
            region = row["region"].strip().lower()  #+t2
            try:  #+t1
                units, price = int(row["units"]), float(row["price"])  #+t1
            except ValueError:  #+t1
                skipped += 1  #+t1
                continue  #+t1
            units, price = int(row["units"]), float(row["price"])  #-t1
            revenue[region] = revenue.get(region, 0) + units * price  #-bug
            revenue[region] = revenue.get(region, 0) + price  #+bug
            counts = units_by.setdefault(region, {})  #+t3
            counts[row["product"]] = counts.get(row["product"], 0) + units  #+t3
    for region, total in sorted(revenue.items(), key=lambda item: (-item[1], item[0])):
        print(f"{region},{total:.2f}")  #-t3
        counts = units_by[region]  #+t3
        top = min(counts, key=lambda product: (-counts[product], product))  #+t3
        print(f"{region},{total:.2f},{top}")  #+t3
    print(f"skipped,{skipped}")  #+t1
"""

_REGIONS = ("north", "south", "east", "west", "central", "coast")
_PRODUCTS = ("widget", "gadget", "sprocket", "gizmo", "doohickey", "bracket")


def _sales(rows: list[list[str]], features: set[str]) -> list[str]:
    revenue: dict[str, int] = defaultdict(int)
    units_by: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    skipped = 0
    for _date, raw_region, product, units, price in rows:
        region = raw_region.strip().lower() if "t2" in features else raw_region
        if not (units.isdigit() and price.replace(".", "", 1).isdigit()):
            if "t1" not in features:
                raise ValueError(units)
            skipped += 1
            continue
        cents = round(float(price) * 100)
        revenue[region] += cents if "bug" in features else int(units) * cents
        units_by[region][product] += int(units)
    lines = []
    for region, total in sorted(revenue.items(), key=lambda item: (-item[1], item[0])):
        line = f"{region},{total / 100:.2f}"
        if "t3" in features:
            counts = units_by[region]
            line += "," + min(counts, key=lambda p: (-counts[p], p))
        lines.append(line)
    if "t1" in features:
        lines.append(f"skipped,{skipped}")
    return lines


class RegionSales(TemplateBase):
    """Revenue by region; twists: bad rows, messy region names, top product column."""

    name = "data_analysis.region_sales"
    cluster = "data_analysis"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.region_sales(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (15, 40, 70, 100)[level]
        ref, wrong = twists(level), near_miss(level)
        regions = rng.sample(_REGIONS, (3, 4, 5, 6)[level])
        for _attempt in range(100):
            rows = []
            for i in range(n):
                region = rng.choice(regions)
                if level >= 2 and rng.random() < 0.4:
                    region = rng.choice((region.upper(), f" {region}", region.capitalize() + " "))
                units, price = str(rng.randint(1, 20)), f"{rng.randint(50, 2500) / 100:.2f}"
                if level >= 1 and (i == n // 2 or rng.random() < 0.08):
                    units, price = rng.choice(((units, "n/a"), ("", price), ("three", price)))
                date = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                rows.append([date, region, rng.choice(_PRODUCTS), units, price])
            if level >= 3:  # a tie for the top product in the first region
                region = regions[0]
                rows += [["2024-06-01", region, p, "500", "1.00"] for p in ("gizmo", "bracket")]
                rng.shuffle(rows)
            totals = [line.split(",")[1] for line in _sales(rows, ref) if line[:8] != "skipped,"]
            if len(set(totals)) < len(totals):
                continue  # equal totals would hinge on float rounding
            if differs(partial(_sales, rows, ref), partial(_sales, rows, wrong)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        text = "date,region,product,units,price\n" + "".join(",".join(r) + "\n" for r in rows)
        task = """
            Total the revenue of each sales region. The revenue of a row is units * price.
        """
        inputs = """
            `sales.csv` with the header `date,region,product,units,price` (units an integer,
            price a decimal number such as `4.25`).
        """
        output = """
            print one line per region as `REGION,TOTAL` with TOTAL the region's revenue with 2
            decimals (like `north,1234.50`), highest revenue first; equal totals by region name.
        """
        rules = [
            "Some rows are broken: units or price is empty or not a number (like `n/a`). Skip "
            "those rows, and after the regions print one more line `skipped,N` with the number "
            "of skipped rows.",
            "Region names are messy: ignore surrounding spaces and letter case (` North`, "
            "`NORTH` and `north` are one region), and print them in lowercase.",
            "Add a third column, the region's best-selling product by total units: "
            "`REGION,TOTAL,PRODUCT`. If products tie on units, take the alphabetically first.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"sales.csv": text}),
            validation_script=stdout_validator(_sales(rows, ref)),
            reference_solution=select(_SALES_SOLUTION, ref),
            wrong_solution=select(_SALES_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- monthly_totals

_MONTHLY_SOLUTION = """
    import csv

    totals = {}
    with open("transactions.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            date = row["date"]
            if "/" in date:  #+t2
                day, month, year = date.split("/")  #+t2
                date = f"{year}-{month}-{day}"  #+t2
            month = date[:7]
            amount = int(row["amount"])
            if row["category"] == "refund":  #+t1
                amount = -amount  #+t1
            totals[month] = totals.get(month, 0) + amount
    if totals:  #+t3
        year, month = map(int, min(totals).split("-"))  #+t3
        while f"{year:04d}-{month:02d}" < max(totals):  #+t3
            totals.setdefault(f"{year:04d}-{month:02d}", 0)  #+t3
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)  #+t3
    for month in sorted(totals):  #-bug
    for month in totals:  #+bug
        print(month, totals[month])
"""

_CATEGORIES = ("food", "rent", "travel", "books", "tools")


def _monthly(rows: list[tuple[str, str, int, str]], features: set[str]) -> list[str]:
    """rows: (iso date, shown date, amount, category)."""
    totals: dict[str, int] = {}
    for iso, shown, amount, category in rows:
        if "/" in shown and "t2" not in features:
            raise ValueError(shown)
        sign = -1 if "t1" in features and category == "refund" else 1
        totals[iso[:7]] = totals.get(iso[:7], 0) + sign * amount
    if "t3" in features:
        year, month = map(int, min(totals).split("-"))
        while f"{year:04d}-{month:02d}" < max(totals):
            totals.setdefault(f"{year:04d}-{month:02d}", 0)
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    months = list(totals) if "bug" in features else sorted(totals)
    return [f"{m} {totals[m]}" for m in months]


class MonthlyTotals(TemplateBase):
    """Totals per calendar month; twists: refunds, a second date format, empty months."""

    name = "data_analysis.monthly_totals"
    cluster = "data_analysis"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.monthly_totals(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (14, 30, 50, 80)[level]
        ref, wrong = twists(level), near_miss(level)
        start_year, start_month = rng.choice((2022, 2023)), rng.randint(1, 12)
        span = (4, 6, 9, 14)[level]
        months = [
            (start_year + (start_month - 1 + k) // 12, (start_month - 1 + k) % 12 + 1)
            for k in range(span)
        ]
        if level >= 3:  # an empty month inside the range
            del months[rng.randrange(1, span - 1)]
        for _attempt in range(100):
            rows = []
            for i in range(n):
                year, month = months[i] if i < len(months) else rng.choice(months)
                day = rng.randint(1, 28)
                iso = f"{year:04d}-{month:02d}-{day:02d}"
                shown = iso
                if level >= 2 and rng.random() < 0.4:
                    shown = f"{day:02d}/{month:02d}/{year:04d}"
                category = rng.choice(_CATEGORIES)
                if level >= 1 and (i == 1 or rng.random() < 0.15):
                    category = "refund"
                rows.append((iso, shown, rng.randint(5, 900), category))
            rng.shuffle(rows)
            if differs(partial(_monthly, rows, ref), partial(_monthly, rows, wrong)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        text = "id,date,category,amount\n" + "".join(
            f"{i + 1},{shown},{category},{amount}\n"
            for i, (_iso, shown, amount, category) in enumerate(rows)
        )
        task = "Total the transactions of each calendar month."
        inputs = """
            `transactions.csv` with the header `id,date,category,amount`; dates look like
            `2024-03-05` (year-month-day); amounts are whole numbers.
        """
        output = """
            print one line per month that has transactions, as `YYYY-MM TOTAL` (like
            `2024-03 1250`), in calendar order, oldest first.
        """
        rules = [
            "Rows with category `refund` are money coming back: subtract their amount instead "
            "of adding it (totals can be negative).",
            "Some dates are written day first as `DD/MM/YYYY` (`05/03/2024` is 5 March 2024).",
            "Also list every month between the first and the last month that has no "
            "transactions, with total 0.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"transactions.csv": text}),
            validation_script=stdout_validator(_monthly(rows, ref)),
            reference_solution=select(_MONTHLY_SOLUTION, ref),
            wrong_solution=select(_MONTHLY_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- dept_summary

_DEPT_SOLUTION = """
    import csv

    with open("departments.csv", newline="") as handle:
        names = {row["dept_id"]: row["dept_name"] for row in csv.DictReader(handle)}
    salaries = {}
    salaries = {name: [] for name in names.values()}  #+t1
    with open("employees.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            department = names[row["dept_id"]]  #-t2
            department = names.get(row["dept_id"], "UNKNOWN")  #+t2
            salaries.setdefault(department, []).append((int(row["salary"]), row["name"]))
    with open("summary.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["department", "headcount", "avg_salary"])  #-t3
        writer.writerow(["department", "headcount", "avg_salary", "top_earner"])  #+t3
        for department in sorted(salaries):
            people = salaries[department]
            average = sum(s for s, _ in people) / len(people) if people else 0  #-bug
            average = sum(s for s, _ in people) // len(people) if people else 0  #+bug
            row = [department, len(people), f"{average:.2f}"]
            if people:  #+t3
                row.append(min(people, key=lambda p: (-p[0], p[1]))[1])  #+t3
            else:  #+t3
                row.append("-")  #+t3
            writer.writerow(row)
"""

_DEPARTMENTS = ("Engineering", "Sales", "Support", "Finance", "Legal", "Design", "Research")


def _dept(
    employees: list[tuple[str, str, int]], depts: dict[str, str], features: set[str]
) -> list[str]:
    groups: dict[str, list[tuple[int, str]]] = {}
    if "t1" in features:
        groups = {name: [] for name in depts.values()}
    for name, dept_id, salary in employees:
        if dept_id not in depts and "t2" not in features:
            raise KeyError(dept_id)
        groups.setdefault(depts.get(dept_id, "UNKNOWN"), []).append((salary, name))
    header = "department,headcount,avg_salary" + (",top_earner" if "t3" in features else "")
    lines = [header]
    for department in sorted(groups):
        people = groups[department]
        total = sum(s for s, _ in people)
        average = (
            (total // len(people) if "bug" in features else total / len(people)) if people else 0
        )
        line = f"{department},{len(people)},{average:.2f}"
        if "t3" in features:
            line += "," + (min(people, key=lambda p: (-p[0], p[1]))[1] if people else "-")
        lines.append(line)
    return lines


class DeptSummary(TemplateBase):
    """Join employees to departments; twists: empty departments, unknown ids, top earner."""

    name = "data_analysis.dept_summary"
    cluster = "data_analysis"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.dept_summary(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n_depts, n_people = (3, 4, 5, 6)[level], (10, 20, 30, 40)[level]
        ref, wrong = twists(level), near_miss(level)
        for _attempt in range(100):
            ids = [f"D{k}" for k in rng.sample(range(10, 99), n_depts + 1)]
            depts = dict(zip(ids[:n_depts], rng.sample(_DEPARTMENTS, n_depts), strict=True))
            used = ids[: n_depts - 1] if level >= 1 else ids[:n_depts]  # last one stays empty
            people = rng.sample(FIRST_NAMES, min(n_people, len(FIRST_NAMES)))
            people += [f"{p}2" for p in FIRST_NAMES[: n_people - len(people)]]
            employees = [
                (p, rng.choice(used), rng.randint(300, 900) * 100 + rng.choice((0, 50, 25)))
                for p in people
            ]
            if level >= 2:  # people whose department id is not in departments.csv
                for i in rng.sample(range(n_people), 2):
                    employees[i] = (employees[i][0], ids[n_depts], employees[i][2])
            if level >= 3:  # a tie for the top salary
                top = max(e[2] for e in employees if e[1] == used[0])
                employees.append(("aaron", used[0], top))
                employees.append(("zoe", used[0], top))
                rng.shuffle(employees)
            if differs(
                partial(_dept, employees, depts, ref), partial(_dept, employees, depts, wrong)
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        files = {
            "departments.csv": "dept_id,dept_name\n"
            + "".join(f"{k},{v}\n" for k, v in depts.items()),
            "employees.csv": "id,name,dept_id,salary\n"
            + "".join(f"{i + 1},{p},{d},{s}\n" for i, (p, d, s) in enumerate(employees)),
        }
        task = "Summarise employees by department."
        inputs = """
            `employees.csv` with the header `id,name,dept_id,salary` (salary a whole number)
            and `departments.csv` with the header `dept_id,dept_name`.
        """
        output = """
            write `summary.csv` with the header line `department,headcount,avg_salary`, then one
            line per department that has employees: its dept_name, the number of employees and
            their average salary with 2 decimals (like `Sales,3,51233.33`), sorted by
            department name.
        """
        rules = [
            "Also list departments without employees, with headcount 0 and avg_salary `0.00`.",
            "Some employees have a dept_id that is not in `departments.csv`: count them under "
            "the department name `UNKNOWN` (sorted like any other name).",
            "Add a column `top_earner` (header `department,headcount,avg_salary,top_earner`): "
            "the name of the best-paid employee, the alphabetically first name on a tie, or `-` "
            "for a department without employees.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(files),
            validation_script=file_validator("summary.csv", _dept(employees, depts, ref)),
            reference_solution=select(_DEPT_SOLUTION, ref),
            wrong_solution=select(_DEPT_SOLUTION, wrong),
        )


TEMPLATES = (RegionSales(), MonthlyTotals(), DeptSummary())
