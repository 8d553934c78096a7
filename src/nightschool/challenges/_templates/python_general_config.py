"""Template `python_general.config_merge`: merge a JSON override into a JSON configuration.

The family: what is written (`CONFIG_WHAT`: the merged object, its settings
flat, or the changes) times the merge's conventions for keys the base lacks
(`CONFIG_NEW`) and for an object meeting a plain value (`CONFIG_CLASH`).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from nightschool.challenges._templates._kit import (
    WORDS,
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
from nightschool.challenges._templates.starters import python_general_config as starter
from nightschool.challenges._templates.starters.python_general import pick, separates
from nightschool.challenges._templates.starters.python_general_config import (
    CONFIG_CLASH,
    CONFIG_NEW,
    leaves,
    merge,
)

CONFIG_WHAT = ("merged", "flat", "changes")
"""Output: `merged.json`; `settings.txt` (`path=VALUE` lines); `changes.txt` (`path: OLD -> NEW`)."""
CONFIG_SOURCE = ("json_override", "dotted_override")
"""The override: `override.json` (an object), or `override.txt` (`dotted.path=JSON` lines)."""

_SOLUTION = """
    import copy
    import json


    def merge(base, override):
        result = dict(base)
        for key, value in override.items():
            old = result.get(key)
            if key not in result:  #+known_only
                continue  #+known_only
            if value is None:  #+t1
                result.pop(key, None)  #+t1
            elif isinstance(value, dict) and isinstance(old, dict):  #+t1
            if isinstance(value, dict) and isinstance(old, dict):  #-t1
                result[key] = merge(old, value)  #-bug
                result[key] = value  #+bug
            elif isinstance(value, list) and isinstance(old, list):  #+t2
                result[key] = old + [v for v in value if v not in old]  #+t2
            elif key in result and isinstance(value, dict) != isinstance(old, dict):  #+base_wins
                continue  #+base_wins
            else:
                result[key] = value
        return result


    def leaves(node, prefix=""):  #-merged
        flat = {}  #-merged
        for key, value in node.items():  #-merged
            if isinstance(value, dict):  #-merged
                flat.update(leaves(value, prefix + key + "."))  #-merged
            else:  #-merged
                flat[prefix + key] = value  #-merged
        return flat  #-merged
    #-merged
    #-merged
    def parse(text):  #+t3
        return text  #+strenv
        try:  #+t3
            return json.loads(text)  #+t3
        except ValueError:  #+t3
            return text  #+t3
    #+t3
    #+t3
    def set_path(config, parts, value):  #+t3
        *parents, leaf = parts  #+t3
        node = config  #+t3
        for part in parents:  #+t3
            if not isinstance(node.get(part), dict):  #+t3
                node[part] = {}  #=t3&add_new
                return  #=t3&known_only
            node = node[part]  #+t3
        if leaf not in node:  #=t3&known_only
            return  #=t3&known_only
        node[leaf] = value  #+t3
    #+t3
    #+t3
    with open("base.json") as handle:
        base = json.load(handle)
    with open("override.json") as handle:  #+json_override
        override = json.load(handle)  #+json_override
    override = {}  #+dotted_override
    with open("override.txt") as handle:  #+dotted_override
        for line in handle:  #+dotted_override
            if "=" in line:  #+dotted_override
                path, value = line.strip().split("=", 1)  #+dotted_override
                *parents, leaf = path.split(".")  #+dotted_override
                node = override  #+dotted_override
                for part in parents:  #+dotted_override
                    node = node.setdefault(part, {})  #+dotted_override
                node[leaf] = json.loads(value)  #+dotted_override
    config = merge(copy.deepcopy(base), override)
    with open("env.txt") as handle:  #+t3
        for line in handle:  #+t3
            line = line.strip()  #+t3
            if line.startswith("APP__") and "=" in line:  #+t3
                name, value = line.split("=", 1)  #+t3
                set_path(config, name[len("APP__"):].lower().split("__"), parse(value))  #+t3
    with open("merged.json", "w") as out:  #+merged
        json.dump(config, out, indent=2)  #+merged
    with open("settings.txt", "w") as out:  #+flat
        for path, value in sorted(leaves(config).items()):  #+flat
            out.write(f"{path}={json.dumps(value)}\\n")  #+flat
    before, after = leaves(base), leaves(config)  #+changes
    with open("changes.txt", "w") as out:  #+changes
        for path in sorted(set(before) | set(after)):  #+changes
            old = json.dumps(before[path]) if path in before else "(none)"  #+changes
            new = json.dumps(after[path]) if path in after else "(none)"  #+changes
            if old != new:  #+changes
                out.write(f"{path}: {old} -> {new}\\n")  #+changes
