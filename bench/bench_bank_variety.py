"""Do seeds make new tasks? Each seed's reference solution against other seeds' validators.

For every template of the bank and every tier, renders `--seeds` seeds and runs
seed i's reference solution against seed j's validator (i != j, in the real
sandbox). A pass means seed j is the same task as seed i with new data: an
agent that remembers seed i's answer solves seed j without learning anything.
Prints, per tier, the cross-seed pass rate, how many renderings share their
prompt text with another seed, and the templates that replay most; then the
whole bank's figure.

Target (issue "Transfer, measured honestly"): at most 20% at every tier. At
commit 4a3794a it was 201 of 210 (95.7%) with 2 seeds per template.

    .venv/bin/python bench/bench_bank_variety.py                 # 2 seeds, every tier
    .venv/bin/python bench/bench_bank_variety.py --seeds 3 --tiers starter,basic
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

from nightschool.challenges import TIERS, evaluate, render, templates
from nightschool.sandbox import Sandbox

SEED_BASE = 7_000_000
"""Seeds rendered here (outside the dream's, verification's and held-out ranges)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="seeds per template and tier")
    parser.add_argument("--tiers", default=",".join(TIERS))
    args = parser.parse_args()
    tiers = [t for t in args.tiers.split(",") if t]
    sandbox = Sandbox()
    started = time.perf_counter()
    total_pass = total = 0
    print(f"{'tier':<13} {'cross-seed passes':>18} {'rate':>7} {'same prompt':>12}  most replayed")
    for tier in tiers:
        passes = runs = same_prompt = 0
        worst: list[tuple[int, str]] = []
        for template in templates():
            rendered = [render(template.name, tier, SEED_BASE + k) for k in range(args.seeds)]
            prompts = [c.prompt for c in rendered]
            same_prompt += sum(prompts.count(p) > 1 for p in prompts)
            mine = 0
            for source, target in itertools.permutations(rendered, 2):
                ok = evaluate(sandbox, target, source.reference_solution).passed
                mine += ok
                runs += 1
            passes += mine
            worst.append((mine, template.name))
        total_pass += passes
        total += runs
        top = ", ".join(name for n, name in sorted(worst, reverse=True)[:3] if n)
        print(
            f"{tier:<13} {passes:>8} of {runs:<7} {passes / runs:>7.1%} "
            f"{same_prompt:>5} of {len(templates()) * args.seeds:<5}  {top}"
        )
    print(
        f"{'all tiers':<13} {total_pass:>8} of {total:<7} {total_pass / total:>7.1%}   "
        f"target <= 20% at every tier; {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
