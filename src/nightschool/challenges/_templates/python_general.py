"""Cluster `python_general`: JSON indexing, text-table formatting, config merging."""

from __future__ import annotations

import copy
import json
import random
import textwrap
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
    twists,
    validator_script,
)
from nightschool.challenges._templates.starters import python_general as starters

_JSON_CHECK = """
    run_solution(SOLUTION)
    check_json_file(DATA["file"], DATA["expected"])
    passed()
"""

# --------------------------------------------------------------------------- tag_index

_TAG_SOLUTION = """
    import json

    with open("users.json") as handle:
        users = json.load(handle)
    by_id = {user["id"]: user for user in users}  #+t3


    def tags_of(user):
        tags = set(user["tags"])  #-t2
        tags = {tag.strip().lower() for tag in user["tags"]}  #+t2
        manager = by_id.get(user.get("manager_id"))  #+t3
        if manager is not None:  #+t3
            tags |= tags_of(manager)  #+t3
        return tags


    index = {}
    for user in users:
        if not user["active"]:  #+t1
            continue  #+t1
        for tag in tags_of(user):
            index.setdefault(tag, []).append(user["name"])
    index = {tag: sorted(names) for tag, names in index.items()}  #-bug
    with open("by_tag.json", "w") as out:
        json.dump(index, out, indent=2, sort_keys=True)
"""

_TAGS = ("python", "sql", "ops", "design", "rust", "ml", "web", "security", "data", "cloud")


def _tag_index(users: list[dict[str, Any]], features: set[str]) -> dict[str, list[str]]:
    by_id = {user["id"]: user for user in users}

    def tags_of(user: dict[str, Any]) -> set[str]:
        tags = {t.strip().lower() for t in user["tags"]} if "t2" in features else set(user["tags"])
        manager = by_id.get(user.get("manager_id"))
        if "t3" in features and manager is not None:
            tags |= tags_of(manager)
        return tags

    index: dict[str, list[str]] = {}
    for user in users:
        if "t1" in features and not user["active"]:
            continue
        for tag in sorted(tags_of(user)):
            index.setdefault(tag, []).append(user["name"])
    return index if "bug" in features else {t: sorted(n) for t, n in index.items()}