"""


def _set_path(config: dict[str, Any], parts: list[str], value: Any, tags: set[str]) -> None:
    *parents, leaf = parts
    node = config
    for part in parents:
        if not isinstance(node.get(part), dict):
            if "known_only" in tags:
                return
            node[part] = {}
        node = node[part]
    if "known_only" in tags and leaf not in node:
        return
    node[leaf] = value


def _parse(text: str, tags: set[str]) -> Any:
    if "strenv" in tags:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _result(
    base: dict[str, Any], override: dict[str, Any], env: list[str], tags: set[str]
) -> tuple[str, Any]:
    """Emulate the drawn task: (output file, its JSON value or its lines)."""
    config = merge(base, override, tags)
    for line in env:
        if line.startswith("APP__") and "=" in line:
            name, value = line.split("=", 1)
            _set_path(config, name[5:].lower().split("__"), _parse(value, tags), tags)
    if "merged" in tags:
        return "merged.json", config
    if "flat" in tags:
        return "settings.txt", [f"{p}={json.dumps(v)}" for p, v in sorted(leaves(config).items())]
    before, after = leaves(base), leaves(config)
    lines = []
    for path in sorted(set(before) | set(after)):
        old = json.dumps(before[path]) if path in before else "(none)"
        new = json.dumps(after[path]) if path in after else "(none)"
        if old != new:
            lines.append(f"{path}: {old} -> {new}")
    return "changes.txt", lines


def _data(rng: random.Random, level: int) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    base: dict[str, Any] = {
        "app": {"name": rng.choice(WORDS), "debug": False, "workers": rng.randint(2, 8)},
        "db": {
            "host": rng.choice(("db.internal", "10.0.0.5", "postgres")),
            "port": 5432,
            "options": {"timeout": rng.randint(5, 30), "retries": 3},
        },
        "log": {"level": "info", "handlers": ["console"]},
        "features": rng.sample(WORDS, 2),
        "metrics": False,
        "proxy": {"url": f"http://{rng.choice(WORDS)}.local:3128"},
    }
    override: dict[str, Any] = {
        "app": {"debug": True},
        "db": {"options": {"timeout": rng.randint(31, 90)}, "pool": rng.randint(2, 20)},
        "cache": {"ttl": rng.randint(60, 600)},
        "metrics": {"port": rng.randint(9000, 9999)},
        "proxy": "none",
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
            f"APP__DB__USER={rng.choice(WORDS)}",
            f"APP__CACHE__REDIS__HOST={rng.choice(WORDS)}.local",
            "PATH=/usr/bin",
        ]
    return base, override, env


_TASK = {
    "merged": "Merge two JSON configuration files.",
    "flat": "Merge two JSON configuration files and list the resulting settings.",
    "changes": "Merge two JSON configuration files and report what the override changes.",
}
_PATHS = (
    "A setting is a value that is not an object; its path is its keys from the top joined by "
    "`.` (`db.options.timeout`)."
)
_OUTPUT = {
    "merged": "write `merged.json`: the resulting object.",
    "flat": f"write `settings.txt`: one line `path=VALUE` per setting of the result, sorted by "
    f'path, VALUE written as JSON (`5`, `"info"`, `true`, `["a", "b"]`). {_PATHS}',
    "changes": "write `changes.txt`: one line `path: OLD -> NEW` per setting whose value in the "
    "result differs from `base.json` (added, changed or removed), sorted by path; OLD and NEW "
    'are the values written as JSON (`5`, `"info"`, `["a"]`), or `(none)` where the '
    f"setting does not exist. {_PATHS}",
}
_NEW = {
    "add_new": "Keys only in the override are added; keys only in `base.json` are kept.",
    "known_only": "Keys of the override that the base does not have (at that level) are "
    "ignored; keys only in `base.json` are kept.",
}
_CLASH = {
    "override_wins": "otherwise the override's value replaces the base's (also when one is an "
    "object and the other is not).",
    "base_wins": "when just one of the two values is an object, the base's value is kept; "
    "otherwise the override's value replaces the base's.",
}


class ConfigMerge(TemplateBase):
    """Deep-merge JSON configs; family: `CONFIG_WHAT` x `CONFIG_SOURCE` x `CONFIG_NEW` x `CONFIG_CLASH`.

    Twists: null deletes, list union, environment overrides.
    """

    name = "python_general.config_merge"
    cluster = "python_general"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starter.config_merge(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        axes = (CONFIG_WHAT, CONFIG_SOURCE, CONFIG_NEW, CONFIG_CLASH)
        tags = variant(rng, *axes)
        what, source, new, clash = (pick(tags, axis) for axis in axes)
        ref = tags | twists(level)
        wrong = tags | (twists(3) | {"strenv"} if level == 3 else near_miss(level))
        base, override, env = _data(rng, level)

        def result(variant_tags: set[str]) -> tuple[str, Any]:
            return _result(copy.deepcopy(base), override, env, variant_tags)

        if not separates(result, ref, wrong, CONFIG_NEW, CONFIG_CLASH):  # the rest: other files
            raise RenderError(f"{self.name}: data does not separate the near-miss or a rival")
        files = {
            "base.json": json.dumps(base, indent=2) + "\n",
        }
        if source == "json_override":
            files["override.json"] = json.dumps(override, indent=2) + "\n"
            inputs = "`base.json` and `override.json` (the override), each a JSON object."
        else:
            lines = [f"{path}={json.dumps(value)}" for path, value in leaves(override).items()]
            files["override.txt"] = "\n".join(lines) + "\n"
            inputs = """
                `base.json`, a JSON object, and `override.txt`, the override: one setting per
                line, `path=VALUE`, where path is keys joined by `.` and VALUE is JSON; together
                they form the override object (`db.port=6001` and `db.user="ann"` mean
                `{"db": {"port": 6001, "user": "ann"}}`).
            """
        if level >= 3:
            files["env.txt"] = "\n".join(env) + "\n"
        output = f"""
            The result is `base.json` with the override applied. Objects merge recursively:
            a key present in both, whose values are both objects, is merged the same way;
            {_CLASH[clash]} {_NEW[new]} Then {_OUTPUT[what]}
        """
        env_keys = {
            "add_new": "creating objects as needed and replacing what is there",
            "known_only": "replacing what is there; a line whose key path does not exist in "
            "the result is ignored",
        }[new]
        rules = [
            "A value of `null` in the override deletes that key from the result.",
            "When both values are lists, the result is the base list followed by the override's "
            "items that are not already in it.",
            "Before writing, apply `env.txt` to the result: each line `APP__A__B=VALUE` sets key "
            f"path `a` -> `b` (the part after `APP__`, split on `__`, lowercased), {env_keys}. "
            "VALUE is parsed as JSON when it is valid JSON (`6001` is a number, `false` a "
            "boolean), otherwise kept as a string. Ignore lines that do not start with `APP__`.",
        ]
        file, expected = result(ref)
        if what == "merged":
            check = validator_script(_JSON_CHECK, {"file": file, "expected": expected})
        else:
            check = file_validator(file, expected)
        return Parts(
            prompt=prompt(_TASK[what], inputs, " ".join(output.split()), rules, level),
            setup_script=files_setup(files),
            validation_script=check,
            reference_solution=select(_SOLUTION, ref),
            wrong_solution=select(_SOLUTION, wrong),
        )


_JSON_CHECK = """
    run_solution(SOLUTION)
    check_json_file(DATA["file"], DATA["expected"])
    passed()
"""
