"""Template `bash.word_freq`: word statistics of a text (`solution.sh`).

Each seed draws its statistic from a family (`AXES`): what to compute (the
most frequent words, the longest words, words per first character, different
words per length), the input (`book.txt`, or every file in `chapters/`) and
the line layout (`KEY VALUE`, `KEY,VALUE`, `VALUE KEY`). The twists (case
folding, punctuation, stop words) apply on top of every variant.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import partial
from itertools import groupby

from nightschool.challenges._templates._bash_lib import SH, separates
from nightschool.challenges._templates._kit import (
    WORDS,
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

MEASURES = ("top", "longest", "initial", "lengths")
"""What to compute: the most frequent words, the longest different words, the number of words
per first character, the number of different words per length."""
INPUTS = ("onefile", "chapters")
"""The text: `book.txt`, or all the files `chapters/*.txt` together."""
LAYOUTS = ("sp", "csv", "rev")
"""Line layout: `KEY VALUE`, `KEY,VALUE` or `VALUE KEY`."""
AXES = (MEASURES, INPUTS, LAYOUTS)
"""The family of `bash.word_freq`'s program tiers: 24 tasks."""

_SOLUTION = """
    #!/bin/bash
    export LC_ALL=C
    cat book.txt \\  #+onefile
    cat chapters/*.txt \\  #+chapters
        | tr -s ' \\n' '\\n' \\  #-t2
        | tr -cs 'A-Za-z' '\\n' \\  #+t2
        | tr 'A-Z' 'a-z' \\  #+t1
        | grep -v '^$' \\
        | grep -vxFf stopwords.txt \\  #+t3
        | sort | uniq -c | sort -k1,1nr -k2,2 | head -n {top} \\  #+top
        | sort -u | awk '{ print length($0), $0 }' | sort -k1,1nr -k2,2 | head -n {top} \\  #+longest
        | sort -k1,1n \\  #=bug&!initial&!lengths
        | cut -c1 | sort | uniq -c \\  #=initial&!bug
        | cut -c1 | uniq -c \\  #=initial&bug
        | sort -u | awk '{ print length($0) }' | sort -n | uniq -c \\  #=lengths&!bug
        | sort -u | awk '{ print length($0) }' | uniq -c \\  #=lengths&bug
        | awk '{ print $2, $1 }'  #+sp
        | awk '{ print $2 "," $1 }'  #+csv
        | awk '{ print $1, $2 }'  #+rev
"""

_STOP = ("the", "therefore", "and", "of", "a", "to", "in", "is")
# measure -> (key name, value name)
_NAMES = {
    "top": ("WORD", "COUNT"),
    "longest": ("WORD", "LENGTH"),
    "initial": ("CHAR", "COUNT"),
    "lengths": ("LENGTH", "WORDS"),
}


def _tokens(text: str, tags: set[str]) -> list[str]:
    if "t2" in tags:
        words = "".join(c if c.isascii() and c.isalpha() else " " for c in text).split()
    else:
        words = text.split()
    if "t1" in tags:
        words = [w.lower() for w in words]
    if "t3" in tags:
        words = [w for w in words if w not in _STOP]
    return words


def _runs(keys: list[str]) -> list[tuple[int, str]]:
    """`uniq -c` of `keys`: (count, key) per run of equal neighbours."""
    return [(len(list(group)), key) for key, group in groupby(keys)]


def stats(text: str, top: int, tags: set[str]) -> list[str]:
    """The expected stdout of the solution with feature `tags` on the whole text."""
    words, bug = _tokens(text, tags), "bug" in tags
    pairs: list[tuple[int, str]]  # (VALUE, KEY) as the pipeline prints them before the layout
    if "top" in tags or "longest" in tags:
        if "top" in tags:
            pairs = [(c, w) for w, c in Counter(words).items()]
        else:
            pairs = [(len(w), w) for w in set(words)]
        pairs = sorted(pairs, key=lambda p: (-p[0], p[1]))[:top]
        if bug:
            pairs.sort()
    elif "initial" in tags:
        firsts = [w[0] for w in words]
        pairs = _runs(firsts) if bug else [(c, k) for k, c in sorted(Counter(firsts).items())]
    else:
        lengths = [len(w) for w in sorted(set(words))]
        if not bug:
            lengths.sort()
        pairs = [(c, str(k)) for c, k in _runs([str(n) for n in lengths])]
    if "rev" in tags:
        return [f"{v} {k}" for v, k in pairs]
    sep = "," if "csv" in tags else " "
    return [f"{k}{sep}{v}" for v, k in pairs]


