"""Replay recorded attempts: as the model wrote them vs stripped of top-level test code.

Usage:
    .venv/bin/python bench/bench_sanitize.py DB [DB ...] [--limit N]

Reads every `run_solution` call with code on a `starter`-tier Python trajectory
(self-play, verification and eval) from the given nightschool databases
(opened read-only), re-renders its challenge from the recorded template, tier
and seed, and judges the code twice in the real sandbox with the real checker
(`nightschool.challenges.evaluate`): as recorded, and after
`nightschool.solver.sanitize.strip_test_code`. No model is called, so both
arms judge exactly the same programs.

Prints: attempts replayed, how many the stripping changed, passes as recorded,
as re-judged (must equal the recorded figure: the checker is deterministic)
and after stripping, with the flips each way (fail -> pass is the gain;
pass -> fail would be harm), and pass@1 over first attempts both ways.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path

from nightschool.challenges import evaluate, render
from nightschool.sandbox import Sandbox
from nightschool.solver.sanitize import strip_test_code


def attempts(db: Path) -> list[tuple[str, str, int, int, str, bool]]:
    """(template, tier, seed, attempt, code, recorded pass) of every replayable call in `db`."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT record FROM trajectories WHERE task_kind IN ('selfplay', 'verification', 'eval') "
        "AND tier = 'starter' ORDER BY rowid"
    ).fetchall()
    con.close()
    out = []
    for (text,) in rows:
        record = json.loads(text)
        extra = record.get("extra", {})
        template, seed = extra.get("template"), extra.get("seed")
        if not template or seed is None:
            continue
        for call in record.get("tool_calls", []):
            args = call.get("arguments", {})
            code = args.get("code")
            if call.get("name") != "run_solution" or not code or call.get("result") is None:
                continue
            if not str(args.get("file", "solution.py")).endswith(".py"):
                continue
            passed = call.get("result") == "passed"
            out.append((template, "starter", int(seed), int(args.get("attempt", 1)), code, passed))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path, nargs="+")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    rows = [row for db in args.db for row in attempts(db)]
    if args.limit:
        rows = rows[: args.limit]
    if not rows:
        print("no starter-tier Python attempts with code in these databases", file=sys.stderr)
        return 2
    sandbox = Sandbox()
    changed = recorded = rejudged = stripped_pass = gained = harmed = 0
    first = first_raw = first_stripped = 0
    mismatched: list[str] = []
    started = time.perf_counter()
    for index, (template, tier, seed, attempt, code, was) in enumerate(rows, start=1):
        challenge = render(template, tier, seed)
        raw = evaluate(sandbox, challenge, code).passed
        clean, dropped = strip_test_code(code)
        after = evaluate(sandbox, challenge, clean).passed if dropped else raw
        changed += dropped > 0
        recorded += was
        rejudged += raw
        stripped_pass += after
        gained += after and not raw
        harmed += raw and not after
        if raw != was:
            mismatched.append(f"{template}:{seed}#{attempt}")
        if attempt == 1:
            first += 1
            first_raw += raw
            first_stripped += after
        if index % 25 == 0:
            print(f"  {index}/{len(rows)} replayed", file=sys.stderr, flush=True)
    wall = time.perf_counter() - started
    n = len(rows)
    print(
        f"attempts replayed: {n} ({wall:.0f}s); changed by stripping: {changed} ({changed / n:.0%})"
    )
    print(f"{'':24}{'as written':>12}{'stripped':>12}")
    print(f"{'passes (all attempts)':24}{rejudged:>12}{stripped_pass:>12}   recorded {recorded}")
    print(f"{'pass@1 (first attempts)':24}{first_raw:>9}/{first:<2}{first_stripped:>9}/{first:<2}")
    print(f"flips: fail -> pass {gained}, pass -> fail {harmed}")
    if mismatched:
        print(f"re-judged differently from the record: {len(mismatched)} {mismatched[:5]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
