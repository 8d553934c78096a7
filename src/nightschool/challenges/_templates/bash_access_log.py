"""Template `bash.access_log`: a report on a web server's access log (`solution.sh`).

Each seed draws its report from a family (`AXES`): what to count (requests
by status, distinct visitors by path, failed requests by client, requests by
hour), the order of the lines (by key, or by count) and the line layout
(`KEY VALUE`, `KEY,VALUE`, `VALUE KEY`). The twists (health checks, damaged
lines, a bytes column) apply on top of every variant.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from functools import partial

from nightschool.challenges._templates._bash_lib import SH, separates
from nightschool.challenges._templates._kit import (
    Parts,
    RenderError,
    TemplateBase,
    differs,
    files_setup,
    near_miss,
    pick,
    prompt,
    select,
    stdout_validator,
    twists,
    variant,
)
from nightschool.challenges._templates.starters import bash as starters

MEASURES = ("status", "visitors", "errors", "hourly")
"""What to count: requests by status, distinct clients by path, failed requests by client,
requests by hour."""
ORDERS = ("bykey", "bycount")
"""Line order: by key in byte order, or by count (largest first, ties by key)."""
LAYOUTS = ("sp", "csv", "rev")
"""Line layout: `KEY VALUE`, `KEY,VALUE` or `VALUE KEY` (the bytes column after VALUE)."""
AXES = (MEASURES, ORDERS, LAYOUTS)
"""The family of `bash.access_log`'s program tiers: 24 tasks."""

_SOLUTION = """
    #!/bin/bash
    export LC_ALL=C
    awk '
        NF != 10 || $9 !~ /^[0-9][0-9][0-9]$/ { next }  #+t2
        $7 == "/health" { next }  #+t1
        $9 < 400 { next }  #=errors&!bug
        $9 < 500 { next }  #=errors&bug
        { k = $9 }  #=status&!bug
        { k = $8 }  #=status&bug
        { k = $7 }  #+visitors
        { k = $1 }  #+errors
        { k = substr($4, 14, 2) }  #=hourly&!bug
        { k = substr($4, 17, 2) }  #=hourly&bug
        !seen[k, $1]++ { n[k]++ }  #=visitors&!bug
        { n[k]++ }  #=visitors&bug
        { n[k]++ }  #-visitors
        { sum[k] += ($10 ~ /^[0-9]+$/) ? $10 : 0 }  #+t3
        END { for (k in n) print n[k], k, sum[k] }
    ' access.log \\
        | sort -k2,2 \\  #+bykey
        | sort -k1,1nr -k2,2 \\  #+bycount
        | awk '{ print $2, $1 }'  #=sp&!t3
        | awk '{ print $2, $1, $3 }'  #=sp&t3
        | awk '{ print $2 "," $1 }'  #=csv&!t3
        | awk '{ print $2 "," $1 "," $3 }'  #=csv&t3
        | awk '{ print $1, $2 }'  #=rev&!t3
        | awk '{ print $1, $3, $2 }'  #=rev&t3
"""

_PATHS = ("/", "/index.html", "/api/items", "/api/login", "/static/app.js", "/img/logo.png")
_STATUSES = (200, 200, 200, 200, 301, 304, 403, 404, 404, 500)
# measure -> (key name, value name, what the value counts, scope of the bytes column)
_WORDS = {
    "status": ("STATUS", "COUNT", "the number of requests answered with that status code",
               "of those requests"),
    "visitors": ("PATH", "VISITORS", "the number of different clients (field 1) that requested "
                 "that path", "of all requests for that path"),
    "errors": ("CLIENT", "ERRORS", "the number of that client's failed requests (status code "
               "400 or higher); clients without failed requests are not listed",
               "of those failed requests"),
    "hourly": ("HOUR", "COUNT", "the number of requests in that hour; HOUR is the two-digit "
               "hour of the time (`09` for `[12/Mar/2024:09:41:07 +0000]`)",
               "of those requests"),
}  # fmt: skip


def _field(fields: list[str], number: int) -> str:
    """Awk's `$number` (1-based; empty past the end)."""
    return fields[number - 1] if number <= len(fields) else ""


def _below(value: str, bound: int) -> bool:
    """Awk's `value < bound` for a field: numeric when it looks like a number, else as text."""
    return int(value) < bound if value.isdigit() else value < str(bound)


def _key(fields: list[str], tags: set[str]) -> str | None:
    """The group of one line, or None when the awk program skips it."""
    bug = "bug" in tags
    if "t2" in tags and (len(fields) != 10 or not _is_status(_field(fields, 9))):
        return None
    if "t1" in tags and _field(fields, 7) == "/health":
        return None
    if "errors" in tags:
        return None if _below(_field(fields, 9), 500 if bug else 400) else _field(fields, 1)
    if "status" in tags:
        return _field(fields, 8 if bug else 9)
    if "visitors" in tags:
        return _field(fields, 7)
    return _field(fields, 4)[16:18] if bug else _field(fields, 4)[13:15]


def _is_status(value: str) -> bool:
    """True for a three-digit status code."""
    return len(value) == 3 and value.isdigit()


