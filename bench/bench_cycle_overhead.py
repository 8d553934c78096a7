"""Where a dream cycle's wall time goes: the model, the sandbox, and everything else.

Issue 10's target: non-model overhead at most 5% of a cycle's wall time. Runs
`--cycles` real dream cycles (`practice.open_practice`, the same
assembly `nightschool dream` uses: curriculum routing, playbook retrieval,
skill and lesson verification with `--verify-k`, the store) on a throw-away
database, with the model and the sandbox wrapped in timers (the real objects
do the work; the wrappers only add up seconds). Printed per cycle and in
total: wall, model, sandbox, the rest (routing, rendering, retrieval,
embedding, SQLite), and the non-model share. Then the same cycles with a
zero-cost scripted model that always answers wrong code (so every attempt
runs in the sandbox): the fixed cost per cycle that does not shrink with a
faster model.

    .venv/bin/python bench/bench_cycle_overhead.py --cycles 6          # the default model
    .venv/bin/python bench/bench_cycle_overhead.py --cycles 6 --model qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nightschool.config import Settings
from nightschool.llm import ScriptedModel
from nightschool.llm.factory import make_model
from nightschool.practice import open_practice
from nightschool.sandbox import Sandbox
from nightschool.store import Store

WRONG = "```python\nprint('wrong')\n```"


class Timed:
    """Forwards every attribute to `inner`; calls of the named methods add their seconds.

    `contexts` names methods that return a context manager: the whole `with`
    block counts (a sandbox workspace: set-up, solution and validator runs).
    """

    def __init__(
        self, inner: Any, methods: tuple[str, ...], contexts: tuple[str, ...] = ()
    ) -> None:
        self.inner = inner
        self.seconds = 0.0
        self._methods = methods
        self._contexts = contexts

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self.inner, attribute)
        if attribute in self._contexts:
            return self._timed_context(value)
        if attribute not in self._methods or not callable(value):
            return value

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        return timed

    def _timed_context(self, value: Any) -> Any:
        @contextlib.contextmanager
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            started = time.perf_counter()
            try:
                with value(*args, **kwargs) as entered:
                    yield entered
            finally:
                self.seconds += time.perf_counter() - started

        return timed


def run(
    model: Any, cycles: int, verify_k: int, seed: int, show: Callable[[str], None]
) -> list[tuple[float, float, float]]:
    """`cycles` dream cycles on a fresh store: (wall, model, sandbox) seconds per cycle."""
    timed_model = Timed(model, ("complete",))
    sandbox = Timed(Sandbox(), ("run", "run_in"), contexts=("workspace",))
    rows: list[tuple[float, float, float]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store.open(Path(tmp) / "bench.db") as store,
        open_practice(store, timed_model, sandbox, verify_k=verify_k, seed=seed) as practice,  # type: ignore[arg-type]
    ):
        for index in range(cycles):
            timed_model.seconds = sandbox.seconds = 0.0
            started = time.perf_counter()
            cycle = practice.loop.run_cycle()
            wall = time.perf_counter() - started
            rows.append((wall, timed_model.seconds, sandbox.seconds))
            rest = wall - timed_model.seconds - sandbox.seconds
            show(
                f"{index + 1:>5} {cycle.template[:30]:<30} {'pass' if cycle.passed else 'fail':<4} "
                f"{wall:>8.2f} {timed_model.seconds:>8.2f} {sandbox.seconds:>8.2f} "
                f"{rest:>8.3f} {100 * (wall - timed_model.seconds) / wall:>7.1f}%"
            )
    return rows


def summary(label: str, rows: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Print and return the totals: (wall, model, sandbox) seconds over all cycles."""
    wall = sum(r[0] for r in rows)
    model = sum(r[1] for r in rows)
    sandbox = sum(r[2] for r in rows)
    rest = wall - model - sandbox
    print(
        f"{label}: {len(rows)} cycles, {wall:.1f} s · model {model:.1f} s · sandbox "
        f"{sandbox:.2f} s · rest {rest:.2f} s (median {statistics.median(r[0] - r[1] - r[2] for r in rows):.3f} s/cycle)"
        f" · non-model share {100 * (wall - model) / wall:.2f}% (sandbox {100 * sandbox / wall:.2f}%, "
        f"rest {100 * rest / wall:.2f}%)"
    )
    return wall, model, sandbox


def main() -> None:
    """Run both passes and print the tables and the shares."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="catalog model (default: the default)")
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--verify-k", type=int, default=6, help="as `nightschool dream`")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    settings = Settings(model=args.model) if args.model else Settings()
    header = f"{'cycle':>5} {'template':<30} {'':<4} {'wall s':>8} {'model s':>8} {'sandbox':>8} {'rest s':>8} {'non-model':>8}"
    model = make_model(settings)
    print(f"model {model.name}, verify_k {args.verify_k}, seed {args.seed}\n{header}")
    real = run(model, args.cycles, args.verify_k, args.seed, print)
    print(f"\nzero-cost scripted model (every attempt wrong)\n{header}")
    fixed = run(ScriptedModel(lambda _m: WRONG), args.cycles, args.verify_k, args.seed, print)
    print()
    wall, model_s, _ = summary(model.name, real)
    fixed_wall, _, _ = summary("scripted", fixed)
    print(
        f"\nnon-model overhead: {100 * (wall - model_s) / wall:.2f}% of wall time with "
        f"{model.name} (target <= 5%); the fixed cost of a cycle is {fixed_wall / len(fixed):.2f} s "
        f"against {wall / len(real):.1f} s for a real one"
    )


if __name__ == "__main__":
    main()
