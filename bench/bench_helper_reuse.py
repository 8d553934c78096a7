"""Headroom of an executable skill library on a stream: do passing answers share helpers?

An executable skill library (issue "Mechanisms that transfer": small tested
helper functions extracted from passing solutions, admitted when they pass on
at least two different tasks) can only help where a helper recurs across
tasks. This reads a finished `nightschool eval stream` run's own trajectories
(no model call): every answer, of any arm, that passed its public test; the
functions it defines other than the task's entry point (helpers: top-level or
nested); and which helpers appear in the answers to two or more different
tasks, by name and by body (the function's AST with its name blanked, so a
renamed copy counts as the same body).

Usage:
    NIGHTSCHOOL_HOME=... .venv/bin/python bench/bench_helper_reuse.py RUN [RUN ...]

(the home holds the suite's data, as for `bench/bench_stream.py`).
"""

from __future__ import annotations

import ast
import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from nightschool.config import Settings
from nightschool.evals.stream import load_suite
from nightschool.evals.stream._run import _answer_code
from nightschool.store import Store


def helpers(code: str, entry_point: str) -> list[ast.FunctionDef]:
    """Every function `code` defines but the entry point (nested ones too); [] if it won't parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name != entry_point
    ]


def body_key(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The function's AST with its name blanked (a renamed copy has the same key)."""
    clone = ast.parse(ast.unparse(node)).body[0]
    assert isinstance(clone, ast.FunctionDef | ast.AsyncFunctionDef)
    clone.name = "_"
    return ast.dump(clone, annotate_fields=False)


def show(directory: Path) -> None:
    suite = json.loads((directory / "meta.json").read_text())["suite"]
    cache = Settings().home_dir() / "datasets"
    entry = {t.task_id: t.entry_point for t in load_suite(suite, data=None, cache_dir=cache)}
    # a copy: opening a database may migrate it, and the run's file stays as committed
    scratch = Path(tempfile.mkdtemp(prefix="ns-helpers-")) / "memory.db"
    shutil.copyfile(directory / "memory.db", scratch)
    with Store.open(scratch) as store:
        answers = [
            (str(t.extra.get("template", "")).partition(".")[2], _answer_code(t), t.outcome)
            for t in store.iter_trajectories()
        ]
    shutil.rmtree(scratch.parent)
    passing: dict[str, int] = defaultdict(int)  # task -> passing answers read
    with_helpers: set[str] = set()
    names: dict[str, set[str]] = defaultdict(set)
    bodies: dict[str, set[str]] = defaultdict(set)
    defined = 0
    failing: dict[str, set[str]] = defaultdict(set)  # helper name -> tasks of failed answers
    for task_id, code, outcome in answers:
        if task_id not in entry or code is None:
            continue
        if outcome != "passed":
            for node in helpers(code, entry[task_id]):
                failing[node.name].add(task_id)
            continue
        passing[task_id] += 1
        for node in helpers(code, entry[task_id]):
            defined += 1
            with_helpers.add(task_id)
            names[node.name].add(task_id)
            bodies[body_key(node)].add(task_id)
    shared_names = sorted(((len(t), n) for n, t in names.items() if len(t) >= 2), reverse=True)
    shared_bodies = sorted((len(t) for t in bodies.values() if len(t) >= 2), reverse=True)
    print(f"\n== {directory}: {suite}, {len(entry)} tasks in the suite")
    print(f"tasks with an answer that passed its public test: {len(passing)} "
          f"({sum(passing.values())} answers, every arm)")  # fmt: skip
    print(f"tasks whose passing answers define a helper:      {len(with_helpers)} "
          f"({defined} helper definitions)")  # fmt: skip
    print(f"helper names on >= 2 tasks: {len(shared_names)}"
          + "".join(f"\n  {name}: {n} tasks" for n, name in shared_names[:15]))  # fmt: skip
    print(
        f"helper bodies (up to the name) on >= 2 tasks: {len(shared_bodies)} {shared_bodies[:15]}"
    )
    # where a tested helper could have been offered: a failed answer to another task
    # defines a helper of the same name as one a passing answer defined
    reach = {
        task for name, tasks in failing.items() for task in tasks if names.get(name, set()) - {task}
    }
    print(f"tasks with a failed answer defining a helper another task's passing answer has: "
          f"{len(reach)}")  # fmt: skip


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    for arg in sys.argv[1:]:
        show(Path(arg))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
