"""Search vs retry at equal budget: best-first, Best-of-N and MCTS against retry-the-latest.

Issue 11 part 2. Every arm is the real `Solver` with the same model, the same
attempts (`--attempts`, one model call each, the same resampling), the same
rising temperatures and seeds, on the learning curve's held-out sets
(`evals.curve.build_heldout`, never practised). The only difference is the
`learners.search` policy that says what each retry builds on:

- `retry`: the latest failure (the default solver);
- `prm`: the failure the process reward model values highest (`PrmRepair`);
- `best-of-n`: nothing, a fresh sample of the task (`BestOfN`);
- `mcts`: the node UCT picks in the tree of repairs, the PRM as value (`PrmMcts`).

The PRM is trained in-process on the given stores with `learners.train_prm`
(eval items never used; any held-out challenge is dropped from training) and
used whether or not it passed its save rule - the report says which.

The arms share every model call until their prompts differ, so a cache of
completions keyed by (messages, temperature, seed, max_tokens) serves a shared
call once; each arm's budget is counted from its own `SolveResult.model_calls`.
Each arm's paired verdict against `retry` is the project's promotion gate
(superiority, exact McNemar on pass/fail).

Usage:
    python bench/bench_search.py --model qwen2.5-coder-0.5b \\
        --train-glob '/tmp/*/nightschool.db' --tiers basic --per-cell 2 --attempts 4
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _stores import load_trajectories, store_paths
from nightschool.config import Settings
from nightschool.evals.curve import build_heldout
from nightschool.gate import GateConfig, PairedResult, promotion_gate
from nightschool.learn import PrmConfig, train_prm
from nightschool.learn.search import POLICIES, BestOfN, PrmMcts, PrmRepair
from nightschool.llm import Completion, make_model
from nightschool.llm._protocol import Message, ToolSpec
from nightschool.sandbox import Sandbox
from nightschool.solver.core import Solver, SolverConfig


class CachedModel:
    """A `ChatModel` that answers a repeated identical call from memory."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[str, Completion] = {}
        self.computed = 0
        self.served = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        key = json.dumps([list(messages), temperature, max_tokens, seed, grammar], sort_keys=True)
        if key in self.cache:
            self.served += 1
            return self.cache[key]
        completion = self.inner.complete(
            messages, temperature=temperature, max_tokens=max_tokens, seed=seed, grammar=grammar
        )
        self.computed += 1
        self.cache[key] = completion
        return completion


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--train-glob", required=True, help="stores the PRM is trained on")
    parser.add_argument("--tiers", default="basic", help="comma-separated held-out tiers")
    parser.add_argument("--per-cell", type=int, default=2, help="items per cluster x tier x set")
    parser.add_argument("--attempts", type=int, default=4, help="attempts per item (both arms)")
    parser.add_argument("--heldout-seed", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--limit", type=int, default=0, help="stop after this many items (0: all)")
    parser.add_argument(
        "--arms",
        default=",".join(POLICIES),
        help=f"comma-separated, from {','.join(POLICIES)}; POLICY@N gives that arm N attempts "
        "(best-of-n@7: as many model calls as retry's resamples spend)",
    )
    parser.add_argument(
        "--json", default="", help="write every row to this file after each item (resumable)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the rows already in --json, skip their items"
    )
    args = parser.parse_args()

    heldout = build_heldout(args.tiers.split(","), args.per_cell, args.heldout_seed)
    items = list(heldout.items)[: args.limit or None]
    held_hashes = {item.challenge.challenge_hash for item in heldout.items}
    training = load_trajectories(store_paths(args.train_glob), skip_hashes=frozenset(held_hashes))
    params, report = train_prm(training, PrmConfig())
    print(
        f"PRM: {report.trajectories} trajectories, held-out prefix AUC {report.auc_prefix}, "
        f"open-state AUC {report.auc_open} vs request-only {report.baseline_auc_open}; "
        f"passes its save rule: {report.beats_baseline()}"
    )
    model = CachedModel(make_model(Settings(model=args.model)))
    sandbox = Sandbox()
    config = SolverConfig(max_attempts=args.attempts, max_tokens=args.max_tokens)
    policies = {
        "retry": None,
        "prm": PrmRepair(params),
        "best-of-n": BestOfN(),
        "mcts": PrmMcts(params),
    }
    names = ["retry", *(a for a in args.arms.split(",") if a != "retry")]
    unknown = [name for name in names if name.split("@")[0] not in policies]
    if unknown:
        parser.error(f"unknown arm(s) {unknown}; choose from {','.join(POLICIES)}")
    arms = {
        name: Solver(model, sandbox, arm_config(config, name), search=policies[name.split("@")[0]])
        for name in names
    }
    rows: list[dict[str, Any]] = []
    if args.resume and args.json and Path(args.json).exists():
        rows = json.loads(Path(args.json).read_text(encoding="utf-8"))["rows"]
        print(f"resuming: {len(rows)} item(s) in {args.json}; measuring only the arms they lack")
    done = {row["task_id"]: row for row in rows}
    start = time.perf_counter()
    try:
        for index, item in enumerate(items, 1):
            missing = {
                arm: solver for arm, solver in arms.items() if arm not in done.get(item.task_id, {})
            }
            if missing:
                row = measure(missing, item)
                if item.task_id in done:
                    done[item.task_id].update(row)
                else:
                    rows.append(done.setdefault(item.task_id, row))
                row = done[item.task_id]
                if args.json:
                    Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}))
                marks = "  ".join(
                    f"{arm} {'✓' if row[arm]['passed'] else '✗'} ({row[arm]['calls']})"
                    for arm in arms
                )
                elapsed = time.perf_counter() - start
                print(
                    f"[{index}/{len(items)}] {item.task_id:<44} {marks}  {elapsed:.0f}s", flush=True
                )
    except KeyboardInterrupt:
        print(f"interrupted: reporting the {len(rows)} item(s) measured")
    rows = [row for row in rows if all(arm in row for arm in arms)]
    summarise(rows, list(arms), model, time.perf_counter() - start)


def arm_config(config: SolverConfig, name: str) -> SolverConfig:
    """`config`, with `max_attempts` from the arm's `@N` suffix if it has one."""
    _, _, attempts = name.partition("@")
    return config.model_copy(update={"max_attempts": int(attempts)}) if attempts else config


def measure(arms: dict[str, Solver], item: Any) -> dict[str, Any]:
    """One held-out item solved by every arm: pass, model calls, tokens, search counters."""
    row: dict[str, Any] = {"task_id": item.task_id}
    for arm, solver in arms.items():
        result = solver.solve(item.challenge)
        traj = result.trajectory
        search = traj.extra.get("search", {})
        row[arm] = {
            "passed": result.passed,
            "calls": result.model_calls,
            "tokens": traj.tokens_in + traj.tokens_out,
            "infra": result.infrastructure_error is not None,
            "switched": search.get("switched", 0),
            "fresh": search.get("fresh_samples", 0),
        }
    return row


def summarise(
    rows: list[dict[str, Any]], arms: list[str], model: CachedModel, seconds: float
) -> None:
    """Print each arm's pass rate, calls and tokens, and its gate verdict against retry."""
    valid = [r for r in rows if not any(r[arm]["infra"] for arm in arms)]
    n = max(1, len(valid))
    print()
    print(f"{len(valid)} items without an infrastructure fault (of {len(rows)})")
    print(
        f"{'arm':<11}{'pass@budget':>12}{'model calls':>13}{'tokens':>9}{'vs retry':>10}"
        f"{'wins':>6}{'losses':>8}{'retries elsewhere':>19}{'fresh samples':>15}"
    )
    retry_rate = sum(r["retry"]["passed"] for r in valid) / n
    for arm in arms:
        rate = sum(r[arm]["passed"] for r in valid) / n
        calls = sum(r[arm]["calls"] for r in valid) / n
        tokens = sum(r[arm]["tokens"] for r in valid) / n
        wins = sum(r[arm]["passed"] and not r["retry"]["passed"] for r in valid)
        losses = sum(r["retry"]["passed"] and not r[arm]["passed"] for r in valid)
        switched = sum(r[arm]["switched"] for r in valid)
        fresh = sum(r[arm]["fresh"] for r in valid)
        print(
            f"{arm:<11}{rate:>12.3f}{calls:>13.2f}{tokens:>9.0f}{rate - retry_rate:>+10.3f}"
            f"{wins:>6}{losses:>8}{switched:>19}{fresh:>15}"
        )
    print(
        f"model calls computed {model.computed}, served from a shared prefix {model.served}; "
        f"{seconds:.0f} s"
    )
    for arm in arms:
        if arm == "retry":
            continue
        pairs = [
            PairedResult(
                task_id=r["task_id"],
                incumbent_score=float(r["retry"]["passed"]),
                candidate_score=float(r[arm]["passed"]),
                incumbent_cost=r["retry"]["tokens"],
                candidate_cost=r[arm]["tokens"],
            )
            for r in valid
        ]
        print(
            f"gate ({arm} vs retry, superiority): " + promotion_gate(pairs, GateConfig()).summary()
        )


if __name__ == "__main__":
    main()
