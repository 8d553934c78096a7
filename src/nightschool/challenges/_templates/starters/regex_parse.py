"""Starter tier of cluster `regex_parse`: error entries of a log, e-mail addresses, ISO dates."""

from __future__ import annotations

import random
import re

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    WORDS,
    Case,
    Parts,
    RenderError,
    call,
    differs,
    function_parts,
    shown_example,
)

# --------------------------------------------------------------------------- error_lines

_ERROR_SOURCE = r"""
    import re

    ENTRY = re.compile(r"^\S+ (\S+) (\w+) \[(\w+)\] (.*)$")


    def error_entries(log):
        found = []
        for line in log.splitlines():
            match = ENTRY.match(line)
            if not match:
                continue
            time, level, module, message = match.groups()
            if level == "ERROR":  #-bug
            if "ERROR" in line:  #+bug
                found.append(f"{time} {module} {message}")
        return found
"""

_MODULES = ("db", "auth", "cache", "api", "queue")
_MESSAGES = ("connection lost", "timeout after 30s", "user not found", "disk almost full",
             "retrying request", "job finished", "slow query")  # fmt: skip

_DECOYS = ("retried after ERROR", "recovered from ERROR state", "cleared ERROR flag")


def _errors(log: str, bug: bool = False) -> list[str]:
    out = []
    for line in log.splitlines():
        _date, time, level, module, message = line.split(" ", 4)
        if ("ERROR" in line) if bug else level == "ERROR":
            out.append(f"{time} {module.strip('[]')} {message}")
    return out


def _log(rng: random.Random, n: int, decoy: bool) -> str:
    seconds = 9 * 3600 + rng.randint(0, 3000)
    lines = []
    for i in range(n):
        seconds += rng.randint(5, 200)
        time = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        level = rng.choice(("INFO", "WARN", "ERROR", "ERROR"))
        message = rng.choice(_MESSAGES)
        if decoy and i == 1:  # not an error, but mentions one
            level, message = "INFO", "recovered from ERROR state"
        lines.append(f"2024-05-01 {time} {level} [{rng.choice(_MODULES)}] {message}")
    return "\n".join(lines) + "\n"


def _error_example(rng: random.Random) -> Case:
    """An ERROR entry, then an INFO entry whose message mentions ERROR."""
    day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    hour, minute = rng.randint(8, 17), rng.randint(0, 58)
    first, second = rng.sample(_MODULES, 2)
    log = (
        f"{day} {hour:02d}:{minute:02d}:{rng.randint(0, 59):02d} ERROR [{first}] "
        f"{rng.choice(_MESSAGES[:4])}\n"
        f"{day} {hour:02d}:{minute + 1:02d}:{rng.randint(0, 59):02d} INFO [{second}] "
        f"{rng.choice(_DECOYS)}\n"
    )
    return Case(call("error_entries", log), _errors(log))


def error_lines(rng: random.Random) -> Parts:
    """Starter of `regex_parse.error_lines`."""
    func = "error_entries"
    logs = ["", _log(rng, 1, False), _log(rng, 3, True), _log(rng, 4, False), _log(rng, 5, True)]
    logs.append(_log(rng, 6, True))
    if not differs(
        lambda: [_errors(x) for x in logs], lambda: [_errors(x, bug=True) for x in logs]
    ):
        raise RenderError("regex_parse.error_lines: starter cases do not separate the near-miss")
    hidden = [Case(call(func, x), _errors(x)) for x in logs]
    return function_parts(
        func=func,
        signature="def error_entries(log: str) -> list[str]:",
        spec="""
            log has one entry per line: 'DATE TIME LEVEL [MODULE] MESSAGE'. LEVEL is one
            word (INFO, WARN, ERROR). Return 'TIME MODULE MESSAGE' for every entry whose
            LEVEL is ERROR, in order. Messages of other levels may mention ERROR: those
            entries are left out.
        """,
        examples=[shown_example(rng, _error_example, hidden)],
        cases=hidden,
        source=_ERROR_SOURCE,
    )


# --------------------------------------------------------------------------- emails

_EMAIL_SOURCE = """
    def find_emails(text):
        found = [word for word in text.split() if "@" in word]
        return sorted(set(found))  #-bug
        return sorted(found)  #+bug
"""

_DOMAINS = ("example.com", "mail.example.org", "uni.edu", "post-box.net")
_SENTENCES = ("write to {} today", "cc {} and the team", "new contact {} from Monday",
              "questions go to {}")  # fmt: skip


def _emails(text: str, bug: bool = False) -> list[str]:
    found = [word for word in text.split() if "@" in word]
    return sorted(found) if bug else sorted(set(found))


