"""Template `regex_parse.emails`: e-mail addresses found in free text.

A seed draws its task from a family (`variant`): what to report (the `list`
of distinct addresses, the number of addresses per domain `domains`, or each
address's number of `mentions` in order of first mention), where the text is
(`in_file` one file, `in_dir` a folder of files), which addresses count
(`scope_all`, or `scope_external`: not at the own domain `example.com`) and the
output (`out_lines` on stdout, `out_json` a `report.json` file). Twists on
top: case folding, addresses touching punctuation, obfuscated addresses.
"""

from __future__ import annotations

import random
import re
from functools import partial
from typing import Any

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
    validator_script,
    variant,
)
from nightschool.challenges._templates.regex_parse_kit import separates
from nightschool.challenges._templates.starters import regex_parse as starters

WHAT = ("list", "domains", "mentions")
"""What to report: distinct addresses, distinct addresses per domain, mentions per address."""
SOURCES = ("in_file", "in_dir")
"""Where the text is: `contacts.txt`, or the `.txt` files of `inbox/` in name order."""
SCOPES = ("scope_all", "scope_external")
"""Which addresses count: all, or those not at the own domain `example.com`."""
OUTPUTS = ("out_lines", "out_json")
"""Output: lines on stdout, or the JSON file `report.json`."""