def _text(rng: random.Random, level: int) -> str:
    vocab = rng.sample(WORDS, (10, 16, 20, 24)[level])
    tokens = [w for i, w in enumerate(vocab) for _ in range(max(1, 24 - i * rng.randint(1, 2)))]
    tokens += [w for w in _STOP[: 2 + 2 * level] for _ in range(rng.randint(20, 30))]
    rng.shuffle(tokens)
    lines: list[str] = []
    line: list[str] = []
    for word in tokens:
        if level >= 1 and (not line or rng.random() < 0.1):
            word = word.upper() if rng.random() < 0.2 else word.capitalize()
        if level >= 2 and rng.random() < 0.15:
            word = rng.choice(("{}.", "{},", '"{}"', "({})", "{}!", "{}--", "{}:3")).format(word)
        line.append(word)
        if len(line) >= rng.randint(6, 12):
            lines.append(" ".join(line))
            line = []
    return "\n".join([*lines, " ".join(line)]) + "\n"


def _layout(tags: set[str]) -> str:
    key, value = _NAMES[pick(tags, MEASURES)]
    if "rev" in tags:
        return f"{value} {key}"
    return f"{key}{',' if 'csv' in tags else ' '}{value}"


class WordFreq(TemplateBase):
    """Word statistics (family `AXES`); twists: case folding, punctuation, stop words."""

    name = "bash.word_freq"
    cluster = "bash"
    solution_file = SH

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.word_freq(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        top = (5, 5, 6, 8)[level]
        ref, wrong = tags | twists(level), tags | near_miss(level)
        for _attempt in range(100):
            text = _text(rng, level)
            if differs(partial(stats, text, top, ref), partial(stats, text, top, wrong)) and (
                separates(partial(stats, text, top), ref, (MEASURES, LAYOUTS))
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        if "chapters" in tags:
            lines = text.splitlines(keepends=True)
            cut = sorted(rng.sample(range(1, len(lines)), 2))
            parts = [lines[: cut[0]], lines[cut[0] : cut[1]], lines[cut[1] :]]
            files = {f"chapters/{i:02d}.txt": "".join(p) for i, p in enumerate(parts, 1)}
            inputs = (
                "the files `chapters/01.txt`, `chapters/02.txt`, ... (all `*.txt` files in "
                "`chapters/`): one text, words separated by spaces and newlines. Count all the "
                "chapters together."
            )
        else:
            files = {"book.txt": text}
            inputs = "`book.txt`: words separated by spaces and newlines."
        if level >= 3:
            files["stopwords.txt"] = "".join(f"{w}\n" for w in _STOP)
        layout = _layout(tags)
        measure = pick(tags, MEASURES)
        task, output = {
            "top": (
                f"Find the {top} most frequent words of a text.",
                f"print the {top} most frequent words, most frequent first, one per line as "
                f"`{layout}` (COUNT: how often it occurs). Words with the same count are in byte "
                "order (the order of `LC_ALL=C sort`).",
            ),
            "longest": (
                f"Find the {top} longest different words of a text.",
                f"print the {top} longest different words, longest first, one per line as "
                f"`{layout}` (LENGTH: its number of characters). Words of the same length are "
                "in byte order (the order of `LC_ALL=C sort`).",
            ),
            "initial": (
                "Count the words of a text by their first character.",
                f"print one line per first character as `{layout}` (COUNT: how many words, "
                "repeats included, start with CHAR), in byte order of CHAR (the order of "
                "`LC_ALL=C sort`).",
            ),
            "lengths": (
                "Count the different words of a text by their length.",
                f"print one line per word length as `{layout}` (WORDS: how many different words "
                "have LENGTH characters; repeats count once), shortest LENGTH first.",
            ),
        }[measure]
        rules = [
            "Ignore case: `River`, `RIVER` and `river` are the same word; work with and print "
            "lowercase words.",
            "Punctuation is not part of a word: a word is a run of letters A-Z or a-z, and any "
            "other character (punctuation, quotes, digits) separates words.",
            "Ignore the words listed in `stopwords.txt` (one lowercase word per line).",
        ]
        source = _SOLUTION.replace("{top}", str(top))
        return Parts(
            prompt=prompt(task, inputs, output, rules, level, SH),
            setup_script=files_setup(files),
            validation_script=stdout_validator(stats(text, top, ref), SH),
            reference_solution=select(source, ref),
            wrong_solution=select(source, wrong),
        )
