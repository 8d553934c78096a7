"""Cluster `regex_parse`: log-line parsing, e-mail extraction, date extraction."""

from __future__ import annotations

import datetime
import random
import re
from functools import partial

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    WORDS,
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
)
from nightschool.challenges._templates.starters import regex_parse as starters

# --------------------------------------------------------------------------- error_lines

_ERROR_SOLUTION = r"""
    import re

    ENTRY = re.compile(r"^\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d) (\w+) \[(\w+)\] (.*)$")
    with open("window.txt") as handle:  #+t3
        start, end = handle.read().split()  #+t3
    entries = []
    with open("app.log") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line[:1].isspace() and entries:  #+t2
                entries[-1][-1] += 1  #+t2
                continue  #+t2
            match = ENTRY.match(line)
            if match:
                entries.append([line, *match.groups(), 0])
    for line, time, level, module, message, extra in entries:
        if level != "ERROR":  #-t1|bug
        if level.upper() != "ERROR":  #+t1
        if "ERROR" not in line:  #+bug
            continue
        if not start <= time <= end:  #+t3
            continue  #+t3
        if extra:  #+t2
            message += f" (+{extra} lines)"  #+t2
        print(time, module, message)
"""

_MODULES = ("db", "auth", "cache", "api", "queue", "mailer")
_MESSAGES = (
    "connection lost", "timeout after 30s", "user not found", "disk almost full",
    "retrying request", "cache miss for key", "job finished", "slow query detected",
)  # fmt: skip


def _errors(
    entries: list[tuple[str, str, str, str, int]], window: tuple[str, str], features: set[str]
) -> list[str]:
    """entries: (time, level, module, message, continuation lines)."""
    out = []
    for time, level, module, message, extra in entries:
        if "bug" in features:
            if "ERROR" not in f"{level} [{module}] {message}":
                continue
        elif (level.upper() if "t1" in features else level) != "ERROR":
            continue
        if "t3" in features and not window[0] <= time <= window[1]:
            continue
        suffix = f" (+{extra} lines)" if "t2" in features and extra else ""
        out.append(f"{time} {module} {message}{suffix}")
    return out


