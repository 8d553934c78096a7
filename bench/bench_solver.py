"""Solver retry policy: conversation retries at a fixed temperature vs fresh, hotter, distinct retries.

Usage:
    .venv/bin/python bench/bench_solver.py [--model NAME | --scripted] [--base-url URL]
        [--tier basic] [--limit 7] [--seed 0] [--max-tokens 512] [--temperature 0.2]
        [--max-seconds S]

Both arms run the real `Solver` on the same challenges, one challenge at a time
(arms interleaved, so both see the same machine load):
    conversation = `SolverConfig(retry_mode="conversation", temperature_step=0,
        max_resamples=0)`: the solver as it was (retry appended to the growing
        conversation, every attempt at the base temperature; a repeated program
        is recorded as a wasted attempt instead of being run again, which
        changes no verdict: validators are deterministic),
    fresh = `SolverConfig()`: fresh retry prompt (task + failing code + checker
        message), temperature rising by 0.35 per attempt and per resample, up
        to 2 resamples of a reply that repeats a program already run.

Challenges: the regression suite's pick for `--tier` (one template per cluster,
drawn as `nightschool.evals` does: `random.Random(f"regression:{seed}:{cluster}:{tier}")`),
for suite seeds 0, 1, 2, ... until `--limit` challenges. A template that cannot
render at that tier yet (the `starter` tier is being added) is skipped and counted.

Reports per arm: pass@1 (passed on the first attempt), pass@3 (passed within
3 attempts), pass@3 − pass@1, model calls per episode (resamples included:
compare arms at equal budget with it), distinct programs run per episode,
wasted attempts, tool-call blob replies, seconds per episode; then the paired
counts (challenges only one arm solved). Infrastructure errors are counted and
left out of the rates.

`--scripted` swaps the model for a `ScriptedModel` that imitates a small
model's measured habits (it copies its last answer when that answer sits in the
conversation; sometimes it answers with a tool-call blob); a seconds-long smoke
test of the wiring whose figures say nothing about any real model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from nightschool.challenges import CLUSTERS, TIERS, Challenge, render, templates
from nightschool.config import Settings
from nightschool.llm import ChatModel, Message, ScriptedModel, check_model, make_model
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver, SolverConfig, SolveResult

ARMS: dict[str, dict[str, object]] = {
    "conversation": {"retry_mode": "conversation", "temperature_step": 0.0, "max_resamples": 0},
    "fresh": {},
}
"""Arm name → `SolverConfig` overrides (on top of the shared temperature and token cap)."""


def pick_challenges(tier: str, limit: int) -> tuple[list[Challenge], list[str]]:
    """The regression suite's challenges at `tier`, seeds 0, 1, ... until `limit`; and the skipped."""
    chosen: list[Challenge] = []
    skipped: list[str] = []
    seed = 0
    while len(chosen) < limit and seed < 20:
        for cluster in CLUSTERS:
            names = [template.name for template in templates(cluster)]
            name = random.Random(f"regression:{seed}:{cluster}:{tier}").choice(names)
            try:
                chosen.append(render(name, tier, seed))
            except NotImplementedError:
                skipped.append(f"{name}:{tier}:{seed}")
            if len(chosen) == limit:
                break
        seed += 1
    return chosen, skipped


def copycat_model(challenges: Sequence[Challenge]) -> ScriptedModel:
    """A deterministic stand-in with a small model's habits (see the module docstring).

    With an earlier assistant message in the conversation it repeats that
    message verbatim. On a fresh prompt it draws u from a hash of the messages:
    first attempt: u < 0.3 the reference solution, u < 0.45 a tool-call blob
    without code, else the wrong solution; a retry prompt: u < 0.35 the
    reference, u < 0.5 the wrong solution inside a tool-call blob, else the
    wrong solution (which the fresh arm then resamples).
    """

    def reply(messages: Sequence[Message]) -> str:
        assistant = [m["content"] for m in messages if m["role"] == "assistant"]
        if assistant:
            return assistant[-1]
        user = next(m["content"] for m in messages if m["role"] == "user")
        challenge = next(c for c in challenges if user.startswith(c.prompt.rstrip()))
        text = "\n".join(m["content"] for m in messages)
        u = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32
        lang = "python" if challenge.solution_file.endswith(".py") else "bash"
        first = user == challenge.prompt
        if u < (0.3 if first else 0.35):
            return f"```{lang}\n{challenge.reference_solution}\n```"
        if u < (0.45 if first else 0.5):
            arguments = {} if first else {"code": challenge.wrong_solution}
            return json.dumps({"name": "solution", "arguments": arguments})
        return f"Here is the solution.\n```{lang}\n{challenge.wrong_solution}\n```"

    return ScriptedModel(reply, name="scripted-copycat")


