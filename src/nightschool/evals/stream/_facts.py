"""The stream's facts arm: environment facts learned from failed public tests, shown to every task.

Some failures are not the task mis-solved but the environment or its
conventions misread: a standard-library module used without its import, a
list returned where the test compares with a tuple, a helper that is defined
nowhere, a reply Python cannot load. What such a failure teaches applies to
every later task, not only to neighbours of the failed one (issue 26:
"environment facts learned from failures").

The arm reads the no-memory arm's failed public tests at earlier positions
(the checker line stored with each attempt in the run's database; the hidden
tests never reach it), sorts each into a failure class (`classify`), and
admits a class's fact once that class failed on `FACT_MIN_TASKS` different
tasks: one failure may be an accident of one task, a recurring one is a fact
of the environment. Every admitted fact is then shown to every later task
under `### SKILL PLAYBOOK`, in the order admitted. The fact texts are ours
(`FACTS`); what is learned is which of them this environment's failures call
for. Before any fact is admitted the arm is shown nothing and takes the
no-memory answer. A class with no fact (`wrong value`: the task mis-solved,
which only a better answer fixes; 48 of the 61 failed public tests of MBPP
order 0's first 200 tasks, `bench/bench_failure_classes.py`) teaches nothing.

Everything is read from the run's database, so a resumed run shows exactly
what an uninterrupted one would. The arm learns nothing of its own.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from nightschool.lessons.skills import Recall, shown_recall, unranked
from nightschool.playbook import Lesson
from nightschool.store import Store

FACTS_ARM = "facts"
"""The arm's name in the rows."""

FACT_MIN_TASKS = 2
"""Different earlier tasks a failure class must have failed on before its fact is shown
(as the issue asks of a skill-library function: useful on at least two tasks)."""

FACTS: dict[str, tuple[str, str, str]] = {
    "missing import": (
        "the solution uses a standard-library module (math, re, collections, itertools, heapq)",
        "calling the module without importing it (NameError: name 'math' is not defined)",
        "put `import <module>` at the top of the solution, above the function",
    ),
    "wrong type": (
        "the example test compares the function's result with a literal",
        "returning another type than that literal (a list for a tuple, True for a string, "
        "a generator or map object for a list, an int for a float)",
        "return exactly the type the literal has",
    ),
    "error: NameError": (
        "the function calls a helper or reads a variable",
        "names that are defined nowhere in the solution",
        "define every helper function and variable inside the solution itself",
    ),
    "error: TypeError": (
        "the test calls the function with its own arguments",
        "changing the signature or assuming other argument types",
        "keep the exact parameters of the given signature and the types the test passes",
    ),
    "load error": (
        "writing the reply's code",
        "an incomplete or syntactically broken program",
        "reply with one complete function that Python can load",
    ),
    "no function": (
        "answering a request for a function",
        "a reply without that function",
        "reply with the whole function, named as in the request, in one ```python block",
    ),
}
"""Failure class -> the fact shown once it recurs: (trigger, anti-pattern, correct pattern)."""

STDLIB_MODULES = frozenset(sys.stdlib_module_names)
_FAILED = re.compile(r"public test failed: (?P<test>assert .*); got (?P<got>.*)$", re.DOTALL)
_WRITTEN = datetime(2026, 1, 1, tzinfo=UTC)


