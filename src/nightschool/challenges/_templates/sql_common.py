"""Helpers shared by the `sql` cluster's templates: the family check and the output formats.

Each template draws its seed's task from a family (`_kit.variant`); the data
generation then keeps only data on which every other task of the family gives
a different result, so that the reference solution of one seed fails the
validator of any seed that drew another task (`separated`).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from nightschool.challenges._templates._kit import Parts, select, sqlite_setup, stdout_validator

HOW = (
    "Use Python's `sqlite3` module (SQL does most of the work; window functions such as "
    "`RANK() OVER (...)` are available)."
)
"""The sentence every program prompt of the cluster ends its task with."""

_TOKEN = re.compile(r"[^\s,;|]+|[,;|]")
_DECIMAL = re.compile(r"[-+]?\d*\.(\d+)")


def _same_token(want: str, have: str) -> bool:
    if want == have:
        return True
    if want.endswith("%") != have.endswith("%"):
        return False
    match = _DECIMAL.fullmatch(want.rstrip("%"))
    try:
        value = float(have.rstrip("%"))
    except ValueError:
        return False
    return match is not None and abs(float(want.rstrip("%")) - value) <= 1.01 * 10.0 ** -len(
        match.group(1)
    )


def same_lines(expected: Sequence[str], got: Sequence[str]) -> bool:
    """True when `check_lines` (the validator's comparison) would accept `got` for `expected`.

    Lines are compared token by token (spacing ignored; `,`, `;` and `|` are
    tokens of their own) and a decimal may be off by one unit in its last place.
    """
    if len(expected) != len(got):
        return False
    for want, have in zip(expected, got, strict=True):
        a, b = _TOKEN.findall(want), _TOKEN.findall(have)
        if len(a) != len(b) or not all(map(_same_token, a, b)):
            return False
    return True


def separated(
    emulate: Callable[[set[str]], Any],
    drawn: set[str],
    axes: Sequence[Sequence[str]],
    extra: Iterable[str] = (),
    same: Callable[[Any, Any], bool] = operator.eq,
) -> bool:
    """True when every other task of the family gives a result other than the drawn one.

    Args:
        emulate: the template's emulation on the candidate data: feature tags ->
            the result its validator checks (stdout lines, or a starter's
            function name with the values of its hidden cases).
        drawn: the seed's `variant` tags.
        axes: the template's axes (as given to `variant`).
        extra: tags every task of the tier shares (the twists `t1`...).
        same: whether the validator would accept the second result for the first.

    Returns:
        False when some other combination of the axes' tags emulates to a result
        the drawn task's validator accepts (its reference would replay here).
    """
    shared = set(extra)
    mine = emulate(drawn | shared)
    for combo in itertools.product(*axes):
        other = set(combo)
        if other != drawn and same(mine, emulate(other | shared)):
            return False
    return True


def rejects(emulate: Callable[[set[str]], list[str]], ref: set[str], wrong: set[str]) -> bool:
    """True when the validator of the `ref` output would reject the `wrong` output."""
    return not same_lines(emulate(ref), emulate(wrong))


def table(columns: Sequence[str], rows: Iterable[Sequence[object]], csv: bool) -> list[str]:
    """Return the output lines: space-separated values, or a CSV table with `columns` as header."""
    if csv:
        return [",".join(columns)] + [",".join(map(str, row)) for row in rows]
    return [" ".join(map(str, row)) for row in rows]


def describe_rows(columns: Sequence[str], csv: bool) -> str:
    """Say in the prompt how output lines look: `NAME TOTAL` lines, or a CSV header and rows."""
    upper = [c.upper() for c in columns]
    if csv:
        return (
            f"a CSV table on stdout: the header line `{','.join(columns)}`, then lines "
            f"`{','.join(upper)}` (commas, no spaces)"
        )
    return f"lines `{' '.join(upper)}` (values separated by one space)"


def sql_parts(
    prompt: str,
    database: tuple[str, str, Mapping[str, Sequence[Sequence[Any]]]],
    expected: list[str],
    source: str,
    ref: set[str],
    wrong: set[str],
) -> Parts:
    """The `Parts` of one program task of the cluster.

    Args:
        prompt: the task as the model reads it (`_kit.prompt`).
        database: (file name, schema, rows per table) of the SQLite file the
            setup script creates (`_kit.sqlite_setup`).
        expected: the lines the solution must print (`_kit.stdout_validator`).
        source: the annotated reference program (`_kit.select` keeps its lines).
        ref: the features of the reference solution.
        wrong: the features of the near miss (`wrong_solution`).
    """
    return Parts(
        prompt=prompt,
        setup_script=sqlite_setup(*database),
        validation_script=stdout_validator(expected),
        reference_solution=select(source, ref),
        wrong_solution=select(source, wrong),
    )