@dataclass
class Tally:
    """One arm's counts over the challenges it finished."""

    episodes: int = 0
    infra: int = 0
    pass1: int = 0
    pass3: int = 0
    model_calls: int = 0
    programs: int = 0
    wasted: int = 0
    blobs: int = 0
    seconds: float = 0.0
    solved: set[str] = field(default_factory=set)

    def add(self, key: str, result: SolveResult, seconds: float) -> None:
        """Count one episode (infrastructure errors only in `infra`)."""
        if result.infrastructure_error is not None:
            self.infra += 1
            return
        extra = result.trajectory.extra
        self.episodes += 1
        self.pass1 += int(result.passed and result.attempts == 1)
        self.pass3 += int(result.passed)
        self.model_calls += result.model_calls
        self.programs += int(extra["attempt_codes_distinct"])
        self.wasted += int(extra["wasted_attempts"])
        self.blobs += int(extra["blob_replies"])
        self.seconds += seconds
        if result.passed:
            self.solved.add(key)


def make_bench_model(args: argparse.Namespace, challenges: Sequence[Challenge]) -> ChatModel:
    """The scripted stand-in, or the model `--model`/`--base-url` name (catalog or server)."""
    if args.scripted:
        return copycat_model(challenges)
    settings = Settings(model=args.model, base_url=args.base_url)
    model = make_model(settings)
    check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model",
        default="embedded",
        help="catalog name or 'embedded'; with --base-url: server model name",
    )
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible server root")
    parser.add_argument(
        "--scripted", action="store_true", help="scripted stand-in model (smoke test)"
    )
    parser.add_argument("--tier", choices=TIERS, default="basic")
    parser.add_argument("--limit", type=int, default=7, help="challenges (7 = one regression seed)")
    parser.add_argument("--seed", type=int, default=0, help="salt of the solver's sampling seeds")
    parser.add_argument("--temperature", type=float, default=0.2, help="base temperature")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="start no challenge after this many seconds"
    )
    args = parser.parse_args()

    challenges, skipped = pick_challenges(args.tier, args.limit)
    if not challenges:
        raise SystemExit(f"no template renders at tier {args.tier!r} yet ({len(skipped)} tried)")
    model = make_bench_model(args, challenges)
    sandbox = Sandbox()
    sandbox.check()
    solvers = {
        arm: Solver(
            model,
            sandbox,
            SolverConfig.model_validate(
                {
                    "temperature": args.temperature,
                    "max_tokens": args.max_tokens,
                    "seed": args.seed,
                    **overrides,
                }
            ),
        )
        for arm, overrides in ARMS.items()
    }
    print(
        f"model {model.name} · tier {args.tier} · {len(challenges)} challenge(s)"
        + (f" · skipped {len(skipped)} (cannot render yet)" if skipped else "")
        + f" · base temperature {args.temperature} · max tokens {args.max_tokens}",
        flush=True,
    )
    tallies = {arm: Tally() for arm in ARMS}
    bench_start = time.perf_counter()
    for challenge in challenges:
        if args.max_seconds is not None and time.perf_counter() - bench_start > args.max_seconds:
            print(f"  stopping: --max-seconds {args.max_seconds:g} reached", flush=True)
            break
        key = f"{challenge.template}:{challenge.tier}:{challenge.seed}"
        for arm, solver in solvers.items():
            started = time.perf_counter()
            result = solver.solve(challenge)
            seconds = time.perf_counter() - started
            tallies[arm].add(key, result, seconds)
            extra = result.trajectory.extra
            status = "INFRA" if result.infrastructure_error else "pass" if result.passed else "FAIL"
            temps = ",".join(f"{t:g}" for t in extra["temperatures"])
            print(
                f"  [{arm:<12}] {key:<40} {status:<5} attempts {result.attempts} "
                f"calls {result.model_calls} programs {extra['attempt_codes_distinct']} "
                f"wasted {extra['wasted_attempts']} blobs {extra['blob_replies']} "
                f"temps {temps} {seconds:6.1f}s",
                flush=True,
            )
    report(tallies)


def report(tallies: dict[str, Tally]) -> None:
    """Print the per-arm table and the paired counts."""
    print()
    print(
        f"{'arm':<13}{'n':>4}{'pass@1':>9}{'pass@3':>9}{'Δ(3−1)':>9}{'calls/ep':>10}"
        f"{'progs/ep':>10}{'wasted':>8}{'blobs':>7}{'infra':>7}{'s/ep':>8}"
    )
    for arm, t in tallies.items():
        n = max(t.episodes, 1)
        print(
            f"{arm:<13}{t.episodes:>4}{t.pass1 / n:>9.3f}{t.pass3 / n:>9.3f}"
            f"{(t.pass3 - t.pass1) / n:>9.3f}{t.model_calls / n:>10.2f}{t.programs / n:>10.2f}"
            f"{t.wasted:>8}{t.blobs:>7}{t.infra:>7}{t.seconds / n:>8.1f}"
        )
    old, new = tallies["conversation"], tallies["fresh"]
    print(
        f"paired: solved only by fresh {len(new.solved - old.solved)}, "
        f"only by conversation {len(old.solved - new.solved)}, "
        f"by both {len(new.solved & old.solved)}"
    )


if __name__ == "__main__":
    main()