class ErrorLines(TemplateBase):
    """Pick ERROR entries from a log; twists: any-case levels, continuation lines, a time window."""

    name = "regex_parse.error_lines"
    cluster = "regex_parse"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.error_lines(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (12, 25, 40, 60)[level]
        ref, wrong = twists(level), near_miss(level)
        for _attempt in range(100):
            entries: list[tuple[str, str, str, str, int]] = []
            lines: list[str] = []
            seconds = 9 * 3600 + rng.randint(0, 3000)
            for i in range(n):
                seconds += rng.randint(5, 200)
                time = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
                level_name = rng.choice(("INFO", "INFO", "DEBUG", "WARN", "ERROR", "ERROR"))
                if level >= 1 and level_name == "ERROR" and (i % 3 == 0):
                    level_name = rng.choice(("error", "Error"))
                message = rng.choice(_MESSAGES)
                if i == 1:  # not an error, but mentions one
                    level_name, message = "INFO", "recovered from ERROR state"
                module = rng.choice(_MODULES)
                extra = 0
                if level >= 2 and rng.random() < 0.3:
                    extra = rng.randint(1, 3)
                entries.append((time, level_name, module, message, extra))
                lines.append(f"2024-05-0{1 + level} {time} {level_name} [{module}] {message}")
                for k in range(extra):
                    lines.append(f'    File "{module}.py", line {rng.randint(10, 400)}, in step{k}')
            window = (entries[n // 4][0], entries[3 * n // 4][0])
            if differs(
                partial(_errors, entries, window, ref),
                partial(_errors, entries, window, wrong),
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        files = {"app.log": "\n".join(lines) + "\n"}
        if level >= 3:
            files["window.txt"] = f"{window[0]} {window[1]}\n"
        task = "Find the errors in an application log."
        inputs = """
            `app.log`, one entry per line: `DATE TIME LEVEL [MODULE] MESSAGE`, for example
            `2024-05-01 09:14:03 ERROR [db] connection lost`. LEVEL is one word (INFO, DEBUG,
            WARN, ERROR); the message may contain any text, including the word ERROR.
        """
        output = """
            for every entry whose LEVEL is ERROR, in file order, print `TIME MODULE MESSAGE`
            (for example `09:14:03 db connection lost`). Entries of other levels are left out
            even when their message mentions ERROR.
        """
        rules = [
            "The level may be written in any case: `error` and `Error` are ERROR too.",
            "Lines that start with whitespace continue the entry above them (a stack trace). "
            "When an ERROR entry has N such lines, append ` (+N lines)` to its output line, for "
            "example `09:14:03 db connection lost (+2 lines)`.",
            "`window.txt` holds two times `START END` (HH:MM:SS): print only ERROR entries whose "
            "time is between them, both included.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(files),
            validation_script=stdout_validator(_errors(entries, window, ref)),
            reference_solution=select(_ERROR_SOLUTION, ref),
            wrong_solution=select(_ERROR_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- emails

_EMAIL_SOLUTION = r"""
    import re

    with open("contacts.txt") as handle:
        text = handle.read()
    SIMPLE = r"\S+@\S+"  #-t2
    STRICT = r"[A-Za-z0-9._+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}"  #+t2
    found = re.findall(SIMPLE, text)  #-t2
    found = re.findall(STRICT, text)  #+t2
    HIDDEN = r"([A-Za-z0-9._+-]+) \[at\] ([A-Za-z0-9-]+(?: \[dot\] [A-Za-z0-9-]+)+)"  #+t3
    for user, domain in re.findall(HIDDEN, text):  #+t3
        found.append(user + "@" + domain.replace(" [dot] ", "."))  #+t3
    found = [address.lower() for address in found]  #+t1
    for address in sorted(set(found)):  #-bug
    for address in sorted(found):  #+bug
        print(address)
"""

_SIMPLE = re.compile(r"\S+@\S+")
_STRICT = re.compile(r"[A-Za-z0-9._+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}")
_HIDDEN = re.compile(r"([A-Za-z0-9._+-]+) \[at\] ([A-Za-z0-9-]+(?: \[dot\] [A-Za-z0-9-]+)+)")
_DOMAINS = ("example.com", "mail.example.org", "uni.edu", "shop.co.uk", "post-box.net")
_SENTENCES = (
    "Please write to {} about the invoice",
    "cc {} and the team",
    "The new contact is {} from Monday",
    "Questions? {} answers them",
    "forwarded by {} yesterday",
)  # fmt: skip
_WRAPS = ("{}.", "{},", "<{}>", "({})", "{};", "{}!")


def _emails(text: str, features: set[str]) -> list[str]:
    found = (_STRICT if "t2" in features else _SIMPLE).findall(text)
    if "t3" in features:
        found += [u + "@" + d.replace(" [dot] ", ".") for u, d in _HIDDEN.findall(text)]
    if "t1" in features:
        found = [address.lower() for address in found]
    return sorted(found) if "bug" in features else sorted(set(found))


class Emails(TemplateBase):
    """Extract e-mail addresses; twists: case folding, surrounding punctuation, obfuscated forms."""

    name = "regex_parse.emails"
    cluster = "regex_parse"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.emails(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (6, 10, 14, 18)[level]
        ref, wrong = twists(level), near_miss(level)
        for _attempt in range(100):
            truth, lines = set(), []
            people = rng.sample(FIRST_NAMES, n)
            for i, person in enumerate(people):
                local = rng.choice(
                    (person, f"{person}.{rng.choice(WORDS)}", f"{person}{rng.randint(1, 99)}")
                )
                if level >= 2 and rng.random() < 0.3:
                    local = rng.choice(
                        (f"{person}+news", f"{person}_{rng.choice(WORDS)}", f"{person}-x")
                    )
                domain = rng.choice(_DOMAINS)
                truth.add(f"{local}@{domain}")
                repeats = 2 if i < 2 else 1
                for _ in range(repeats):
                    shown = f"{local}@{domain}"
                    if level >= 1 and rng.random() < 0.5:
                        shown = rng.choice((shown.upper(), shown.capitalize()))
                    if level >= 3 and rng.random() < 0.3:
                        shown = f"{local} [at] {domain.replace('.', ' [dot] ')}"
                    elif level >= 2 and rng.random() < 0.6:
                        shown = rng.choice(_WRAPS).format(shown)
                    lines.append(rng.choice(_SENTENCES).format(shown))
            lines += [
                f"Meeting at {rng.randint(1, 12)}pm in room {rng.choice(WORDS)}",
                "no address here",
            ]
            if level >= 2:
                lines.append("the @ sign alone, or user@localhost, is not an address")
            rng.shuffle(lines)
            text = "\n".join(lines) + "\n"
            if _emails(text, ref) != sorted(a.lower() if level >= 1 else a for a in truth):
                continue
            if differs(partial(_emails, text, ref), partial(_emails, text, wrong)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task = "Extract the e-mail addresses from a text."
        inputs = (
            "`contacts.txt`: free text with e-mail addresses in it (like `amy.lee@example.com`)."
        )
        output = """
            print every distinct address once, one per line, sorted (plain string order).
            Addresses are separated from other words by spaces.
        """
        rules = [
            "Addresses are case-insensitive: print them in lowercase and treat `Amy@Example.com` "
            "and `amy@example.com` as the same address.",
            "Addresses may touch punctuation, as in `<amy@uni.edu>`, `(amy@uni.edu)` or "
            "`amy@uni.edu.`. An address is: a local part of letters, digits and `._+-`; `@`; "
            "then dot-separated domain labels of letters, digits and `-`, the last label being "
            "2 or more letters. `user@localhost` is not an address.",
            "Some addresses are hidden as `amy [at] uni [dot] edu` (also `[dot]` more than once): "
            "count them as `amy@uni.edu`.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"contacts.txt": text}),
            validation_script=stdout_validator(_emails(text, ref)),
            reference_solution=select(_EMAIL_SOLUTION, ref),
            wrong_solution=select(_EMAIL_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- dates

_DATE_SOLUTION = r"""
    import datetime  #+t3
    import re

    MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()  #+t2
    NAMED = (  #+t2
        r"\b(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"  #+t2
        r"|Sep(?:tember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?) (\d{1,2}), (\d{4})\b"  #+t2
    )  #+t2
    with open("notes.txt") as handle:
        text = handle.read()
    found = []
    for year, month, day in re.findall(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        found.append((int(year), int(month), int(day)))
    for day, month, year in re.findall(r"\b(\d{2})/(\d{2})/(\d{4})\b", text):  #+t1
        found.append((int(year), int(month), int(day)))  #+t1
    for name, day, year in re.findall(NAMED, text):  #+t2
        found.append((int(year), MONTHS.index(name[:3].lower()) + 1, int(day)))  #+t2
    dates = []
    for year, month, day in found:
        try:  #+t3
            datetime.date(year, month, day)  #+t3
        except ValueError:  #+t3
            continue  #+t3
        iso = f"{year:04d}-{month:02d}-{day:02d}"
        if iso not in dates:
            dates.append(iso)
    for iso in sorted(dates):  #-bug
    for iso in dates:  #+bug
        print(iso)
"""

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")  # fmt: skip
_CONTEXT = (
    "Invoice {n} is due on {d}.", "We met on {d} at the office", "Deadline moved to {d}",
    "Order #{n} shipped {d}, tracking pending", "Release {n} planned for {d}!",
)  # fmt: skip


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


def _dates(shown: list[tuple[str, tuple[int, int, int]]], features: set[str]) -> list[str]:
    """shown: (text form, (y, m, d)) in file order."""
    out: list[str] = []
    for text, (y, m, d) in shown:
        if "/" in text and "t1" not in features:
            continue
        if text[0].isalpha() and "t2" not in features:
            continue
        try:
            datetime.date(y, m, d)
        except ValueError:
            if "t3" in features:
                continue
        iso = f"{y:04d}-{m:02d}-{d:02d}"
        if iso not in out:
            out.append(iso)
    return out if "bug" in features else sorted(out)


class Dates(TemplateBase):
    """Extract dates as ISO; twists: day-first dates, month names, invalid dates."""

    name = "regex_parse.dates"
    cluster = "regex_parse"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.dates(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (6, 10, 14, 18)[level]
        ref, wrong = twists(level), near_miss(level)
        for _attempt in range(100):
            shown: list[tuple[str, tuple[int, int, int]]] = []
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
            if differs(partial(_dates, shown, ref), partial(_dates, shown, wrong)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task = "Extract the dates mentioned in a text."
        inputs = "`notes.txt`: free text with dates written as `YYYY-MM-DD` (like `2024-03-05`)."
        output = """
            print every distinct date once, one per line as `YYYY-MM-DD`, oldest first.
        """
        rules = [
            "Dates may also be written day first as `DD/MM/YYYY` (`05/03/2024` is 2024-03-05); "
            "the same date in two forms is still one date.",
            "Dates may also be written with an English month name, full or its first three "
            "letters: `March 5, 2024` or `Mar 5, 2024`.",
            "Some dates do not exist (like 2023-02-30, `31/04/2024` or `Feb 29, 2023`): leave "
            "them out.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"notes.txt": "\n".join(sentences) + "\n"}),
            validation_script=stdout_validator(_dates(shown, ref)),
            reference_solution=select(_DATE_SOLUTION, ref),
            wrong_solution=select(_DATE_SOLUTION, wrong),
        )


TEMPLATES = (ErrorLines(), Emails(), Dates())
