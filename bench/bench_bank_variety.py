"""Do seeds make new tasks? Each seed's reference solution against other seeds' validators.

For every template of the bank and every tier, renders `--seeds` seeds and runs
seed i's reference solution against seed j's validator (i != j, in the real
sandbox) through `nightschool.challenges.cross_seed`, the function the bank's
test calls. A pass means seed j is the same task as seed i with new data: an
agent that remembers seed i's answer solves seed j without learning anything.
Prints, per tier, the cross-seed pass rate, how many renderings share their
prompt text with another seed, and the templates that replay most; then the
whole bank's figure; `--per-template` prints every template's line.

Target (issue "Transfer, measured honestly"): at most 20% at every tier. At
commit 4a3794a it was 201 of 210 (95.7%) with 2 seeds per template.

    .venv/bin/python bench/bench_bank_variety.py                 # 4 seeds, every tier
    .venv/bin/python bench/bench_bank_variety.py --seeds 8 --templates algo.top_k --per-template
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from nightschool.challenges import (
    MAX_CROSS_SEED_RATE,
    TIERS,
    VARIETY_SEED_BASE,
    cross_seed,
    templates,
)
from nightschool.sandbox import Sandbox


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds per template and tier")
    parser.add_argument("--tiers", default=",".join(TIERS))
    parser.add_argument("--templates", default="", help="comma-separated names (default: all)")
    parser.add_argument("--seed-base", type=int, default=VARIETY_SEED_BASE)
    parser.add_argument("--per-template", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    tiers = [t for t in args.tiers.split(",") if t]
    wanted = {n for n in args.templates.split(",") if n}
    names = [t.name for t in templates() if not wanted or t.name in wanted]
    seeds = [args.seed_base + k for k in range(args.seeds)]
    sandbox = Sandbox()
    started = time.perf_counter()
    total_pass = total = broken = 0
    worst_tier = 0.0
    print(f"{'tier':<13} {'cross-seed passes':>18} {'rate':>7} {'same prompt':>12}  most replayed")
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for tier in tiers:
            results = [cross_seed(sandbox, name, tier, seeds, pool) for name in names]
            passes = sum(r.passes for r in results)
            runs = sum(r.runs for r in results)
            same_prompt = sum(r.same_prompt for r in results)
            broken += sum(len(r.own_failures) for r in results)
            worst = sorted(((r.passes, r.template) for r in results if r.passes), reverse=True)
            top = ", ".join(f"{name} {n}" for n, name in worst[:3])
            print(
                f"{tier:<13} {passes:>8} of {runs:<7} {passes / runs:>7.1%} "
                f"{same_prompt:>5} of {len(names) * len(seeds):<5}  {top}"
            )
            if args.per_template:
                for r in results:
                    own = f"  OWN REFERENCE FAILS: seeds {list(r.own_failures)}" * bool(
                        r.own_failures
                    )
                    print(f"    {r.template:<30} {r.passes:>3} of {r.runs:<3} {r.rate:>6.0%}{own}")
            total_pass += passes
            total += runs
            worst_tier = max(worst_tier, passes / runs)
    verdict = "met" if worst_tier <= MAX_CROSS_SEED_RATE and not broken else "NOT met"
    print(
        f"{'all tiers':<13} {total_pass:>8} of {total:<7} {total_pass / total:>7.1%}   "
        f"target <= {MAX_CROSS_SEED_RATE:.0%} at every tier: {verdict} (worst tier "
        f"{worst_tier:.1%}; {broken} own-seed failures); {len(seeds)} seeds; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
