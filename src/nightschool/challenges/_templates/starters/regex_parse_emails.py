"""Starter of `regex_parse.emails`: one function over a text with e-mail addresses.

The family (`variant`): what the function returns (`list` of distinct
addresses, distinct addresses per domain `domains`, the `top` most mentioned
address), how addresses are written (`plain` words with `@`, `angle` in
`<...>`, `mailto` links) and whether case matters (`case_keep` as written,
`case_fold` compared and returned in lowercase).
"""

from __future__ import annotations

import random
import re
from functools import partial

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
    variant,
)
from nightschool.challenges._templates.regex_parse_kit import separates

WHAT = ("list", "domains", "top")
"""What the function returns."""
FORMS = ("plain", "angle", "mailto")
"""How addresses are written in the text."""
CASES = ("case_keep", "case_fold")
"""Whether letter case matters."""

_SOURCE = r"""
    import re


    def find_emails(text):  #+list
    def emails_per_domain(text):  #+domains
    def most_mentioned_email(text):  #+top
        found = re.findall(r"\S*@\S*", text)  #+plain
        found = re.findall(r"<([^<>\s]+@[^<>\s]+)>", text)  #+angle
        found = re.findall(r"mailto:(\S+@\S+)", text)  #+mailto
        found = [address.lower() for address in found]  #+case_fold
        return sorted(set(found))  #=list&!bug
        return sorted(found)  #=list&bug
        counts = {}  #-list
        for address in set(found):  #=domains&!bug
        for address in found:  #=domains&bug
            domain = address.split("@")[1]  #+domains
            counts[domain] = counts.get(domain, 0) + 1  #+domains
        return counts  #+domains
        for address in found:  #+top
            counts[address] = counts.get(address, 0) + 1  #+top
        return min(counts, key=lambda a: (-counts[a], a), default="")  #=top&!bug
        return max(counts, key=counts.get, default="")  #=top&bug
"""

_NAMES = {"list": "find_emails", "domains": "emails_per_domain", "top": "most_mentioned_email"}
_RETURNS = {"list": "list[str]", "domains": "dict[str, int]", "top": "str"}
_FIND = {
    "angle": re.compile(r"<([^<>\s]+@[^<>\s]+)>"),
    "mailto": re.compile(r"mailto:(\S+@\S+)"),
}
_FORM_SPECS = {
    "plain": "An address is a word (words are separated by spaces or newlines) with '@'.",
    "angle": "Addresses are written in angle brackets, as in 'Amy <amy@uni.edu>'; other "
    "words with '@' are not addresses.",
    "mailto": "Addresses are written as links 'mailto:ADDRESS' (ending at a space); other "
    "words with '@' are not addresses.",
}
_CASE_SPECS = {
    "case_keep": "Case matters: keep addresses as written.",
    "case_fold": "Case does not matter: compare and return addresses in lowercase.",
}
_RESULTS = {
    "list": "Return every distinct address once, sorted (plain string order).",
    "domains": "Return {domain after '@': number of distinct addresses with it}.",
    "top": "Return the address mentioned most often (ties: the one that sorts first; '' if none).",
}
_DOMAINS = ("example.com", "mail.example.org", "uni.edu", "post-box.net")
_SENTENCES = ("write to {} today", "cc {} and the team", "new contact {} from Monday",
              "questions go to {}")  # fmt: skip
_DECOYS = ("meet @ 5pm", "ping @{} on chat", "price 3 @ 2 dollars")


def _result(text: str, tags: set[str]) -> object:
    """What the function of task `tags` returns for `text` (the near-miss with `bug`)."""
    form = next(f for f in FORMS if f in tags)
    if form == "plain":
        found = [word for word in text.split() if "@" in word]
    else:
        found = _FIND[form].findall(text)
    if "case_fold" in tags:
        found = [address.lower() for address in found]
    bug = "bug" in tags
    if "list" in tags:
        return sorted(found) if bug else sorted(set(found))
    counts: dict[str, int] = {}
    if "domains" in tags:
        for address in found if bug else dict.fromkeys(found):  # not a set: same order everywhere
            domain = address.split("@")[1]
            counts[domain] = counts.get(domain, 0) + 1
        return counts
    for address in found:
        counts[address] = counts.get(address, 0) + 1
    if bug:
        return max(counts, key=lambda a: counts[a], default="")
    return min(counts, key=lambda a: (-counts[a], a), default="")


