"""Checker library: the first part of every validation script.

nightschool never imports this module. Its source text is prepended to each
validation script (see `_kit.validator_script`), which runs inside the sandbox
as `python3 -` with the system Python, so it uses the standard library only and
must stay compatible with Python 3.11.

Conventions: every check either returns or calls `fail`, which prints one
`FAIL: ...` diagnostic (what differed, never this source) and exits 1.
`passed` prints `PASS` and exits 0.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from typing import Any, NoReturn

# Never import modules from the workspace (the solver writes files there).
sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]

SOLUTION_TIMEOUT_S = 10.0
_SHOW = 120
_TOKEN = re.compile(r"[^\s,;|]+|[,;|]")
_DECIMAL = re.compile(r"[-+]?\d*\.(\d+)")


def fail(message: str) -> NoReturn:
    """Print the diagnostic and exit 1."""
    print(f"FAIL: {message}")
    sys.exit(1)


def passed() -> NoReturn:
    """Print PASS and exit 0."""
    print("PASS")
    sys.exit(0)


def _show(text: str) -> str:
    return repr(text if len(text) <= _SHOW else text[:_SHOW] + "...")


def run_solution(solution_file: str, timeout_s: float = SOLUTION_TIMEOUT_S) -> tuple[str, float]:
    """Run the solution in the working directory.

    Returns:
        (stdout, wall-clock seconds). Fails on a missing file, a timeout or a
        non-zero exit status (showing the tail of the solution's stderr).
    """
    if not os.path.isfile(solution_file):
        fail(f"{solution_file} was not found in the working directory")
    if solution_file.endswith(".sh"):
        argv = ["bash", solution_file]
    else:
        argv = [sys.executable, solution_file]
    # Under the sandbox's RLIMIT_AS, glibc's per-thread malloc arenas (64 MiB of address
    # space each) stop Python at about 14 threads; two arenas allow about 100.
    env = dict(os.environ, MALLOC_ARENA_MAX="2")
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            argv,
            env=env,
            input="",
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        fail(f"{solution_file} did not finish within {timeout_s:g} s")
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = proc.stderr.strip()[-800:] or "(nothing on stderr)"
        fail(
            f"{solution_file} exited with status {proc.returncode}; the end of its stderr:\n{tail}"
        )
    return proc.stdout, elapsed


def read_output(name: str) -> str:
    """Return the text of an output file the solution had to write (fail if absent)."""
    if not os.path.isfile(name):
        fail(f"the output file {name} was not created")
    with open(name, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _same_token(expected: str, got: str) -> bool:
    """Tokens match exactly, or as decimals within one unit of the expected last place."""
    if expected == got:
        return True
    if expected.endswith("%") != got.endswith("%"):
        return False
    want, have = expected.rstrip("%"), got.rstrip("%")
    match = _DECIMAL.fullmatch(want)
    if match is None:
        return False
    try:
        value = float(have)
    except ValueError:
        return False
    tolerance: float = 1.01 * 10.0 ** -len(match.group(1))
    return abs(float(want) - value) <= tolerance


def _same_text(expected: str, got: str) -> bool:
    return expected == got


def _same_line(expected: str, got: str) -> bool:
    want, have = _TOKEN.findall(expected), _TOKEN.findall(got)
    return len(want) == len(have) and all(map(_same_token, want, have))


def check_lines(got_text: str, expected: list[str], what: str, exact: bool = False) -> None:
    """Compare output lines with the expected ones; fail at the first difference.

    By default blank lines are dropped, spacing is ignored (lines are compared
    token by token) and a decimal may differ by one unit in its last place.
    With `exact`, lines are compared character for character after removing
    trailing spaces and trailing blank lines.
    """
    if exact:
        got = [line.rstrip() for line in got_text.splitlines()]
        while got and not got[-1]:
            got.pop()
        same = _same_text
    else:
        got = [line.strip() for line in got_text.splitlines() if line.strip()]
        same = _same_line
    for index, want in enumerate(expected):
        if index >= len(got):
            fail(
                f"{what} line {index + 1}: expected {_show(want)}, got nothing "
                f"({what} has {len(got)} lines, expected {len(expected)})"
            )
        if not same(want, got[index]):
            fail(f"{what} line {index + 1}: expected {_show(want)}, got {_show(got[index])}")
    if len(got) > len(expected):
        fail(
            f"{what} line {len(expected) + 1}: unexpected extra line {_show(got[len(expected)])} "
            f"(expected {len(expected)} lines)"
        )


def _json_diff(expected: Any, got: Any, path: str) -> str | None:
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"at {path}: expected an object, got {_show(json.dumps(got))}"
        for key in sorted(expected):
            if key not in got:
                return f"at {path}: missing key {key!r}"
            diff = _json_diff(expected[key], got[key], f"{path}.{key}")
            if diff:
                return diff
        extra = sorted(set(got) - set(expected))
        return f"at {path}: unexpected key {extra[0]!r}" if extra else None
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            return (
                f"at {path}: expected {_show(json.dumps(expected))}, got {_show(json.dumps(got))}"
            )
        for index, (want, have) in enumerate(zip(expected, got, strict=True)):
            diff = _json_diff(want, have, f"{path}[{index}]")
            if diff:
                return diff
        return None
    if type(expected) is not type(got) or expected != got:
        return f"at {path}: expected {json.dumps(expected)}, got {_show(json.dumps(got))}"
    return None


def check_json_file(name: str, expected: Any) -> None:
    """Parse the JSON file `name` and compare it with `expected` (fail at the first difference)."""
    text = read_output(name)
    try:
        got = json.loads(text)
    except ValueError as exc:
        fail(f"{name} is not valid JSON: {exc}")
    diff = _json_diff(expected, got, "$")
    if diff:
        fail(f"{name}: {diff}")


def check_tree(root: str, expected: dict[str, str]) -> None:
    """Compare the files under `root` (relative name -> text) with `expected`."""
    got: dict[str, str] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                got[os.path.relpath(path, root)] = handle.read()
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    if missing:
        fail(
            f"{root}/: expected a file named {missing[0]!r}, it is missing ({len(missing)} missing)"
        )
    if extra:
        fail(f"{root}/: unexpected file {extra[0]!r} ({len(extra)} unexpected)")
    for name in sorted(expected):
        if got[name] != expected[name]:
            fail(f"{root}/{name}: content changed (expected {_show(expected[name])})")
