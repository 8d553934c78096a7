"""Template `regex_parse.error_lines`: the ERROR entries of an application log.

A seed draws its task from a family (`variant`): what to report (`list` every
ERROR entry, the `last` one of each module, the number `per_module` or
`per_hour`), the log's line format (`fmt_bracket` `LEVEL [MODULE] MESSAGE`,
`fmt_colon` `[LEVEL] MODULE: MESSAGE`, `fmt_kv` `key=value` pairs) and the
output format (`out_plain` space-separated, `out_csv` comma-separated with a
header line). Twists on top: any-case levels, stack-trace continuation lines,
a time window.
"""

from __future__ import annotations

import random
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
from nightschool.challenges._templates.regex_parse_kit import LOG_FORMATS, separates
from nightschool.challenges._templates.starters import regex_parse as starters

WHAT = ("list", "last", "per_module", "per_hour")
"""What to report: every ERROR entry, each module's latest, counts per module, counts per hour."""
FORMATS = LOG_FORMATS
"""The log's line format."""
OUTPUTS = ("out_plain", "out_csv")
"""Output lines: fields separated by spaces, or CSV with a header line."""

_SOLUTION = r"""
    import re

    SEP = " "  #+out_plain
    SEP = ","  #+out_csv
    ENTRY = re.compile(r"^\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d) (\w+) \[(\w+)\] (.*)$")  #+fmt_bracket
    ENTRY = re.compile(r"^\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d) \[(\w+)\] (\w+): (.*)$")  #+fmt_colon
    ENTRY = re.compile(r'^date=\S+ time=(\S+) level=(\w+) module=(\w+) msg="(.*)"$')  #+fmt_kv
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
    errors = []
    for line, time, level, module, message, extra in entries:
        if level != "ERROR":  #-t1|bug
        if level.upper() != "ERROR":  #+t1
        if "ERROR" not in line:  #+bug
            continue
        if not start <= time <= end:  #+t3
            continue  #+t3
        if extra:  #+t2
            message += f" (+{extra} lines)"  #+t2
        errors.append((time, module, message, extra))
    rows = [[time, module, message] for time, module, message, _ in errors]  #+list
    latest = {module: [module, time, message] for time, module, message, _ in errors}  #+last
    rows = [latest[module] for module in sorted(latest)]  #+last
    totals = {}  #-list|last
    for time, module, _, extra in errors:  #-list|last
        key = module  #+per_module
        key = time[:2]  #+per_hour
        total = totals.setdefault(key, [0, 0])  #-list|last
        total[0] += 1  #-list|last
        total[1] += extra  #-list|last
    order = sorted(totals, key=lambda key: (-totals[key][0], key))  #+per_module
    order = sorted(totals)  #+per_hour
    rows = [[key, str(totals[key][0])] for key in order]  #=!t2&!list&!last
    rows = [[key, *map(str, totals[key])] for key in order]  #=t2&!list&!last
    print("time,module,message")  #=out_csv&list
    print("module,time,message")  #=out_csv&last
    print("module,errors")  #=out_csv&per_module&!t2
    print("module,errors,trace_lines")  #=out_csv&per_module&t2
    print("hour,errors")  #=out_csv&per_hour&!t2
    print("hour,errors,trace_lines")  #=out_csv&per_hour&t2
    for row in rows:
        print(SEP.join(row))
"""

_MODULES = ("db", "auth", "cache", "api", "queue", "mailer")
_MESSAGES = (
    "connection lost", "timeout after 30s", "user not found", "disk almost full",
    "retrying request", "cache miss for key", "job finished", "slow query detected",
)  # fmt: skip
_HEADERS = {
    "list": "time,module,message",
    "last": "module,time,message",
    "per_module": "module,errors",
    "per_hour": "hour,errors",
}
_Entry = tuple[str, str, str, str, int]  # time, level, module, message, continuation lines


def _report(entries: list[_Entry], window: tuple[str, str], features: set[str]) -> list[str]:
    """The expected output lines of the task `features` on `entries`."""
    errors = []
    for time, level, module, message, extra in entries:
        if "bug" in features:
            if "ERROR" not in f"{level} {module} {message}":
                continue
        elif (level.upper() if "t1" in features else level) != "ERROR":
            continue
        if "t3" in features and not window[0] <= time <= window[1]:
            continue
        suffix = f" (+{extra} lines)" if "t2" in features and extra else ""
        errors.append((time, module, message + suffix, extra))
    rows: list[list[str]]
    if "list" in features:
        rows = [[time, module, message] for time, module, message, _ in errors]
    elif "last" in features:
        latest = {module: [module, time, message] for time, module, message, _ in errors}
        rows = [latest[module] for module in sorted(latest)]
    else:
        totals: dict[str, list[int]] = {}
        for time, module, _, extra in errors:
            total = totals.setdefault(module if "per_module" in features else time[:2], [0, 0])
            total[0] += 1
            total[1] += extra
        if "per_module" in features:
            order = sorted(totals, key=lambda key: (-totals[key][0], key))
        else:
            order = sorted(totals)
        width = 3 if "t2" in features else 2
        rows = [[key, *map(str, totals[key])][:width] for key in order]
    if "out_csv" not in features:
        return [" ".join(row) for row in rows]
    header = next(_HEADERS[what] for what in WHAT if what in features)
    if "t2" in features and not features & {"list", "last"}:
        header += ",trace_lines"
    return [header, *(",".join(row) for row in rows)]


def _line(fmt: str, day: str, entry: _Entry) -> str:
    time, level, module, message, _ = entry
    if fmt == "fmt_colon":
        return f"{day} {time} [{level}] {module}: {message}"
    if fmt == "fmt_kv":
        return f'date={day} time={time} level={level} module={module} msg="{message}"'
    return f"{day} {time} {level} [{module}] {message}"


