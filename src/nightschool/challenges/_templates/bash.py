"""Cluster `bash`: shell scripts (`solution.sh`) for log counting, renaming files, word counts."""

from __future__ import annotations

import random
from collections import Counter
from functools import partial

from nightschool.challenges._templates._kit import (
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
    validator_script,
)
from nightschool.challenges._templates.starters import bash as starters

_SH = "solution.sh"

# --------------------------------------------------------------------------- access_log

_LOG_SOLUTION = """
    #!/bin/bash
    awk '
        NF != 10 || $9 !~ /^[0-9][0-9][0-9]$/ { next }  #+t2
        $7 == "/health" { next }  #+t1
        { count[$9]++ }  #-t3|bug
        { count[$8]++ }  #+bug
        { count[$9]++; bytes[$9] += $10 }  #+t3
        END { for (s in count) print s, count[s] }  #-t3
        END { for (s in count) print s, count[s], bytes[s] }  #+t3
    ' access.log | sort -n
"""

_PATHS = ("/", "/index.html", "/api/items", "/api/login", "/static/app.js", "/img/logo.png")
_STATUSES = (200, 200, 200, 200, 301, 304, 403, 404, 404, 500)


def _request(rng: random.Random, i: int, path: str) -> str:
    ip = f"10.0.{rng.randint(0, 3)}.{rng.randint(1, 254)}"
    when = f"[12/Mar/2024:{10 + i // 60:02d}:{i % 60:02d}:{rng.randint(0, 59):02d} +0000]"
    method = rng.choice(("GET", "GET", "POST"))
    status = rng.choice(_STATUSES)
    size = "-" if status == 304 or rng.random() < 0.1 else str(rng.randint(100, 9000))
    return f'{ip} - - {when} "{method} {path} HTTP/1.1" {status} {size}'


def _log_counts(lines: list[str], features: set[str]) -> list[str]:
    count: Counter[str] = Counter()
    sent: Counter[str] = Counter()
    for line in lines:
        fields = line.split()
        if "t2" in features and (
            len(fields) != 10 or not (len(fields[8]) == 3 and fields[8].isdigit())
        ):
            continue
        if "t1" in features and fields[6] == "/health":
            continue
        key = fields[7] if "bug" in features else fields[8]
        count[key] += 1
        sent[key] += int(fields[9]) if fields[9].isdigit() else 0
    if "t3" in features:
        return [f"{s} {count[s]} {sent[s]}" for s in sorted(count)]
    return [f"{s} {count[s]}" for s in sorted(count)]