_SOLUTION = r"""
    import json  #+out_json
    import re
    from pathlib import Path

    text = Path("contacts.txt").read_text()  #+in_file
    text = "\n".join(p.read_text() for p in sorted(Path("inbox").glob("*.txt")))  #+in_dir
    PATTERN = r"\S+@\S+"  #-t2
    PATTERN = r"[A-Za-z0-9._+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}"  #+t2
    found = [(m.start(), m.group()) for m in re.finditer(PATTERN, text)]
    HIDDEN = r"([A-Za-z0-9._+-]+) \[at\] ([A-Za-z0-9-]+(?: \[dot\] [A-Za-z0-9-]+)+)"  #+t3
    for m in re.finditer(HIDDEN, text):  #+t3
        found.append((m.start(), m.group(1) + "@" + m.group(2).replace(" [dot] ", ".")))  #+t3
    found = [address for _, address in sorted(found)]
    found = [address.lower() for address in found]  #+t1
    found = [a for a in found if a.split("@")[1].lower() != "example.com"]  #+scope_external
    rows = [[address] for address in sorted(set(found))]  #=list&!bug
    rows = [[address] for address in sorted(found)]  #=list&bug
    doc = [address for address, in rows]  #=list&out_json
    counts = {}  #-list
    for address in set(found):  #=domains&!bug
    for address in found:  #=domains&bug
        domain = address.split("@")[1]  #+domains
        counts[domain] = counts.get(domain, 0) + 1  #+domains
    rows = [[d, counts[d]] for d in sorted(counts, key=lambda d: (-counts[d], d))]  #+domains
    doc = dict(rows)  #=domains&out_json
    for address in found:  #+mentions
        counts[address] = counts.get(address, 0) + 1  #+mentions
    rows = [[address, counts[address]] for address in counts]  #=mentions&!bug
    rows = [[address, counts[address]] for address in sorted(counts)]  #=mentions&bug
    doc = rows  #=mentions&out_json
    for row in rows:  #+out_lines
        print(*row)  #+out_lines
    Path("report.json").write_text(json.dumps(doc, indent=2))  #+out_json
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


def _found(text: str, features: set[str]) -> list[str]:
    """The addresses that count, in order of mention (with repeats)."""
    pattern = _STRICT if "t2" in features else _SIMPLE
    found = [(m.start(), m.group()) for m in pattern.finditer(text)]
    if "t3" in features:
        found += [
            (m.start(), m.group(1) + "@" + m.group(2).replace(" [dot] ", "."))
            for m in _HIDDEN.finditer(text)
        ]
    addresses = [address for _, address in sorted(found)]
    if "t1" in features:
        addresses = [address.lower() for address in addresses]
    if "scope_external" in features:
        addresses = [a for a in addresses if a.split("@")[1].lower() != "example.com"]
    return addresses


def _report(text: str, features: set[str]) -> tuple[str, Any]:
    """The expected output of task `features`: ("lines", stdout lines) or ("json", document)."""
    found = _found(text, features)
    bug = "bug" in features
    rows: list[list[Any]]
    if "list" in features:
        rows = [[address] for address in (sorted(found) if bug else sorted(set(found)))]
        doc: Any = [address for (address,) in rows]
    elif "domains" in features:
        counts: dict[str, int] = {}
        for address in found if bug else set(found):
            domain = address.split("@")[1]
            counts[domain] = counts.get(domain, 0) + 1
        rows = [[d, counts[d]] for d in sorted(counts, key=lambda d: (-counts[d], d))]
        doc = dict(rows)
    else:
        mentions: dict[str, int] = {}
        for address in found:
            mentions[address] = mentions.get(address, 0) + 1
        rows = [[a, mentions[a]] for a in (sorted(mentions) if bug else mentions)]
        doc = rows
    if "out_json" in features:
        return "json", doc
    return "lines", [" ".join(map(str, row)) for row in rows]


def _text(rng: random.Random, level: int) -> tuple[str, set[str]]:
    """Free text with addresses (as `level` allows them) and the addresses meant."""
    n = (6, 10, 14, 18)[level]
    truth, lines = set(), []
    for i, person in enumerate(rng.sample(FIRST_NAMES, n)):
        local = rng.choice(
            (person, f"{person}.{rng.choice(WORDS)}", f"{person}{rng.randint(1, 99)}")
        )
        if level >= 2 and rng.random() < 0.3:
            local = rng.choice((f"{person}+news", f"{person}_{rng.choice(WORDS)}", f"{person}-x"))
        domain = rng.choice(_DOMAINS)
        truth.add(f"{local}@{domain}")
        for _ in range(rng.choice((1, 1, 2, 3)) if i >= 2 else 2):
            shown = f"{local}@{domain}"
            if level >= 1 and rng.random() < 0.5:
                shown = rng.choice((shown.upper(), shown.capitalize()))
            if level >= 3 and rng.random() < 0.3:
                shown = f"{local} [at] {domain.replace('.', ' [dot] ')}"
            elif level >= 2 and rng.random() < 0.6:
                shown = rng.choice(_WRAPS).format(shown)
            lines.append(rng.choice(_SENTENCES).format(shown))
    lines += [f"Meeting at {rng.randint(1, 12)}pm in room {rng.choice(WORDS)}", "no address here"]
    if level >= 2:
        lines.append("the @ sign alone, or user@localhost, is not an address")
    rng.shuffle(lines)
    return "\n".join(lines) + "\n", truth


def _files(text: str, tags: set[str]) -> dict[str, str]:
    """The input files holding `text`: one file, or the lines split over `inbox/NN.txt`."""
    if "in_file" in tags:
        return {"contacts.txt": text}
    lines = text.splitlines()
    cut = len(lines) // 3
    parts = [lines[:cut], lines[cut : 2 * cut], lines[2 * cut :]]
    return {f"inbox/{k + 1:02d}.txt": "\n".join(part) + "\n" for k, part in enumerate(parts)}


def _validator(expected: tuple[str, Any]) -> str:
    kind, value = expected
    if kind == "lines":
        return stdout_validator(value)
    body = """
        run_solution(SOLUTION)
        check_json_file("report.json", DATA)
        passed()
    """
    return validator_script(body, value)


_REPORTS = {
    "list": (
        "every distinct address once, sorted (plain string order)",
        "one address per line",
        "a JSON array of the addresses",
    ),
    "domains": (
        "for every domain (the part after `@`), how many distinct addresses have it",
        "one line per domain: `DOMAIN COUNT`, most addresses first, ties in plain string "
        "order of the domain",
        'a JSON object mapping each domain to its count, like `{"uni.edu": 2}`',
    ),
    "mentions": (
        "every distinct address with the number of times it is mentioned, in order of its "
        "first mention",
        "one line per address: `ADDRESS COUNT`",
        'a JSON array of `[ADDRESS, COUNT]` pairs, like `[["amy@uni.edu", 2]]`',
    ),
}


def _prompt_texts(tags: set[str]) -> tuple[str, str, list[str]]:
    """The prompt's input, output and rule texts for the task `tags`."""
    what = next(w for w in WHAT if w in tags)
    where = (
        "`contacts.txt`"
        if "in_file" in tags
        else "the files of folder `inbox/` (`01.txt`, `02.txt`, ...), read in file name order "
        "as one text"
    )
    inputs = f"{where}: free text with e-mail addresses in it (like `amy.lee@example.com`)."
    report, lines, doc = _REPORTS[what]
    scope = (
        ""
        if "scope_all" in tags
        else " Leave out addresses at our own domain `example.com` (in any letter case)."
    )
    sink = f"print {lines}" if "out_lines" in tags else f"write `report.json`: {doc}"
    output = f"""
        Report {report}.{scope} {sink[0].upper() + sink[1:]}. Addresses are separated from
        other words by spaces.
    """
    rules = [
        "Addresses are case-insensitive: use them in lowercase and treat `Amy@Example.com` "
        "and `amy@example.com` as the same address.",
        "Addresses may touch punctuation, as in `<amy@uni.edu>`, `(amy@uni.edu)` or "
        "`amy@uni.edu.`. An address is: a local part of letters, digits and `._+-`; `@`; "
        "then dot-separated domain labels of letters, digits and `-`, the last label being "
        "2 or more letters. `user@localhost` is not an address.",
        "Some addresses are hidden as `amy [at] uni [dot] edu` (also `[dot]` more than once): "
        "count them as `amy@uni.edu`, mentioned where the hidden form is.",
    ]
    return inputs, output, rules


class Emails(TemplateBase):
    """Report e-mail addresses; twists: case folding, surrounding punctuation, obfuscated forms."""

    name = "regex_parse.emails"
    cluster = "regex_parse"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.emails(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, WHAT, SOURCES, SCOPES, OUTPUTS)
        ref, wrong = twists(level) | tags, near_miss(level) | tags
        for _attempt in range(100):
            text, truth = _text(rng, level)
            if sorted(set(_found(text, (ref - {"scope_external"}) | {"scope_all"}))) != sorted(
                a.lower() if level >= 1 else a for a in truth
            ):
                continue
            report = partial(_report, text)
            if differs(partial(report, ref), partial(report, wrong)) and separates(
                report, ref, WHAT, SCOPES, OUTPUTS
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        inputs, output, rules = _prompt_texts(tags)
        return Parts(
            prompt=prompt("Find the e-mail addresses in a text.", inputs, output, rules, level),
            setup_script=files_setup(_files(text, tags)),
            validation_script=_validator(_report(text, ref)),
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )
