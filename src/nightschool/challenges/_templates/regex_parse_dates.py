"""Template `regex_parse.dates`: the dates mentioned in a text.

A seed draws its task from a family (`variant`): what to report (the `list`
of distinct dates, the number of dates `per_month`, each date's `weekday`, the
`gaps` in days between consecutive dates), how to write dates in the output
(`o_iso` 2024-03-05, `o_text` 5 March 2024, `o_compact` 20240305) and the
order (`asc` oldest first, `desc` newest first). Twists on top: day-first
dates, month names, dates that do not exist.
"""

from __future__ import annotations

import datetime
import itertools
import random
import re
from functools import partial

from nightschool.challenges._templates._kit import (
    Parts,
    RenderError,
    TemplateBase,
    differs,
    files_setup,
    near_miss,
    prompt,
    select,
    stdout_validator,
    twists,
    variant,
)
from nightschool.challenges._templates.regex_parse_kit import separates
from nightschool.challenges._templates.starters import regex_parse as starters

WHAT = ("list", "per_month", "weekday", "gaps")
"""What to report: distinct dates, dates per month, dates with weekdays, gaps between dates."""
OUTPUTS = ("o_iso", "o_text", "o_compact")
"""How dates (and months) are written in the output."""
ORDERS = ("asc", "desc")
"""Oldest first or newest first."""

_SOLUTION = r"""
    import datetime  #+t3|weekday|gaps
    import re

    MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()  #+t2
    NAMED = (  #+t2
        r"\b(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"  #+t2
        r"|Sep(?:tember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?) (\d{1,2}), (\d{4})\b"  #+t2
    )  #+t2
    MONTH_NAMES = ("January February March April May June July August September October "  #+o_text
                   "November December").split()  #+o_text
    DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()  #+weekday
    NEWEST_FIRST = False  #+asc
    NEWEST_FIRST = True  #+desc


    def show(year, month, day):  #-per_month
        return f"{year:04d}-{month:02d}-{day:02d}"  #=!per_month&o_iso
        return f"{day} {MONTH_NAMES[month - 1]} {year}"  #=!per_month&o_text
        return f"{year:04d}{month:02d}{day:02d}"  #=!per_month&o_compact


    def show_month(year, month):  #+per_month
        return f"{year:04d}-{month:02d}"  #=per_month&o_iso
        return f"{MONTH_NAMES[month - 1]} {year}"  #=per_month&o_text
        return f"{year:04d}{month:02d}"  #=per_month&o_compact


    with open("notes.txt") as handle:
        text = handle.read()
    found = []
    for year, month, day in re.findall(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        found.append((int(year), int(month), int(day)))
    for day, month, year in re.findall(r"\b(\d{2})/(\d{2})/(\d{4})\b", text):  #+t1
        found.append((int(year), int(month), int(day)))  #+t1
    for name, day, year in re.findall(NAMED, text):  #+t2
        found.append((int(year), MONTHS.index(name[:3].lower()) + 1, int(day)))  #+t2
    distinct = []
    for ymd in found:
        try:  #+t3
            datetime.date(*ymd)  #+t3
        except ValueError:  #+t3
            continue  #+t3
        if ymd in distinct:  #-bug
            continue  #-bug
        distinct.append(ymd)
    dates = sorted(distinct, reverse=NEWEST_FIRST)
    for ymd in dates:  #+list
        print(show(*ymd))  #+list
    for ymd in dates:  #+weekday
        print(show(*ymd), DAYS[datetime.date(*ymd).weekday()])  #+weekday
    months = {}  #+per_month
    for year, month, _ in dates:  #+per_month
        months[year, month] = months.get((year, month), 0) + 1  #+per_month
    for year, month in months:  #+per_month
        print(show_month(year, month), months[year, month])  #+per_month
    for a, b in zip(dates, dates[1:]):  #+gaps
        days = abs((datetime.date(*b) - datetime.date(*a)).days)  #+gaps
        print(show(*a), show(*b), days)  #+gaps
"""

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")  # fmt: skip
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_CONTEXT = (
    "Invoice {n} is due on {d}.", "We met on {d} at the office", "Deadline moved to {d}",
    "Order #{n} shipped {d}, tracking pending", "Release {n} planned for {d}!",
)  # fmt: skip
_YMD = tuple[int, int, int]


def _show_date(rng: random.Random, y: int, m: int, d: int, level: int) -> str:
    styles = ["iso"] + (["dmy"] if level >= 1 else [])
    if level >= 2 and m <= 12:
        styles += ["long", "short"]
    style = rng.choice(styles)
    if style == "dmy":
        return f"{d:02d}/{m:02d}/{y:04d}"
    if style == "long":
        return f"{_MONTH_NAMES[m - 1]} {d}, {y}"
    if style == "short":
        return f"{_MONTH_NAMES[m - 1][:3]} {d}, {y}"
    return f"{y:04d}-{m:02d}-{d:02d}"


def _show(ymd: _YMD, features: set[str]) -> str:
    y, m, d = ymd
    if "o_text" in features:
        return f"{d} {_MONTH_NAMES[m - 1]} {y}"
    if "o_compact" in features:
        return f"{y:04d}{m:02d}{d:02d}"
    return f"{y:04d}-{m:02d}-{d:02d}"


def _show_month(y: int, m: int, features: set[str]) -> str:
    if "o_text" in features:
        return f"{_MONTH_NAMES[m - 1]} {y}"
    if "o_compact" in features:
        return f"{y:04d}{m:02d}"
    return f"{y:04d}-{m:02d}"


