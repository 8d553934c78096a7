"""Starter of `python_general.config_merge`: a deep merge of two settings dicts.

The family: what the function returns (`CONFIG_KIND`) times the merge's
conventions for keys the base lacks (`CONFIG_NEW`) and for an object meeting a
plain value (`CONFIG_CLASH`); the last two are shared with the program tiers.
"""

from __future__ import annotations

import copy
import random
from functools import partial
from typing import Any

from nightschool.challenges._templates._kit import (
    WORDS,
    Case,
    Parts,
    RenderError,
    call,
    function_parts,
    shown_example,
    variant,
)
from nightschool.challenges._templates.starters.python_general import pick, separates, wrap

CONFIG_KIND = ("merge_config", "merged_settings", "changed_settings")
"""Starter results: the merged dict, its settings flat by dotted path, the changed paths."""
CONFIG_NEW = ("add_new", "known_only")
"""Keys only in the override: added, or ignored."""
CONFIG_CLASH = ("override_wins", "base_wins")
"""A dict meeting a plain value: the override's value wins, or the base's is kept."""

_SOURCE = """
    def merge_config(base, override):  #+merge_config
        return merge(base, override)  #+merge_config
    def merged_settings(base, override):  #+merged_settings
        return leaves(merge(base, override))  #+merged_settings
    def changed_settings(base, override):  #+changed_settings
        before, after = leaves(base), leaves(merge(base, override))  #+changed_settings
        paths = set(before) | set(after)  #+changed_settings
        return sorted(p for p in paths if p not in before or p not in after or before[p] != after[p])  #+changed_settings


    def merge(base, override):
        result = dict(base)
        for key, value in override.items():
            old = result.get(key)
            if key not in result:  #+known_only
                continue  #+known_only
            if isinstance(value, dict) and isinstance(old, dict):
                result[key] = merge(old, value)  #-bug
                result[key] = value  #+bug
            elif key in result and isinstance(value, dict) != isinstance(old, dict):  #+base_wins
                continue  #+base_wins
            else:
                result[key] = value
        return result
    #-merge_config
    #-merge_config
    def leaves(node, prefix=""):  #-merge_config
        flat = {}  #-merge_config
        for key, value in node.items():  #-merge_config
            if isinstance(value, dict):  #-merge_config
                flat.update(leaves(value, prefix + key + "."))  #-merge_config
            else:  #-merge_config
                flat[prefix + key] = value  #-merge_config
        return flat  #-merge_config
"""


def merge(base: dict[str, Any], override: dict[str, Any], tags: set[str]) -> dict[str, Any]:
    """Merge `override` into a copy of `base` under the conventions in `tags`.

    Tags read: `known_only`, `base_wins` (see `CONFIG_NEW`, `CONFIG_CLASH`),
    `bug` (no recursion), and the program tiers' `t1` (null deletes) and `t2`
    (lists: union). Neither argument is changed.
    """
    result = copy.deepcopy(base)
    for key, value in override.items():
        old = result.get(key)
        if "known_only" in tags and key not in result:
            continue
        if "t1" in tags and value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(old, dict):
            result[key] = copy.deepcopy(value) if "bug" in tags else merge(old, value, tags)
        elif "t2" in tags and isinstance(value, list) and isinstance(old, list):
            result[key] = old + [v for v in value if v not in old]
        elif (
            "base_wins" in tags
            and key in result
            and isinstance(value, dict) != isinstance(old, dict)
        ):
            continue
        else:
            result[key] = copy.deepcopy(value)
    return result


def leaves(node: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten `node`: every non-dict value under its key path joined by `.` (`db.port`)."""
    flat: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict):
            flat.update(leaves(value, prefix + key + "."))
        else:
            flat[prefix + key] = value
    return flat


def _result(base: dict[str, Any], override: dict[str, Any], tags: set[str]) -> Any:
    merged = merge(base, override, tags)
    if "merge_config" in tags:
        return merged
    if "merged_settings" in tags:
        return leaves(merged)
    before, after = leaves(base), leaves(merged)
    paths = set(before) | set(after)
    return sorted(p for p in paths if p not in before or p not in after or before[p] != after[p])


_SECTIONS = ("db", "server", "cache", "api", "proxy")
_FLAGS = ("debug", "verbose", "dry_run", "strict")


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


def _example(tags: set[str], rng: random.Random) -> Case:
    """A nested section whose one key is overridden, and a key only in the override."""
    section, flag = rng.choice(_SECTIONS), rng.choice(_FLAGS)
    base = {section: {"host": rng.choice(WORDS), "port": rng.randint(1000, 9999)}}
    override = {section: {"port": rng.randint(1000, 9999)}, flag: True}
    func = pick(tags, CONFIG_KIND)
    return Case(call(func, base, override), _result(base, override, tags))


_KIND_TEXT = {
    "merge_config": "Return the merged dict.",
    "merged_settings": "Return the result flat: {dotted key path: value} for each non-dict value.",
    "changed_settings": "Return the sorted dotted key paths ('a.b') of the non-dict values "
    "that the merge adds, changes or removes.",
}
_NEW_TEXT = {
    "add_new": "Keys only in override are added.",
    "known_only": "Keys that base lacks are ignored.",
}
_CLASH_TEXT = {
    "override_wins": "otherwise override's value replaces base's.",
    "base_wins": "if just one is a dict, keep base's; otherwise override's value replaces base's.",
}
_RETURNS = {"merge_config": "dict", "merged_settings": "dict", "changed_settings": "list[str]"}


def config_merge(rng: random.Random) -> Parts:
    """Starter of `python_general.config_merge`: one of `CONFIG_KIND` x `CONFIG_NEW` x `CONFIG_CLASH`."""
    axes = (CONFIG_KIND, CONFIG_NEW, CONFIG_CLASH)
    tags = variant(rng, *axes)
    func, new, clash = (pick(tags, axis) for axis in axes)
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

    def result(variant_tags: set[str]) -> list[Any]:
        return [_result(*pair, variant_tags) for pair in inputs]

    if not separates(result, tags, tags | {"bug"}, CONFIG_NEW, CONFIG_CLASH):
        raise RenderError("python_general.config_merge: starter cases do not separate")
    hidden = [Case(call(func, *pair), _result(*pair, tags)) for pair in inputs]
    spec = (
        "Merge override into base, changing neither: where both values of a key are dicts, "
        f"merge them the same way; {_CLASH_TEXT[clash]} {_NEW_TEXT[new]} "
        f"{_KIND_TEXT[func]}"
    )
    return function_parts(
        func=func,
        signature=f"def {func}(base: dict, override: dict) -> {_RETURNS[func]}:",
        spec=wrap(spec),
        examples=[shown_example(rng, partial(_example, tags), hidden)],
        cases=hidden,
        source=_SOURCE,
        features=tags,
    )
