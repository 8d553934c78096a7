"""Starter of `concurrency.bank_transfers`: transfers on a slow ledger, drawn from a family.

Axes (`variant`): what the function returns (`balances`: every account's final
balance, `transfer_all`; `changes`: each account's final minus starting
balance, `net_changes`; `branches`: the final balances summed per branch, the
letter before the `-`, `branch_totals`; `richest`: the account with the
highest final balance, `richest_account`); the transfers' shape (`tuples`:
`(source, target, amount)`; `strings`: `"SOURCE TARGET AMOUNT"`); a fee
(`nofee`; `fee`: each transfer also takes `fee` from the source). 16 tasks.
The function name follows what it returns; the shape and the fee change the
arguments, so another seed's reference fails the call.
"""

from __future__ import annotations

import random
import textwrap

from nightschool.challenges._templates._kit import (
    Case,
    Expr,
    Parts,
    call,
    function_parts,
    shown_example,
    variant,
)

_FUNC = {
    "balances": "transfer_all",
    "changes": "net_changes",
    "branches": "branch_totals",
    "richest": "richest_account",
}
WHAT = tuple(_FUNC)
SHAPE = ("tuples", "strings")
FEE = ("nofee", "fee")
"""The starter's axes; `family_size(WHAT, SHAPE, FEE)` is 16."""

_SOURCE = """
    import threading
    from concurrent.futures import ThreadPoolExecutor


    def transfer_all(ledger, transfers):  #=balances&!fee
    def transfer_all(ledger, transfers, fee):  #=balances&fee
    def net_changes(ledger, transfers):  #=changes&!fee
    def net_changes(ledger, transfers, fee):  #=changes&fee
    def branch_totals(ledger, transfers):  #=branches&!fee
    def branch_totals(ledger, transfers, fee):  #=branches&fee
    def richest_account(ledger, transfers):  #=richest&!fee
    def richest_account(ledger, transfers, fee):  #=richest&fee
        start = ledger.snapshot()  #+changes
        lock = threading.Lock()

        def apply(transfer):
            source, target, amount = transfer  #+tuples
            source, target, amount = transfer.split()  #+strings
            amount = int(amount)  #+strings
            amount_out = amount  #-fee
            amount_out = amount + fee  #+fee
            with lock:  #-bug
            with threading.Lock():  #+bug
                ledger.write(source, ledger.read(source) - amount_out)
                ledger.write(target, ledger.read(target) + amount)

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(apply, transfers))
        return ledger.snapshot()  #+balances
        return {name: value - start[name] for name, value in ledger.snapshot().items()}  #+changes
        totals = {}  #+branches
        for name, value in ledger.snapshot().items():  #+branches
            branch = name.split("-")[0]  #+branches
            totals[branch] = totals.get(branch, 0) + value  #+branches
        return totals  #+branches
        final = ledger.snapshot()  #+richest
        return min(final, key=lambda name: (-final[name], name))  #+richest
"""

_PRELUDE = """
    import threading
    import time

    LEDGERS = []


    class Ledger:
        def __init__(self, balances):
            self._balances = dict(balances)
            self.writers = set()
            LEDGERS.append(self)

        def read(self, account):
            time.sleep(0.004)
            return self._balances[account]

        def write(self, account, value):
            time.sleep(0.004)
            self._balances[account] = value
            self.writers.add(threading.get_ident())

        def snapshot(self):
            return dict(self._balances)
"""

_SPEC = {
    "balances": "Return ledger.snapshot() (all balances) at the end.",
    "changes": "Return each account's final minus starting balance (a dict).",
    "branches": "Return the final balances summed per branch, the letter before the '-' (a dict).",
    "richest": "Return the account with the highest final balance (a tie: the first by name).",
}


class _Task:
    """The drawn task: builds a call's arguments and computes its expected value."""

    def __init__(self, tags: set[str], fee: int) -> None:
        self.tags = tags
        self.fee = fee
        self.what = next(t for t in WHAT if t in tags)
        self.func = _FUNC[self.what]

    def case(self, balances: dict[str, int], transfers: list[tuple[str, str, int]]) -> Case:
        final = dict(balances)
        for source, target, amount in transfers:
            final[source] -= amount + (self.fee if "fee" in self.tags else 0)
            final[target] += amount
        value: object
        if self.what == "richest":
            value = min(final, key=lambda name: (-final[name], name))
        elif self.what == "balances":
            value = final
        elif self.what == "changes":
            value = {name: final[name] - balances[name] for name in final}
        else:
            totals: dict[str, int] = {}
            for name, balance in final.items():
                totals[name[0]] = totals.get(name[0], 0) + balance
            value = totals
        shaped: list[object] = list(transfers)
        if "strings" in self.tags:
            shaped = [f"{s} {t} {a}" for s, t, a in transfers]
        args: list[object] = [Expr(f"Ledger({balances!r})"), shaped]
        if "fee" in self.tags:
            args.append(self.fee)
        checks = (
            (
                "len(LEDGERS[-1].writers) >= 2",
                "ledger.write ran in one thread only: apply the transfers on 4 threads",
            ),
            (
                f"LEDGERS[-1].snapshot() == {final!r}",
                "the ledger ends with wrong balances: an update was lost (use the lock)",
            ),
        )
        return Case(call(self.func, *args), value, checks if len(transfers) > 4 else ())


def _accounts(rng: random.Random, n: int) -> dict[str, int]:
    names = sorted(f"{rng.choice('ABC')}-{k}" for k in rng.sample(range(100, 999), n))
    return {name: rng.randint(10, 90) * 10 for name in names}


def _transfers(rng: random.Random, names: list[str], n: int) -> list[tuple[str, str, int]]:
    return [(*rng.sample(names, 2), rng.randint(1, 120)) for _ in range(n)]  # type: ignore[misc]


def bank_transfers(rng: random.Random) -> Parts:
    """Starter of `concurrency.bank_transfers`: see the module docstring for the family."""
    tags = variant(rng, WHAT, SHAPE, FEE)
    task = _Task(tags, rng.randint(1, 5))
    cases = []
    for n_accounts, n_transfers in ((2, 0), (2, 1), (3, 8), (3, 12), (4, 12)):
        balances = _accounts(rng, n_accounts)
        cases.append(task.case(balances, _transfers(rng, list(balances), n_transfers)))

    def example(r: random.Random) -> Case:
        source, target = (f"{c}-{r.randint(100, 999)}" for c in r.sample("ABC", 2))
        before = {source: r.randint(20, 90) * 10, target: r.randint(10, 90) * 10}
        return task.case(before, [(source, target, r.randint(1, 19) * 10)])

    shape = "a string 'SOURCE TARGET AMOUNT'" if "strings" in tags else "(source, target, amount)"
    fee = " plus fee" if "fee" in tags else ""
    spec = (
        f"Apply each transfer, {shape}: take amount{fee} from source and add amount to target, "
        "with ledger.read(account) and ledger.write(account, value), on 4 threads. The "
        "ledger is slow and not thread-safe: guard each transfer with one shared "
        f"threading.Lock. {_SPEC[task.what]}"
    )
    arg = "list[str]" if "strings" in tags else "list[tuple[str, str, int]]"
    returns = "str" if task.what == "richest" else "dict[str, int]"
    params = f"ledger, transfers: {arg}" + (", fee: int" if "fee" in tags else "")
    return function_parts(
        func=task.func,
        signature=f"def {task.func}({params}) -> {returns}:",
        spec=textwrap.fill(spec, width=84),
        examples=[shown_example(rng, example, cases)],
        cases=cases,
        source=_SOURCE,
        prelude=_PRELUDE,
        features=tags,
    )
