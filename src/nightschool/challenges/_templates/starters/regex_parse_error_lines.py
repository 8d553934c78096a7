"""Starter of `regex_parse.error_lines`: one function over a log's text.

The family (`variant`): what the function returns (`list` of entries, count
`per_module`, `last` message per module, count `per_hour`), the log's line
format (`fmt_bracket`, `fmt_colon`, `fmt_kv`) and which levels count
(`sev_error`: ERROR; `sev_warn`: WARN or ERROR). The function's name follows
what it returns and which levels it counts.
"""

from __future__ import annotations

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
from nightschool.challenges._templates.regex_parse_kit import LOG_FORMATS, separates

WHAT = ("list", "per_module", "last", "per_hour")
"""What the function returns."""
FORMATS = LOG_FORMATS
"""The log's line format."""
SEVERITY = ("sev_error", "sev_warn")
"""Which entries count: LEVEL ERROR, or LEVEL WARN or ERROR."""

_SOURCE = r"""
    import re

    ENTRY = re.compile(r"^\S+ (\S+) (\w+) \[(\w+)\] (.*)$")  #+fmt_bracket
    ENTRY = re.compile(r"^\S+ (\S+) \[(\w+)\] (\w+): (.*)$")  #+fmt_colon
    ENTRY = re.compile(r'^date=\S+ time=(\S+) level=(\w+) module=(\w+) msg="(.*)"$')  #+fmt_kv
    LEVELS = ("ERROR",)  #+sev_error
    LEVELS = ("WARN", "ERROR")  #+sev_warn


    def error_entries(log):  #=list&sev_error
    def problem_entries(log):  #=list&sev_warn
    def errors_per_module(log):  #=per_module&sev_error
    def problems_per_module(log):  #=per_module&sev_warn
    def last_error_per_module(log):  #=last&sev_error
    def last_problem_per_module(log):  #=last&sev_warn
    def errors_per_hour(log):  #=per_hour&sev_error
    def problems_per_hour(log):  #=per_hour&sev_warn
        found = []  #+list
        found = {}  #-list
        for line in log.splitlines():
            match = ENTRY.match(line)
            if not match:
                continue
            time, level, module, message = match.groups()
            if level not in LEVELS:  #-bug
            if not any(word in line for word in LEVELS):  #+bug
                continue
            found.append(f"{time} {module} {message}")  #+list
            found[module] = found.get(module, 0) + 1  #+per_module
            found[module] = message  #+last
            found[time[:2]] = found.get(time[:2], 0) + 1  #+per_hour
        return found
"""

_NAMES = {
    ("list", "sev_error"): "error_entries",
    ("list", "sev_warn"): "problem_entries",
    ("per_module", "sev_error"): "errors_per_module",
    ("per_module", "sev_warn"): "problems_per_module",
    ("last", "sev_error"): "last_error_per_module",
    ("last", "sev_warn"): "last_problem_per_module",
    ("per_hour", "sev_error"): "errors_per_hour",
    ("per_hour", "sev_warn"): "problems_per_hour",
}
_RETURNS = {
    "list": "list[str]",
    "per_module": "dict[str, int]",
    "last": "dict[str, str]",
    "per_hour": "dict[str, int]",
}
_ENTRY = {
    "fmt_bracket": re.compile(r"^\S+ (\S+) (\w+) \[(\w+)\] (.*)$"),
    "fmt_colon": re.compile(r"^\S+ (\S+) \[(\w+)\] (\w+): (.*)$"),
    "fmt_kv": re.compile(r'^date=\S+ time=(\S+) level=(\w+) module=(\w+) msg="(.*)"$'),
}
_SHAPES = {
    "fmt_bracket": "'DATE TIME LEVEL [MODULE] MESSAGE'",
    "fmt_colon": "'DATE TIME [LEVEL] MODULE: MESSAGE'",
    "fmt_kv": "'date=DATE time=TIME level=LEVEL module=MODULE msg=\"MESSAGE\"'",
}
_COUNTED = {"sev_error": "ERROR", "sev_warn": "WARN or ERROR"}
_RESULTS = {
    "list": "Return 'TIME MODULE MESSAGE' for each counted entry, in order.",
    "per_module": "Return {MODULE: number of counted entries} for modules that have any.",
    "last": "Return {MODULE: MESSAGE of its last counted entry} for modules that have any.",
    "per_hour": "Return {HH: number of counted entries}, HH the two-digit hour of TIME.",
}

_MODULES = ("db", "auth", "cache", "api", "queue")
_MESSAGES = ("connection lost", "timeout after 30s", "user not found", "disk almost full",
             "retrying request", "job finished", "slow query")  # fmt: skip
