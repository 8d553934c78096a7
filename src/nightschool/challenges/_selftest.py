"""The validator self-test (seed 000): a validator must not crash on its own expected output.

An AST probe finds the first `expected_*` variable (`EXPECTED_NAMES`) bound
before the validator runs the solution (`subprocess.run(["python3",
"solution.py"])` and friends), dumps its value, and the validator is then run
against a solution that echoes that value. A crash in the validator's own code
(not an assertion: `NOT_CRASHES`) rejects it. Best effort: anything the probe
cannot find or run is `skipped`, never a rejection (PRIOR-ART: false negatives
over false positives).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from nightschool.challenges._gates import (
    EXPECTED_NAMES,
    SOLUTION_FILE,
    Scripts,
    _is_runner_call,
    _one_line,
    _parse,
    _setup,
    _subprocess_aliases,
    validator_crash,
)
from nightschool.sandbox import Sandbox, python_argv

PROBE_EXIT = 42
"""Exit status of the instrumented validator once it has dumped its expected value."""

NO_CANDIDATE_EXIT = 43
"""Exit status of the probe when no candidate variable holds a printable value."""

_BEGIN = "<<<NIGHTSCHOOL-EXPECTED-BEGIN>>>"
_END = "<<<NIGHTSCHOOL-EXPECTED-END>>>"


@dataclass(frozen=True)
class SelfTestResult:
    """Outcome of `validator_self_test`.

    Attributes:
        status: `passed` (the validator accepted its own expected output),
            `rejected` (it crashed on it) or `skipped` (the gate could not run
            or was inconclusive; never a rejection).
        detail: why, one line.
        variable: the expected-value variable the probe dumped, if any.
    """

    status: Literal["passed", "rejected", "skipped"]
    detail: str = ""
    variable: str | None = None


# -- the self-test -----------------------------------------------------------------------

_PROBE_SOURCE = f"""
def _nightschool_probe(_scopes, _names):
    import os as _os
    import sys as _sys
    for _name in _names:
        for _scope in _scopes:
            if _name not in _scope:
                continue
            _value = _scope[_name]
            if isinstance(_value, bytes):
                _value = _value.decode("utf-8", "replace")
            if isinstance(_value, (list, tuple)) and all(
                isinstance(_v, (str, int, float)) for _v in _value
            ):
                _value = "\\n".join(str(_v) for _v in _value)
            if isinstance(_value, (int, float)) and not isinstance(_value, bool):
                _value = str(_value)
            if not isinstance(_value, str):
                continue
            _sys.stdout.write("\\n{_BEGIN}=" + _name + "\\n" + _value + "\\n{_END}\\n")
            _sys.stdout.flush()
            _os._exit({PROBE_EXIT})
    _sys.stdout.flush()
    _os._exit({NO_CANDIDATE_EXIT})
