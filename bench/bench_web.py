"""The `web_automation` cluster per tier: reference, near-miss, cross-seed and (optionally) a model.

For each tier and each template of the cluster, renders `--seeds` seeds and
judges, through `challenges.evaluate` (the real sandbox, the site served on
loopback, the host's Chromium answering the solution's Playwright calls):

- reference: each seed's reference solution on its own seed (target 100%);
- near-miss: each seed's `wrong_solution` (target 0%);
- cross-seed: seed i's reference on seed j's validator, i != j
  (`challenges.cross_seed`; the bank's target is at most 20%);
- with `--model NAME`: the model's pass@1 on the same renderings through the
  real `Solver` in one attempt, nothing shown (as `bench_bank_pass`).
  Resumable: each answer is one line of `--out`.

Prints one row per tier with the figures side by side, then the median
seconds of one evaluation (Chromium's start included).

    .venv/bin/python bench/bench_web.py                      # 3 seeds, no model
    .venv/bin/python bench/bench_web.py --seeds 4 --model qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from nightschool.challenges import (
    MAX_CROSS_SEED_RATE,
    TIERS,
    WEB_CLUSTER,
    cross_seed,
    evaluate,
    render,
    templates,
)
from nightschool.sandbox import Sandbox, SandboxConfig

SEED_BASE = 7_300_000
"""Seeds rendered here: none of the dream's, verification's, held-out or variety ranges."""


def _rate(hits: list[bool]) -> str:
    return f"{sum(hits)}/{len(hits)} {sum(hits) / len(hits):>4.0%}" if hits else "-"


def solutions(
    sandbox: Sandbox, pool: ThreadPoolExecutor, names: list[str], tier: str, seeds: list[int]
) -> tuple[list[bool], list[bool], list[float]]:
    """(reference verdicts, near-miss verdicts, seconds per evaluation) at `tier`."""

    def judge(job: tuple[str, int, bool]) -> tuple[bool, bool, float]:
        name, seed, good = job
        challenge = render(name, tier, seed)
        source = challenge.reference_solution if good else challenge.wrong_solution
        started = time.perf_counter()
        passed = evaluate(sandbox, challenge, source).passed
        return good, passed, time.perf_counter() - started

    jobs = [(n, s, good) for n in names for s in seeds for good in (True, False)]
    results = list(pool.map(judge, jobs))
    return (
        [p for good, p, _s in results if good],
        [p for good, p, _s in results if not good],
        [s for _g, _p, s in results],
    )


def model_rows(
    model_name: str, names: list[str], tiers: list[str], seeds: list[int], out: Path
) -> dict[str, list[bool]]:
    """Pass@1 of `model_name` per tier, answering what `out` does not hold yet."""
    # bench-local: only with --model (the model stack loads llama.cpp)
    from nightschool.config import Settings
    from nightschool.llm import check_model, make_model
    from nightschool.solver import Solver

    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row["model"] == model_name:
                    done[(row["template"], row["tier"], row["seed"])] = row
    model = make_model(Settings(model=model_name))
    check_model(model)
    solver = Solver(model, Sandbox()).single_attempt()
    out.parent.mkdir(parents=True, exist_ok=True)
    todo = [(n, t, s) for t in tiers for n in names for s in seeds if (n, t, s) not in done]
    print(f"{model_name}: {len(done)} answered, {len(todo)} to go", flush=True)
    for index, (name, tier, seed) in enumerate(todo, start=1):
        started = time.perf_counter()
        result = solver.solve(render(name, tier, seed), session_id="bench-web")
        if result.infrastructure_error is not None:
            print(f"  {name} {tier} {seed}: infrastructure error, not counted: "
                  f"{result.infrastructure_error}", flush=True)  # fmt: skip
            continue
        row = {"template": name, "tier": tier, "seed": seed, "model": model_name,
               "passed": result.passed, "seconds": round(time.perf_counter() - started, 1),
               "why": (result.trajectory.failure_reason or "")[-300:]}  # fmt: skip
        with out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        done[(name, tier, seed)] = row
        mark = "pass" if result.passed else "fail"
        print(f"  [{index}/{len(todo)}] {name} {tier} seed {seed}: {mark} ({row['seconds']} s)",
              flush=True)  # fmt: skip
    by_tier: dict[str, list[bool]] = defaultdict(list)
    for (_name, tier, _seed), row in done.items():
        by_tier[tier].append(bool(row["passed"]))
    return by_tier


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per template and tier")
    parser.add_argument("--seed-base", type=int, default=SEED_BASE)
    parser.add_argument("--tiers", default=",".join(TIERS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=30.0, help="sandbox limit per run, s")
    parser.add_argument("--model", default=None, help="also measure this embedded model")
    parser.add_argument("--out", type=Path, default=Path("bench/results/web-model.jsonl"))
    args = parser.parse_args()
    tiers = [t for t in args.tiers.split(",") if t]
    names = [t.name for t in templates(WEB_CLUSTER)]
    seeds = [args.seed_base + k for k in range(args.seeds)]
    sandbox = Sandbox(SandboxConfig(timeout_s=args.timeout))
    started = time.perf_counter()
    rows: dict[str, tuple[list[bool], list[bool], int, int]] = {}
    seconds: list[float] = []
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for tier in tiers:
            good, bad, spent = solutions(sandbox, pool, names, tier, seeds)
            seconds += spent
            crossed = [cross_seed(sandbox, name, tier, seeds, pool) for name in names]
            rows[tier] = (good, bad, sum(c.passes for c in crossed), sum(c.runs for c in crossed))
            print(f"  {tier} done ({time.perf_counter() - started:.0f} s)", flush=True)
    model = model_rows(args.model, names, tiers, seeds, args.out) if args.model else {}
    print(f"\n{WEB_CLUSTER}: {len(names)} templates x {len(seeds)} seeds per tier")
    head = f"{'tier':<13} {'reference':>11} {'near-miss':>11} {'cross-seed':>12}"
    print(head + (f" {'model ' + args.model:>24}" if args.model else ""))
    ok = True
    for tier in tiers:
        good, bad, passes, runs = rows[tier]
        cross = f"{passes}/{runs} {passes / runs:>4.0%}" if runs else "-"
        line = f"{tier:<13} {_rate(good):>11} {_rate(bad):>11} {cross:>12}"
        if args.model:
            line += f" {_rate(model.get(tier, [])):>24}"
        print(line)
        ok &= all(good) and not any(bad) and (not runs or passes / runs <= MAX_CROSS_SEED_RATE)
    print(
        f"targets (reference 100%, near-miss 0%, cross-seed <= {MAX_CROSS_SEED_RATE:.0%}): "
        f"{'met' if ok else 'NOT met'}; one evaluation: median {statistics.median(seconds):.1f} s, "
        f"max {max(seconds):.1f} s; wall {time.perf_counter() - started:.0f} s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
