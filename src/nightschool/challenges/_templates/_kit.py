"""Building blocks shared by the template modules.

A template subclasses `TemplateBase` and implements `build(level, rng)`, which
returns the five texts of a whole-program challenge as `Parts`, and
`build_starter(rng)` for the function-sized `starter` tier. Solutions are
written once as annotated source (see `select`) so that the reference solution
and the near-miss differ only in the lines of one twist.

Starter pieces: `function_prompt` and `function_validator` (a function called
on hidden `Case`s, checked by `_checklib_starter.check_calls`), and
`script_prompt` and `script_validator` (a shell one-liner run on the shown
input and on hidden ones, for the `bash` cluster).
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

from nightschool.challenges._model import CLUSTERS, STARTER, Challenge, tier_level
from nightschool.challenges._templates._family import (  # re-exported: templates call _kit.variant
    axis_neighbours as axis_neighbours,
)
from nightschool.challenges._templates._family import differs as differs
from nightschool.challenges._templates._family import family_rivals as family_rivals
from nightschool.challenges._templates._family import family_size as family_size
from nightschool.challenges._templates._family import pick as pick
from nightschool.challenges._templates._family import separates as separates
from nightschool.challenges._templates._family import variant as variant

_MARK = re.compile(r"\s*#([+=-])(!?\w+(?:[|&]!?\w+)*)\s*$")
_SCRIPT_PART = "# --- script part: validators include the text from here on ---\n"


@dataclass(frozen=True)
class Parts:
    """What `build` and `build_starter` return; `TemplateBase.render` adds the identity."""

    prompt: str
    setup_script: str
    validation_script: str
    reference_solution: str
    wrong_solution: str


class TemplateBase:
    """Base class of the bank's templates; satisfies the `Template` protocol.

    Subclasses set `name`, `cluster` and (for shell templates) `solution_file`
    as class attributes and implement `build` and `build_starter`.
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
        parts = self.build_starter(rng) if tier == STARTER else self.build(level - 1, rng)
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
        """Return the whole-program challenge texts for twist level `level` (0 basic ... 3 expert).

        `level` is `tier_level(tier) - 1`: the number of twists stated in the prompt.
        """
        raise NotImplementedError

    def build_starter(self, rng: random.Random) -> Parts:
        """Return the `starter` challenge texts: a function-sized version of the basic task."""
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


# --------------------------------------------------------------------------- starter tier

STARTER_SETUP = "# nothing to set up: the task is one function\n"
"""Setup script of starter challenges that need no files."""


class Expr(str):
    """Source text that `call` writes as is, unquoted: a fixture name such as `con`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def call(func: str, *args: Any) -> str:
    """Return the Python call expression `func(arg, ...)`, each argument as its `repr`."""
    return f"{func}({', '.join(map(repr, args))})"


@dataclass(frozen=True)
class Case:
    """One call of a starter function and its expected value.

    Attributes:
        call: a Python expression calling the function (see `call`), shown on failure.
        value: the expected return value (JSON-able; tuples compare like lists).
        checks: pairs of (expression that must be true after the call, message
            shown when it is not), evaluated in the call's scope.
    """

    call: str
    value: Any
    checks: tuple[tuple[str, str], ...] = ()

    def data(self) -> dict[str, Any]:
        """The case as the validator's `DATA` holds it."""
        return {
            "call": self.call,
            "expected": json.loads(json.dumps(self.value)),
            "want": repr(self.value),
            "checks": [list(check) for check in self.checks],
        }


def function_prompt(
    name: str,
    signature: str,
    spec: str,
    examples: Sequence[Case],
    rules: Sequence[str] = (),
    solution_file: str = "solution.py",
) -> str:
    """Compose a starter prompt: the function in HumanEval form, then the I/O rules.

    Args:
        name: the function's name.
        signature: its `def` line, e.g. `def f(xs: list[int]) -> int:`, after any
            imports its annotations need.
        spec: the docstring text (what it returns, edge cases), already wrapped.
        examples: worked examples, shown as doctest lines (`>>> call` / value).
        rules: extra paragraphs between the code and the I/O rules (a schema,
            what a fixture argument is).
        solution_file: the file to write.
    """
    doc = textwrap.dedent(spec).strip()
    doc += "".join(f"\n\n>>> {case.call}\n{case.value!r}" for case in examples)
    body = textwrap.indent(f'"""{doc}\n"""', "    ")
    parts = [
        "Complete this Python function.",
        f"```python\n{signature}\n{body}\n```",
        *(textwrap.dedent(rule).strip() for rule in rules),
        f"Write `{solution_file}` with the complete function (imports and helpers are fine). "
        f"The checker imports it and calls `{name}` on hidden tests. Do not read input or "
        "files and do not print: return the result.",
    ]
    return "\n\n".join(parts) + "\n"