_INPUTS = {
    "fmt_bracket": (
        "`DATE TIME LEVEL [MODULE] MESSAGE`, for example "
        "`2024-05-01 09:14:03 ERROR [db] connection lost`"
    ),
    "fmt_colon": (
        "`DATE TIME [LEVEL] MODULE: MESSAGE`, for example "
        "`2024-05-01 09:14:03 [ERROR] db: connection lost`"
    ),
    "fmt_kv": (
        '`date=DATE time=TIME level=LEVEL module=MODULE msg="MESSAGE"`, for example '
        '`date=2024-05-01 time=09:14:03 level=ERROR module=db msg="connection lost"`'
    ),
}
_OUTPUTS = {
    "list": "for every ERROR entry, in file order, one line with TIME, MODULE, MESSAGE",
    "last": (
        "for every MODULE that has ERROR entries, one line with MODULE, then the TIME and "
        "MESSAGE of its latest ERROR entry; modules in alphabetical order"
    ),
    "per_module": (
        "for every MODULE that has ERROR entries, one line with MODULE and its number of "
        "ERROR entries; most errors first, ties in alphabetical order of MODULE"
    ),
    "per_hour": (
        "for every hour that has ERROR entries, one line with the hour (the two-digit HH of "
        "TIME, like `09`) and its number of ERROR entries; hours in increasing order"
    ),
}


def _texts(tags: set[str]) -> tuple[str, str, list[str]]:
    """The prompt's input, output and rule texts for the task `tags`."""
    fmt = next(f for f in FORMATS if f in tags)
    what = next(w for w in WHAT if w in tags)
    csv = "out_csv" in tags
    inputs = f"""
        `app.log`, one entry per line: {_INPUTS[fmt]}. TIME is HH:MM:SS; LEVEL is one word
        (INFO, DEBUG, WARN, ERROR); the message may contain any text, including the word ERROR.
    """
    sample = {
        "list": ["09:14:03", "db", "connection lost"],
        "last": ["db", "09:14:03", "connection lost"],
        "per_module": ["db", "3"],
        "per_hour": ["09", "3"],
    }[what]
    sep = "," if csv else " "
    how = (
        f"Print a header line `{_HEADERS[what]}`, then the rows as comma-separated fields"
        if csv
        else "Print the fields of each row separated by single spaces"
    )
    output = f"""
        {_OUTPUTS[what]}. {how} (like `{sep.join(sample)}`). An entry is an ERROR entry when
        its LEVEL is ERROR: entries of other levels are left out even when their message
        mentions ERROR.
    """
    if what in ("list", "last"):
        trace = (
            "When an ERROR entry has N such lines, append ` (+N lines)` to its MESSAGE, for "
            f"example `{sep.join([*sample[:2], 'connection lost (+2 lines)'])}`."
        )
    else:
        header = f" (header `{_HEADERS[what]},trace_lines`)" if csv else ""
        trace = (
            "Add a third field to each row: the total number of such lines under the row's "
            f"ERROR entries{header}, for example `{sep.join([*sample, '4'])}`."
        )
    rules = [
        "The level may be written in any case: `error` and `Error` are ERROR too.",
        "Lines that start with whitespace continue the entry above them (a stack trace). " + trace,
        "`window.txt` holds two times `START END` (HH:MM:SS): keep only the ERROR entries "
        "whose time is between them, both included.",
    ]
    return inputs, output, rules


class ErrorLines(TemplateBase):
    """Report ERROR entries of a log; twists: any-case levels, continuation lines, a time window."""

    name = "regex_parse.error_lines"
    cluster = "regex_parse"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.error_lines(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, WHAT, FORMATS, OUTPUTS)
        fmt = next(f for f in FORMATS if f in tags)
        n = (12, 25, 40, 60)[level]
        ref, wrong = twists(level) | tags, near_miss(level) | tags
        for _attempt in range(100):
            entries: list[_Entry] = []
            lines: list[str] = []
            seconds = 9 * 3600 + rng.randint(0, 3000)
            decoy = rng.randint(n // 2, n - 1)
            day = f"2024-05-0{1 + level}"
            for i in range(n):
                seconds += rng.randint(5, 200)
                time = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
                level_name = rng.choice(("INFO", "INFO", "DEBUG", "WARN", "ERROR", "ERROR"))
                if level >= 1 and level_name == "ERROR" and (i % 3 == 0):
                    level_name = rng.choice(("error", "Error"))
                message = rng.choice(_MESSAGES)
                if i == decoy:  # not an error, but mentions one
                    level_name, message = "INFO", "recovered from ERROR state"
                module = rng.choice(_MODULES)
                extra = 0
                if level >= 2 and rng.random() < 0.3:
                    extra = rng.randint(1, 3)
                entries.append((time, level_name, module, message, extra))
                lines.append(_line(fmt, day, entries[-1]))
                for k in range(extra):
                    lines.append(f'    File "{module}.py", line {rng.randint(10, 400)}, in step{k}')
            window = (entries[n // 4][0], entries[3 * n // 4][0])
            report = partial(_report, entries, window)
            if (
                len(report(ref)) > ("out_csv" in tags)
                and differs(partial(report, ref), partial(report, wrong))
                and separates(report, ref, WHAT, OUTPUTS)
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        files = {"app.log": "\n".join(lines) + "\n"}
        if level >= 3:
            files["window.txt"] = f"{window[0]} {window[1]}\n"
        inputs, output, rules = _texts(tags)
        return Parts(
            prompt=prompt("Report the errors in an application log.", inputs, output, rules, level),
            setup_script=files_setup(files),
            validation_script=stdout_validator(_report(entries, window, ref)),
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )
