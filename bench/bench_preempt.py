"""How fast a user turn gets the embedded model back from idle work.

A background `PreemptibleModel` call decodes a long reply; after a random delay
a user turn starts (`Foreground.turn`) and calls the same model. Printed per
trial: seconds from the turn's arrival until the background call gave way
(target < 1 s, issue 10), and until the user's first reply was complete; then
the same user call with no background work, for comparison.

    .venv/bin/python bench/bench_preempt.py --model qwen2.5-coder-1.5b --trials 5
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

from nightschool.config import Settings
from nightschool.llm.factory import make_model
from nightschool.llm.preempt import Foreground, Preempted, PreemptibleModel

LONG = [{"role": "user", "content": "Write a long, detailed tutorial on binary search trees."}]
USER = [{"role": "user", "content": "Reply with one word: hello."}]


def trial(model: object, rng: random.Random) -> tuple[float, float]:
    """One pre-emption: (seconds until the background gave way, seconds until the user's reply)."""
    foreground = Foreground()
    background = PreemptibleModel(model, foreground)  # type: ignore[arg-type]
    gave_way: list[float] = []

    def dream() -> None:
        try:
            background.complete(LONG, max_tokens=4000, temperature=0.7)
        except Preempted:
            gave_way.append(time.perf_counter())

    thread = threading.Thread(target=dream)
    thread.start()
    time.sleep(rng.uniform(1.0, 4.0))
    arrived = time.perf_counter()
    with foreground.turn():
        model.complete(USER, max_tokens=8, temperature=0.0)  # type: ignore[attr-defined]
        answered = time.perf_counter()
    thread.join()
    if not gave_way:
        raise SystemExit("the background call finished before the turn; use a longer prompt")
    return gave_way[0] - arrived, answered - arrived


def main() -> None:
    """Run the trials and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="catalog model (default: the default)")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    settings = Settings(model=args.model) if args.model else Settings()
    model = make_model(settings)
    model.complete(USER, max_tokens=1)  # load the weights outside the timings
    rng = random.Random(args.seed)
    rows = [trial(model, rng) for _ in range(args.trials)]
    alone = []
    for _ in range(args.trials):
        start = time.perf_counter()
        model.complete(USER, max_tokens=8, temperature=0.0)
        alone.append(time.perf_counter() - start)
    print(f"model {model.name} · {args.trials} trials")
    print(f"{'trial':>5} {'freed after s':>14} {'user reply after s':>19}")
    for i, (freed, answered) in enumerate(rows, 1):
        print(f"{i:>5} {freed:>14.3f} {answered:>19.3f}")
    freed_all = [r[0] for r in rows]
    print(
        f"freed: median {statistics.median(freed_all):.3f} s, max {max(freed_all):.3f} s "
        f"(target < 1 s) · user reply: median {statistics.median(r[1] for r in rows):.3f} s "
        f"vs {statistics.median(alone):.3f} s with no background work"
    )


if __name__ == "__main__":
    main()
