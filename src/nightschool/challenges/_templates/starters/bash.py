"""Starter tier of cluster `bash`: one-pipeline scripts with their input shown.

The script runs on the shown input (written by the setup) and then on hidden
inputs of the same form, so echoing the shown answer does not pass. Each seed
draws its task from the template's starter family (`LOG_AXES`, `RENAME_AXES`,
`FREQ_AXES`, see `_kit.variant`); the near-miss is the same task with the
`bug` tag.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import partial
from itertools import groupby

from nightschool.challenges._templates._bash_lib import separates
from nightschool.challenges._templates._kit import (
    WORDS,
    Parts,
    RenderError,
    files_setup,
    pick,
    script_prompt,
    script_validator,
    variant,
)

_SH = "solution.sh"
_PATHS = ("/", "/index.html", "/api/items", "/login", "/app.js", "/logo.png")
_STATUSES = (200, 200, 200, 301, 404, 404, 500)


# --------------------------------------------------------------------------- access_log

LOG_MEASURES = ("status", "path", "errors")
"""What to count: requests by status, requests by path, failed requests (>= 400) by path."""
LOG_INPUTS = ("logfile", "csvfile")
"""The input: `status.log` with `METHOD PATH STATUS` lines, or `requests.csv` with a header."""
LOG_ORDERS = ("bykey", "bycount")
"""Line order: by key in byte order, or by count (largest first, ties by key)."""
LOG_SEPS = ("space", "comma")
"""Line layout: `KEY COUNT` or `KEY,COUNT`."""
LOG_AXES = (LOG_MEASURES, LOG_INPUTS, LOG_ORDERS, LOG_SEPS)
"""The family of `bash.access_log`'s starter: 24 tasks."""

_LOG_FILE = {"logfile": "status.log", "csvfile": "requests.csv"}


def _log_script(tags: set[str]) -> str:
    pattern = "$3 >= 400 " if "errors" in tags else ""
    if "csvfile" in tags:
        pattern = "NR > 1 " + ("&& " if pattern else "") + pattern
    key = "$3" if "status" in tags else "$2"
    sep = ' "," ' if "comma" in tags else ", "
    shown = f"n[k]{sep}k" if "bug" in tags else f"k{sep}n[k]"
    opt = "-t, " if "comma" in tags else ""
    order = f"sort {opt}-k1,1" if "bykey" in tags else f"sort {opt}-k2,2nr -k1,1"
    awk = f"awk{' -F,' * ('csvfile' in tags)} '{pattern}{{ n[{key}]++ }}"
    end = f"END {{ for (k in n) print {shown} }}'"
    name = _LOG_FILE[pick(tags, LOG_INPUTS)]
    return f"#!/bin/bash\nexport LC_ALL=C\n{awk} {end} {name} | {order}\n"


def _log_counts(rows: list[tuple[str, str, int]], tags: set[str]) -> list[str]:
    keep = [r for r in rows if "errors" not in tags or r[2] >= 400]
    counts = Counter(str(r[2]) if "status" in tags else r[1] for r in keep)
    keys = sorted(counts)
    if "bycount" in tags:
        keys.sort(key=lambda k: -counts[k])
    pairs = [(str(counts[k]), k) if "bug" in tags else (k, str(counts[k])) for k in keys]
    return [("," if "comma" in tags else " ").join(pair) for pair in pairs]


def _all_counts(rounds: list[list[tuple[str, str, int]]], tags: set[str]) -> list[list[str]]:
    return [_log_counts(r, tags) for r in rounds]


def _log_rows(rng: random.Random, n: int) -> list[tuple[str, str, int]]:
    return [
        (rng.choice(("GET", "GET", "POST")), rng.choice(_PATHS), rng.choice(_STATUSES))
        for _ in range(n)
    ]


def _log_text(rows: list[tuple[str, str, int]], tags: set[str]) -> str:
    if "csvfile" in tags:
        return "method,path,status\n" + "".join(f"{m},{p},{s}\n" for m, p, s in rows)
    return "".join(f"{m} {p} {s}\n" for m, p, s in rows)