def function_parts(
    *,
    func: str,
    signature: str,
    spec: str,
    examples: Sequence[Case],
    cases: Sequence[Case],
    source: str,
    prelude: str = "",
    setup: str = STARTER_SETUP,
    rules: Sequence[str] = (),
    tol: float = 1e-9,
    features: Iterable[str] = (),
) -> Parts:
    """Assemble a function-sized starter challenge.

    `source` is annotated solution source (see `select`): the reference keeps
    the unmarked and `#-bug` lines, the near-miss the `#+bug` ones; `features`
    (the seed's `variant` tags) select the lines of the drawn task for both.
    The other arguments go to `function_prompt` and `function_validator`.
    """
    chosen = set(features)
    return Parts(
        prompt=function_prompt(func, signature, spec, examples, rules),
        setup_script=setup,
        validation_script=function_validator(func, cases, prelude, tol),
        reference_solution=select(source, chosen),
        wrong_solution=select(source, chosen | {"bug"}),
    )


@functools.cache
def _checklib_starter() -> str:
    text = resources.files(__package__).joinpath("_checklib_starter.py").read_text(encoding="utf-8")
    return text.split(_SCRIPT_PART, 1)[1]


def starter_validator_script(body: str, data: Any, solution_file: str = "solution.py") -> str:
    """Like `validator_script`, with the starter checks (`_checklib_starter`) added."""
    return (
        _checklib()
        + "\n\n# --- starter checks ---\n"
        + _checklib_starter()
        + "\n\n# --- challenge-specific part ---\n"
        + f"SOLUTION = {solution_file!r}\n"
        + f"DATA = {literal(data)}\n"
        + textwrap.dedent(body).strip()
        + "\n"
    )


def function_validator(
    func: str,
    cases: Sequence[Case],
    prelude: str = "",
    tol: float = 1e-9,
    solution_file: str = "solution.py",
) -> str:
    """Return a validation script calling `func` from the solution on each of `cases`.

    Args:
        func: the function's name.
        cases: the hidden cases (5-8), expected values computed at render time.
        prelude: Python source run before each call in its scope (fixtures).
        tol: relative tolerance for numbers in the result.
        solution_file: the module file to import.
    """
    data = {
        "func": func,
        "prelude": textwrap.dedent(prelude).strip() + "\n",
        "tol": tol,
        "cases": [case.data() for case in cases],
    }
    return starter_validator_script("check_calls(SOLUTION, DATA)", data, solution_file)


def script_prompt(
    task: str,
    inputs: Mapping[str, str],
    output: str,
    example: Sequence[str],
    hint: str,
    example_intro: str = "For the input above the output is:",
    solution_file: str = "solution.sh",
) -> str:
    """Compose a starter prompt for a shell one-liner: the input shown, the exact output.

    Args:
        task: one sentence saying what to compute.
        inputs: heading -> text of each input shown verbatim, e.g. "`status.log`:"
            -> the file's full text.
        output: the output format.
        example: the expected result for the shown input (stdout lines, or the
            folder listing after the run).
        hint: the commands that suffice, e.g. "`awk` and `sort`".
        example_intro: the sentence introducing `example`.
        solution_file: the script's file name.
    """
    parts = [textwrap.dedent(task).strip()]
    parts += [f"{heading}\n```\n{text}```" for heading, text in inputs.items()]
    shown = "\n".join(example)
    parts.append(f"{textwrap.dedent(output).strip()} {example_intro}\n```\n{shown}\n```")
    parts.append(
        f"Write a bash script `{solution_file}`; one pipeline or loop is enough ({hint}). It "
        f"is run as `bash {solution_file}` in the directory with the input, and also on "
        "hidden inputs of the same form; coreutils, grep, sed and awk are available. Exit "
        "with status 0."
    )
    return "\n\n".join(parts) + "\n"


def script_validator(
    rounds: Sequence[Mapping[str, Any]], solution_file: str = "solution.sh"
) -> str:
    """Return a validation script running the solution once per round (`check_script_rounds`).

    The first round's input comes from the setup script (and is shown in the
    prompt); later rounds write hidden inputs first. Each round maps `files`,
    `clear`, `shown` and `stdout` or `tree` as `check_script_rounds` reads them.
    """
    body = "check_script_rounds(SOLUTION, DATA)"
    return starter_validator_script(body, [dict(r) for r in rounds], solution_file)


class RenderError(RuntimeError):
    """A template could not generate data that separates reference and near-miss."""


def shown_example(
    rng: random.Random,
    draw: Callable[[random.Random], Case],
    hidden: Sequence[Case],
    tries: int = 50,
) -> Case:
    """Draw a starter's worked example from the seed's `rng`, never one of the `hidden` calls.

    The example is what makes two seeds' prompts differ (the hidden cases are
    not shown), so each template draws it from `rng` after the hidden cases, and
    computes its value with its own emulation.

    Args:
        rng: the seed's generator.
        draw: returns one example `Case` drawn from `rng`.
        hidden: the validator's cases; none of their calls may be shown.
        tries: draws before giving up.

    Raises:
        RenderError: if every draw was a hidden case.
    """
    calls = [case.call for case in hidden]
    for _attempt in range(tries):
        example = draw(rng)
        if not any(c in example.call for c in calls):
            return example
    raise RenderError(f"every drawn example is a hidden case: {calls[0] if calls else ''}")
