"""Challenge generation yield: how many model-written challenges pass the gate stack, and why not.

Usage:
    .venv/bin/python bench/bench_generation.py [--model NAME | --scripted] [--base-url URL]
        [--n 14] [--tier basic] [--max-attempts 3] [--temperature 0.7]
        [--max-tokens 1200] [--seed 0]

Runs the real `nightschool.challenges.ChallengeGenerator` (parse → quality →
preflight → validator self-test → reference passes → wrong solutions fail →
deterministic, with the repair loop) `--n` times, clusters taken in turn
(`CLUSTERS[i % 7]`), all at `--tier`, in the real bubblewrap sandbox. The model
is the one `--model` / `--base-url` name, built by the CLI's own path
(`nightschool.cli._common.settings_from` and `preflight`, i.e.
`nightschool.llm.make_model` + `check_model`); without `--model`, the settings'
default (the embedded catalog model).

Prints one line per generation, then: accepted / generated; attempts (model
calls) per acceptance; rejections per kind; validator self-test outcomes
(passed / rejected / skipped, one per attempt that reached the self-test);
the share of broken validators caught early: (preflight + validator_self_test
rejections) over every rejection that names a broken validator (those two,
plus wrong_passes, nondeterministic, and reference_fails whose validator
crashed); seconds per generation (mean and max).

`--scripted` swaps the model for a `ScriptedModel` cycling through a fixed mix
of good and broken replies (a self-contradicting `%`/float() validator, a
module-scope NameError, a failing reference, a validator that passes anything,
an unparseable reply): a seconds-long smoke test of the wiring whose figures
say nothing about any real model.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections import Counter
from collections.abc import Sequence

from nightschool.challenges import (
    CLUSTERS,
    REJECTION_KINDS,
    TIERS,
    ChallengeGenerator,
    GenerationOutcome,
    GenerationRequest,
)
from nightschool.llm import ChatModel, Message, ScriptedModel
from nightschool.sandbox import Sandbox

BROKEN_VALIDATOR_KINDS = ("preflight", "validator_self_test", "wrong_passes", "nondeterministic")
"""Rejection kinds that always name a broken validator (reference_fails only when it crashed)."""

_RUN = (
    'result = subprocess.run([sys.executable, "solution.py"], capture_output=True, '
    "text=True, timeout=10)"
)


def _reply(prompt: str, setup: str, validator: str, solution: str) -> str:
    return (
        f"### PROMPT\n{prompt}\n\n### SETUP\n```python\n{setup}\n```\n\n"
        f"### VALIDATOR\n```python\n{validator}\n```\n\n### SOLUTION\n```python\n{solution}\n```\n"
    )


def scripted_reply(kind: str, n: int) -> str:
    """One scripted generator reply of `kind` (good, percent, name_error, ref_fails,
    lax, garbage); `n` varies the data so every good challenge is distinct."""
    if kind == "garbage":
        return "Sure! Here is an interesting challenge about numbers."
    values = [n % 9 + 1, 4, n % 5 + 2, 7]
    setup = f"with open('nums.txt', 'w') as f:\n    f.write('\\n'.join(map(str, {values})) + '\\n')"
    prompt = (
        "Print the sum of the integers in `nums.txt` (one per line), then on a second line "
        "their maximum.\n\nWrite a Python program `solution.py`. It is run as "
        "`python3 solution.py` in the directory that holds the input files."
    )
    solution = (
        "values = [int(line) for line in open('nums.txt') if line.strip()]\n"
        "print(sum(values))\nprint(max(values))"
    )
    expected = "with open('nums.txt') as f:\n    values = [int(x) for x in f if x.strip()]\n"
    check = (
        "if result.stdout.strip() != expected_output:\n    print('FAIL: wrong output')\n"
        "    sys.exit(1)\nprint('PASS')"
    )
    head = "import subprocess\nimport sys\n\n" + expected
    good = f"{head}expected_output = f'{{sum(values)}}\\n{{max(values)}}'\n{_RUN}\n{check}"
    if kind == "good":
        return _reply(prompt, setup, good, solution)
    if kind == "percent":
        share = f"{head}expected_output = f'{{100 * max(values) / sum(values):.1f}}%'\n{_RUN}\n"
        share += "if abs(float(result.stdout) - float(expected_output)) > 0.1:\n    sys.exit(1)"
        return _reply(prompt.replace("their maximum", "max as % of sum"), setup, share, solution)
    if kind == "name_error":
        return _reply(
            prompt, setup, good.replace("f'{sum(values)}", "totl + f'{sum(values)}"), solution
        )
    if kind == "ref_fails":
        return _reply(prompt, setup, good, solution.replace("max(values)", "min(values)"))
    if kind == "lax":
        return _reply(
            prompt,
            setup,
            f"import subprocess\nimport sys\n{_RUN}\nsys.exit(result.returncode)",
            solution,
        )
    raise ValueError(f"unknown scripted reply kind {kind!r}")


MIX = ("good", "percent", "good", "name_error", "lax", "garbage", "good", "ref_fails")
"""The scripted model's replies, in turn."""


