"""Template `data_analysis.dept_summary`: a per-department salary summary over a join.

A seed draws its task from a family (`variant`): the salary statistic
(`average`, `median`, `highest`, `payroll` = total), the order of the lines
(`name`, `size` = headcount, `value` = the statistic) and the output file
(`csv`: `summary.csv`, comma-separated; `tsv`: `summary.tsv`, tab-separated).
"""

from __future__ import annotations

import random
from fractions import Fraction
from functools import partial

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    Parts,
    RenderError,
    TemplateBase,
    file_validator,
    files_setup,
    near_miss,
    prompt,
    select,
    twists,
    variant,
)
from nightschool.challenges._templates.data_analysis_family import separated
from nightschool.challenges._templates.starters import data_analysis as starters

STATS = ("average", "median", "highest", "payroll")
"""The salary statistic per department: mean, median, maximum, total."""
ORDERS = ("name", "size", "value")
"""Line order: by department name, by headcount, or by the statistic (both descending)."""
FORMATS = ("csv", "tsv")
"""The output file: `summary.csv` (commas) or `summary.tsv` (tabs)."""
AXES = (STATS, ORDERS, FORMATS)

COLUMNS = {
    "average": "avg_salary",
    "median": "median_salary",
    "highest": "max_salary",
    "payroll": "total_salary",
}
"""The statistic's column name."""

_SOLUTION = """
    import csv
    import statistics  #+median

    with open("departments.csv", newline="") as handle:
        names = {row["dept_id"]: row["dept_name"] for row in csv.DictReader(handle)}
    staff = {}
    staff = {name: [] for name in names.values()}  #+t1
    with open("employees.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            department = names[row["dept_id"]]  #-t2
            department = names.get(row["dept_id"], "UNKNOWN")  #+t2
            salary = int(row["salary"])  #-bug
            salary = int(row["salary"])  #=bug&!highest&!payroll
            salary = row["salary"]  #=bug&highest
            salary = float(row["salary"])  #=bug&payroll
            staff.setdefault(department, []).append((salary, row["name"]))
    rows = []
    for department, people in staff.items():
        pay = sorted(salary for salary, _name in people)
        value = sum(pay) / len(pay) if pay else 0  #=average&!bug
        value = sum(pay) // len(pay) if pay else 0  #=average&bug
        value = statistics.median(pay) if pay else 0  #=median&!bug
        value = pay[len(pay) // 2] if pay else 0  #=median&bug
        value = max(pay) if pay else 0  #+highest
        value = sum(pay)  #+payroll
        row = [department, len(pay), f"{value:.2f}"]  #+average|median
        row = [department, len(pay), value]  #+highest|payroll
        if people:  #+t3
            row.append(min(people, key=lambda p: (-p[0], p[1]))[1])  #+t3
        else:  #+t3
            row.append("-")  #+t3
        rows.append((row, value))
    rows.sort(key=lambda item: item[0][0])
    rows.sort(key=lambda item: item[0][1], reverse=True)  #+size
    rows.sort(key=lambda item: item[1], reverse=True)  #+value
    with open("summary.csv", "w", newline="") as out:  #+csv
        writer = csv.writer(out)  #+csv
    with open("summary.tsv", "w", newline="") as out:  #+tsv
        writer = csv.writer(out, delimiter="\\t")  #+tsv
        header = ["department", "headcount", "COLUMN"]
        header.append("top_earner")  #+t3
        writer.writerow(header)
        for row, _value in rows:
            writer.writerow(row)
"""

_DEPARTMENTS = ("Engineering", "Sales", "Support", "Finance", "Legal", "Design", "Research")

Employee = tuple[str, str, int]
"""(name, dept_id, salary)."""


