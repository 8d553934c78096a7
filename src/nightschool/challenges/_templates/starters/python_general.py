"""Starter tier of cluster `python_general`: the tag index, and helpers for the family draws.

Each starter first draws its task from the template's family (`_kit.variant`);
`separates` (over `_kit.axis_neighbours`) makes sure the hidden cases tell the drawn task apart
from every task one axis away, and from the near-miss. The text table and the
config merge live in `python_general_table` and `python_general_config`.
"""

from __future__ import annotations

import random
import re
import textwrap
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from nightschool.challenges._templates import _kit
from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    Case,
    Parts,
    RenderError,
    call,
    function_parts,
    shown_example,
    variant,
)


def separates(
    result: Callable[[set[str]], object],
    tags: set[str],
    wrong: set[str],
    *axes: Sequence[str],
) -> bool:
    """True when `result(tags)` differs from the near-miss's and from every one-axis rival's.

    Args:
        result: emulates a solution's output from its feature tags, on fixed data.
        tags: the reference's tags.
        wrong: the near-miss's tags.
        axes: the template's axes (see `_kit.axis_neighbours`).
    """
    return _kit.separates(result, tags, [wrong, *_kit.axis_neighbours(tags, *axes)])


def wrap(text: str, width: int = 88) -> str:
    """Fill `text` to `width` columns for a docstring, never breaking inside a '...' quote."""
    quoted = re.sub(r"(?<!\w)'[^']*'(?!\w)", lambda m: m.group().replace(" ", "\0"), text)
    filled = textwrap.fill(quoted, width, break_long_words=False, break_on_hyphens=False)
    return filled.replace("\0", " ")


def pick(tags: set[str], axis: Sequence[str]) -> str:
    """Return the one tag of `tags` that lies on `axis` (what `variant` drew from it)."""
    (tag,) = tags & set(axis)
    return tag


# --------------------------------------------------------------------------- tag_index

TAG_WHAT = ("by_tag", "peers", "related")
"""What the index holds: tag -> users, user -> users sharing a tag, tag -> co-occurring tags."""
TAG_SHAPE = ("records", "mapping")
"""Starter argument: a list of {"name", "tags"} dicts, or a dict name -> tags."""
TAG_ORDER = ("alpha", "seen")
"""List order: alphabetical, or order of first appearance in the input."""

_TAG_FUNC = {"by_tag": "tag_index", "peers": "tag_peers", "related": "related_tags"}
_TAG_SOURCE = """
    def tag_index(users):  #+by_tag
    def tag_peers(users):  #+peers
    def related_tags(users):  #+related
        people = [(user["name"], user["tags"]) for user in users]  #+records
        people = list(users.items())  #+mapping
        rank = {}  #+seen|bug
        for name, tags in people:  #+seen|bug
            rank.setdefault(name, len(rank))  #+seen|bug
            for tag in tags:  #+seen|bug
                rank.setdefault(tag, len(rank))  #+seen|bug
        index = {}
        for name, tags in people:
            for tag in tags:  #-peers
                index.setdefault(tag, set()).add(name)  #+by_tag
                index.setdefault(tag, set()).update(set(tags) - {tag})  #+related
            index[name] = {o for o, theirs in people if o != name and set(tags) & set(theirs)}  #+peers
        return {key: sorted(items) for key, items in index.items()}  #=alpha&!bug
        return {key: sorted(items) for key, items in index.items()}  #=seen&bug
        return {key: sorted(items, key=rank.get) for key, items in index.items()}  #=seen&!bug
        return {key: sorted(items, key=rank.get) for key, items in index.items()}  #=alpha&bug
"""
_TAG_SPEC = {
    "by_tag": "Return a dict mapping every tag to the names of the users that have it.",
    "peers": "Return a dict mapping every name to the names of the other users who share at "
    "least one tag with that user (maybe none).",
    "related": "Return a dict mapping every tag to the other tags that some user has together "
    "with it (maybe none).",
}
_TAG_ARG = {
    "records": ("list[dict]", 'users is a list of dicts with "name" (str) and "tags" (list of '
                "str)."),
    "mapping": ("dict[str, list[str]]", "users maps each user's name to a list of tags."),
}  # fmt: skip
_TAG_ORDER = {
    "alpha": "Each list is sorted alphabetically.",
    "seen": "Each list is in order of first appearance in users (users in order, each user's "
    "tags left to right).",
}
_TAGS = ("python", "sql", "ops", "design", "rust", "web", "data")