def access_log(rng: random.Random) -> Parts:
    """Starter of `bash.access_log`: one task of `LOG_AXES`, counted by `awk` and `sort`."""
    tags = variant(rng, *LOG_AXES)
    for _attempt in range(100):
        rounds = [_log_rows(rng, n) for n in (6, 9, 12)]
        if all(
            _log_counts(r, tags) and _log_counts(r, tags) != _log_counts(r, tags | {"bug"})
            for r in rounds
        ) and separates(partial(_all_counts, rounds), tags, (LOG_MEASURES, LOG_ORDERS)):
            break
    else:
        raise RenderError("bash.access_log: starter inputs do not separate the variants")
    name = _LOG_FILE[pick(tags, LOG_INPUTS)]
    key = "STATUS" if "status" in tags else "PATH"
    what = {
        "status": f"Count the requests in `{name}` by HTTP status code.",
        "path": f"Count the requests in `{name}` for each path.",
        "errors": f"Count the failed requests (status 400 or higher) in `{name}` for each path.",
    }[pick(tags, LOG_MEASURES)]
    shape = (
        "It is CSV with the header `method,path,status`."
        if "csvfile" in tags
        else "Each line is `METHOD PATH STATUS`."
    )
    order = (
        f"sorted by {key} in byte order (as `LC_ALL=C sort`)"
        if "bykey" in tags
        else f"largest COUNT first, equal counts by {key} in byte order (as `LC_ALL=C sort`)"
    )
    texts = [_log_text(r, tags) for r in rounds]
    sep = "," if "comma" in tags else " "
    prompt = script_prompt(
        what,
        {f"`{name}`:": texts[0]},
        f"{shape} Print one line per {key} as `{key}{sep}COUNT`, {order}.",
        _log_counts(rounds[0], tags),
        "for example `awk` and `sort`",
    )
    expected = [_log_counts(r, tags) for r in rounds]
    steps = [
        {"files": {name: t}, "shown": t, "stdout": e} for t, e in zip(texts, expected, strict=True)
    ]
    steps[0] = {"stdout": expected[0]}
    return Parts(
        prompt=prompt,
        setup_script=files_setup({name: texts[0]}),
        validation_script=script_validator(steps, _SH),
        reference_solution=_log_script(tags),
        wrong_solution=_log_script(tags | {"bug"}),
    )


# --------------------------------------------------------------------------- rename_files

RENAME_OPS = ("ext", "strip", "prefix", "backup")
"""What happens to a `.txt` file: new extension `.md`, extension removed, prefix `old_`, or a
`.bak` copy next to it."""
RENAME_CASES = ("exactcase", "anycase")
"""Which extensions count: only lowercase `.txt`, or `.txt` in any case (`.TXT`)."""
RENAME_DOTS = ("dotskip", "dotall")
"""Hidden files (names starting with `.`): left alone, or handled like the others."""
RENAME_AXES = (RENAME_OPS, RENAME_CASES, RENAME_DOTS)
"""The family of `bash.rename_files`'s starter: 16 tasks."""

_RENAME_STEP = {
    "ext": 'mv -- "$f" "${f%.*}.md"',
    "strip": 'mv -- "$f" "${f%.*}"',
    "prefix": 'mv -- "$f" "inbox/old_${f#inbox/}"',
    "backup": 'cp -- "$f" "$f.bak"',
}
_RENAME_TASK = {
    "ext": "rename every file ending in `.txt` so that it ends in `.md` instead (`plan.txt` "
    "becomes `plan.md`)",
    "strip": "remove the extension `.txt` from every file name ending in it (`plan.txt` "
    "becomes `plan`)",
    "prefix": "add the prefix `old_` to the name of every file ending in `.txt` (`plan.txt` "
    "becomes `old_plan.txt`)",
    "backup": "copy every file ending in `.txt` to a backup named with `.bak` added (`plan.txt` "
    "is copied to `plan.txt.bak`)",
}
_OTHER = (".csv", ".log", ".txt.bak", ".json")


def _rename_script(tags: set[str]) -> str:
    opts = [o for o, t in (("dotglob", "dotall"), ("nocaseglob", "anycase")) if t in tags]
    head = f"shopt -s {' '.join(opts)}\n" if opts else ""
    glob = "inbox/*" if "bug" in tags else "inbox/*.txt"
    step = _RENAME_STEP[pick(tags, RENAME_OPS)]
    return f"#!/bin/bash\n{head}for f in {glob}; do\n    {step}\ndone\n"


def _inbox(rng: random.Random) -> dict[str, str]:
    words = rng.sample(WORDS, 7)
    names = [f"{w}.txt" for w in words[:3]] + [
        w + ext for w, ext in zip(words[3:5], rng.sample(_OTHER, 2), strict=True)
    ]
    names += [f"{words[5].upper()}.TXT", f".{words[6]}.txt"]
    return {name: f"{name} #{rng.randint(100, 999)}\n" for name in names}


