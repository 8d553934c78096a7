"""Starter tier of cluster `bash`: one-pipeline scripts with their input shown.

The script runs on the shown input (written by the setup) and then on hidden
inputs of the same form, so echoing the shown answer does not pass.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from nightschool.challenges._templates._kit import (
    WORDS,
    Parts,
    RenderError,
    files_setup,
    script_prompt,
    script_validator,
    select,
)

_SH = "solution.sh"
_PATHS = ("/", "/index.html", "/api/items", "/login", "/app.js", "/logo.png")
_STATUSES = (200, 200, 200, 301, 404, 404, 500)


def _parts(rounds: list[dict[str, object]], source: str, setup: str, prompt: str) -> Parts:
    return Parts(
        prompt=prompt,
        setup_script=setup,
        validation_script=script_validator(rounds, _SH),
        reference_solution=select(source, set()),
        wrong_solution=select(source, {"bug"}),
    )


def _rounds(
    name: str, texts: list[str], expect: Callable[[str], list[str]]
) -> list[dict[str, object]]:
    """Stdout rounds over `texts`: the first from the setup, the others written by the validator."""
    rounds: list[dict[str, object]] = [{"stdout": expect(texts[0])}]
    for text in texts[1:]:
        rounds.append({"files": {name: text}, "shown": text, "stdout": expect(text)})
    return rounds


# --------------------------------------------------------------------------- access_log

_LOG_SOURCE = """
    #!/bin/bash
    awk '{ count[$3]++ } END { for (s in count) print s, count[s] }' status.log | sort -n  #-bug
    awk '{ print $3 }' status.log | sort -n | uniq -c  #+bug
"""


def _status_counts(text: str, bug: bool = False) -> list[str]:
    counts = Counter(line.split()[2] for line in text.splitlines() if line.strip())
    if bug:
        return [f"{counts[s]} {s}" for s in sorted(counts, key=int)]
    return [f"{s} {counts[s]}" for s in sorted(counts, key=int)]


def _status_log(rng: random.Random, n: int) -> str:
    lines = [
        f"{rng.choice(('GET', 'GET', 'POST'))} {rng.choice(_PATHS)} {rng.choice(_STATUSES)}"
        for _ in range(n)
    ]
    return "\n".join(lines) + "\n"


def access_log(rng: random.Random) -> Parts:
    """Starter of `bash.access_log`."""
    for _attempt in range(100):
        texts = [_status_log(rng, n) for n in (6, 9, 12)]
        if all(_status_counts(t) != _status_counts(t, bug=True) for t in texts):
            break
    else:
        raise RenderError("bash.access_log: starter inputs do not separate the near-miss")
    prompt = script_prompt(
        "Count the requests in `status.log` by HTTP status code.",
        {"`status.log`:": texts[0]},
        "Each line is `METHOD PATH STATUS`. Print one line per status code as `STATUS COUNT`, "
        "smallest status first.",
        _status_counts(texts[0]),
        "for example `awk` and `sort`",
    )
    rounds = _rounds("status.log", texts, _status_counts)
    return _parts(rounds, _LOG_SOURCE, files_setup({"status.log": texts[0]}), prompt)


# --------------------------------------------------------------------------- rename_files

_RENAME_SOURCE = """
    #!/bin/bash
    for f in inbox/*.txt; do  #-bug
    for f in inbox/*; do  #+bug
        mv -- "$f" "${f%.*}.md"
    done
"""

_OTHER = (".csv", ".log", ".txt.bak", ".json")


def _inbox(rng: random.Random) -> dict[str, str]:
    words = rng.sample(WORDS, 5)
    names = [f"{w}.txt" for w in words[:3]] + [
        w + ext for w, ext in zip(words[3:], rng.sample(_OTHER, 2), strict=True)
    ]
    return {name: f"{name} #{rng.randint(100, 999)}\n" for name in names}


def _renamed(files: dict[str, str]) -> dict[str, str]:
    return {(n[:-4] + ".md" if n.endswith(".txt") else n): text for n, text in files.items()}


def rename_files(rng: random.Random) -> Parts:
    """Starter of `bash.rename_files`."""
    inboxes = [_inbox(rng) for _ in range(2)]
    listing = "".join(f"{name}\n" for name in sorted(inboxes[0]))
    prompt = script_prompt(
        "In the folder `inbox`, rename every file ending in `.txt` so that it ends in `.md` "
        "instead (`plan.txt` becomes `plan.md`). Leave all other files alone.",
        {"The files in `inbox`:": listing},
        "Print nothing.",
        sorted(_renamed(inboxes[0])),
        "`for f in inbox/*.txt; do ...; done` with `mv`",
        "For the folder above, `inbox` then holds:",
    )
    rounds: list[dict[str, object]] = [{"tree": ["inbox", _renamed(inboxes[0])]}]
    rounds.append(
        {
            "clear": ["inbox"],
            "files": {f"inbox/{n}": t for n, t in inboxes[1].items()},
            "shown": "inbox/ held: " + ", ".join(sorted(inboxes[1])),
            "tree": ["inbox", _renamed(inboxes[1])],
        }
    )
    setup = files_setup({f"inbox/{n}": t for n, t in inboxes[0].items()})
    return _parts(rounds, _RENAME_SOURCE, setup, prompt)


# --------------------------------------------------------------------------- word_freq

_FREQ_SOURCE = """
    #!/bin/bash
    export LC_ALL=C
    sort words.txt | uniq -c | sort -k1,1nr -k2,2 | head -n 3 | awk '{ print $2, $1 }'  #-bug
    sort words.txt | uniq -c | sort -nr | head -n 3 | awk '{ print $2, $1 }'  #+bug
"""


def _top_words(text: str, bug: bool = False) -> list[str]:
    counts = Counter(text.split())
    if bug:  # `sort -nr`: equal counts end up in reverse alphabetical order
        ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    else:
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [f"{word} {count}" for word, count in ranked[:3]]


def _words(rng: random.Random) -> str:
    vocab = rng.sample(WORDS, 5)
    counts = [4, 3, 3, 2, 1]  # a tie inside the top three
    tokens = [w for w, c in zip(vocab, counts, strict=True) for _ in range(c)]
    rng.shuffle(tokens)
    return "".join(f"{token}\n" for token in tokens)


def word_freq(rng: random.Random) -> Parts:
    """Starter of `bash.word_freq`."""
    texts = [_words(rng) for _ in range(3)]
    if not all(_top_words(t) != _top_words(t, bug=True) for t in texts):
        raise RenderError("bash.word_freq: starter inputs do not separate the near-miss")
    prompt = script_prompt(
        "Find the 3 most frequent words in `words.txt` (one word per line).",
        {"`words.txt`:": texts[0]},
        "Print them as `WORD COUNT`, most frequent first; words with the same count in "
        "alphabetical order.",
        _top_words(texts[0]),
        "`sort`, `uniq -c`, `sort`, `head` and `awk`",
    )
    rounds = _rounds("words.txt", texts, _top_words)
    return _parts(rounds, _FREQ_SOURCE, files_setup({"words.txt": texts[0]}), prompt)
