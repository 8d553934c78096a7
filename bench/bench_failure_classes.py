"""What a stream's failed public tests were: the headroom of each kind of mechanism.

Reads a stream run's own trajectories (`RUN/memory.db`; the public test's
checker line is stored with each attempt: "public test failed: <assert>; got
<value>", "public test raised NameError: ...", "solution.py failed to load:
...") and sorts every failed public test of one arm into classes:

- `wrong value`: the answer returned a value of the expected type, but another
  value (the model misread or mis-solved the task);
- `wrong type`: it returned another type than the test expects (a list for a
  tuple, an int for a float, a generator, True for 'Valid'): a convention an
  environment fact or strategy item could carry to later tasks;
- `missing import`: NameError on a standard-library module (math, re, ...);
- `error: <class>`: any other exception;
- `load error`: the program does not load (a syntax error, ...);
- `no code` / `other`.

Then, for each class, how many the arms given in `--against` (default
`resample`) turned into hidden-test passes. No model call; the figures come
from what the stream recorded. Hidden tests are never read here.

Usage:
    .venv/bin/python bench/bench_failure_classes.py bench/results/stream-mbpp-order0-n200
    .venv/bin/python bench/bench_failure_classes.py RUN --arm no_memory --against resample,memory
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

from nightschool.evals import read_lines
from nightschool.evals.stream import checker_lines, classify
from nightschool.store import Store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a stream run directory")
    parser.add_argument("--arm", default="no_memory", help="whose failed public tests")
    parser.add_argument("--against", default="resample", help="arms to count repairs of")
    args = parser.parse_args()
    rows = read_lines(args.run / "rows.jsonl")
    mine = {r["task_id"]: r for r in rows if r["arm"] == args.arm}
    failed = [r for r in mine.values() if not r["public_passed"]]
    with Store.open(args.run / "memory.db") as store:
        lines = checker_lines(store, args.arm)
    others = [a for a in args.against.split(",") if a]
    by_arm = {a: {r["task_id"]: r for r in rows if r["arm"] == a} for a in others}
    classes: dict[str, list[str]] = collections.defaultdict(list)
    for row in failed:
        line = lines.get(row["task_id"])
        classes["(no trajectory)" if line is None else classify(line)].append(row["task_id"])
    print(f"{args.run}: arm {args.arm}, {len(mine)} tasks, {len(failed)} failed public tests")
    header = f"{'class':<22} {'tasks':>5} {'share':>6}"
    header += "".join(f" {a + ' fixed':>16}" for a in others)
    print(header)
    for name, tasks in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        line = f"{name:<22} {len(tasks):>5} {len(tasks) / max(len(failed), 1):>6.0%}"
        for arm in others:
            got = [by_arm[arm].get(t) for t in tasks]
            fixed = sum(1 for r in got if r is not None and r["passed"])
            answered = sum(1 for r in got if r is not None)
            line += f" {f'{fixed}/{answered}':>16}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