def _renamed(files: dict[str, str], tags: set[str]) -> dict[str, str]:
    tree = dict(files)
    for name in sorted(files):
        low = name.lower() if "anycase" in tags else name
        if (name.startswith(".") and "dotall" not in tags) or not (
            "bug" in tags or low.endswith(".txt")
        ):
            continue
        stem = name.rsplit(".", 1)[0]
        new = {"ext": stem + ".md", "strip": stem, "prefix": "old_" + name}.get(
            pick(tags, RENAME_OPS), name + ".bak"
        )
        tree[new] = tree[name] if "backup" in tags else tree.pop(name)
    return tree


def rename_files(rng: random.Random) -> Parts:
    """Starter of `bash.rename_files`: one task of `RENAME_AXES`, a `for` loop over a glob."""
    tags = variant(rng, *RENAME_AXES)
    inboxes = [_inbox(rng) for _ in range(2)]
    for files in inboxes:
        if _renamed(files, tags) == _renamed(files, tags | {"bug"}) or not separates(
            partial(_renamed, files), tags, RENAME_AXES
        ):
            raise RenderError("bash.rename_files: starter inputs do not separate the variants")
    listing = "".join(f"{name}\n" for name in sorted(inboxes[0]))
    case = (
        "The extension may be in any case (`NOTE.TXT` counts too)."
        if "anycase" in tags
        else "Only the lowercase `.txt` counts (leave `NOTE.TXT` alone)."
    )
    dots = (
        "Hidden files (`.name`) count too."
        if "dotall" in tags
        else "Leave hidden files (`.name`) alone."
    )
    task = _RENAME_TASK[pick(tags, RENAME_OPS)]
    prompt = script_prompt(
        f"In the folder `inbox`, {task}. {case} {dots} Leave all other files alone.",
        {"The files in `inbox`:": listing},
        "Print nothing.",
        sorted(_renamed(inboxes[0], tags)),
        "`for f in inbox/*.txt` with `mv` or `cp`",
        "For the folder above, `inbox` then holds:",
    )
    rounds: list[dict[str, object]] = [{"tree": ["inbox", _renamed(inboxes[0], tags)]}]
    rounds.append(
        {
            "clear": ["inbox"],
            "files": {f"inbox/{n}": t for n, t in inboxes[1].items()},
            "shown": "inbox/ held: " + ", ".join(sorted(inboxes[1])),
            "tree": ["inbox", _renamed(inboxes[1], tags)],
        }
    )
    return Parts(
        prompt=prompt,
        setup_script=files_setup({f"inbox/{n}": t for n, t in inboxes[0].items()}),
        validation_script=script_validator(rounds, _SH),
        reference_solution=_rename_script(tags),
        wrong_solution=_rename_script(tags | {"bug"}),
    )


# --------------------------------------------------------------------------- word_freq

FREQ_MEASURES = ("top", "rare", "longest", "initial")
"""What to compute: the 3 most frequent words, the 3 least frequent, the 3 longest different
words, or the number of words per first letter."""
FREQ_INPUTS = ("perline", "csvwords")
"""The input: `words.txt` with one word per line, or `words.csv` with comma-separated words."""
FREQ_LAYOUTS = ("sp", "csv", "rev")
"""Line layout: `KEY VALUE`, `KEY,VALUE` or `VALUE KEY`."""
FREQ_AXES = (FREQ_MEASURES, FREQ_INPUTS, FREQ_LAYOUTS)
"""The family of `bash.word_freq`'s starter: 24 tasks."""

_FREQ_FILE = {"perline": "words.txt", "csvwords": "words.csv"}
_FREQ_STEPS = {  # measure -> (reference, near-miss) pipeline steps printing `VALUE KEY`
    "top": (
        "sort | uniq -c | sort -k1,1nr -k2,2 | head -n 3",
        "sort | uniq -c | sort -nr | head -n 3",
    ),
    "rare": (
        "sort | uniq -c | sort -k1,1n -k2,2 | head -n 3",
        "sort | uniq -c | sort -nr | tail -n 3",
    ),
    "longest": (
        "sort -u | awk '{ print length($0), $0 }' | sort -k1,1nr -k2,2 | head -n 3",
        "sort -u | awk '{ print length($0), $0 }' | sort -nr | head -n 3",
    ),
    "initial": ("cut -c1 | sort | uniq -c", "cut -c1 | uniq -c"),
}
_FREQ_LAYOUT = {"sp": "$2, $1", "csv": '$2 "," $1', "rev": "$1, $2"}


