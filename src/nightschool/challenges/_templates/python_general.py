"""Cluster `python_general`: JSON indexing, text-table formatting, config merging.

The tag index lives here; the text table and the config merge in
`python_general_table` and `python_general_config`. Every seed draws its task
from the template's family (`_kit.variant`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from functools import partial
from typing import Any

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    Parts,
    RenderError,
    TemplateBase,
    file_validator,
    files_setup,
    near_miss,
    prompt,
    select,
    twists,
    validator_script,
    variant,
)
from nightschool.challenges._templates.python_general_config import ConfigMerge
from nightschool.challenges._templates.python_general_table import TextTable
from nightschool.challenges._templates.starters import python_general as starters
from nightschool.challenges._templates.starters.python_general import (
    TAG_ORDER,
    TAG_WHAT,
    pick,
    separates,
)

_JSON_CHECK = """
    run_solution(SOLUTION)
    check_json_file(DATA["file"], DATA["expected"])
    passed()
"""

# --------------------------------------------------------------------------- tag_index

TAG_FORMAT = ("json", "lines")
"""Output: `index.json` (an object of lists), or `index.txt` (`key: a, b` lines)."""

_TAG_SOLUTION = """
    import json

    with open("users.json") as handle:
        users = json.load(handle)
    by_id = {user["id"]: user for user in users}  #+t3


    def clean(tag):
        return tag  #-t2
        return tag.strip().lower()  #+t2


    def tags_of(user):
        tags = {clean(tag) for tag in user["tags"]}
        manager = by_id.get(user.get("manager_id"))  #+t3
        if manager is not None:  #+t3
            tags |= tags_of(manager)  #+t3
        return tags


    rank = {}  #+seen|bug
    for user in users:  #+seen|bug
        rank.setdefault(user["name"], len(rank))  #+seen|bug
        for tag in user["tags"]:  #+seen|bug
            rank.setdefault(clean(tag), len(rank))  #+seen|bug
    #+seen|bug
    #+seen|bug
    def ordered(items):
        return sorted(items)  #=alpha&!bug
        return sorted(items)  #=seen&bug
        return sorted(items, key=rank.get)  #=seen&!bug
        return sorted(items, key=rank.get)  #=alpha&bug


    people = [(user["name"], tags_of(user)) for user in users]  #-t1
    people = [(user["name"], tags_of(user)) for user in users if user["active"]]  #+t1
    index = {}
    for name, tags in people:
        for tag in tags:  #-peers
            index.setdefault(tag, set()).add(name)  #+by_tag
            index.setdefault(tag, set()).update(tags - {tag})  #+related
        index[name] = {other for other, theirs in people if other != name and tags & theirs}  #+peers
    result = {key: ordered(items) for key, items in index.items()}
    with open("index.json", "w") as out:  #+json
        json.dump(result, out, indent=2)  #+json
    with open("index.txt", "w") as out:  #+lines
        for key in ordered(result):  #+lines
            out.write(f"{key}: {', '.join(result[key])}\\n")  #+lines