class TagIndex(TemplateBase):
    """Index users by tag in JSON; twists: inactive users, messy tags, inherited tags."""

    name = "python_general.tag_index"
    cluster = "python_general"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.tag_index(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (8, 14, 20, 26)[level]
        ref, wrong = twists(level), near_miss(level)
        tags = rng.sample(_TAGS, (4, 5, 6, 7)[level])
        for _attempt in range(100):
            names = rng.sample(FIRST_NAMES, n)
            users: list[dict[str, Any]] = []
            for i, name in enumerate(names):
                user_tags = rng.sample(tags, rng.randint(1, 3))
                if level >= 2:
                    user_tags = [
                        rng.choice((t, t.upper(), f" {t}", t.capitalize())) for t in user_tags
                    ]
                    if rng.random() < 0.3:
                        user_tags.append(user_tags[0].upper())
                user: dict[str, Any] = {
                    "id": 100 + i,
                    "name": name,
                    "active": True,
                    "tags": user_tags,
                }
                if level >= 1:
                    user["active"] = i == 0 or rng.random() > 0.2
                if level >= 3 and i > 0 and rng.random() < 0.6:
                    user["manager_id"] = 100 + rng.randrange(i)
                users.append(user)
            rng.shuffle(users)
            if differs(partial(_tag_index, users, ref), partial(_tag_index, users, wrong)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        task = "Build an index of users by tag."
        inputs = """
            `users.json`: a JSON list of users, each an object with `id` (int), `name` (unique
            string), `active` (true/false) and `tags` (list of strings).
        """
        output = """
            write `by_tag.json`: a JSON object mapping every tag to the list of names of the
            users that have it, each list sorted alphabetically. Example:
            `{"python": ["amy", "bob"], "sql": ["bob"]}`.
        """
        rules = [
            "Leave out users whose `active` is false.",
            "Tags are messy: strip surrounding spaces and lowercase them (` SQL` and `sql` are "
            "the same tag); a user appears at most once in each list.",
            "A user may have a `manager_id` (the `id` of another user): the user also has all "
            "of the manager's tags, and the manager's manager's, and so on. Inactive managers "
            "still pass their tags down (but are not listed themselves).",
        ]
        data = {"file": "by_tag.json", "expected": _tag_index(users, ref)}
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"users.json": json.dumps(users, indent=1) + "\n"}),
            validation_script=validator_script(_JSON_CHECK, data),
            reference_solution=select(_TAG_SOLUTION, ref),
            wrong_solution=select(_TAG_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- text_table

_TABLE_SOLUTION = """
    import csv

    with open("products.csv", newline="") as handle:
        products = [(r["name"], int(r["qty"]), float(r["price"])) for r in csv.DictReader(handle)]
    products.sort(key=lambda p: (-p[2], p[0]))  #+t1
    rows = [[name, str(qty), f"{price:.2f}"] for name, qty, price in products]
    rows = [[n if len(n) <= 16 else n[:13] + "...", q, p] for n, q, p in rows]  #+t3
    value = sum(qty * price for _, qty, price in products)  #+t2
    total = ["TOTAL", str(sum(qty for _, qty, _ in products)), f"{value:.2f}"]  #+t2
    header = ["Name", "Qty", "Price"]
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(3)]  #-t2|bug
    widths = [max(len(row[i]) for row in [header] + rows + [total]) for i in range(3)]  #+t2
    widths = [max(len(row[i]) for row in rows) for i in range(3)]  #+bug


    def line(row):
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].rjust(widths[2])]
        return " | ".join(cells)


    rule = "-+-".join("-" * w for w in widths)
    print(line(header))
    print(rule)
    for row in rows:
        print(line(row))
    print(rule)  #+t2
    print(line(total))  #+t2
"""


def _table(products: list[tuple[str, int, int]], features: set[str]) -> list[str]:
    """products: (name, qty, price in cents)."""
    if "t1" in features:
        products = sorted(products, key=lambda p: (-p[2], p[0]))
    rows = [[name, str(qty), f"{cents // 100}.{cents % 100:02d}"] for name, qty, cents in products]
    if "t3" in features:
        rows = [[n if len(n) <= 16 else n[:13] + "...", q, p] for n, q, p in rows]
    header = ["Name", "Qty", "Price"]
    value = sum(q * c for _, q, c in products)
    total = ["TOTAL", str(sum(q for _, q, _ in products)), f"{value // 100}.{value % 100:02d}"]
    sized = rows + ([total] if "t2" in features else []) + ([] if "bug" in features else [header])
    widths = [max(len(row[i]) for row in sized) for i in range(3)]

    def line(row: list[str]) -> str:
        return " | ".join(
            [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].rjust(widths[2])]
        )

    rule = "-+-".join("-" * w for w in widths)
    out = [line(header), rule, *map(line, rows)]
    if "t2" in features:
        out += [rule, line(total)]
    return [text.rstrip() for text in out]


_LONG = ("stainless steel kettle", "ergonomic office chair", "wireless noise headphones",
         "cast iron skillet set", "bamboo cutting boards")  # fmt: skip