def _stat(pay: list[int], features: set[str]) -> tuple[Fraction, str]:
    """The statistic of the sorted salaries `pay` and its text in the output."""
    bug = "bug" in features
    if not pay:
        value = Fraction(0)
    elif "average" in features:
        value = Fraction(sum(pay) // len(pay) if bug else Fraction(sum(pay), len(pay)))
    elif "median" in features:
        mid = len(pay) // 2
        even = len(pay) % 2 == 0 and not bug
        value = Fraction(pay[mid - 1] + pay[mid], 2) if even else Fraction(pay[mid])
    elif "highest" in features:
        text = max(map(str, pay)) if bug else str(max(pay))
        return Fraction(int(text)), text
    else:
        return Fraction(sum(pay)), f"{sum(pay)}.0" if bug else str(sum(pay))
    if features & {"average", "median"}:
        return value, f"{float(value):.2f}"
    return value, str(int(value))


def _dept(employees: list[Employee], depts: dict[str, str], features: set[str]) -> list[str]:
    """The expected lines of the output file."""
    staff: dict[str, list[tuple[int, str]]] = {}
    if "t1" in features:
        staff = {name: [] for name in depts.values()}
    for name, dept_id, salary in employees:
        if dept_id not in depts and "t2" not in features:
            raise KeyError(dept_id)
        staff.setdefault(depts.get(dept_id, "UNKNOWN"), []).append((salary, name))
    stat = next(s for s in STATS if s in features)
    rows = []
    for department, people in staff.items():
        value, text = _stat(sorted(s for s, _n in people), features)
        row = [department, str(len(people)), text]
        if "t3" in features:
            row.append(min(people, key=lambda p: (-p[0], p[1]))[1] if people else "-")
        rows.append((row, value, text))
    rows.sort(key=lambda item: item[0][0])
    if "size" in features:
        rows.sort(key=lambda item: int(item[0][1]), reverse=True)
    if "value" in features:  # the near-miss of `highest` compares salaries as text
        bug_text = "highest" in features and "bug" in features
        rows.sort(key=lambda item: item[2] if bug_text else item[1], reverse=True)
    sep = "," if "csv" in features else "\t"
    header = ["department", "headcount", COLUMNS[stat]] + ["top_earner"] * ("t3" in features)
    return [sep.join(header)] + [sep.join(row) for row, _v, _t in rows]


def _employees(rng: random.Random, level: int) -> tuple[list[Employee], dict[str, str]]:
    n_depts, n_people = (3, 4, 5, 6)[level], (10, 20, 30, 40)[level]
    ids = [f"D{k}" for k in rng.sample(range(10, 99), n_depts + 1)]
    depts = dict(zip(ids[:n_depts], rng.sample(_DEPARTMENTS, n_depts), strict=True))
    used = ids[: n_depts - 1] if level >= 1 else ids[:n_depts]  # the last one stays empty
    people = rng.sample(FIRST_NAMES, min(n_people, len(FIRST_NAMES)))
    people += [f"{p}2" for p in FIRST_NAMES[: n_people - len(people)]]
    employees = [
        (p, rng.choice(used), rng.randint(300, 1500) * 100 + rng.choice((0, 50, 25)))
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
    return employees, depts


_TASKS = {
    "average": "the average salary",
    "median": "the median salary (for an even headcount, the mean of the two middle salaries)",
    "highest": "the highest salary",
    "payroll": "the total payroll (the sum of the salaries)",
}


def _texts(tags: set[str]) -> tuple[str, str, list[str]]:
    """The task, output and rule texts of the drawn variant."""
    stat = next(s for s in STATS if s in tags)
    column = COLUMNS[stat]
    task = f"Summarise employees by department: headcount and {_TASKS[stat]}."
    example = "51233.33" if stat in ("average", "median") else "154000"
    value = "with 2 decimals" if stat in ("average", "median") else "as a whole number"
    sep, file = (",", "summary.csv") if "csv" in tags else ("<TAB>", "summary.tsv")
    kind = "comma-separated" if "csv" in tags else "tab-separated (`<TAB>` is a tab)"
    order = {
        "name": "sorted by department name",
        "size": "most employees first, equal headcounts by department name",
        "value": f"highest {column} first, equal values by department name",
    }[next(o for o in ORDERS if o in tags)]
    output = (
        f"write `{file}`, {kind}, with the header line `department{sep}headcount{sep}"
        f"{column}`, then one line per department that has employees: its dept_name, the "
        f"number of employees and the {column} {value} (like `Sales{sep}3{sep}{example}`), "
        f"{order}."
    )
    rules = [
        f"Also list departments without employees, with headcount 0 and {column} "
        + ("`0.00`." if stat in ("average", "median") else "`0`."),
        "Some employees have a dept_id that is not in `departments.csv`: count them under "
        "the department name `UNKNOWN` (sorted like any other name).",
        f"Add a column `top_earner` (header `department{sep}headcount{sep}{column}{sep}"
        "top_earner`): the name of the best-paid employee, the alphabetically first name on "
        "a tie, or `-` for a department without employees.",
    ]
    return task, output, rules


class DeptSummary(TemplateBase):
    """Join employees to departments; twists: empty departments, unknown ids, top earner."""

    name = "data_analysis.dept_summary"
    cluster = "data_analysis"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.dept_summary(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref, wrong = tags | twists(level), tags | near_miss(level)
        for _attempt in range(100):
            employees, depts = _employees(rng, level)
            if separated(partial(_dept, employees, depts), ref, wrong, (STATS, ORDERS)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        files = {
            "departments.csv": "dept_id,dept_name\n"
            + "".join(f"{k},{v}\n" for k, v in depts.items()),
            "employees.csv": "id,name,dept_id,salary\n"
            + "".join(f"{i + 1},{p},{d},{s}\n" for i, (p, d, s) in enumerate(employees)),
        }
        task, output, rules = _texts(tags)
        inputs = """
            `employees.csv` with the header `id,name,dept_id,salary` (salary a whole number)
            and `departments.csv` with the header `dept_id,dept_name`.
        """
        stat = next(s for s in STATS if s in tags)
        source = _SOLUTION.replace("COLUMN", COLUMNS[stat])
        file = "summary.csv" if "csv" in tags else "summary.tsv"
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(files),
            validation_script=file_validator(file, _dept(employees, depts, ref)),
            reference_solution=select(source, ref),
            wrong_solution=select(source, wrong),
        )