"""


def _own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of `stmt` outside its nested statement bodies."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    fields = {"body", "orelse", "finalbody", "handlers", "cases"}
    for name, value in ast.iter_fields(stmt):
        if name in fields:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                yield from ast.walk(item)


def _bodies(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body


def _find_run(
    body: list[ast.stmt], source: str, aliases: tuple[set[str], set[str]], strict: bool
) -> tuple[list[ast.stmt], int] | None:
    """The first statement (source order, any depth) that runs the solution."""
    for index, stmt in enumerate(body):
        for node in _own_nodes(stmt):
            if not _is_runner_call(node, aliases):
                continue
            segment = ast.get_source_segment(source, node) or ""
            if not strict or "solution" in segment.lower():
                return body, index
        for inner in _bodies(stmt):
            found = _find_run(inner, source, aliases, strict)
            if found:
                return found
    return None


def _candidate_names(tree: ast.Module) -> list[str]:
    stored = [
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    ]
    extra = [name for name in dict.fromkeys(stored) if name.startswith("expected")]
    return [*EXPECTED_NAMES, *(name for name in extra if name not in EXPECTED_NAMES)]


def _after_preamble(tree: ast.Module) -> int:
    """Index of the first statement after the module docstring and `__future__` imports."""
    body = tree.body
    position = 0
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        position = 1
    while position < len(body):
        stmt = body[position]
        if not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            break
        position += 1
    return position


def instrument(validator: str) -> str | None:
    """The validator with the self-test probe injected, or None when it cannot be.

    The probe goes right before the first statement (in source order, at any
    depth) that calls `subprocess.run` (or `check_output`, `Popen`, `call`)
    mentioning the solution; it prints the first candidate variable
    (`EXPECTED_NAMES`, then any name starting `expected`) found in the local
    then global scope, between sentinel lines, and exits `PROBE_EXIT` with
    `os._exit` (so no `except` can swallow it); with no candidate it exits
    `NO_CANDIDATE_EXIT`.

    Returns:
        The instrumented source, or None: unparseable, or no subprocess call
        that runs the solution.
    """
    tree = _parse(validator)
    if tree is None or SOLUTION_FILE not in validator:
        return None
    aliases = _subprocess_aliases(tree)
    found = _find_run(tree.body, validator, aliases, True) or _find_run(
        tree.body, validator, aliases, False
    )
    if found is None:
        return None
    body, index = found
    call = ast.parse(f"_nightschool_probe((locals(), globals()), {_candidate_names(tree)!r})").body[
        0
    ]
    body.insert(index, call)
    position = _after_preamble(tree)
    tree.body[position:position] = ast.parse(_PROBE_SOURCE).body
    try:
        return ast.unparse(ast.fix_missing_locations(tree))
    except (ValueError, RecursionError):
        return None


def _extract(stdout: str) -> tuple[str, str] | None:
    """(variable, dumped text) from the probe's output, or None."""
    start = stdout.rfind(_BEGIN + "=")
    if start < 0:
        return None
    head, sep, rest = stdout[start + len(_BEGIN) + 1 :].partition("\n")
    end = rest.rfind("\n" + _END)
    if not sep or end < 0:
        return None
    return head.strip(), rest[:end]


def echo_solution(text: str) -> str:
    """A `solution.py` that prints `text` verbatim (one trailing newline)."""
    out = text if text.endswith("\n") else text + "\n"
    return f"import sys\nsys.stdout.write({out!r})\n"


def validator_self_test(sandbox: Sandbox, spec: Scripts) -> SelfTestResult:
    """Run the validator on its own expected output; reject it if it crashes there.

    Steps (the predecessor's gate): instrument the validator (`instrument`);
    run setup and the probe in a sandbox workspace; take the dumped block;
    write a `solution.py` that prints it (`echo_solution`); run setup and the
    ORIGINAL validator in a fresh workspace. A crash there (`validator_crash`)
    is a self-contradicting validator: rejected. Exit 0 passes. Anything
    else (unparseable, no solution run, no candidate variable, the probe
    failing, a clean non-zero exit, a timeout) skips: never a rejection.

    Args:
        sandbox: where to run (up to four runs, each bounded by
            `sandbox.config.timeout_s`).
        spec: the four texts.

    Returns:
        The `SelfTestResult`.

    Raises:
        SandboxFaultError: the sandbox itself failed to start a run.
    """
    probe = instrument(spec.validation_script)
    if probe is None:
        return SelfTestResult("skipped", "no subprocess.run of solution.py found to probe")
    with sandbox.workspace() as ws:
        if _setup(ws, spec):
            return SelfTestResult("skipped", "the setup script failed")
        ws.write_file(SOLUTION_FILE, "")
        run = ws.run(python_argv("-"), stdin=probe)
    if run.returncode == NO_CANDIDATE_EXIT:
        return SelfTestResult("skipped", "no expected-value variable defined before the run")
    dumped = _extract(run.stdout) if run.returncode == PROBE_EXIT else None
    if dumped is None:
        tail = _one_line(run.output_tail(200))
        return SelfTestResult("skipped", f"the probe exited {run.returncode}: {tail}")
    variable, text = dumped
    with sandbox.workspace() as ws:
        if _setup(ws, spec):
            return SelfTestResult("skipped", "the setup script failed", variable)
        ws.write_file(SOLUTION_FILE, echo_solution(text))
        check = ws.run(python_argv("-"), stdin=spec.validation_script)
    if check.ok:
        return SelfTestResult("passed", f"accepts its own {variable}", variable)
    crash = validator_crash(check, SOLUTION_FILE)
    if crash is not None:
        preview = text if len(text) <= 60 else text[:60] + "..."
        return SelfTestResult(
            "rejected",
            f"the validator crashed on its own {variable} ({preview!r}): {crash}",
            variable,
        )
    reason = "timed out" if check.timed_out else f"exited {check.returncode} without a crash"
    return SelfTestResult("skipped", f"inconclusive: on its own {variable} it {reason}", variable)