class _Unreadable:
    """A repr `literal_eval` cannot read (`<generator object ...>`, a class instance)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _Unreadable(text.strip())


def _expected(test: str) -> object | None:
    """The literal an `assert <call> == <literal>[, message]` compares with (None: not one)."""
    try:
        node = ast.parse(test).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    if not isinstance(node.test.ops[0], ast.Eq):
        return None
    want = _literal(ast.unparse(node.test.comparators[0]))
    return None if isinstance(want, _Unreadable) else want


def classify(error: str) -> str:
    """The failure class of one public-test checker line.

    Args:
        error: the checker line stored with a failed attempt ("public test
            failed: <assert>; got <value>", "public test raised NameError: ...",
            "solution.py failed to load: ..."); "" when the reply had no code.

    Returns:
        `wrong value` (the expected type, another value), `wrong type` (another
        type than the compared literal, or an unreadable value such as a
        generator), `missing import` (NameError on a standard-library module),
        `error: <exception class>`, `load error`, `no function`, `no code` or
        `other`.
    """
    if not error:
        return "no code"
    match = _FAILED.search(error)
    if match:
        want = _expected(match["test"])
        if want is None:
            return "wrong value"  # not `assert f(...) == <literal>`: the value is what differs
        got = _literal(match["got"])
        if isinstance(got, _Unreadable) or type(want) is not type(got):
            return "wrong type"
        return "wrong value"
    if "failed to load" in error:
        return "load error"
    raised = re.search(r"public test raised (\w+): (.*)", error)
    if raised:
        name = re.search(r"name '(\w+)' is not defined", raised[2])
        if raised[1] == "NameError" and name and name[1] in STDLIB_MODULES:
            return "missing import"
        return f"error: {raised[1]}"
    if "defines no function" in error:
        return "no function"
    return "other"


def checker_lines(store: Store, arm: str = "no_memory") -> dict[str, str]:
    """Task id -> the checker line of `arm`'s last attempt, for its failed public tests.

    Read from the trajectories the stream stored (session `stream-<arm>`,
    template `<suite>.<task_id>`); a task answered twice (an interrupted
    answer asked again) keeps the later one; a reply without code reads "".
    """
    lines: dict[str, str] = {}
    for (record,) in store.query(
        "SELECT record FROM trajectories WHERE session_id = ? ORDER BY rowid", (f"stream-{arm}",)
    ):
        trajectory = json.loads(record)
        template = str(trajectory.get("extra", {}).get("template", ""))
        task_id = template.split(".", 1)[-1]
        calls = [c for c in trajectory.get("tool_calls", []) if c.get("name") == "run_solution"]
        if calls and calls[-1].get("result") == "passed":
            lines.pop(task_id, None)
        else:
            lines[task_id] = str(calls[-1].get("error") or "") if calls else ""
    return lines


def admitted(failures: Sequence[str], *, min_tasks: int = FACT_MIN_TASKS) -> list[str]:
    """The failure classes whose fact is shown: those of at least `min_tasks` failures.

    Args:
        failures: checker lines of failed public tests, one per task, in
            stream order.
        min_tasks: how many different tasks a class must have failed on.

    Returns:
        Classes with a fact in `FACTS`, in the order each reached `min_tasks`.
    """
    seen: dict[str, int] = {}
    order: list[str] = []
    for line in failures:
        name = classify(line)
        name = "no function" if name == "no code" else name  # a reply without code: one fact
        seen[name] = seen.get(name, 0) + 1
        if name in FACTS and seen[name] == min_tasks:
            order.append(name)
    return order


def fact_lesson(name: str) -> Lesson:
    """The fact of failure class `name` as an unstored lesson (id `F-` + 12 hex digits).

    Raises:
        KeyError: `name` has no fact.
    """
    trigger, anti_pattern, correct_pattern = FACTS[name]
    return Lesson(
        id="F-" + hashlib.sha256(name.encode()).hexdigest()[:12],
        kind="lesson",
        trigger=trigger,
        anti_pattern=anti_pattern,
        correct_pattern=correct_pattern,
        domains=["python_general"],
        confidence=0.5,
        source="manual",
        created_at=_WRITTEN,
        updated_at=_WRITTEN,
        extra={"fact": name},
    )


def facts_recall(store: Store, earlier: Sequence[str]) -> Recall:
    """What the facts arm shows the task after `earlier`: every admitted fact, no skills.

    Args:
        store: the run's database (the no-memory arm's trajectories).
        earlier: ids of the tasks before this one, in stream order.

    Returns:
        A `Recall` of the admitted facts as lessons (empty before any is admitted).
    """
    lines = checker_lines(store)
    failures = [lines[task_id] for task_id in earlier if task_id in lines]
    return shown_recall(unranked([fact_lesson(name) for name in admitted(failures)]), [])