def _freq_script(tags: set[str]) -> str:
    source = "cat words.txt" if "perline" in tags else "tr ',' '\\n' < words.csv"
    step = _FREQ_STEPS[pick(tags, FREQ_MEASURES)]["bug" in tags]
    shown = _FREQ_LAYOUT[pick(tags, FREQ_LAYOUTS)]
    return f"#!/bin/bash\nexport LC_ALL=C\n{source} | {step} | awk '{{ print {shown} }}'\n"


def _freq(words: list[str], tags: set[str]) -> list[str]:
    bug = "bug" in tags
    if "initial" in tags:
        firsts = [w[0] for w in words]
        if bug:
            pairs = [(len(list(g)), k) for k, g in groupby(firsts)]
        else:
            pairs = [(c, k) for k, c in sorted(Counter(firsts).items())]
    else:
        if "longest" in tags:
            pairs = [(len(w), w) for w in set(words)]
        else:
            pairs = [(c, w) for w, c in Counter(words).items()]
        if bug:  # `sort -nr`: equal values end up in reverse alphabetical order
            pairs = sorted(pairs, reverse=True)
            pairs = pairs[-3:] if "rare" in tags else pairs[:3]
        else:
            sign = 1 if "rare" in tags else -1
            pairs = sorted(pairs, key=lambda p: (sign * p[0], p[1]))[:3]
    if "rev" in tags:
        return [f"{v} {k}" for v, k in pairs]
    return [f"{k}{',' if 'csv' in tags else ' '}{v}" for v, k in pairs]


def _all_freq(rounds: list[list[str]], tags: set[str]) -> list[list[str]]:
    return [_freq(words, tags) for words in rounds]


def _words(rng: random.Random) -> list[str]:
    vocab = rng.sample(WORDS, 6)
    counts = rng.choice(([4, 3, 3, 2, 1, 1], [3, 3, 2, 2, 1, 1], [4, 2, 2, 1, 1, 1]))
    tokens = [w for w, c in zip(vocab, counts, strict=True) for _ in range(c)]
    rng.shuffle(tokens)
    return tokens


def _words_text(words: list[str], tags: set[str]) -> str:
    if "perline" in tags:
        return "".join(f"{w}\n" for w in words)
    return "".join(",".join(words[i : i + 5]) + "\n" for i in range(0, len(words), 5))


def word_freq(rng: random.Random) -> Parts:
    """Starter of `bash.word_freq`: one task of `FREQ_AXES`, a `sort`/`uniq` pipeline."""
    tags = variant(rng, *FREQ_AXES)
    for _attempt in range(100):
        rounds = [_words(rng) for _ in range(3)]
        if all(_freq(w, tags) != _freq(w, tags | {"bug"}) for w in rounds) and separates(
            partial(_all_freq, rounds), tags, (FREQ_MEASURES, FREQ_LAYOUTS)
        ):
            break
    else:
        raise RenderError("bash.word_freq: starter inputs do not separate the variants")
    name = _FREQ_FILE[pick(tags, FREQ_INPUTS)]
    shape = "one word per line" if "perline" in tags else "comma-separated words"
    layout = {"sp": "{k} {v}", "csv": "{k},{v}", "rev": "{v} {k}"}[pick(tags, FREQ_LAYOUTS)]
    what, value, first = {
        "top": ("Find the 3 most frequent words", "COUNT", "most frequent first"),
        "rare": ("Find the 3 least frequent words", "COUNT", "least frequent first"),
        "longest": ("Find the 3 longest different words", "LENGTH", "longest first"),
        "initial": ("Count the words by first letter", "COUNT", "letters in alphabetical order"),
    }[pick(tags, FREQ_MEASURES)]
    key = "LETTER" if "initial" in tags else "WORD"
    ties = "" if "initial" in tags else "; ties in alphabetical order"
    texts = [_words_text(w, tags) for w in rounds]
    prompt = script_prompt(
        f"{what} in `{name}` ({shape}).",
        {f"`{name}`:": texts[0]},
        f"Print one line each as `{layout.format(k=key, v=value)}`, {first}{ties}.",
        _freq(rounds[0], tags),
        "`sort`, `uniq -c`, `head` and `awk`",
    )
    expected = [_freq(w, tags) for w in rounds]
    steps: list[dict[str, object]] = [{"stdout": expected[0]}]
    steps += [
        {"files": {name: t}, "shown": t, "stdout": e}
        for t, e in zip(texts[1:], expected[1:], strict=True)
    ]
    return Parts(
        prompt=prompt,
        setup_script=files_setup({name: texts[0]}),
        validation_script=script_validator(steps, _SH),
        reference_solution=_freq_script(tags),
        wrong_solution=_freq_script(tags | {"bug"}),
    )
