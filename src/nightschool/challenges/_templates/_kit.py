"""Building blocks shared by the template modules.

A template subclasses `TemplateBase` and implements `build(level, rng)`, which
returns the five texts of a challenge as `Parts`. Solutions are written once
as annotated source (see `select`) so that the reference solution and the
near-miss differ only in the lines of one twist.
"""

from __future__ import annotations

import functools
import json
import random
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from nightschool.challenges._model import CLUSTERS, Challenge, tier_level

_MARK = re.compile(r"\s*#([+=-])(!?\w+(?:[|&]!?\w+)*)\s*$")


@dataclass(frozen=True)
class Parts:
    """What a template's `build` returns; `TemplateBase.render` adds the identity."""

    prompt: str
    setup_script: str
    validation_script: str
    reference_solution: str
    wrong_solution: str


class TemplateBase:
    """Base class of the bank's templates; satisfies the `Template` protocol.

    Subclasses set `name`, `cluster` and (for shell templates) `solution_file`
    as class attributes and implement `build`.
    """

    name: str = ""
    cluster: str = ""
    solution_file: str = "solution.py"

    def render(self, tier: str, seed: int) -> Challenge:
        """Render the challenge for `tier` and `seed` deterministically.

        Raises:
            ValueError: if `tier` is not one of `TIERS`.
        """
        level = tier_level(tier)
        rng = random.Random(f"{self.name}:{tier}:{seed}")
        parts = self.build(level, rng)
        return Challenge(
            template=self.name,
            cluster=self.cluster,
            tier=tier,
            seed=seed,
            prompt=parts.prompt,
            setup_script=parts.setup_script,
            validation_script=parts.validation_script,
            reference_solution=parts.reference_solution,
            wrong_solution=parts.wrong_solution,
            solution_file=self.solution_file,
        )

    def build(self, level: int, rng: random.Random) -> Parts:
        """Return the challenge texts for tier index `level` (0 basic ... 3 expert)."""
        raise NotImplementedError

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if cls.cluster not in CLUSTERS or not cls.name.startswith(f"{cls.cluster}."):
            raise TypeError(f"template {cls.__name__} has a bad name/cluster: {cls.name!r}")

    def __repr__(self) -> str:
        return f"<template {self.name}>"


def select(annotated: str, features: Iterable[str]) -> str:
    """Keep the lines of `annotated` that apply to `features`; drop the markers.

    A line ending in `#+tag` is kept only when `tag` is in `features`; one
    ending in `#-tag` only when it is not; `#+a|b` and `#-a|b` test whether any
    of the tags is present; `#=a&!b` keeps the line when every term holds
    (`!b`: b absent). Unmarked lines are always kept. The source is dedented
    first.
    """
    wanted = set(features)
    out: list[str] = []
    for line in textwrap.dedent(annotated).strip("\n").splitlines():
        mark = _MARK.search(line)
        if mark is None:
            out.append(line)
        elif _keep(mark.group(1), mark.group(2), wanted):
            out.append(line[: mark.start()])
    return "\n".join(out) + "\n"


def _keep(sign: str, expr: str, features: set[str]) -> bool:
    if sign == "=":
        return all(
            (t[1:] not in features) if t[0] == "!" else (t in features) for t in expr.split("&")
        )
    return bool(features & set(expr.split("|"))) == (sign == "+")


def twists(level: int) -> set[str]:
    """Feature tags of the reference solution at `level`: `t1` ... `t<level>`."""
    return {f"t{i}" for i in range(1, level + 1)}


def near_miss(level: int, basic_bug: str = "bug") -> set[str]:
    """Feature tags of the near-miss: the tier's newest twist left out (basic: `bug`)."""
    return {basic_bug} if level == 0 else twists(level - 1)


def literal(value: Any) -> str:
    """Return a Python expression that rebuilds the JSON-able `value`."""
    return f"json.loads({json.dumps(value, separators=(',', ':'))!r})"


def files_setup(files: Mapping[str, str], extra: str = "") -> str:
    """Return a setup script writing `files` (relative path -> text), then running `extra`."""
    return (
        "import json, pathlib\n"
        f"FILES = {literal(dict(files))}\n"
        "for name, text in FILES.items():\n"
        "    path = pathlib.Path(name)\n"
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        "    path.write_text(text, encoding='utf-8')\n" + textwrap.dedent(extra)
    )


def sqlite_setup(db: str, schema: str, rows: Mapping[str, Sequence[Sequence[Any]]]) -> str:
    """Return a setup script creating the SQLite file `db` from `schema` and `rows`.

    Args:
        db: database file name in the workspace.
        schema: SQL `CREATE TABLE` statements.
        rows: table name -> rows, each a sequence of column values in order.
    """
    table_rows = literal({k: [list(r) for r in v] for k, v in rows.items()})
    extra = f"""
        import sqlite3
        con = sqlite3.connect({db!r})
        con.executescript({textwrap.dedent(schema).strip()!r})
        for table, table_rows in {table_rows}.items():
            if table_rows:
                marks = ", ".join("?" * len(table_rows[0]))
                con.executemany(f"INSERT INTO {{table}} VALUES ({{marks}})", table_rows)
        con.commit()
        con.close()
    """
    return files_setup({}, extra)