"""

_TAG_POOL = ("python", "sql", "ops", "design", "rust", "ml", "web", "security", "data", "cloud")


def _tag_result(users: list[dict[str, Any]], features: set[str]) -> tuple[str, Any]:
    """Emulate the drawn task: (output file, its JSON value or its lines)."""
    by_id = {user["id"]: user for user in users}

    def clean(tag: str) -> str:
        return tag.strip().lower() if "t2" in features else tag

    def tags_of(user: dict[str, Any]) -> set[str]:
        tags = {clean(t) for t in user["tags"]}
        manager = by_id.get(user.get("manager_id"))
        if "t3" in features and manager is not None:
            tags |= tags_of(manager)
        return tags

    rank: dict[str, int] = {}
    for user in users:
        rank.setdefault(user["name"], len(rank))
        for tag in user["tags"]:
            rank.setdefault(clean(tag), len(rank))
    by_rank = ("seen" in features) != ("bug" in features)

    def ordered(items: Iterable[str]) -> list[str]:
        return sorted(items, key=rank.__getitem__) if by_rank else sorted(items)

    people = [(u["name"], tags_of(u)) for u in users if u["active"] or "t1" not in features]
    index: dict[str, set[str]] = {}
    for name, tags in people:
        if "peers" in features:
            index[name] = {o for o, theirs in people if o != name and tags & theirs}
            continue
        for tag in sorted(tags):  # sorted: the expected JSON is the same in every process
            index.setdefault(tag, set()).update({name} if "by_tag" in features else tags - {tag})
    result = {key: ordered(items) for key, items in sorted(index.items())}
    if "json" in features:
        return "index.json", result
    return "index.txt", [f"{key}: {', '.join(result[key])}".strip() for key in ordered(result)]


def _tag_users(rng: random.Random, level: int, pool: list[str]) -> list[dict[str, Any]]:
    names = rng.sample(FIRST_NAMES, (8, 14, 20, 26)[level])
    users: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        user_tags = rng.sample(pool, rng.randint(1, 3))
        if level >= 2:
            user_tags = [rng.choice((t, t.upper(), f" {t}", t.capitalize())) for t in user_tags]
            if rng.random() < 0.3:
                user_tags.append(user_tags[0].upper())
        user: dict[str, Any] = {"id": 100 + i, "name": name, "active": True, "tags": user_tags}
        if level >= 1:
            user["active"] = i == 0 or rng.random() > 0.2
        if level >= 3 and i > 0 and rng.random() < 0.6:
            user["manager_id"] = 100 + rng.randrange(i)
        users.append(user)
    rng.shuffle(users)
    return users


_TAG_TASK = {
    "by_tag": ("Build an index of users by tag: for every tag, the users that have it.",
               "every tag", "the names of the users that have it"),
    "peers": ("For every user, list the other users who share at least one tag with them.",
              "every user's name", "the names of the other users who share at least one tag "
              "with that user (an empty list when nobody does)"),
    "related": ("For every tag, list the other tags that appear together with it on a user.",
                "every tag", "the other tags that at least one user has together with it (an "
                "empty list when there are none)"),
}  # fmt: skip
_TAG_OUTPUT = {
    "json": "write `index.json`: a JSON object mapping {key} to a list of {value}.",
    "lines": "write `index.txt`: one line per entry, mapping {key} to {value}, written as "
    "`key: item, item, item` (just `key:` when there are no items).",
}
_TAG_ORDER_TEXT = {
    "alpha": "Every list is sorted alphabetically{lines}.",
    "seen": "Every list is in order of first appearance in `users.json` (users from top to "
    "bottom, each user's tags left to right){lines}.",
}


class TagIndex(TemplateBase):
    """Index users by tag; family: `TAG_WHAT` x `TAG_FORMAT` x `TAG_ORDER`.

    Twists: inactive users, messy tags, tags inherited from managers.
    """

    name = "python_general.tag_index"
    cluster = "python_general"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.tag_index(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        axes = (TAG_WHAT, TAG_FORMAT, TAG_ORDER)
        tags = variant(rng, *axes)
        what, fmt, order = (pick(tags, axis) for axis in axes)
        ref, wrong = tags | twists(level), tags | near_miss(level)
        pool = rng.sample(_TAG_POOL, (4, 5, 6, 7)[level])
        for _attempt in range(100):
            users = _tag_users(rng, level, pool)
            if separates(partial(_tag_result, users), ref, wrong, TAG_ORDER):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task, key, value = _TAG_TASK[what]
        inputs = """
            `users.json`: a JSON list of users, each an object with `id` (int), `name` (unique
            string), `active` (true/false) and `tags` (list of strings).
        """
        lines = ", and so are the lines" if fmt == "lines" else ""
        output = _TAG_OUTPUT[fmt].format(key=key, value=value)
        output += " " + _TAG_ORDER_TEXT[order].format(lines=lines)
        nobody = {"by_tag": "are not listed", "peers": "get no entry and are nobody's peer",
                  "related": "do not count"}[what]  # fmt: skip
        rules = [
            f"Leave out users whose `active` is false: they {nobody}.",
            "Tags are messy: strip surrounding spaces and lowercase them (` SQL` and `sql` are "
            "the same tag); nothing appears twice in a list.",
            "A user may have a `manager_id` (the `id` of another user): the user also has all "
            "of the manager's tags, and the manager's manager's, and so on. Inactive managers "
            "still pass their tags down.",
        ]
        file, expected = _tag_result(users, ref)
        if fmt == "json":
            check = validator_script(_JSON_CHECK, {"file": file, "expected": expected})
        else:
            check = file_validator(file, expected)
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"users.json": json.dumps(users, indent=1) + "\n"}),
            validation_script=check,
            reference_solution=select(_TAG_SOLUTION, ref),
            wrong_solution=select(_TAG_SOLUTION, wrong),
        )


TEMPLATES = (TagIndex(), TextTable(), ConfigMerge())