def report(lines: list[str], tags: set[str]) -> list[str]:
    """The expected stdout of the solution with feature `tags` on the log `lines`."""
    count: Counter[str] = Counter()
    sent: Counter[str] = Counter()
    seen: defaultdict[str, set[str]] = defaultdict(set)
    for line in lines:
        fields = line.split()
        key = _key(fields, tags)
        if key is None:
            continue
        if "visitors" in tags and "bug" not in tags:
            if _field(fields, 1) not in seen[key]:
                count[key] += 1
            seen[key].add(_field(fields, 1))
        else:
            count[key] += 1
        size = _field(fields, 10)
        sent[key] += int(size) if size.isdigit() else 0
    keys = sorted(count)
    if "bycount" in tags:
        keys.sort(key=lambda k: -count[k])
    out = []
    for k in keys:
        cols = [str(count[k]), str(sent[k])] if "t3" in tags else [str(count[k])]
        if "rev" in tags:
            out.append(" ".join([*cols, k]))
        else:
            out.append(("," if "csv" in tags else " ").join([k, *cols]))
    return out


def _layout(tags: set[str], with_bytes: bool) -> str:
    key, value = _WORDS[pick(tags, MEASURES)][:2]
    cols = [value, "BYTES"] if with_bytes else [value]
    if "rev" in tags:
        return " ".join([*cols, key])
    return ("," if "csv" in tags else " ").join([key, *cols])


def _request(rng: random.Random, i: int, n: int, path: str, clients: list[str]) -> str:
    when = f"[12/Mar/2024:{8 + i * 10 // n:02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    method = rng.choice(("GET", "GET", "POST"))
    status = rng.choice(_STATUSES)
    size = "-" if status == 304 or rng.random() < 0.1 else str(rng.randint(100, 9000))
    return f'{rng.choice(clients)} - - {when} +0000] "{method} {path} HTTP/1.1" {status} {size}'


def _log(rng: random.Random, level: int) -> list[str]:
    n = (25, 50, 80, 120)[level]
    clients = [f"10.0.{rng.randint(0, 3)}.{rng.randint(1, 254)}" for _ in range(4 + level)]
    clients.append(clients[0].rsplit(".", 1)[0] + ".7")
    lines = []
    for i in range(n):
        health = level >= 1 and (i == n // 2 or rng.random() < 0.2)
        lines.append(_request(rng, i, n, "/health" if health else rng.choice(_PATHS), clients))
    if level >= 2:
        for _ in range(4):
            victim = rng.choice(lines)
            lines.insert(rng.randrange(n), victim[: rng.randint(15, 40)])
        failed = [x for x in lines if x.split()[-2] in ("403", "404") and "/health" not in x]
        for victim in rng.sample(failed, 2):  # cut after the status: no bytes field
            lines.insert(rng.randrange(n), victim.rsplit(" ", 1)[0])
        lines.insert(rng.randrange(n), "=== log rotated ===")
    return lines


class AccessLog(TemplateBase):
    """Report on web-server requests (family `AXES`); twists: health checks, damaged lines, bytes."""

    name = "bash.access_log"
    cluster = "bash"
    solution_file = SH

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.access_log(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref, wrong = tags | twists(level), tags | near_miss(level)
        for _attempt in range(100):
            lines = _log(rng, level)
            if differs(partial(report, lines, ref), partial(report, lines, wrong)) and separates(
                partial(report, lines), ref, AXES
            ):
                break
        else:
            raise RenderError(f"{self.name}: data does not separate the near-miss or the variants")
        measure = pick(tags, MEASURES)
        key, value, meaning, scope = _WORDS[measure]
        if "bykey" in tags:
            order = f"sorted by {key} in byte order (the order of `LC_ALL=C sort`)"
        else:
            order = (
                f"sorted by {value}, largest first; lines with equal {value} by {key} in byte order"
            )
        task = {
            "status": "Count the responses of a web server by HTTP status code.",
            "visitors": "Count, for each path of a web server, how many different clients "
            "requested it.",
            "errors": "Count the failed requests of each client of a web server.",
            "hourly": "Count the requests a web server answered in each hour.",
        }[measure]
        inputs = """
            `access.log`, one request per line in the common log format, for example
            `10.0.1.7 - - [12/Mar/2024:10:00:03 +0000] "GET /index.html HTTP/1.1" 200 512`.
            Split on spaces, the fields are: 1 client, 4-5 time, 6 method, 7 path,
            8 protocol, 9 status, 10 bytes sent.
        """
        output = (
            f"print one line per {key} as `{_layout(tags, False)}` ({value}: {meaning}), {order}."
        )
        rules = [
            "Requests for the path `/health` are health checks: leave them out.",
            "Some lines are damaged (cut short, or not a request at all). Use only lines with "
            "exactly 10 space-separated fields whose 9th field is a three-digit status code.",
            f"Add a column BYTES, the total bytes sent {scope}: each line becomes "
            f"`{_layout(tags, True)}`. A `-` in the bytes field counts as 0.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level, SH),
            setup_script=files_setup({"access.log": "\n".join(lines) + "\n"}),
            validation_script=stdout_validator(report(lines, ref), SH),
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )
