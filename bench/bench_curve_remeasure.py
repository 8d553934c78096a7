"""Re-measure a finished learning curve's final playbook with the code as it is now.

Usage:
    .venv/bin/python bench/bench_curve_remeasure.py --home HOME --curve OUT \
        [--tiers starter] [--per-cell 2] [--seed 0] [--model NAME] [--max-tokens 384] \
        [--arms both,skills] [--strip-test-code]

When a change touches only what the solver is shown (recall rules, floors,
budgets), there is no need to dream again: the playbook a curve ended with is
in HOME's database, and the start (nothing learned) is in OUT/items.csv. This
rebuilds the same held-out sets (same tiers, per-cell and seed; the disjointness
checks run again against what HOME practised), measures the asked-for arms
with the real `nightschool.evals.curve.measure` (an item for which the arm now
shows nothing takes the recorded start's result, as in the curve itself), and
pairs each arm with the recorded start through the promotion gate.

HOME is never written: the measurement runs on a SQLite backup of its database
in a temporary directory. The solver is built as the curve builds it
(single attempt, the same temperature and token cap); `--strip-test-code`
turns on the starter-tier stripping of top-level test code, off by default so
the arms stay comparable with a start recorded before that existed.
"""

from __future__ import annotations

import argparse
import csv
import os
import sqlite3
import sys
import tempfile
from pathlib import Path

from nightschool.config import Settings
from nightschool.evals.curve import (
    ARMS,
    ItemResult,
    Measurement,
    build_heldout,
    check_disjoint,
    measure,
    paired_verdict,
    practised_hashes,
)
from nightschool.llm import check_model, make_model
from nightschool.playbook import SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver, SolverConfig
from nightschool.store import Store


def recorded_start(items_csv: Path) -> Measurement:
    """The curve's checkpoint-0 `none` measurement, read back from its items.csv."""
    start = Measurement(checkpoint=0, dream_s=0.0, cycles=0, arm="none")
    with items_csv.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["checkpoint"] != "0":
                continue
            start.results.append(
                ItemResult(
                    task_id=row["task_id"],
                    set_name=row["set"],
                    cluster=row["cluster"],
                    tier=row["tier"],
                    passed=row["passed"] == "1",
                    tokens=int(row["tokens"]),
                    trajectory_id="",
                    shown=0,
                )
            )
    return start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="the curve's NIGHTSCHOOL_HOME")
    parser.add_argument("--curve", type=Path, required=True, help="the curve's --out directory")
    parser.add_argument("--tiers", default="starter")
    parser.add_argument("--per-cell", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None)
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--arms", default="both,skills")
    parser.add_argument("--strip-test-code", action="store_true")
    args = parser.parse_args()
    source_db = args.home / "nightschool.db"
    if not source_db.is_file() or not (args.curve / "items.csv").is_file():
        print("need HOME/nightschool.db and CURVE/items.csv", file=sys.stderr)
        return 2
    start = recorded_start(args.curve / "items.csv")
    heldout = build_heldout(args.tiers.split(","), args.per_cell, args.seed)
    if {r.task_id for r in start.results} != {item.task_id for item in heldout.items}:
        print("the held-out sets differ from the curve's: check --tiers/--per-cell/--seed")
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="ns-remeasure-"))
    with sqlite3.connect(f"file:{source_db}?mode=ro", uri=True) as src:
        dst = sqlite3.connect(scratch / "nightschool.db")
        src.backup(dst)
        dst.close()
    os.environ["NIGHTSCHOOL_HOME"] = str(scratch)
    os.environ["NIGHTSCHOOL_MAX_TOKENS"] = str(args.max_tokens)
    if args.model:
        os.environ["NIGHTSCHOOL_MODEL"] = args.model
    settings = Settings()
    store = Store.open(scratch / "nightschool.db")
    check_disjoint(heldout, practised_hashes(store))
    memory = SkillMemory(store)
    model = make_model(settings)
    check_model(model)
    config = SolverConfig(
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        max_attempts=1,
        strip_test_code=args.strip_test_code,
    )
    solver = Solver(model, Sandbox(), config)
    print(f"{model.name}: {len(memory.list(kind='skill'))} skill(s), "
          f"{len(memory.list(kind='lesson'))} lesson(s) in the playbook")  # fmt: skip
    for arm in [a for a in ARMS if a in args.arms.split(",")]:
        result = measure(
            solver, store, memory, heldout, arm,
            checkpoint=99, dream_s=0.0, cycles=0, session_id="remeasure", start=start,
        )  # fmt: skip
        for set_name in ("a", "b"):
            passed, n = result.pass_rate(set_name)
            base, _ = start.pass_rate(set_name)
            verdict = paired_verdict(start, result, set_name)
            shown = sum(1 for r in result.results if r.set_name == set_name and r.shown)
            print(
                f"arm {arm:<7} set ({set_name}): {passed:>2}/{n} (start {base:>2}/{n}, "
                f"{(passed - base) / n * 100:+.1f} pts; {shown} item(s) shown something) "
                f"gate: {verdict.summary()}"
            )
    memory.close()
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