def scripted_model() -> ScriptedModel:
    """A `ScriptedModel` cycling through `MIX` (see the module docstring)."""
    counter = itertools.count()

    def answer(_messages: Sequence[Message]) -> str:
        n = next(counter)
        return scripted_reply(MIX[n % len(MIX)], n)

    return ScriptedModel(answer, name="scripted-mix")


def build(args: argparse.Namespace) -> tuple[Sandbox, ChatModel]:
    """The sandbox and the model: scripted, or through the CLI's settings and preflight."""
    if args.scripted:
        sandbox = Sandbox()
        sandbox.check()
        return sandbox, scripted_model()
    from nightschool.cli._common import preflight, settings_from

    settings = settings_from(model=args.model, base_url=args.base_url)
    return preflight(settings, unsandboxed=False, runs="generated challenges")


def broken_caught(outcomes: Sequence[GenerationOutcome]) -> tuple[int, int]:
    """(broken validators caught by preflight or the self-test, all broken-validator rejections)."""
    early = total = 0
    for outcome in outcomes:
        for rejection in outcome.rejections:
            crashed = (
                rejection.kind == "reference_fails" and "validator crashed" in rejection.detail
            )
            if rejection.kind in BROKEN_VALIDATOR_KINDS or crashed:
                total += 1
                early += rejection.kind in ("preflight", "validator_self_test")
    return early, total


def report(outcomes: Sequence[GenerationOutcome]) -> None:
    """Print the summary table."""
    accepted = [o for o in outcomes if o.accepted]
    attempts = sum(o.attempts for o in outcomes)
    kinds = Counter(r.kind for o in outcomes for r in o.rejections)
    tests = Counter(status for o in outcomes for status in o.self_tests)
    early, broken = broken_caught(outcomes)
    seconds = [o.duration_s for o in outcomes]
    print()
    print(f"{'accepted / generated':<40}{len(accepted)} / {len(outcomes)}")
    per = f"{attempts / len(accepted):.2f}" if accepted else "n/a (none accepted)"
    print(f"{'attempts (model calls) per acceptance':<40}{per}  ({attempts} attempts)")
    print("rejections per kind")
    for kind in REJECTION_KINDS:
        if kind != "unsafe":
            print(f"  {kind:<38}{kinds.get(kind, 0)}")
    print(
        f"{'self-test passed / rejected / skipped':<40}"
        f"{tests['passed']} / {tests['rejected']} / {tests['skipped']}"
    )
    share = f"{early / broken:.2f}" if broken else "n/a"
    print(f"{'broken validators caught early':<40}{share}  ({early} of {broken})")
    print(
        f"{'seconds per generation (mean, max)':<40}"
        f"{statistics.fmean(seconds):.2f}, {max(seconds):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="catalog name or server model name")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible server root")
    parser.add_argument("--scripted", action="store_true", help="scripted mix (smoke test)")
    parser.add_argument("--n", type=int, default=14, help="generations (clusters in turn)")
    parser.add_argument("--tier", choices=TIERS, default="basic")
    parser.add_argument("--max-attempts", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-tokens", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.n < 1:
        raise SystemExit("--n must be at least 1")

    sandbox, model = build(args)
    generator = ChallengeGenerator(
        model,
        sandbox,
        max_attempts=args.max_attempts,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        seed=args.seed,
    )
    print(f"model {model.name} · tier {args.tier} · {args.n} generation(s)", flush=True)
    outcomes: list[GenerationOutcome] = []
    for i in range(args.n):
        cluster = CLUSTERS[i % len(CLUSTERS)]
        started = time.perf_counter()
        outcome = generator.generate(GenerationRequest(cluster=cluster, tier=args.tier))
        outcomes.append(outcome)
        verdict = outcome.challenge.template if outcome.challenge else "REJECTED"
        kinds = ",".join(r.kind for r in outcome.rejections) or "-"
        print(
            f"  {i + 1:>3} {cluster:<15} {verdict:<30} attempts {outcome.attempts} "
            f"rejections {kinds:<45} {time.perf_counter() - started:6.1f}s",
            flush=True,
        )
    report(outcomes)


if __name__ == "__main__":
    main()
