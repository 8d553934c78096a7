"""Checker library, part two: checks for `starter` challenges.

Appended after `_checklib` (whose names it uses: `fail`, `passed`, `_show`,
`_same_line`, `SOLUTION_TIMEOUT_S`, ...) in `starter` validation scripts only,
so the validators of the other tiers stay byte-identical. Like `_checklib`,
nightschool never imports it; it runs inside the sandbox with the system
Python (standard library only, Python 3.11).

`check_calls` imports the solution in a child process (never in the
validator's own process, so the solution cannot touch the expected values or
the verdict) and calls the function on each case; `check_script_rounds` runs a
shell solution on several inputs. Both fail at the first wrong case with one
short diagnostic: the call (or the input), the expected and the actual value,
never the list of cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in a validator these names come from `_checklib`, just above
    from nightschool.challenges._templates._checklib import (
        SOLUTION_TIMEOUT_S,
        _same_line,
        _show,
        fail,
        passed,
        run_solution,
    )

# Imports inside functions below (`shutil`) are function-local on purpose: validators
# include only the text after the marker, so an import up here would not reach them, and
# `_checklib`'s imports stay as they are so the other tiers' validators keep their bytes.
# (A comment at the import itself would change every starter validator, hence its hash.)

# --- script part: validators include the text from here on ---

_MARK = "@@nightschool-case@@ "
_CLIP = 240

# The child process: reads the payload from stdin, imports the solution from its
# file, runs each call expression with the prelude's names and the function in
# scope, and writes one marked JSON line per case to the real stdout.
_HARNESS = r"""
import importlib.util, io, json, os, sys, time, traceback
payload = json.loads(sys.stdin.read())
sys.stdin = io.StringIO("")
real_out, printed = sys.stdout, io.StringIO()
sys.stdout = printed
sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
path = os.path.abspath(payload["module"])
name = os.path.basename(path)


def emit(**record):
    real_out.write("@@nightschool-case@@ " + json.dumps(record) + "\n")
    real_out.flush()


def describe(exc):
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return text + (f" ({name} line {lines[-1]})" if lines else "")


def clip(text, limit=240):
    return text if len(text) <= limit else text[: limit - 3] + "..."


spec = importlib.util.spec_from_file_location("solution", path)
module = importlib.util.module_from_spec(spec)
sys.modules["solution"] = module
try:
    spec.loader.exec_module(module)
except BaseException as exc:
    emit(stage="import", error=describe(exc))
    os._exit(0)
func = getattr(module, payload["func"], None)
if not callable(func):
    defined = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
    emit(stage="import", missing=True, defined=defined[:8])
    os._exit(0)
for index, (call, checks) in enumerate(zip(payload["calls"], payload["checks"])):
    scope = {}
    exec(payload["prelude"], scope)
    scope[payload["func"]] = func
    mark = printed.tell()
    try:
        value = eval(call, scope)
    except BaseException as exc:
        emit(i=index, error=describe(exc), printed=clip(printed.getvalue()[mark:]))
        continue
    try:
        shown = clip(repr(value))
    except BaseException as exc:
        shown = f"<unprintable {type(value).__name__}>"
    try:
        normal, plain = json.loads(json.dumps(value)), True
    except (TypeError, ValueError, RecursionError):
        normal, plain = None, False
    results = []
    for expr in checks:
        try:
            results.append(bool(eval(expr, scope)))
        except BaseException:
            results.append(False)
    emit(i=index, value=normal, plain=plain, repr=shown, type=type(value).__name__,
         printed=clip(printed.getvalue()[mark:]), checks=results)