class TextTable(TemplateBase):
    """Fixed-width text table; twists: sorted rows, a total row, truncated names."""

    name = "python_general.text_table"
    cluster = "python_general"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.text_table(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (4, 6, 8, 10)[level]
        ref, wrong = twists(level), near_miss(level)
        for _attempt in range(100):
            names = rng.sample(WORDS, n)
            if level >= 3:
                names[:2] = rng.sample(_LONG, 2)
            products = [(name, rng.randint(1, 60), rng.randint(99, 9999)) for name in names]
            if level >= 1:  # a price tie
                products[1] = (products[1][0], products[1][1], products[0][2])
            if differs(partial(_table, products, ref), partial(_table, products, wrong)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        text = "name,qty,price\n" + "".join(
            f"{name},{qty},{cents // 100}.{cents % 100:02d}\n" for name, qty, cents in products
        )
        sample = [("apple", 3, 50), ("banana bread", 12, 425)]
        example = "".join(f"\n    {row}" for row in _table(sample, {"t1", "t2"} & ref))
        task = "Print a product list as a fixed-width text table."
        inputs = """
            `products.csv` with the header `name,qty,price` (qty a whole number, price with 2
            decimals).
        """
        output = """
            print the table to standard output, exactly in this layout: a header row with the
            cells `Name`, `Qty`, `Price`; a rule row; then one row per product in file order.
            Cells are joined by ` | `. Each column is as wide as its longest cell (header
            included); Name is left-aligned, Qty and Price (2 decimals) right-aligned. The rule
            row is `-` repeated to each column's width, joined by `-+-`. Trailing spaces do not
            matter. Example:
        """
        output = textwrap.dedent(output).strip() + "\n" + example
        rules = [
            "Order the rows by price, highest first; equal prices by name.",
            "After the rows print another rule row and a total row: Name `TOTAL`, Qty the sum "
            "of all quantities, Price the total value (sum of qty * price, 2 decimals). The total "
            "row counts for the column widths too.",
            "Names longer than 16 characters are cut to their first 13 characters followed by "
            "`...` (16 characters in all).",
        ]
        body = """
            out, _ = run_solution(SOLUTION)
            check_lines(out, DATA, "stdout", exact=True)
            passed()
        """
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"products.csv": text}),
            validation_script=validator_script(body, _table(products, ref)),
            reference_solution=select(_TABLE_SOLUTION, ref),
            wrong_solution=select(_TABLE_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- config_merge

_MERGE_SOLUTION = """
    import json


    def merge(base, override):
        result = dict(base)
        for key, value in override.items():
            if value is None:  #+t1
                result.pop(key, None)  #+t1
            elif isinstance(value, dict) and isinstance(result.get(key), dict):  #+t1
            if isinstance(value, dict) and isinstance(result.get(key), dict):  #-t1|bug
                result[key] = merge(result[key], value)  #-bug
            elif isinstance(value, list) and isinstance(result.get(key), list):  #+t2
                result[key] = result[key] + [v for v in value if v not in result[key]]  #+t2
            else:  #-bug
                result[key] = value  #-bug
            result[key] = value  #+bug
        return result


    def parse(text):  #+t3
        return text  #+strenv
        try:  #+t3
            return json.loads(text)  #+t3
        except ValueError:  #+t3
            return text  #+t3


    with open("base.json") as handle:
        config = json.load(handle)
    with open("override.json") as handle:
        config = merge(config, json.load(handle))
    with open("env.txt") as handle:  #+t3
        for line in handle:  #+t3
            line = line.strip()  #+t3
            if not line.startswith("APP__") or "=" not in line:  #+t3
                continue  #+t3
            name, value = line.split("=", 1)  #+t3
            *parents, leaf = name[len("APP__"):].lower().split("__")  #+t3
            node = config  #+t3
            for part in parents:  #+t3
                if not isinstance(node.get(part), dict):  #+t3
                    node[part] = {}  #+t3
                node = node[part]  #+t3
            node[leaf] = parse(value)  #+t3
    with open("merged.json", "w") as out:
        json.dump(config, out, indent=2)
"""


def _merge_config(base: Any, override: Any, features: set[str]) -> Any:
    result = dict(base)
    for key, value in override.items():
        if "t1" in features and value is None:
            result.pop(key, None)
        elif (
            "bug" not in features and isinstance(value, dict) and isinstance(result.get(key), dict)
        ):
            result[key] = _merge_config(result[key], value, features)
        elif "t2" in features and isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = result[key] + [v for v in value if v not in result[key]]
        else:
            result[key] = value
    return result


def _apply_env(config: Any, env: list[str], features: set[str]) -> Any:
    config = copy.deepcopy(config)
    for line in env:
        if not line.startswith("APP__") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        *parents, leaf = name[5:].lower().split("__")
        node = config
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        try:
            node[leaf] = json.loads(value) if "t3" in features else value
        except ValueError:
            node[leaf] = value
    return config


class ConfigMerge(TemplateBase):
    """Deep-merge JSON configs; twists: null deletes, list union, environment overrides."""

    name = "python_general.config_merge"
    cluster = "python_general"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.config_merge(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        ref, wrong = twists(level), near_miss(level)
        host = rng.choice(("db.internal", "10.0.0.5", "postgres"))
        base: dict[str, Any] = {
            "app": {"name": rng.choice(WORDS), "debug": False, "workers": rng.randint(2, 8)},
            "db": {
                "host": host,
                "port": 5432,
                "options": {"timeout": rng.randint(5, 30), "retries": 3},
            },
            "log": {"level": "info", "handlers": ["console"]},
            "features": rng.sample(WORDS, 2),
        }
        override: dict[str, Any] = {
            "app": {"debug": True},
            "db": {"options": {"timeout": rng.randint(31, 90)}},
            "cache": {"ttl": rng.randint(60, 600)},
        }
        if level >= 1:
            override["db"]["options"]["retries"] = None
            override["app"]["name"] = None
        if level >= 2:
            override["features"] = [base["features"][1], *rng.sample(WORDS, 2)]
            override["log"] = {"handlers": ["file", "console"]}
        env: list[str] = []
        if level >= 3:
            env = [
                "# environment",
                f"APP__DB__PORT={rng.randint(6000, 6999)}",
                "APP__APP__DEBUG=false",
                f"APP__LOG__LEVEL={rng.choice(('warning', 'error'))}",
                f"APP__CACHE__REDIS__HOST={rng.choice(WORDS)}.local",
                "PATH=/usr/bin",
            ]
        expected = _apply_env(_merge_config(base, override, ref), env, ref)
        if level == 3:
            wrong = {"t1", "t2", "strenv"}
        miss = _apply_env(_merge_config(base, override, wrong), env, wrong)
        if expected == miss:
            raise RenderError(f"{self.name}: data does not separate the near-miss")
        files = {
            "base.json": json.dumps(base, indent=2) + "\n",
            "override.json": json.dumps(override, indent=2) + "\n",
        }
        if level >= 3:
            files["env.txt"] = "\n".join(env) + "\n"
        task = "Merge two JSON configuration files."
        inputs = "`base.json` and `override.json`, each a JSON object."
        output = """
            write `merged.json`: `base.json` with `override.json` applied. Objects merge
            recursively: a key present in both, whose values are both objects, is merged the
            same way; otherwise the override's value replaces the base's. Keys only in one file
            are kept.
        """
        rules = [
            "A value of `null` in `override.json` deletes that key from the result.",
            "When both values are lists, the result is the base list followed by the override's "
            "items that are not already in it.",
            "Finally apply `env.txt`: each line `APP__A__B=VALUE` sets key path `a` -> `b` "
            "(the part after `APP__`, split on `__`, lowercased), creating objects as needed "
            "and replacing what is there. VALUE is parsed as JSON when it is valid JSON (`6001` "
            "is a number, `false` a boolean), otherwise kept as a string. Ignore lines that do "
            "not start with `APP__`.",
        ]
        data = {"file": "merged.json", "expected": expected}
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(files),
            validation_script=validator_script(_JSON_CHECK, data),
            reference_solution=select(_MERGE_SOLUTION, ref),
            wrong_solution=select(_MERGE_SOLUTION, wrong | ({"t3"} if level == 3 else set())),
        )


TEMPLATES = (TagIndex(), TextTable(), ConfigMerge())