def _write(form: str, address: str, person: str) -> str:
    if form == "angle":
        return f"{person.capitalize()} <{address}>"
    if form == "mailto":
        return f"mailto:{address}"
    return address


def _address(rng: random.Random, person: str) -> str:
    local = rng.choice((person, f"{person}.{rng.choice(WORDS)}", f"{person}{rng.randint(1, 99)}"))
    address = f"{local}@{rng.choice(_DOMAINS)}"
    return address.capitalize() if rng.random() < 0.3 else address


def _contacts(rng: random.Random, form: str, n: int, repeats: int) -> str:
    people = rng.sample(FIRST_NAMES, n)
    addresses = [(_address(rng, p), p) for p in people]
    mentions = addresses + rng.sample(addresses, min(repeats, n))
    if repeats and rng.random() < 0.5:  # the same address in other letters
        address, person = mentions[0]
        mentions.append((address.upper(), person))
    rng.shuffle(mentions)
    lines = [rng.choice(_SENTENCES).format(_write(form, a, p)) for a, p in mentions]
    decoy = "meeting at 5pm, no address"
    if form != "plain":  # words with '@' that are not addresses in this form
        decoy = rng.choice(_DECOYS).format(rng.choice(FIRST_NAMES))
    lines.insert(rng.randrange(len(lines) + 1), decoy)
    return "\n".join(lines) + "\n"


def _example(rng: random.Random, tags: set[str], func: str) -> Case:
    """Two people, the later-sorting one named twice."""
    form = next(f for f in FORMS if f in tags)
    first, second = sorted(rng.sample([n for n in FIRST_NAMES if len(n) <= 5], 2))
    one = f"{second.capitalize()}@{rng.choice(_DOMAINS)}"
    two = f"{first}.{rng.choice(WORDS)}@{rng.choice(_DOMAINS)}"
    text = (
        f"mail {_write(form, one, second)} or {_write(form, two, first)}\n"
        f"cc {_write(form, one, second)}"
    )
    return Case(call(func, text), _result(text, tags))


def emails(rng: random.Random) -> Parts:
    """Starter of `regex_parse.emails`.

    Raises:
        RenderError: if no drawn texts separate the task from its near-miss and
            from the other address forms and case conventions.
    """
    tags = variant(rng, WHAT, FORMS, CASES)
    what = next(w for w in WHAT if w in tags)
    form = next(f for f in FORMS if f in tags)
    func = _NAMES[what]
    for _attempt in range(50):
        texts = ["no addresses here", _contacts(rng, form, 1, 0), _contacts(rng, form, 1, 1)]
        texts += [_contacts(rng, form, n, r) for n, r in ((3, 1), (4, 2), (5, 2))]

        def results(features: set[str], texts: list[str] = texts) -> list[object]:
            return [_result(t, features) for t in texts]

        if differs(partial(results, tags), partial(results, tags | {"bug"})) and separates(
            results, tags, FORMS, CASES
        ):
            break
    else:
        raise RenderError("regex_parse.emails: starter cases do not separate the task")
    hidden = [Case(call(func, t), _result(t, tags)) for t in texts]
    case = next(c for c in CASES if c in tags)
    spec = f"""
        {_FORM_SPECS[form]}
        {_CASE_SPECS[case]}
        {_RESULTS[what]}
    """
    return function_parts(
        func=func,
        signature=f"def {func}(text: str) -> {_RETURNS[what]}:",
        spec=spec,
        examples=[shown_example(rng, partial(_example, tags=tags, func=func), hidden)],
        cases=hidden,
        source=_SOURCE,
        features=tags,
    )
