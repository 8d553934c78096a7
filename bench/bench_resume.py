"""A chat turn after background practice: its prompt from a saved KV state, or decoded again.

The embedded model holds one KV cache. When practice runs between two turns of
a chat (`nightschool serve` practises while the user is idle), the cache holds
practice's prompt when the user's next turn comes, and the whole conversation
would be decoded again. `PrefixStates` (`nightschool.llm._prefix`) saves the
conversation's KV cells before practice overwrites them and restores them for
the next turn.

One model through the real `EmbeddedModel.complete` (greedy, threads chosen
per call, KV prefix reuse on as a user gets it), three arms on the same calls:

- **together**: turn 1, then turn 2 at once (the cache still holds turn 1);
- **states**: turn 1, `--practice` practice calls (each a different task after
  the solver's system prompt), turn 2: the default;
- **no states**: the same with `PrefixStates` holding nothing.

Printed per arm: turn 2's prompt tokens, how many came from the cache, the
seconds to its first token (a `max_tokens=1` call), and whether its reply
(`--reply-tokens`, greedy) is the same as the together arm's.

Usage: `python bench/bench_resume.py [--model qwen2.5-coder-1.5b] [--practice 2]
[--reply-tokens 48] [--out F]`. Measure on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from nightschool.config import Settings
from nightschool.llm import EmbeddedConfig, EmbeddedModel, Message
from nightschool.llm._prefix import PREFIX_STATES, PrefixStates

FILE = '''import csv
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Order:
    order_id: str
    customer: str
    amount_cents: int
    status: str


def load_orders(path: Path) -> list[Order]:
    """Read orders from a CSV file with a header row."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return [
            Order(row["order_id"], row["customer"], int(row["amount_cents"]), row["status"])
            for row in reader
        ]


def totals_by_customer(orders: list[Order]) -> dict[str, int]:
    """Sum the amounts of paid orders per customer, in cents."""
    totals: dict[str, int] = {}
    for order in orders:
        if order.status == "paid":
            totals[order.customer] = totals.get(order.customer, 0) + order.amount_cents
    return totals


def refunded(orders: list[Order]) -> list[str]:
    """Ids of refunded orders, in file order."""
    return [order.order_id for order in orders if order.status == "refunded"]


def report(path: Path) -> str:
    orders = load_orders(path)
    lines = [f"{name}: {cents / 100:.2f}" for name, cents in sorted(totals_by_customer(orders).items())]
    lines.append(f"refunded: {', '.join(refunded(orders)) or 'none'}")
    return "\\n".join(lines)
'''

SYSTEM: Message = {
    "role": "system",
    "content": "You are a careful Python programmer helping a user with their code. "
    "Answer briefly, with code where it helps.",
}
TURN_1: Message = {
    "role": "user",
    "content": f"Here is my module `orders.py`:\n\n```python\n{FILE}```\n\n"
    "Explain in two sentences what `report` returns.",
}
TURN_2: Message = {
    "role": "user",
    "content": "Now make `totals_by_customer` also skip orders with a negative amount. "
    "Show only the changed function.",
}
PRACTICE_SYSTEM: Message = {
    "role": "system",
    "content": "You are a careful programmer solving a small, self-contained coding task. "
    "Reply with the complete contents of the requested file in exactly one fenced code block.",
}
PRACTICE_TASKS = [
    "Write `solution.py` with `def dedupe(xs: list[int]) -> list[int]` keeping first occurrences.",
    "Write `solution.py` with `def run_lengths(s: str) -> list[tuple[str, int]]` for runs of "
    "equal characters.",
    "Write `solution.py` with `def merge_sorted(a: list[int], b: list[int]) -> list[int]` "
    "without calling sort.",
]


def arm(model: EmbeddedModel, name: str, practice: int, reply_tokens: int) -> dict[str, Any]:
    """Turn 1, `practice` practice calls (none for `together`), then turn 2 twice."""
    llama = model._ensure_loaded()  # the bench switches the saved states off for one arm
    llama.forget()
    llama.states = PrefixStates(limit=0 if name == "no states" else PREFIX_STATES)
    first = model.complete([SYSTEM, TURN_1], temperature=0, max_tokens=reply_tokens)
    conversation = [SYSTEM, TURN_1, {"role": "assistant", "content": first.text}, TURN_2]
    for task in PRACTICE_TASKS[: practice if name != "together" else 0]:
        model.complete([PRACTICE_SYSTEM, {"role": "user", "content": task}], max_tokens=24)
    start = time.perf_counter()
    probe = model.complete(conversation, temperature=0, max_tokens=1)
    first_token_s = time.perf_counter() - start
    restored = bool(llama.restored)
    # the same turn again, replied in full: from the cache in every arm now
    reply = model.complete(conversation, temperature=0, max_tokens=reply_tokens)
    return {
        "tokens_in": probe.tokens_in,
        "tokens_cached": probe.tokens_cached,
        "first_token_s": first_token_s,
        "restored": restored,
        "reply": reply.text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--practice", type=int, default=2, choices=range(1, 4))
    parser.add_argument("--reply-tokens", type=int, default=48)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = Settings(model=args.model)
    config = EmbeddedConfig(model=args.model, reuse_prefix=True, models_dir=settings.models_dir())
    with EmbeddedModel(config) as model:
        model.complete([SYSTEM, {"role": "user", "content": "Say hi."}], max_tokens=2)  # load
        arms = {
            name: arm(model, name, args.practice, args.reply_tokens)
            for name in ("together", "states", "no states")
        }
    print(f"load average {os.getloadavg()[0]:.2f}; model {args.model}; {args.practice} practice "
          "calls between the turns")  # fmt: skip
    print(f"{'arm':>10} {'turn-2 prompt':>14} {'from cache':>11} {'restored':>9} "
          f"{'first token s':>14}  reply")  # fmt: skip
    for name, row in arms.items():
        same = "same" if row["reply"] == arms["together"]["reply"] else "DIFFERENT"
        print(f"{name:>10} {row['tokens_in']:>14} {row['tokens_cached']:>11} "
              f"{row['restored']!s:>9} {row['first_token_s']:>14.2f}  {same}")  # fmt: skip
    speed = arms["no states"]["first_token_s"] / arms["states"]["first_token_s"]
    print(f"states / no states: turn 2's first token {speed:.1f}x sooner")
    if args.out:
        args.out.write_text(json.dumps({"model": args.model, "arms": arms}, indent=1))


if __name__ == "__main__":
    main()
