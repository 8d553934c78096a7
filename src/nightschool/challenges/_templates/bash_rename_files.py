"""Template `bash.rename_files`: rename, move or back up the text files of a folder.

Each seed draws its task from a family (`AXES`): what happens to each text
file (new extension `.md`, moved into `archive/`, a `.bak` copy), how the
script reports (silently, a log line per file, a dry run that changes
nothing, or the number of files) and whether hidden files are handled. The twists (spaces in
names, any-case extension, never overwrite) apply on top of every variant.
"""

from __future__ import annotations

import fnmatch
import random

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
    twists,
    validator_script,
    variant,
)
from nightschool.challenges._templates.starters import bash as starters

OPS = ("ext", "archive", "backup")
"""What happens to a text file: extension `.txt` -> `.md`, moved to `archive/`, copied to `.bak`."""
MODES = ("quiet", "log", "dry", "count")
"""Reporting: print nothing, print `OLD -> NEW` per file, a dry run (print, change nothing),
or print the number of files handled."""
DOTS = ("dotskip", "dotall")
"""Hidden files (names starting with `.`): left alone, or handled like the others."""
AXES = (OPS, MODES, DOTS)
"""The family of `bash.rename_files`'s program tiers: 24 tasks."""

_SOLUTION = """
    #!/bin/bash
    export LC_ALL=C
    shopt -s nullglob
    shopt -s dotglob  #+dotall
    shopt -s nocaseglob  #+t2
    mkdir -p inbox/archive  #=archive&!dry
    declare -A taken  #=t3&dry
    count=0  #+count
    for f in inbox/*.txt; do  #-ls|bug
    for f in inbox/*.txt*; do  #+bug
    for f in $(ls inbox | grep '\\.txt$'); do f="inbox/$f"  #=ls&!dotall
    for f in $(ls -A inbox | grep '\\.txt$'); do f="inbox/$f"  #=ls&dotall
        name="${f#inbox/}"
        stem="${name%.*}"; ext=".md"  #+ext
        stem="archive/${name%.*}"; ext=".${name##*.}"  #+archive
        stem="$name"; ext=".bak"  #+backup
        new="$stem$ext"
        n=1  #+t3
        while [ -e "inbox/$new" ] || [ -n "${taken[$new]}" ]; do  #=t3&dry
        while [ -e "inbox/$new" ]; do  #=t3&!dry
            new="${stem}_$n$ext"  #+t3
            n=$((n + 1))  #+t3
        done  #+t3
        taken[$new]=1  #=t3&dry
        echo "$name -> $new"  #+log|dry
        count=$((count + 1))  #+count
        mv -- "$f" "inbox/$new"  #=!dry&!backup
        cp -- "$f" "inbox/$new"  #=backup&!dry
    done
    echo "$count"  #+count
"""

_TASKS = {
    "ext": "every text file (name ending in `.txt`) in the folder `inbox` gets the extension "
    "`.md` instead, keeping the rest of its name (`plan.txt` becomes `plan.md`).",
    "archive": "every text file (name ending in `.txt`) in the folder `inbox` moves into the "
    "folder `inbox/archive/` (create it when missing), keeping its name (`plan.txt` becomes "
    "`archive/plan.txt`).",
    "backup": "every text file (name ending in `.txt`) in the folder `inbox` gets a backup copy "
    "next to it, named with `.bak` added (`plan.txt` is copied to `plan.txt.bak`); the original "
    "stays.",
}
_CASES = {
    "ext": "the new extension is always lowercase `.md` (`LOG.TXT` becomes `LOG.md`)",
    "archive": "the name stays as it is (`LOG.TXT` becomes `archive/LOG.TXT`)",
    "backup": "the name stays as it is (`LOG.TXT` is copied to `LOG.TXT.bak`)",
}
_TAKEN = {
    "ext": "`plan.md` taken: `plan_1.md`",
    "archive": "`archive/plan.txt` taken: `archive/plan_1.txt`",
    "backup": "`plan.txt.bak` taken: `plan.txt_1.bak`",
}


def _selected(name: str, tags: set[str]) -> bool:
    if "/" in name or (name.startswith(".") and "dotall" not in tags):
        return False
    low = name.lower() if "t2" in tags else name
    return fnmatch.fnmatchcase(low, "*.txt*") if "bug" in tags else low.endswith(".txt")


def _target(name: str, tags: set[str]) -> tuple[str, str]:
    """(stem, extension) of the new name; a taken name gets `_N` between them."""
    base, suffix = name.rsplit(".", 1)
    if "ext" in tags:
        return base, ".md"
    if "archive" in tags:
        return f"archive/{base}", f".{suffix}"
    return name, ".bak"