def _people(users: Any) -> list[tuple[str, list[str]]]:
    if isinstance(users, dict):
        return list(users.items())
    return [(user["name"], user["tags"]) for user in users]


def _index(users: Any, tags: set[str]) -> dict[str, list[str]]:
    """The drawn task's result (`bug`: the other list order)."""
    people = _people(users)
    rank: dict[str, int] = {}
    for name, own in people:
        rank.setdefault(name, len(rank))
        for tag in own:
            rank.setdefault(tag, len(rank))
    index: dict[str, set[str]] = {}
    for name, own in people:
        if "peers" in tags:
            index[name] = {o for o, theirs in people if o != name and set(own) & set(theirs)}
            continue
        for tag in own:
            found = {name} if "by_tag" in tags else set(own) - {tag}
            index.setdefault(tag, set()).update(found)
    by_rank = ("seen" in tags) != ("bug" in tags)
    if by_rank:
        return {k: sorted(v, key=rank.__getitem__) for k, v in index.items()}
    return {k: sorted(v) for k, v in index.items()}


def _shaped(users: list[tuple[str, list[str]]], tags: set[str]) -> Any:
    if "mapping" in tags:
        return dict(users)
    return [{"name": name, "tags": own} for name, own in users]


def _users(rng: random.Random, n: int, tags: set[str]) -> Any:
    pool = rng.sample(_TAGS, 4)
    names = sorted(rng.sample(FIRST_NAMES, n), reverse=True)  # so that lists need sorting
    return _shaped([(name, rng.sample(pool, rng.randint(1, 3))) for name in names], tags)


def _tag_example(tags: set[str], rng: random.Random) -> Case:
    """Two or three users in reverse name order, sharing a tag."""
    names = sorted(rng.sample([n for n in FIRST_NAMES if len(n) <= 5], 3), reverse=True)
    shared, other, third = rng.sample(_TAGS, 3)
    users = [(names[0], [other, shared]), (names[1], [shared]), (names[2], [third])]
    users = users[: rng.choice((2, 3))]
    value = _shaped(users, tags)
    return Case(call(_TAG_FUNC[pick(tags, TAG_WHAT)], value), _index(value, tags))


def tag_index(rng: random.Random) -> Parts:
    """Starter of `python_general.tag_index`: one of `TAG_WHAT` x `TAG_SHAPE` x `TAG_ORDER`."""
    axes = (TAG_WHAT, TAG_SHAPE, TAG_ORDER)
    tags = variant(rng, *axes)
    what, shape, order = (pick(tags, axis) for axis in axes)
    func = _TAG_FUNC[what]
    for _attempt in range(100):
        inputs = [_shaped([], tags), _shaped([(rng.choice(FIRST_NAMES), [])], tags)]
        inputs += [_users(rng, n, tags) for n in (1, 3, 4, 5)]

        def result(variant_tags: set[str], inputs: list[Any] = inputs) -> list[Any]:
            return [_index(users, variant_tags) for users in inputs]

        if separates(result, tags, tags | {"bug"}, TAG_ORDER):
            break
    else:
        raise RenderError("python_general.tag_index: starter cases do not separate the near-miss")
    hidden = [Case(call(func, users), _index(users, tags)) for users in inputs]
    arg_type, arg_doc = _TAG_ARG[shape]
    return function_parts(
        func=func,
        signature=f"def {func}(users: {arg_type}) -> dict[str, list[str]]:",
        spec=wrap(f"{arg_doc} {_TAG_SPEC[what]} {_TAG_ORDER[order]}"),
        examples=[shown_example(rng, partial(_tag_example, tags), hidden)],
        cases=hidden,
        source=_TAG_SOURCE,
        features=tags,
    )