def _contacts(rng: random.Random, n: int, repeat: bool) -> str:
    people = rng.sample(FIRST_NAMES, n)
    addresses = [
        f"{p}{rng.choice(('', '.' + rng.choice(WORDS), str(rng.randint(1, 99))))}@{rng.choice(_DOMAINS)}"
        for p in people
    ]
    if repeat:
        addresses.append(addresses[0])
    rng.shuffle(addresses)
    lines = [rng.choice(_SENTENCES).format(a) for a in addresses]
    lines.insert(rng.randrange(len(lines) + 1), f"meeting at {rng.randint(1, 12)}pm, no address")
    return "\n".join(lines) + "\n"


def _email_example(rng: random.Random) -> Case:
    """Two people, the later-sorting one named twice."""
    first, second = sorted(rng.sample([n for n in FIRST_NAMES if len(n) <= 5], 2))
    one = f"{second}@{rng.choice(_DOMAINS)}"
    two = f"{first}.{rng.choice(WORDS)}@{rng.choice(_DOMAINS)}"
    text = f"mail {one} or {two}\ncc {one}"
    return Case(call("find_emails", text), _emails(text))


def emails(rng: random.Random) -> Parts:
    """Starter of `regex_parse.emails`."""
    func = "find_emails"
    texts = ["no addresses here", _contacts(rng, 1, False), _contacts(rng, 1, True)]
    texts += [_contacts(rng, n, r) for n, r in ((3, False), (3, True), (4, True))]
    if not differs(
        lambda: [_emails(t) for t in texts], lambda: [_emails(t, bug=True) for t in texts]
    ):
        raise RenderError("regex_parse.emails: starter cases do not separate the near-miss")
    hidden = [Case(call(func, t), _emails(t)) for t in texts]
    return function_parts(
        func=func,
        signature="def find_emails(text: str) -> list[str]:",
        spec="""
            Return every distinct e-mail address in text once, sorted (plain string order).
            Addresses are separated from other words by spaces or newlines; a word is an
            address when it contains '@'.
        """,
        examples=[shown_example(rng, _email_example, hidden)],
        cases=hidden,
        source=_EMAIL_SOURCE,
    )


# --------------------------------------------------------------------------- dates

_DATE_SOURCE = r"""
    import re


    def find_dates(text):
        found = []
        for date in re.findall(r"\b\d{4}-\d{2}-\d{2}\b", text):
            if date not in found:
                found.append(date)
        return sorted(found)  #-bug
        return found  #+bug
"""

_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_CONTEXT = ("Invoice {n} is due on {d}.", "We met on {d} at the office", "Deadline moved to {d}",
            "Order #{n} shipped {d}", "Release {n} planned for {d}!")  # fmt: skip


def _dates(text: str, bug: bool = False) -> list[str]:
    found = list(dict.fromkeys(_ISO.findall(text)))
    return found if bug else sorted(found)


def _notes(rng: random.Random, n: int) -> str:
    dates = [_iso(rng) for _ in range(n)]
    if n >= 2:
        dates.sort(reverse=True)  # the newest first, so the order needs fixing
        dates.append(dates[0])
    lines = [rng.choice(_CONTEXT).format(n=rng.randint(100, 999), d=d) for d in dates]
    lines.insert(rng.randrange(len(lines) + 1), f"Call 555-{rng.randint(1000, 9999)}, room 12/4")
    return "\n".join(lines) + "\n"


def _date_example(rng: random.Random) -> Case:
    """A newer date, an older one, then the newer one again next to a phone number."""
    drawn = {_iso(rng)}
    while len(drawn) < 2:
        drawn.add(_iso(rng))
    old, new = sorted(drawn)
    text = f"Due {new}, paid {old}.\nCall 555-{rng.randint(1000, 9999)} on {new}"
    return Case(call("find_dates", text), _dates(text))


def _iso(rng: random.Random) -> str:
    return f"{rng.randint(2019, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def dates(rng: random.Random) -> Parts:
    """Starter of `regex_parse.dates`."""
    func = "find_dates"
    texts = ["nothing to see", *(_notes(rng, n) for n in (1, 2, 3, 4, 5))]
    if not differs(
        lambda: [_dates(t) for t in texts], lambda: [_dates(t, bug=True) for t in texts]
    ):
        raise RenderError("regex_parse.dates: starter cases do not separate the near-miss")
    hidden = [Case(call(func, t), _dates(t)) for t in texts]
    return function_parts(
        func=func,
        signature="def find_dates(text: str) -> list[str]:",
        spec="""
            Return every distinct date written as YYYY-MM-DD in text (like 2024-03-05)
            once, oldest first. Other numbers (phone numbers, room numbers) are not dates.
        """,
        examples=[shown_example(rng, _date_example, hidden)],
        cases=hidden,
        source=_DATE_SOURCE,
    )
