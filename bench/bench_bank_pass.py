"""How often the model solves the template bank as it is: pass@1 per template and cluster at one tier.

Usage:
    .venv/bin/python bench/bench_bank_pass.py [--model NAME] [--tier starter]
        [--seeds 2] [--seed-base 7000000] [--out bench/results/bank-pass-starter.jsonl]

The dream learns only from what it sometimes solves: a tier the model almost
never passes gives the playbook nothing (no skill from a pass, no lesson a
verification can promote). This bench answers each template of the bank at
`--tier` for `--seeds` seeds with the real `Solver` in one attempt (the
learning curve's and verification's pass@1 arm: `Solver.single_attempt()`,
nothing shown) and the real sandbox, and prints pass@1 per cluster and in all.

Resumable: each answer is one line of `--out` (JSON, fsynced); a rerun with the
same file skips what is there. Seeds start at `--seed-base` (none of the
learning curve's or verification's seeds).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from nightschool.challenges import CLUSTERS, TIERS, render, templates
from nightschool.config import Settings
from nightschool.llm import check_model, make_model
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver


def main() -> None:
    """Answer every template at one tier and print pass@1 per cluster."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="embedded model name (default: the default)")
    parser.add_argument("--tier", choices=TIERS, default="starter")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per template")
    parser.add_argument("--seed-base", type=int, default=7_000_000)
    parser.add_argument("--out", type=Path, default=Path("bench/results/bank-pass-starter.jsonl"))
    args = parser.parse_args()

    done: dict[tuple[str, int], dict[str, object]] = {}
    if args.out.exists():
        for line in args.out.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row["tier"] == args.tier:
                    done[(row["template"], row["seed"])] = row
    model = make_model(Settings() if args.model is None else Settings(model=args.model))
    check_model(model)
    solver = Solver(model, Sandbox()).single_attempt()
    todo = [
        (t.name, args.seed_base + k)
        for k in range(args.seeds)
        for t in templates()
        if (t.name, args.seed_base + k) not in done
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{model.name} · tier {args.tier} · {len(done)} answered, {len(todo)} to go", flush=True)
    for index, (name, seed) in enumerate(todo, start=1):
        challenge = render(name, args.tier, seed)
        started = time.perf_counter()
        result = solver.solve(challenge, session_id="bench-bank-pass")
        if result.infrastructure_error is not None:
            print(f"  {name} seed {seed}: infrastructure error, not counted: "
                  f"{result.infrastructure_error}", flush=True)  # fmt: skip
            continue
        row = {
            "template": name,
            "cluster": challenge.cluster,
            "tier": args.tier,
            "seed": seed,
            "passed": result.passed,
            "seconds": round(time.perf_counter() - started, 1),
            "model": model.name,
        }
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        done[(name, seed)] = row
        mark = "pass" if result.passed else "fail"
        print(f"  [{index}/{len(todo)}] {name:<32} seed {seed} {mark} ({row['seconds']}s)",
              flush=True)  # fmt: skip
    by_cluster: dict[str, list[bool]] = defaultdict(list)
    for row in done.values():
        by_cluster[str(row["cluster"])].append(bool(row["passed"]))
    print(f"\npass@1 at {args.tier} ({model.name}, one attempt, nothing shown)")
    total = [p for results in by_cluster.values() for p in results]
    for cluster in CLUSTERS:
        results = by_cluster.get(cluster, [])
        if results:
            print(f"  {cluster:<14} {sum(results):>3}/{len(results):<3}")
    if total:
        print(f"  {'all':<14} {sum(total):>3}/{len(total):<3} = {sum(total) / len(total):.1%}")


if __name__ == "__main__":
    main()
