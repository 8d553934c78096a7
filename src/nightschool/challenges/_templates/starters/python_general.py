"""Starter tier of cluster `python_general`: a tag index, a text table, a deep config merge."""

from __future__ import annotations

import copy
import random
from functools import partial
from typing import Any

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
)

# --------------------------------------------------------------------------- tag_index

_TAG_SOURCE = """
    def tag_index(users):
        index = {}
        for user in users:
            for tag in user["tags"]:
                index.setdefault(tag, []).append(user["name"])
        return {tag: sorted(names) for tag, names in index.items()}  #-bug
        return index  #+bug
"""

_TAGS = ("python", "sql", "ops", "design", "rust", "web", "data")


def _index(users: list[dict[str, Any]], bug: bool = False) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for user in users:
        for tag in user["tags"]:
            index.setdefault(tag, []).append(user["name"])
    return index if bug else {tag: sorted(names) for tag, names in index.items()}


def _users(rng: random.Random, n: int) -> list[dict[str, Any]]:
    tags = rng.sample(_TAGS, 3)
    names = sorted(rng.sample(FIRST_NAMES, n), reverse=True)  # so that lists need sorting
    return [{"name": name, "tags": rng.sample(tags, rng.randint(1, 2))} for name in names]


def _index_all(inputs: list[list[dict[str, Any]]], bug: bool) -> list[dict[str, list[str]]]:
    return [_index(users, bug) for users in inputs]


def _tag_example(rng: random.Random) -> Case:
    """Two users sharing a tag, listed in reverse name order (so the list needs sorting)."""
    second, first = sorted(rng.sample([n for n in FIRST_NAMES if len(n) <= 5], 2))
    shared, other = rng.sample(_TAGS, 2)
    tags = [shared, other] if rng.random() < 0.5 else [other, shared]
    users = [{"name": first, "tags": tags}, {"name": second, "tags": [shared]}]
    return Case(call("tag_index", users), _index(users))


def tag_index(rng: random.Random) -> Parts:
    """Starter of `python_general.tag_index`."""
    func = "tag_index"
    for _attempt in range(100):
        inputs = [[], [{"name": rng.choice(FIRST_NAMES), "tags": []}], _users(rng, 1)]
        inputs += [_users(rng, n) for n in (3, 4, 5)]
        if differs(partial(_index_all, inputs, False), partial(_index_all, inputs, True)):
            break
    else:
        raise RenderError("python_general.tag_index: starter cases do not separate the near-miss")
    hidden = [Case(call(func, u), _index(u)) for u in inputs]
    return function_parts(
        func=func,
        signature="def tag_index(users: list[dict]) -> dict[str, list[str]]:",
        spec="""
            Each user is a dict with "name" (a string) and "tags" (a list of strings).
            Return a dict mapping every tag to the names of the users that have it, each
            list sorted alphabetically.
        """,
        examples=[shown_example(rng, _tag_example, hidden)],
        cases=hidden,
        source=_TAG_SOURCE,
    )


# --------------------------------------------------------------------------- text_table

_TABLE_SOURCE = """
    def format_table(rows):
        cells = [("Name", "Qty")] + [(name, str(qty)) for name, qty in rows]  #-bug
        cells = [(name, str(qty)) for name, qty in rows]  #+bug
        width = max([len(c[0]) for c in cells] + [0])
        qty_width = max([len(c[1]) for c in cells] + [0])
        lines = ["Name".ljust(width) + " | " + "Qty".rjust(qty_width)]
        lines.append("-" * width + "-+-" + "-" * qty_width)
        for name, qty in rows:
            lines.append(name.ljust(width) + " | " + str(qty).rjust(qty_width))
        return lines
"""


def _table(rows: list[tuple[str, int]], bug: bool = False) -> list[str]:
    cells = [(name, str(qty)) for name, qty in rows] + ([] if bug else [("Name", "Qty")])
    width = max([len(c[0]) for c in cells] + [0])
    qty_width = max([len(c[1]) for c in cells] + [0])

    def line(left: str, right: str) -> str:
        return f"{left:<{width}} | {right:>{qty_width}}"

    return [
        line("Name", "Qty"),
        "-" * width + "-+-" + "-" * qty_width,
        *(line(n, str(q)) for n, q in rows),
    ]


def _table_example(rng: random.Random) -> Case:
    """A one-word name with a 1-digit qty, a two-word name with a 2-digit one."""
    one, two, three = rng.sample([w for w in WORDS if len(w) <= 6], 3)
    rows = [(one, rng.randint(1, 9)), (f"{two} {three}", rng.randint(10, 99))]
    rng.shuffle(rows)
    return Case(call("format_table", rows), _table(rows))


