"""GEPA prompt optimisation vs the live solver prompt, on a held-out set, through the gate.

Usage:
    .venv/bin/python bench/bench_gepa.py [--model qwen2.5-coder-0.5b] [--base-url URL]
        [--reflection-model NAME] [--budget 24] [--train 6] [--holdout 12]
        [--tier starter] [--seed 0] [--max-tokens 512]

Runs `nightschool.prompts.optimise.optimise_prompt` for real (the `gepa`
package's engine, the real solver in the bubblewrap sandbox, the given model)
on a throw-away database, so nothing is registered in the user's store:

1. GEPA optimises the solver's system prompt on a private training tier of
   `--train` fresh renders (seeds in [700M, 800M)), at most about `--budget`
   single-attempt solves, reflecting with `--reflection-model` (default: the
   task model; PRIOR-ART: small models reflect poorly, give a stronger one);
2. the baseline (the built-in `SYSTEM_PROMPT`) and GEPA's best prompt then
   solve the same `--holdout` held-out tasks once each (sets a and b of
   `build_heldout`, seed 10,000 + `--seed`): the same pass@1 budget per task;
3. the promotion gate (superiority, exact McNemar) gives its verdict.

Prints baseline vs optimised pass@1 on the held-out set (all, set a, set b)
side by side, GEPA's training scores, the gate's verdict and the optimised
prompt. When GEPA keeps the baseline (no candidate beat it on the training
tier), the baseline alone is measured on the held-out set and both columns
show it. `--json PATH` writes the run's report.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from nightschool.challenges import TIERS
from nightschool.config import Settings
from nightschool.llm import check_model, make_model
from nightschool.prompts.adapter import SolverPromptAdapter
from nightschool.prompts.optimise import (
    OptimiseConfig,
    OptimiseResult,
    optimise_prompt,
    pick_holdout,
)
from nightschool.sandbox import Sandbox
from nightschool.solver.core import SYSTEM_PROMPT, Solver, SolverConfig
from nightschool.store import Store


def baseline_only(
    result: OptimiseResult, config: OptimiseConfig, solver: Solver
) -> list[tuple[str, bool]]:
    """Held-out (set name, passed) of the baseline prompt, when GEPA proposed nothing."""
    adapter = SolverPromptAdapter(solver)
    _, holdout = pick_holdout(config)
    return [(t.task_id[0], adapter.rollout(t, result.incumbent).passed) for t in holdout]


def rate(passed: int, n: int) -> str:
    return f"{passed}/{n} ({passed / n:.0%})" if n else "—"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", default="qwen2.5-coder-0.5b", help="task model (catalog name or server model)"
    )
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible server root")
    parser.add_argument(
        "--reflection-model", default=None, help="GEPA's reflection model (default: --model)"
    )
    parser.add_argument(
        "--budget", type=int, default=24, help="GEPA metric calls (training solves)"
    )
    parser.add_argument("--train", type=int, default=6)
    parser.add_argument("--holdout", type=int, default=12)
    parser.add_argument("--tier", choices=TIERS, default="starter")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args()

    settings = Settings(model=args.model, base_url=args.base_url)
    model = make_model(settings)
    check_model(model)
    reflector = None
    if args.reflection_model is not None:
        reflector = make_model(settings.model_copy(update={"model": args.reflection_model}))
        check_model(reflector)
    sandbox = Sandbox()
    sandbox.check()
    config = OptimiseConfig(
        budget=args.budget,
        train=args.train,
        holdout=args.holdout,
        tier=args.tier,
        seed=args.seed,
        max_tokens=args.max_tokens,
    )
    started = time.perf_counter()

    def on_event(line: str) -> None:
        print(f"  [{time.perf_counter() - started:6.0f}s] {line}", flush=True)

    with tempfile.TemporaryDirectory() as scratch, Store.open(Path(scratch) / "bench.db") as store:
        result = optimise_prompt(
            store,
            model,
            sandbox,
            config,
            reflection_model=reflector,
            run_id="bench_gepa",
            on_event=on_event,
            register=False,
        )
    if result.pairs:
        rows = [(p.set_name, p.incumbent, p.candidate) for p in result.pairs]
    else:
        solver = Solver(model, sandbox, SolverConfig(max_tokens=args.max_tokens, seed=args.seed))
        rows = [(s, ok, ok) for s, ok in baseline_only(result, config, solver)]
    print()
    print(
        f"model {model.name} · reflection {(reflector or model).name} · tier {args.tier} · "
        f"train {args.train} · holdout {args.holdout} · budget {args.budget}"
    )
    print(
        f"GEPA: {result.metric_calls} training solves, {result.reflections} reflection(s), "
        f"{result.candidates} prompt(s) kept, {result.duration_s:.0f}s"
    )
    print(f"{'':28}{'baseline':>16}{'optimised':>16}")
    print(
        f"{'training tier (GEPA score)':28}{result.train_scores[0]:>16.2f}{result.train_scores[1]:>16.2f}"
    )
    for label, wanted in (
        ("held-out a+b pass@1", None),
        ("  set a (new seeds)", "a"),
        ("  set b (unseen templates)", "b"),
    ):
        mine = [r for r in rows if wanted is None or r[0] == wanted]
        base = sum(r[1] for r in mine)
        best = sum(r[2] for r in mine)
        print(f"{label:28}{rate(base, len(mine)):>16}{rate(best, len(mine)):>16}")
    if result.verdict is not None:
        print(f"gate: {result.verdict['summary']}")
    else:
        print("gate: not run (GEPA kept the baseline prompt; nothing to compare)")
    changed = result.candidate != SYSTEM_PROMPT
    print(f"optimised prompt ({'changed' if changed else 'unchanged'}):\n{result.candidate}")
    if args.json is not None:
        args.json.write_text(json.dumps(result.to_json(), indent=1, default=str))


if __name__ == "__main__":
    main()