real_out.flush()
os._exit(0)
"""


def _clip(text: str, limit: int = _CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _same_value(expected: Any, got: Any, tol: float) -> bool:
    """JSON values equal; lists and tuples alike; numbers within `tol` (bools strict)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return bool(abs(expected - got) <= tol * max(1.0, abs(expected)))
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(_same_value(e, g, tol) for e, g in zip(expected, got, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and set(got) == set(expected)
            and all(_same_value(expected[k], got[k], tol) for k in expected)
        )
    return type(expected) is type(got) and expected == got


def _records(stdout: str) -> dict[Any, dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for line in stdout.splitlines():
        if not line.startswith(_MARK):
            continue
        try:
            record = json.loads(line[len(_MARK) :])
        except ValueError:
            continue
        if isinstance(record, dict):
            found.setdefault(record.get("i", "import"), record)
    return found


def _text(data: Any) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def _import_problem(record: dict[str, Any], solution_file: str, func: str) -> str:
    if record.get("missing"):
        defined = ", ".join(record.get("defined") or []) or "no functions"
        return f"{solution_file} does not define a function named `{func}` (it defines: {defined})"
    error = record.get("error", "")
    hint = _EOF_HINT if error.startswith("EOFError") else ""
    return f"importing {solution_file} failed: {error}{hint}"


_EOF_HINT = " (do not read input: the function gets its data as arguments)"


def _case_problem(case: dict[str, Any], record: dict[str, Any], tol: float) -> str | None:
    call = _clip(case["call"])
    if "error" in record:
        hint = _EOF_HINT if record["error"].startswith("EOFError") else ""
        return f"{call} raised {record['error']}{hint}"
    if not record.get("plain") or not _same_value(case["expected"], record.get("value"), tol):
        message = f"{call} returned {record.get('repr')}, expected {_clip(case['want'])}"
        if record.get("type") == "NoneType" and record.get("printed"):
            message += (
                f" (it printed {_show(record['printed'])}: return the value instead of printing it)"
            )
        return message
    for (_expr, note), ok in zip(case.get("checks", []), record.get("checks", []), strict=False):
        if not ok:
            return f"{call}: {note}"
    return None


def check_calls(
    solution_file: str, spec: dict[str, Any], timeout_s: float = SOLUTION_TIMEOUT_S
) -> None:
    """Call the solution's function on every case; fail at the first wrong one.

    Args:
        solution_file: the Python file that defines the function.
        spec: `func` (name), `prelude` (Python source run before each call, in
            the call's scope: fixtures such as a database connection), `tol`
            (relative tolerance for numbers) and `cases`, each with `call` (a
            Python expression), `expected` (its JSON value), `want` (the
            expected value as shown) and optional `checks` (pairs of an
            expression evaluated after the call that must be true, and the
            message shown when it is not).
        timeout_s: wall-clock limit for importing the module and all calls.
    """
    if not os.path.isfile(solution_file):
        fail(f"{solution_file} was not found in the working directory")
    cases = spec["cases"]
    payload = {
        "module": solution_file,
        "func": spec["func"],
        "prelude": spec.get("prelude", ""),
        "calls": [case["call"] for case in cases],
        "checks": [[expr for expr, _note in case.get("checks", [])] for case in cases],
    }
    env = dict(os.environ, MALLOC_ARENA_MAX="2")
    timed_out, stderr = False, ""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _HARNESS],
            input=json.dumps(payload),
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout_s,
            env=env,
        )
        stdout, stderr = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        stdout, timed_out = _text(exc.stdout), True
    late = f"{timeout_s:g} s (an endless loop, or waiting for something?)" if timed_out else ""
    _check_records(_records(stdout), spec, solution_file, stderr, late)
    passed()


def _check_records(
    records: dict[Any, dict[str, Any]],
    spec: dict[str, Any],
    solution_file: str,
    stderr: str,
    late: str,
) -> None:
    """Fail at the first case of `spec` that the child's `records` show wrong or missing.

    Shared by `check_calls` and `_checklib_web.check_web_calls`. `late` is ""
    when the child finished in time, else what follows "did not return within"
    (the limit and a likely cause); `stderr` is the child's, shown when it
    stopped before a case's record.
    """
    if "import" in records:
        fail(_import_problem(records["import"], solution_file, spec["func"]))
    cases = spec["cases"]
    for index, case in enumerate(cases):
        record = records.get(index)
        if record is None:
            if late:
                fail(f"{_clip(case['call'])} did not return within {late}")
            tail = stderr.strip()[-400:] or "(nothing on stderr)"
            fail(f"{_clip(case['call'])} stopped the checker; the end of its stderr:\n{tail}")
        problem = _case_problem(case, record, spec.get("tol", 1e-9))
        if problem:
            fail(f"{problem} (test {index + 1} of {len(cases)})")


def _lines_problem(got_text: str, expected: list[str]) -> str | None:
    got = [line.strip() for line in got_text.splitlines() if line.strip()]
    for index, want in enumerate(expected):
        if index >= len(got):
            return f"stdout line {index + 1}: expected {_show(want)}, got nothing"
        if not _same_line(want, got[index]):
            return f"stdout line {index + 1}: expected {_show(want)}, got {_show(got[index])}"
    if len(got) > len(expected):
        return f"stdout line {len(expected) + 1}: unexpected extra line {_show(got[len(expected)])}"
    return None


def _tree_problem(root: str, expected: dict[str, str]) -> str | None:
    got = sorted(os.listdir(root)) if os.path.isdir(root) else []
    want = sorted(expected)
    if got != want:
        return f"{root}/ holds {got}, expected {want}"
    for name in want:
        with open(os.path.join(root, name), encoding="utf-8", errors="replace") as handle:
            if handle.read() != expected[name]:
                return f"{root}/{name}: content changed"
    return None


def check_script_rounds(solution_file: str, rounds: list[dict[str, Any]]) -> None:
    """Run a script once per round and check its stdout or a folder; fail at the first miss.

    Each round has `files` (path -> text, written before the run; the first
    round's files come from the setup), `clear` (paths removed before writing),
    `shown` (the input to show when this round fails; "" for the first round,
    whose input the prompt shows) and `stdout` (expected lines) or `tree`
    (`[folder, {name: text}]`, the folder's files after the run).
    """
    import shutil

    for index, round_ in enumerate(rounds):
        for path in round_.get("clear", []):
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        for path, text in round_.get("files", {}).items():
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        out, _elapsed = run_solution(solution_file)
        if "tree" in round_:
            problem = _tree_problem(round_["tree"][0], round_["tree"][1])
        else:
            problem = _lines_problem(out, round_["stdout"])
        if problem:
            if round_.get("shown"):
                fail(
                    f"on another input (run {index + 1}), {problem}. That input:\n{round_['shown']}"
                )
            fail(f"{problem} (run {index + 1} of {len(rounds)}, the input shown in the task)")
    passed()