def _report(shown: list[tuple[str, _YMD]], features: set[str]) -> list[str]:
    """Expected output lines; shown: (text form, (y, m, d)) in file order.

    Raises:
        ValueError: where the program of `features` would crash on a date that
            does not exist (weekday and gaps without the invalid-date twist).
    """
    distinct: list[_YMD] = []
    for text, ymd in shown:
        if "/" in text and "t1" not in features:
            continue
        if text[0].isalpha() and "t2" not in features:
            continue
        if "t3" in features:
            try:
                datetime.date(*ymd)
            except ValueError:
                continue
        if ymd not in distinct or "bug" in features:
            distinct.append(ymd)
    dates = sorted(distinct, reverse="desc" in features)
    if "list" in features:
        return [_show(ymd, features) for ymd in dates]
    if "weekday" in features:
        return [f"{_show(ymd, features)} {_DAYS[datetime.date(*ymd).weekday()]}" for ymd in dates]
    if "per_month" in features:
        months: dict[tuple[int, int], int] = {}
        for y, m, _ in dates:
            months[y, m] = months.get((y, m), 0) + 1
        return [f"{_show_month(y, m, features)} {n}" for (y, m), n in months.items()]
    return [
        f"{_show(a, features)} {_show(b, features)} "
        f"{abs((datetime.date(*b) - datetime.date(*a)).days)}"
        for a, b in itertools.pairwise(dates)
    ]


_OUTPUTS = {
    "list": "print every distinct date once, one per line",
    "per_month": (
        "for every month that has dates, in that order, print one line `MONTH COUNT`: the "
        "month and the number of distinct dates in it"
    ),
    "weekday": (
        "print every distinct date once with its English weekday, one per line: `DATE WEEKDAY` "
        "(like `{date} Tuesday`)"
    ),
    "gaps": (
        "for every two dates next to each other in that order, print one line `DATE1 DATE2 DAYS`: "
        "the two distinct dates and the number of days between them (like `{first} {later} 6`)"
    ),
}
_FORMATS = {
    "o_iso": ("dates as `YYYY-MM-DD` (like `2024-03-05`)", "2024-03-05"),
    "o_text": ("dates as day, English month name, year (like `5 March 2024`)", "5 March 2024"),
    "o_compact": ("dates as `YYYYMMDD` (like `20240305`)", "20240305"),
}
_MONTH_FORMATS = {
    "o_iso": "months as `YYYY-MM` (like `2024-03`)",
    "o_text": "months as English month name and year (like `March 2024`)",
    "o_compact": "months as `YYYYMM` (like `202403`)",
}
_LATER = {"o_iso": "2024-03-11", "o_text": "11 March 2024", "o_compact": "20240311"}


def _output_text(tags: set[str]) -> str:
    what = next(w for w in WHAT if w in tags)
    out = next(o for o in OUTPUTS if o in tags)
    how, date = _FORMATS[out]
    order = "oldest first" if "asc" in tags else "newest first"
    first, later = (date, _LATER[out]) if "asc" in tags else (_LATER[out], date)
    task = _OUTPUTS[what].format(date=date, first=first, later=later)
    if what == "per_month":
        how = _MONTH_FORMATS[out]
    return f"Take the distinct dates, {order}; {task}. Write {how}."


def _tidy(source: str) -> str:
    """Squeeze the blank lines left where a helper function was selected away."""
    return re.sub(r"\n{4,}", "\n\n\n", source)


class Dates(TemplateBase):
    """Report the dates of a text; twists: day-first dates, month names, invalid dates."""

    name = "regex_parse.dates"
    cluster = "regex_parse"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.dates(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, WHAT, OUTPUTS, ORDERS)
        n = (6, 10, 14, 18)[level]
        ref, wrong = twists(level) | tags, near_miss(level) | tags
        for _attempt in range(100):
            shown: list[tuple[str, _YMD]] = []
            for i in range(n):
                ymd = (rng.randint(2019, 2025), rng.randint(1, 12), rng.randint(1, 28))
                shown.append((_show_date(rng, *ymd, level), ymd))
                if i < 2:  # the same date again, maybe in another form
                    shown.append((_show_date(rng, *ymd, level), ymd))
            if level >= 3:
                for bad in ((2023, 2, 30), (2024, 4, 31), (2023, 2, 29), (2022, 13, 1)):
                    shown.append((_show_date(rng, *bad, level), bad))
            rng.shuffle(shown)
            sentences = [
                rng.choice(_CONTEXT).format(n=rng.randint(100, 999), d=text) for text, _ in shown
            ]
            sentences.insert(
                rng.randrange(len(sentences)), f"Call 555-{rng.randint(1000, 9999)} or room 12/4"
            )
            report = partial(_report, shown)
            if differs(partial(report, ref), partial(report, wrong)) and separates(
                report, ref, WHAT, OUTPUTS, ORDERS
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task = "Find the dates mentioned in a text."
        inputs = "`notes.txt`: free text with dates written as `YYYY-MM-DD` (like `2024-03-05`)."
        rules = [
            "Dates may also be written day first as `DD/MM/YYYY` (`05/03/2024` is 2024-03-05); "
            "the same date in two forms is still one date.",
            "Dates may also be written with an English month name, full or its first three "
            "letters: `March 5, 2024` or `Mar 5, 2024`.",
            "Some dates do not exist (like 2023-02-30, `31/04/2024` or `Feb 29, 2023`): leave "
            "them out.",
        ]
        return Parts(
            prompt=prompt(task, inputs, _output_text(tags), rules, level),
            setup_script=files_setup({"notes.txt": "\n".join(sentences) + "\n"}),
            validation_script=stdout_validator(_report(shown, ref)),
            reference_solution=_tidy(select(_SOLUTION, ref)),
            wrong_solution=_tidy(select(_SOLUTION, wrong)),
        )
