"""Starter of `regex_parse.dates`: one function over a text with dates.

The family (`variant`): what the function returns (`list` of distinct dates,
distinct dates `per_month`, the `span` in days from the earliest to the latest
date, the `weekdays` of the dates) and how the text writes dates (`iso`
YYYY-MM-DD, `dmy` DD/MM/YYYY, `mdy` MM/DD/YYYY, `dot` DD.MM.YYYY).
"""

from __future__ import annotations

import datetime
import random
import re
from functools import partial

from nightschool.challenges._templates._kit import (
    Case,
    Parts,
    RenderError,
    call,
    differs,
    function_parts,
    shown_example,
    variant,
)
from nightschool.challenges._templates.regex_parse_kit import separates

WHAT = ("list", "per_month", "span", "weekdays")
"""What the function returns."""
FORMS = ("iso", "dmy", "mdy", "dot")
"""How the text writes dates."""

_SOURCE = r"""
    import datetime  #+span|weekdays
    import re

    PATTERN = r"\b(\d{4})-(\d{2})-(\d{2})\b"  #+iso
    PATTERN = r"\b(\d{2})/(\d{2})/(\d{4})\b"  #+dmy|mdy
    PATTERN = r"\b(\d{2})\.(\d{2})\.(\d{4})\b"  #+dot
    NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")  #=weekdays&!bug
    NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")  #=weekdays&bug


    def find_dates(text):  #+list
    def dates_per_month(text):  #+per_month
    def date_span_days(text):  #+span
    def weekdays_of_dates(text):  #+weekdays
        found = []
        for a, b, c in re.findall(PATTERN, text):
            found.append(f"{a}-{b}-{c}")  #+iso
            found.append(f"{c}-{b}-{a}")  #+dmy|dot
            found.append(f"{c}-{a}-{b}")  #+mdy
        dates = list(dict.fromkeys(found))
        return sorted(dates)  #=list&!bug
        return dates  #=list&bug
        months = {}  #+per_month
        for date in dates:  #=per_month&!bug
        for date in found:  #=per_month&bug
            months[date[:7]] = months.get(date[:7], 0) + 1  #+per_month
        return months  #+per_month
        days = [datetime.date.fromisoformat(date) for date in dates]  #+span|weekdays
        if not days:  #+span
            return 0  #+span
        return (max(days) - min(days)).days  #=span&!bug
        return (days[-1] - days[0]).days  #=span&bug
        return {day.isoformat(): NAMES[day.weekday()] for day in days}  #+weekdays
"""

_NAMES = {
    "list": "find_dates",
    "per_month": "dates_per_month",
    "span": "date_span_days",
    "weekdays": "weekdays_of_dates",
}
_RETURNS = {"list": "list[str]", "per_month": "dict[str, int]", "span": "int",
            "weekdays": "dict[str, str]"}  # fmt: skip
_PATTERNS = {
    "iso": re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"),
    "dmy": re.compile(r"\b(\d{2})/(\d{2})/(\d{4})\b"),
    "mdy": re.compile(r"\b(\d{2})/(\d{2})/(\d{4})\b"),
    "dot": re.compile(r"\b(\d{2})\.(\d{2})\.(\d{4})\b"),
}
_FORM_SPECS = {
    "iso": "Dates in text are written YYYY-MM-DD (like 2024-03-05).",
    "dmy": "Dates in text are written day first, DD/MM/YYYY (05/03/2024 is 2024-03-05).",
    "mdy": "Dates in text are written month first, MM/DD/YYYY (03/05/2024 is 2024-03-05).",
    "dot": "Dates in text are written DD.MM.YYYY (05.03.2024 is 2024-03-05).",
}
_RESULTS = {
    "list": "Return every distinct date once as 'YYYY-MM-DD', oldest first.",
    "per_month": "Return {'YYYY-MM': number of distinct dates in that month}.",
    "span": "Return the number of days from the earliest to the latest date (0 if none).",
    "weekdays": "Return {'YYYY-MM-DD': its English weekday, like 'Tuesday'} for every date.",
}
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_CONTEXT = ("Invoice {n} is due on {d}.", "We met on {d} at the office", "Deadline moved to {d}",
            "Order #{n} shipped {d}", "Release {n} planned for {d}!")  # fmt: skip