def text_table(rng: random.Random) -> Parts:
    """Starter of `python_general.text_table`."""
    func = "format_table"
    short = [w for w in WORDS if len(w) <= 4]
    inputs: list[list[tuple[str, int]]] = [
        [],
        [(rng.choice(short), rng.randint(1, 9))],
        [(w, rng.randint(1, 99)) for w in rng.sample(WORDS, 3)],
        [(w, rng.randint(100, 2500)) for w in rng.sample(WORDS, 2)],
        [(f"{a} {b}", rng.randint(1, 60)) for a, b in (rng.sample(WORDS, 2), rng.sample(WORDS, 2))],
        [(w, rng.randint(1, 40)) for w in rng.sample(WORDS, 5)],
    ]
    if not differs(
        lambda: [_table(r) for r in inputs], lambda: [_table(r, bug=True) for r in inputs]
    ):
        raise RenderError("python_general.text_table: starter cases do not separate the near-miss")
    hidden = [Case(call(func, r), _table(r)) for r in inputs]
    return function_parts(
        func=func,
        signature="def format_table(rows: list[tuple[str, int]]) -> list[str]:",
        spec="""
            Format (name, qty) rows as the lines of a text table: a header line with the
            cells 'Name' and 'Qty', a rule line, then one line per row. Cells are joined by
            ' | '. Each column is as wide as its longest cell, header included; names are
            left-aligned, quantities right-aligned. The rule line is '-' repeated to each
            column's width, joined by '-+-'.
        """,
        examples=[shown_example(rng, _table_example, hidden)],
        cases=hidden,
        source=_TABLE_SOURCE,
    )


# --------------------------------------------------------------------------- config_merge

_CONFIG_SOURCE = """
    def merge_config(base, override):
        result = dict(base)
        for key, value in override.items():
            if isinstance(value, dict) and isinstance(result.get(key), dict):  #-bug
                result[key] = merge_config(result[key], value)  #-bug
            else:  #-bug
                result[key] = value  #-bug
            result[key] = value  #+bug
        return result
"""


_SECTIONS = ("db", "server", "cache", "api", "proxy")
_FLAGS = ("debug", "verbose", "dry_run", "strict")


def _merge(base: dict[str, Any], override: dict[str, Any], bug: bool = False) -> dict[str, Any]:
    result = copy.deepcopy(base)
    for key, value in override.items():
        if not bug and isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _configs(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any]]:
    a, b, c = rng.sample(WORDS, 3)
    base: dict[str, Any] = {
        "name": rng.choice(WORDS),
        "db": {"host": f"{a}.local", "port": rng.randint(5000, 5999), "opts": {"timeout": 5}},
        b: rng.randint(1, 9),
    }
    override: dict[str, Any] = {"db": {"port": rng.randint(6000, 6999)}, c: True}
    if rng.random() < 0.5:
        override["db"]["opts"] = {"retries": rng.randint(1, 5)}
    else:
        override["name"] = {"first": rng.choice(WORDS)}
    return base, override


def _config_example(rng: random.Random) -> Case:
    """A nested section whose one key is overridden, next to a plain key."""
    section, flag = rng.choice(_SECTIONS), rng.choice(_FLAGS)
    base = {section: {"host": rng.choice(WORDS), "port": rng.randint(1000, 9999)}, flag: False}
    override = {section: {"port": rng.randint(1000, 9999)}}
    return Case(call("merge_config", base, override), _merge(base, override))


def config_merge(rng: random.Random) -> Parts:
    """Starter of `python_general.config_merge`."""
    func = "merge_config"
    word = rng.choice(WORDS)
    inputs: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({}, {}),
        ({word: 1}, {}),
        ({"a": rng.randint(1, 9)}, {"b": rng.randint(10, 99)}),
        ({"app": {"debug": False, "workers": rng.randint(2, 8)}}, {"app": {"debug": True}}),
        ({"log": {"level": "info"}}, {"log": word}),
        _configs(rng),
        _configs(rng),
    ]
    if not differs(
        lambda: [_merge(*x) for x in inputs], lambda: [_merge(*x, bug=True) for x in inputs]
    ):
        raise RenderError("python_general.config_merge: starter cases do not separate")
    hidden = [Case(call(func, *x), _merge(*x)) for x in inputs]
    return function_parts(
        func=func,
        signature="def merge_config(base: dict, override: dict) -> dict:",
        spec="""
            Return base with override applied, as a new dict. When a key is in both and
            both values are dicts, merge those two the same way (recursively); otherwise
            the override's value replaces the base's. Keys in only one of them are kept.
        """,
        examples=[shown_example(rng, _config_example, hidden)],
        cases=hidden,
        source=_CONFIG_SOURCE,
    )