@functools.cache
def _checklib() -> str:
    return resources.files(__package__).joinpath("_checklib.py").read_text(encoding="utf-8")


def validator_script(body: str, data: Any, solution_file: str = "solution.py") -> str:
    """Return a validation script: the checker library, `DATA`, then `body`.

    `body` is Python source using the names of `_checklib` plus `DATA` (the
    JSON-able `data`) and `SOLUTION` (the solution file name); it must end by
    calling `passed()` or `fail(...)`.
    """
    return (
        _checklib()
        + "\n\n# --- challenge-specific part ---\n"
        + f"SOLUTION = {solution_file!r}\n"
        + f"DATA = {literal(data)}\n"
        + textwrap.dedent(body).strip()
        + "\n"
    )


def stdout_validator(expected: list[str], solution_file: str = "solution.py") -> str:
    """Return a validation script comparing the solution's stdout with `expected` lines."""
    body = """
        out, _ = run_solution(SOLUTION)
        check_lines(out, DATA, "stdout")
        passed()
    """
    return validator_script(body, expected, solution_file)


def file_validator(name: str, expected: list[str], solution_file: str = "solution.py") -> str:
    """Return a validation script comparing the lines of output file `name` with `expected`."""
    body = f"""
        run_solution(SOLUTION)
        check_lines(read_output({name!r}), DATA, {name!r})
        passed()
    """
    return validator_script(body, expected, solution_file)


def prompt(
    task: str,
    inputs: str,
    output: str,
    rules: Sequence[str],
    tier: int,
    solution_file: str = "solution.py",
) -> str:
    """Compose a challenge prompt.

    Args:
        task: one or two sentences saying what to compute.
        inputs: the input files and their format.
        output: the exact output (stdout or a file) and its format.
        rules: the twists of the template, in tier order; the first `tier` of
            them are stated under "Extra rules at this level".
        tier: tier index (0 basic ... 3 expert).
        solution_file: `solution.py` or `solution.sh`.
    """
    parts = [
        textwrap.dedent(task).strip(),
        "Input: " + textwrap.dedent(inputs).strip(),
        "Output: " + textwrap.dedent(output).strip(),
    ]
    if tier:
        bullets = "\n".join(f"- {textwrap.dedent(rule).strip()}" for rule in rules[:tier])
        parts.append("Extra rules at this level:\n" + bullets)
    if solution_file.endswith(".sh"):
        parts.append(
            f"Write a bash script `{solution_file}`. It is run as `bash {solution_file}` in the "
            "directory that holds the input files; coreutils, grep, sed and awk are available "
            "(no network). It must exit with status 0."
        )
    else:
        parts.append(
            f"Write a Python program `{solution_file}`. It is run as `python3 {solution_file}` in "
            "the directory that holds the input files, with only the standard library (no "
            "network). It must exit with status 0."
        )
    return "\n\n".join(parts) + "\n"


def pick_names(rng: random.Random, pool: Sequence[str], count: int) -> list[str]:
    """Return `count` distinct names from `pool` in random order."""
    return rng.sample(list(pool), count)


FIRST_NAMES: tuple[str, ...] = (
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
    "karl", "laura", "mallory", "nina", "oscar", "peggy", "quinn", "rupert", "sybil", "trent",
    "ursula", "victor", "wendy", "xavier", "yara", "zane", "amir", "bea", "chen", "dana",
)  # fmt: skip
"""Lowercase first names used as data across templates."""

WORDS: tuple[str, ...] = (
    "apple", "river", "stone", "cloud", "maple", "ember", "harbor", "lantern", "meadow",
    "orbit", "pepper", "quartz", "raven", "saddle", "timber", "velvet", "willow", "yonder",
    "zephyr", "amber", "bramble", "cobalt", "dune", "falcon", "garnet", "hollow", "iris",
    "juniper", "kettle", "lumen", "marble", "nectar", "onyx", "pebble", "quill", "russet",
)  # fmt: skip
"""Lowercase nouns used as data across templates."""


def differs(reference: Callable[[], object], wrong: Callable[[], object]) -> bool:
    """True when the near-miss's emulated result differs from the reference's (or raises)."""
    try:
        miss = wrong()
    except (ValueError, KeyError, IndexError, TypeError, ZeroDivisionError):
        return True
    return reference() != miss


class RenderError(RuntimeError):
    """A template could not generate data that separates reference and near-miss."""