def _result(text: str, tags: set[str]) -> object:
    """What the function of task `tags` returns for `text` (the near-miss with `bug`).

    Raises:
        ValueError: where that function would crash (a misread date that does not exist).
    """
    form = next(f for f in FORMS if f in tags)
    found = []
    for a, b, c in _PATTERNS[form].findall(text):
        found.append({"iso": f"{a}-{b}-{c}", "mdy": f"{c}-{a}-{b}"}.get(form, f"{c}-{b}-{a}"))
    dates = list(dict.fromkeys(found))
    bug = "bug" in tags
    if "list" in tags:
        return dates if bug else sorted(dates)
    if "per_month" in tags:
        months: dict[str, int] = {}
        for date in found if bug else dates:
            months[date[:7]] = months.get(date[:7], 0) + 1
        return months
    days = [datetime.date.fromisoformat(date) for date in dates]
    if "span" in tags:
        if not days:
            return 0
        return (days[-1] - days[0]).days if bug else (max(days) - min(days)).days
    shift = 1 if bug else 0
    return {day.isoformat(): _DAYS[(day.weekday() + shift) % 7] for day in days}


def _write(form: str, iso: str) -> str:
    y, m, d = iso.split("-")
    return {"iso": iso, "dmy": f"{d}/{m}/{y}", "mdy": f"{m}/{d}/{y}", "dot": f"{d}.{m}.{y}"}[form]


def _iso(rng: random.Random) -> str:
    return f"{rng.randint(2019, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _notes(rng: random.Random, form: str, n: int) -> str:
    dates = [_iso(rng) for _ in range(n)]
    if n >= 2:
        dates.sort(reverse=True)  # the newest first, so the order needs fixing
        dates.append(dates[0])
        if rng.random() < 0.5:  # another date in the same month
            dates.insert(1, dates[0][:8] + f"{29 - int(dates[0][8:]):02d}")
    lines = [rng.choice(_CONTEXT).format(n=rng.randint(100, 999), d=_write(form, d)) for d in dates]
    lines.insert(rng.randrange(len(lines) + 1), f"Call 555-{rng.randint(1000, 9999)}, room 12/4")
    return "\n".join(lines) + "\n"


def _example(rng: random.Random, tags: set[str], func: str) -> Case:
    """A newer date, an older one, then the newer one again next to a phone number."""
    form = next(f for f in FORMS if f in tags)
    drawn = {_iso(rng)}
    while len(drawn) < 2:
        drawn.add(_iso(rng))
    old, new = (_write(form, d) for d in sorted(drawn))
    text = f"Due {new}, paid {old}.\nCall 555-{rng.randint(1000, 9999)} on {new}"
    return Case(call(func, text), _result(text, tags))


def dates(rng: random.Random) -> Parts:
    """Starter of `regex_parse.dates`.

    Raises:
        RenderError: if no drawn texts separate the task from its near-miss and
            from the other ways of writing dates.
    """
    tags = variant(rng, WHAT, FORMS)
    what = next(w for w in WHAT if w in tags)
    form = next(f for f in FORMS if f in tags)
    func = _NAMES[what]
    for _attempt in range(50):
        texts = ["nothing to see", *(_notes(rng, form, n) for n in (1, 2, 3, 4, 5))]

        def results(features: set[str], texts: list[str] = texts) -> list[object]:
            return [_result(t, features) for t in texts]

        if differs(partial(results, tags), partial(results, tags | {"bug"})) and separates(
            results, tags, FORMS
        ):
            break
    else:
        raise RenderError("regex_parse.dates: starter cases do not separate the task")
    hidden = [Case(call(func, t), _result(t, tags)) for t in texts]
    spec = f"""
        {_FORM_SPECS[form]}
        Other numbers (phone numbers, room numbers) are not dates.
        {_RESULTS[what]}
    """
    return function_parts(
        func=func,
        signature=f"def {func}(text: str) -> {_RETURNS[what]}:",
        spec=spec,
        examples=[shown_example(rng, partial(_example, tags=tags, func=func), hidden)],
        cases=hidden,
        source=_SOURCE,
        features=tags,
    )