def outcome(files: dict[str, str], tags: set[str]) -> tuple[dict[str, str], list[str]]:
    """The folder (name relative to `inbox` -> text) and stdout lines after the solution runs."""
    tree, log, taken = dict(files), [], set()
    for name in sorted(n for n in files if _selected(n, tags)):
        stem, ext = _target(name, tags)
        new, k = stem + ext, 1
        while "t3" in tags and (new in tree or new in taken):
            new, k = f"{stem}_{k}{ext}", k + 1
        taken.add(new)
        log.append(f"{name} -> {new}")
        if "dry" not in tags:
            tree[new] = tree[name] if "backup" in tags else tree.pop(name)
    if "count" in tags:
        return tree, [str(len(log))]
    return tree, [] if "quiet" in tags else log


def _names(rng: random.Random, level: int, tags: set[str]) -> list[str]:
    n = (6, 10, 14, 18)[level]
    words = rng.sample(WORDS, n + 4)
    names = [f"{w}.txt" for w in words[:n]]
    names[0] = f"txt_{words[0]}.txt"  # `txt` inside the name, not only the extension
    names += [f"{words[n]}.csv", f"{words[n + 1]}.txt.bak", f"{words[n + 2]}.md", "notes.log"]
    names.append(f".{words[n + 3]}.txt")  # hidden
    if level >= 1:
        names[1] = f"{words[1]} draft.txt"
        names[2] = f"my {words[2]} list.txt"
    if level >= 2:
        names[3] = f"{words[3].upper()}.TXT"
        names[4] = f"{words[4]}.Txt"
    if level >= 3:  # the new name of `X.txt` (and of `X.TXT`) is taken already
        w = words[5]
        names[5] = f"{w}.txt"
        names += {
            "ext": [f"{w}.md", f"{w}.TXT"],
            "archive": [f"archive/{w}.txt", f"archive/{w}_1.txt"],
            "backup": [f"{w}.txt.bak", f"{w}.TXT"],
        }[pick(tags, OPS)]
    return names


class RenameFiles(TemplateBase):
    """Rename, move or back up text files (family `AXES`); twists: spaces, any case, no overwrite."""

    name = "bash.rename_files"
    cluster = "bash"
    solution_file = SH

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.rename_files(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        ref = tags | twists(level)
        wrong = tags | ({"ls"} if level == 1 else near_miss(level))
        names = _names(rng, level, tags)
        files = {name: f"{name} #{rng.randint(1000, 9999)}\n" for name in names}
        # the near-miss of level 1 splits names with spaces, which every level-1 folder holds
        if (
            level != 1 and not differs(lambda: outcome(files, ref), lambda: outcome(files, wrong))
        ) or (not separates(lambda t: outcome(files, t), ref, AXES)):
            raise RenderError(f"{self.name}: data does not separate the near-miss or the variants")
        tree, log = outcome(files, ref)
        op = pick(tags, OPS)
        task = (
            f"Tidy a folder: {_TASKS[op]} Leave every other file alone (for example "
            "`a.txt.bak` or `b.csv`). Handle the files in byte order of their names (the order "
            "of `LC_ALL=C ls`)."
        )
        if "dotall" in tags:
            task += " Hidden files (names starting with `.`) are handled like the others."
        else:
            task += " Hidden files (names starting with `.`) are left alone."
        inputs = "the folder `inbox/` in the working directory."
        example = {"ext": "plan.md", "archive": "archive/plan.txt", "backup": "plan.txt.bak"}[op]
        report = (
            "one line `OLD -> NEW` per file, in that order, both names relative to `inbox` "
            f"(`plan.txt -> {example}`)"
        )
        output = {
            "quiet": "the changed files in `inbox/`, contents unchanged; print nothing.",
            "count": "the changed files in `inbox/`, contents unchanged; print one line, the "
            "number of files handled.",
            "log": f"the changed files in `inbox/`, contents unchanged; print {report}.",
            "dry": "this is a dry run: change nothing in `inbox/`, only print what would be done: "
            f"{report}.",
        }[pick(tags, MODES)]
        rules = [
            "Some file names contain spaces (like `meeting notes.txt`).",
            f"The extension may be in any case (`.TXT`, `.Txt`): handle those too; {_CASES[op]}.",
            "Never overwrite a file. If the new name is taken, put `_1` before its last "
            f"extension, or `_2` if that is taken too, and so on ({_TAKEN[op]})."
            + " In the dry run a name given to an earlier file counts as taken."
            * ("dry" in tags),
        ]
        body = """
            out, _ = run_solution(SOLUTION)
            check_tree("inbox", DATA["tree"])
            check_lines(out, DATA["stdout"], "stdout")
            passed()
        """
        setup = {f"inbox/{name}": text for name, text in files.items()}
        return Parts(
            prompt=prompt(task, inputs, output, rules, level, SH),
            setup_script=files_setup(setup),
            validation_script=validator_script(body, {"tree": tree, "stdout": log}, SH),
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )
