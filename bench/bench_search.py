"""Search vs retry at equal budget: PRM-guided repair against retry-the-latest.

Issue 11 part 2. Both arms are the real `Solver` with the same model, the same
attempts (`--attempts`, one model call each, the same resampling), the same
rising temperatures and seeds, on the learning curve's held-out sets
(`evals.curve.build_heldout`, never practised). The only difference: before
each retry the `prm` arm asks `learners.search.PrmRepair` which failure to
repair (the one the process reward model values highest), the `retry` arm
repairs the latest. The PRM is trained in-process on the given stores with
`learners.train_prm` (eval items never used; any held-out challenge is
dropped from training) and used whether or not it passed its save rule - the
report says which.

The arms share every model call until the policy first picks an earlier
failure, so a cache of completions keyed by (messages, temperature, seed,
max_tokens) serves the shared prefix once; each arm's budget is counted from
its own `SolveResult.model_calls`. The paired verdict is the project's
promotion gate (superiority, exact McNemar on pass/fail).

Usage:
    python bench/bench_search.py --model qwen2.5-coder-0.5b \\
        --train-glob '/tmp/*/nightschool.db' --tiers basic --per-cell 2 --attempts 4
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

from _stores import load_trajectories, store_paths
from nightschool.config import Settings
from nightschool.evals.curve import build_heldout
from nightschool.evolution.gate import GateConfig, PairedResult, promotion_gate
from nightschool.learners import PrmConfig, train_prm
from nightschool.learners.search import PrmRepair
from nightschool.llm import Completion, make_model
from nightschool.llm._protocol import Message, ToolSpec
from nightschool.sandbox import Sandbox
from nightschool.selfplay.solver import Solver, SolverConfig


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
    arms = {
        "retry": Solver(model, sandbox, config),  # type: ignore[arg-type]
        "prm": Solver(model, sandbox, config, search=PrmRepair(params)),  # type: ignore[arg-type]
    }
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for index, item in enumerate(items, 1):
        row: dict[str, Any] = {"task_id": item.task_id}
        for arm, solver in arms.items():
            result = solver.solve(item.challenge)
            traj = result.trajectory
            row[arm] = {
                "passed": result.passed,
                "calls": result.model_calls,
                "tokens": traj.tokens_in + traj.tokens_out,
                "infra": result.infrastructure_error is not None,
                "switched": traj.extra.get("search", {}).get("switched", 0),
            }
        rows.append(row)
        elapsed = time.perf_counter() - start
        print(
            f"[{index}/{len(items)}] {item.task_id:<48} retry {'✓' if row['retry']['passed'] else '✗'}"
            f" ({row['retry']['calls']} calls)  prm {'✓' if row['prm']['passed'] else '✗'}"
            f" ({row['prm']['calls']} calls)  {elapsed:.0f}s",
            flush=True,
        )
    valid = [r for r in rows if not r["retry"]["infra"] and not r["prm"]["infra"]]
    print()
    print(f"{'arm':<8}{'pass@budget':>12}{'model calls':>13}{'tokens':>10}")
    for arm in arms:
        n = max(1, len(valid))
        rate = sum(r[arm]["passed"] for r in valid) / n
        calls = sum(r[arm]["calls"] for r in valid) / n
        tokens = sum(r[arm]["tokens"] for r in valid) / n
        print(f"{arm:<8}{rate:>12.3f}{calls:>13.2f}{tokens:>10.0f}")
    switched = sum(1 for r in valid if r["prm"]["switched"])
    differ = sum(1 for r in valid if r["prm"]["passed"] != r["retry"]["passed"])
    print(
        f"items where the PRM sent a retry to an earlier failure: {switched} of {len(valid)}; "
        f"outcomes differ on {differ}; "
        f"model calls computed {model.computed}, served from the shared prefix {model.served}"
    )
    pairs = [
        PairedResult(
            task_id=r["task_id"],
            incumbent_score=float(r["retry"]["passed"]),
            candidate_score=float(r["prm"]["passed"]),
            incumbent_cost=r["retry"]["tokens"],
            candidate_cost=r["prm"]["tokens"],
        )
        for r in valid
    ]
    print("gate (prm vs retry, superiority): " + promotion_gate(pairs, GateConfig()).summary())


if __name__ == "__main__":
    main()