_DECOYS = ("retried after ERROR", "recovered from ERROR state", "cleared WARN flag")


def _result(log: str, tags: set[str]) -> object:
    """What the function of task `tags` returns for `log` (the near-miss with `bug`)."""
    entry = next(_ENTRY[f] for f in FORMATS if f in tags)
    levels = ("ERROR",) if "sev_error" in tags else ("WARN", "ERROR")
    listed: list[str] = []
    latest: dict[str, str] = {}
    counts: dict[str, int] = {}
    for line in log.splitlines():
        match = entry.match(line)
        if not match:
            continue
        time, level, module, message = match.groups()
        if "bug" in tags:
            if not any(word in line for word in levels):
                continue
        elif level not in levels:
            continue
        listed.append(f"{time} {module} {message}")
        latest[module] = message
        key = module if "per_module" in tags else time[:2]
        counts[key] = counts.get(key, 0) + 1
    return listed if "list" in tags else latest if "last" in tags else counts


def _line(fmt: str, time: str, level: str, module: str, message: str) -> str:
    if fmt == "fmt_colon":
        return f"2024-05-01 {time} [{level}] {module}: {message}"
    if fmt == "fmt_kv":
        return f'date=2024-05-01 time={time} level={level} module={module} msg="{message}"'
    return f"2024-05-01 {time} {level} [{module}] {message}"


def _log(rng: random.Random, fmt: str, n: int, decoy: bool) -> str:
    seconds = rng.choice((9, 10, 16)) * 3600 + rng.randint(0, 3000)
    lines = []
    for i in range(n):
        seconds += rng.randint(60, 1500)
        time = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        level = rng.choice(("INFO", "WARN", "WARN", "ERROR", "ERROR"))
        message = rng.choice(_MESSAGES)
        if decoy and i == n // 2:  # not counted, but mentions a level
            level, message = "INFO", rng.choice(_DECOYS)
        lines.append(_line(fmt, time, level, rng.choice(_MODULES), message))
    return "\n".join(lines) + "\n"


def _example(rng: random.Random, tags: set[str], func: str) -> Case:
    """A counted entry, then an INFO entry whose message mentions a level."""
    fmt = next(f for f in FORMATS if f in tags)
    hour, minute = rng.randint(8, 17), rng.randint(0, 58)
    first, second = rng.sample(_MODULES, 2)
    level = "ERROR" if "sev_error" in tags else rng.choice(("WARN", "ERROR"))
    log = (
        _line(fmt, f"{hour:02d}:{minute:02d}:{rng.randint(0, 59):02d}", level, first,
              rng.choice(_MESSAGES[:4])) + "\n"
        + _line(fmt, f"{hour:02d}:{minute + 1:02d}:{rng.randint(0, 59):02d}", "INFO", second,
                rng.choice(_DECOYS)) + "\n"
    )  # fmt: skip
    return Case(call(func, log), _result(log, tags))


def error_lines(rng: random.Random) -> Parts:
    """Starter of `regex_parse.error_lines`.

    Raises:
        RenderError: if no drawn logs separate the task from its near-miss and
            from the other formats and severities.
    """
    tags = variant(rng, WHAT, FORMATS, SEVERITY)
    what = next(w for w in WHAT if w in tags)
    fmt = next(f for f in FORMATS if f in tags)
    sev = next(s for s in SEVERITY if s in tags)
    func = _NAMES[what, sev]
    for _attempt in range(50):
        logs = ["", _log(rng, fmt, 1, False), _log(rng, fmt, 3, True), _log(rng, fmt, 4, False)]
        logs += [_log(rng, fmt, 5, True), _log(rng, fmt, 6, True)]

        def results(features: set[str], logs: list[str] = logs) -> list[object]:
            return [_result(x, features) for x in logs]

        if differs(partial(results, tags), partial(results, tags | {"bug"})) and separates(
            results, tags, FORMATS, SEVERITY
        ):
            break
    else:
        raise RenderError("regex_parse.error_lines: starter cases do not separate the task")
    hidden = [Case(call(func, x), _result(x, tags)) for x in logs]
    spec = f"""
        log has one entry per line: {_SHAPES[fmt]}.
        LEVEL is INFO, WARN or ERROR; an entry counts when its LEVEL is {_COUNTED[sev]}
        (a message that mentions a level does not count).
        {_RESULTS[what]}
    """
    return function_parts(
        func=func,
        signature=f"def {func}(log: str) -> {_RETURNS[what]}:",
        spec=spec,
        examples=[shown_example(rng, partial(_example, tags=tags, func=func), hidden)],
        cases=hidden,
        source=_SOURCE,
        features=tags,
    )