class AccessLog(TemplateBase):
    """Count web-server responses by status; twists: health checks, damaged lines, bytes column."""

    name = "bash.access_log"
    cluster = "bash"
    solution_file = _SH

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.access_log(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (25, 50, 80, 120)[level]
        ref, wrong = twists(level), near_miss(level)
        lines = []
        for i in range(n):
            health = level >= 1 and (i == n // 2 or rng.random() < 0.2)
            lines.append(_request(rng, i, "/health" if health else rng.choice(_PATHS)))
        if level >= 2:
            for _ in range(4):
                victim = rng.choice(lines)
                lines.insert(rng.randrange(n), victim[: rng.randint(15, 40)])
            lines.insert(rng.randrange(n), "=== log rotated ===")
        if not differs(partial(_log_counts, lines, ref), partial(_log_counts, lines, wrong)):
            raise RenderError(f"{self.name}: data does not separate the near-miss")
        expected = _log_counts(lines, ref)
        task = """
            Count the responses of a web server by HTTP status code.
        """
        inputs = """
            `access.log`, one request per line in the common log format, for example
            `10.0.1.7 - - [12/Mar/2024:10:00:03 +0000] "GET /index.html HTTP/1.1" 200 512`.
            Split on spaces, the fields are: 1 client, 4-5 time, 6 method, 7 path,
            8 protocol, 9 status, 10 bytes sent.
        """
        output = """
            print one line per status code as `STATUS COUNT` (for example `404 3`), sorted by
            status code, smallest first.
        """
        rules = [
            "Requests for the path `/health` are health checks: leave them out of the counts.",
            "Some lines are damaged (cut short, or not a request at all). Count only lines with "
            "exactly 10 space-separated fields whose 9th field is a three-digit status code.",
            "Add a third column, the total bytes sent for that status: `STATUS COUNT BYTES`. A "
            "`-` in the bytes field counts as 0.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level, _SH),
            setup_script=files_setup({"access.log": "\n".join(lines) + "\n"}),
            validation_script=stdout_validator(expected, _SH),
            reference_solution=select(_LOG_SOLUTION, ref),
            wrong_solution=select(_LOG_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- rename_files

_RENAME_SOLUTION = """
    #!/bin/bash
    export LC_ALL=C  #+t3
    shopt -s nullglob
    shopt -s nocaseglob  #+t2
    for f in inbox/*.txt; do  #-ls
        target="${f%.*}.md"  #-t3|bug
        target="${f/txt/md}"  #+bug
        base="${f%.*}"  #+t3
        target="$base.md"  #+t3
        n=1  #+t3
        while [ -e "$target" ]; do  #+t3
            target="${base}_$n.md"  #+t3
            n=$((n + 1))  #+t3
        done  #+t3
        mv -- "$f" "$target"  #-ls
    done  #-ls
    for f in $(ls inbox | grep '\\.txt$'); do  #+ls
        mv "inbox/$f" "inbox/${f%.txt}.md"  #+ls
    done  #+ls
"""


def _renamed(files: dict[str, str], level: int) -> dict[str, str]:
    tree = dict(files)
    for name in sorted(files):
        matches = name.lower().endswith(".txt") if level >= 2 else name.endswith(".txt")
        if not matches:
            continue
        base = name[:-4]
        target, n = f"{base}.md", 1
        while level >= 3 and target in tree:
            target, n = f"{base}_{n}.md", n + 1
        tree[target] = tree.pop(name)
    return tree


class RenameFiles(TemplateBase):
    """Rename `*.txt` to `*.md`; twists: spaces in names, any-case extension, name collisions."""

    name = "bash.rename_files"
    cluster = "bash"
    solution_file = _SH

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.rename_files(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (6, 10, 14, 18)[level]
        words = rng.sample(WORDS, n + 4)
        names = [f"{w}.txt" for w in words[:n]]
        names[0] = f"txt_{words[0]}.txt"  # `txt` inside the name, not only the extension
        names += [f"{words[n]}.csv", f"{words[n + 1]}.txt.bak", f"{words[n + 2]}.md", "notes.log"]
        if level >= 1:
            names[1] = f"{words[1]} draft.txt"
            names[2] = f"my {words[2]} list.txt"
        if level >= 2:
            names[3] = f"{words[3].upper()}.TXT"
            names[4] = f"{words[4]}.Txt"
        if level >= 3:  # `X.md` exists already, and both `X.txt` and `X.TXT` want it
            names[5] = f"{words[5]}.md"
            names.append(f"{words[5]}.txt")
            names.append(f"{words[5]}.TXT")
        files = {name: f"{name} #{rng.randint(1000, 9999)}\n" for name in names}
        expected = _renamed(files, level)
        wrong_level = {0: {"bug"}, 1: {"ls"}}.get(level, near_miss(level))
        task = """
            Tidy a folder: every text file in the folder `inbox` must get the extension `.md`
            instead of `.txt`, keeping the rest of its name (`plan.txt` becomes `plan.md`).
            Leave every other file alone (for example `a.txt.bak` or `b.csv`).
        """
        inputs = "the folder `inbox/` in the working directory (no subfolders)."
        output = "the renamed files in `inbox/`, contents unchanged; print nothing."
        rules = [
            "Some file names contain spaces (like `meeting notes.txt`).",
            "The extension may be in any case (`.TXT`, `.Txt`): rename those too, and the new "
            "extension is always lowercase `.md` (`LOG.TXT` becomes `LOG.md`).",
            "Never overwrite a file. If `NAME.md` already exists, use `NAME_1.md`, or "
            "`NAME_2.md` if that exists too, and so on. Handle the files in byte order of their "
            "names (the order of `LC_ALL=C ls`).",
        ]
        body = """
            run_solution(SOLUTION)
            check_tree("inbox", DATA)
            passed()
        """
        setup = {f"inbox/{name}": text for name, text in files.items()}
        return Parts(
            prompt=prompt(task, inputs, output, rules, level, _SH),
            setup_script=files_setup(setup),
            validation_script=validator_script(body, expected, _SH),
            reference_solution=select(_RENAME_SOLUTION, twists(level)),
            wrong_solution=select(_RENAME_SOLUTION, wrong_level),
        )


# --------------------------------------------------------------------------- word_freq

_FREQ_SOLUTION = """
    #!/bin/bash
    export LC_ALL=C
    tr -s ' \\n' '\\n' < book.txt \\  #-t2
    tr -cs 'A-Za-z' '\\n' < book.txt \\  #+t2
        | tr 'A-Z' 'a-z' \\  #+t1
        | grep -v '^$' \\
        | grep -vxFf stopwords.txt \\  #+t3
        | sort | uniq -c \\
        | sort -k1,1nr -k2,2 | head -n {top} \\  #-bug
        | sort -k1,1nr -k2,2 | head -n {top} | sort -k1,1n \\  #+bug
        | awk '{print $2, $1}'
"""

_STOP = ("the", "and", "of", "a", "to", "in", "is", "it")


def _word_top(text: str, stop: set[str], top: int, features: set[str]) -> list[str]:
    if "t2" in features:
        words = "".join(c if c.isascii() and c.isalpha() else " " for c in text).split()
    else:
        words = text.split()
    if "t1" in features:
        words = [w.lower() for w in words]
    if "t3" in features:
        words = [w for w in words if w not in stop]
    ranked = sorted(Counter(words).items(), key=lambda item: (-item[1], item[0]))[:top]
    if "bug" in features:
        ranked = sorted(ranked, key=lambda item: item[1])
    return [f"{word} {count}" for word, count in ranked]


class WordFreq(TemplateBase):
    """Most frequent words; twists: case folding, punctuation, stop words."""

    name = "bash.word_freq"
    cluster = "bash"
    solution_file = _SH

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.word_freq(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        top = (5, 5, 6, 8)[level]
        vocab = rng.sample(WORDS, (10, 16, 20, 24)[level])
        ref, wrong = twists(level), near_miss(level)
        for _attempt in range(100):
            tokens = [
                w for i, w in enumerate(vocab) for _ in range(max(1, 24 - i * rng.randint(1, 2)))
            ]
            tokens += [w for w in _STOP[: 2 + 2 * level] for _ in range(rng.randint(20, 30))]
            rng.shuffle(tokens)
            lines: list[str] = []
            line: list[str] = []
            for word in tokens:
                if level >= 1 and (not line or rng.random() < 0.1):
                    word = word.upper() if rng.random() < 0.2 else word.capitalize()
                if level >= 2 and rng.random() < 0.15:
                    word = rng.choice(("{}.", "{},", '"{}"', "({})", "{}!", "{}--", "{}:3")).format(
                        word
                    )
                line.append(word)
                if len(line) >= rng.randint(6, 12):
                    lines.append(" ".join(line))
                    line = []
            text = "\n".join([*lines, " ".join(line)]) + "\n"
            stop = set(_STOP)
            if differs(
                partial(_word_top, text, stop, top, ref),
                partial(_word_top, text, stop, top, wrong),
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        files = {"book.txt": text}
        if level >= 3:
            files["stopwords.txt"] = "".join(f"{w}\n" for w in _STOP)
        task = f"""
            Find the {top} most frequent words of a text.
        """
        inputs = """
            `book.txt`: words separated by spaces and newlines.
        """
        output = f"""
            print the {top} most frequent words, most frequent first, one per line as
            `WORD COUNT` (for example `river 12`). Words with the same count are ordered
            alphabetically.
        """
        rules = [
            "Count words case-insensitively (`River`, `RIVER` and `river` are one word) and "
            "print them in lowercase.",
            "Punctuation is not part of a word: a word is a run of letters A-Z or a-z, and any "
            "other character (punctuation, quotes, digits) separates words.",
            "Ignore the words listed in `stopwords.txt` (one lowercase word per line).",
        ]
        source = _FREQ_SOLUTION.replace("{top}", str(top))
        return Parts(
            prompt=prompt(task, inputs, output, rules, level, _SH),
            setup_script=files_setup(files),
            validation_script=stdout_validator(_word_top(text, set(_STOP), top, ref), _SH),
            reference_solution=select(source, ref),
            wrong_solution=select(source, wrong),
        )


TEMPLATES = (AccessLog(), RenameFiles(), WordFreq())
