"""Template `concurrency.bank_transfers`: locked updates of a shared ledger, drawn from a family.

Axes (`variant`): what the program reports (`balances`: each account's final
balance; `changes`: each account's final minus starting balance; `branches`:
the final balances summed per branch, the letter before the `-`); the input
(`txt`: `operations.txt`, `TRANSFER FROM TO AMOUNT` lines; `csv`:
`operations.csv` with an `op,account,target,amount` header); the line order
(`byname`, or `byvalue`: highest number first); where the output goes
(`stdout`, or `file`: `report.txt`). 24 tasks per tier. The data is drawn
until the two orders differ. Twists on top: deposits and withdrawals, fees
between branches, one lock per account under a time limit.
"""

from __future__ import annotations

import random

from nightschool.challenges._templates._concurrency_libs import LEDGER_LIB
from nightschool.challenges._templates._kit import (
    Parts,
    RenderError,
    TemplateBase,
    files_setup,
    near_miss,
    prompt,
    select,
    twists,
    validator_script,
    variant,
)
from nightschool.challenges._templates.starters.concurrency_bank import bank_transfers

REPORT = ("balances", "changes", "branches")
INPUT = ("txt", "csv")
ORDER = ("byname", "byvalue")
OUTPUT = ("stdout", "file")
"""The program tiers' axes; `family_size(REPORT, INPUT, ORDER, OUTPUT)` is 24."""

_SOLUTION = """
    import csv  #+csv
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import contextmanager

    import ledger

    FEE = __FEE__  #+t2
    lock = threading.Lock()  #-t3
    locks = {name: threading.Lock() for name in ledger.accounts()}  #+t3
    start = ledger.snapshot()  #+changes


    @contextmanager
    def guard(*names):
        with lock:  #-t3|bug
            yield  #-t3|bug
        with threading.Lock():  #+bug
            yield  #+bug
        ordered = sorted(set(names))  #+t3
        for name in ordered:  #+t3
            locks[name].acquire()  #+t3
        try:  #+t3
            yield  #+t3
        finally:  #+t3
            for name in reversed(ordered):  #+t3
                locks[name].release()  #+t3


    def add(account, amount):
        ledger.write_balance(account, ledger.read_balance(account) + amount)


    def fee_of(parts):  #+t2
        if parts[0] == "TRANSFER" and parts[1].split("-")[0] != parts[2].split("-")[0]:  #+t2
            return FEE  #+t2
        return 0  #+t2


    def apply(parts):
        kind, account, amount = parts[0], parts[1], int(parts[-1])
        if kind == "TRANSFER":
            target = parts[2]
            with guard(account, target):
                add(account, -amount)  #-t2
                add(account, -amount - fee_of(parts))  #+t2
                add(target, amount)
        elif kind in ("DEPOSIT", "WITHDRAW"):  #+t1
            with guard(account):  #+t1
                add(account, amount if kind == "DEPOSIT" else -amount)  #+t1


    with open("operations.txt") as handle:  #+txt
        rows = [line.split() for line in handle if line.strip()]  #+txt
    with open("operations.csv", newline="") as handle:  #+csv
        rows = [[cell for cell in row if cell] for row in csv.reader(handle) if row][1:]  #+csv
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(apply, rows))
    final = ledger.snapshot()
    values = final  #+balances
    values = {name: final[name] - start[name] for name in final}  #+changes
    values = {}  #+branches
    for name, balance in final.items():  #+branches
        branch = name.split("-")[0]  #+branches
        values[branch] = values.get(branch, 0) + balance  #+branches
    names = sorted(values)  #+byname
    names = sorted(values, key=lambda name: (-values[name], name))  #+byvalue
    lines = [f"{name} {values[name]}" for name in names]
    lines.append(f"fees {sum(fee_of(parts) for parts in rows)}")  #+t2
    print("\\n".join(lines))  #+stdout
    with open("report.txt", "w") as out:  #+file
        out.write("\\n".join(lines) + "\\n")  #+file
"""

_CHECK = """
    import json as _json
    out, elapsed = run_solution(SOLUTION)
    if not os.path.isfile("ledger_report.json"):
        fail("the ledger was never used: import ledger and change balances only through it")
    with open("ledger_report.json") as _handle:
        report = _json.load(_handle)
    if DATA["file"]:
        check_lines(read_output("report.txt"), DATA["expected"], "report.txt")
    else:
        check_lines(out, DATA["expected"], "stdout")
    if report["balances"] != DATA["balances"]:
        wrong = sorted(k for k, v in DATA["balances"].items() if report["balances"].get(k) != v)
        fail(f"the ledger ends with wrong balances (first: {wrong[:1]}); change them via ledger")
    if report["writers"] < 4:
        fail(f"ledger.write_balance ran in {report['writers']} thread(s); use 4 or more threads")
    if DATA["limit"] and elapsed > DATA["limit"]:
        fail(
            f"the output is right but the program took {elapsed:.2f} s; "
            f"the limit is {DATA['limit']} s: "
            "let operations on different accounts run at the same time (one lock per account)"
        )
    passed()
"""

_WHAT = {
    "balances": "every account's final balance as `ACCOUNT BALANCE`",
    "changes": "every account's net change (final balance minus starting balance, such as "
    "`-35` or `120`) as `ACCOUNT CHANGE`",
    "branches": "every branch's total of final balances as `BRANCH TOTAL` (the branch is the "
    "letter before the `-` of an account name: `A` for `A-104`)",
}
_ORDER = {
    "byname": "sorted by name",
    "byvalue": "sorted by the number, highest first (equal numbers: by name)",
}


def _report(tags: set[str], start: dict[str, int], final: dict[str, int]) -> dict[str, int]:
    """Emulate the drawn report: name -> number, before sorting."""
    if "balances" in tags:
        return dict(final)
    if "changes" in tags:
        return {name: final[name] - start[name] for name in final}
    totals: dict[str, int] = {}
    for name, balance in final.items():
        totals[name[0]] = totals.get(name[0], 0) + balance
    return totals


def _operations(
    rng: random.Random, level: int, names: list[str], balances: dict[str, int], fee: int
) -> tuple[list[list[str]], dict[str, int], int]:
    """Draw the operations; return them (as fields), the final balances and the fees."""
    n_ops = (30, 36, 42, 48)[level]
    final = dict(balances)
    ops, fees = [], 0
    for _ in range(n_ops):
        kind = (
            "TRANSFER" if level == 0 or rng.random() < 0.7 else rng.choice(("DEPOSIT", "WITHDRAW"))
        )
        amount = rng.randint(1, 200)
        if kind == "TRANSFER":
            src, dst = rng.sample(names, 2)
            cost = fee if level >= 2 and src[0] != dst[0] else 0
            final[src] -= amount + cost
            final[dst] += amount
            fees += cost
            ops.append(["TRANSFER", src, dst, str(amount)])
        else:
            account = rng.choice(names)
            final[account] += amount if kind == "DEPOSIT" else -amount
            ops.append([kind, account, str(amount)])
    if level >= 2 and not fees:
        ops.append(["TRANSFER", names[0], names[-1], "1"])
        final[names[0]] -= 1 + fee
        final[names[-1]] += 1
        fees += fee
    return ops, final, fees


def _csv_row(op: list[str]) -> str:
    """`op` as a row of `operations.csv`: TARGET is empty for a deposit or withdrawal."""
    kind, account, *rest = op
    target = rest[0] if len(rest) == 2 else ""
    return f"{kind},{account},{target},{rest[-1]}\n"


class BankTransfers(TemplateBase):
    """Locked updates of a shared ledger; twists: more operations, fees, per-account locks."""

    name = "concurrency.bank_transfers"
    cluster = "concurrency"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return bank_transfers(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`.

        Raises:
            RenderError: if no drawn data orders the report differently by name and by value.
        """
        tags = variant(rng, REPORT, INPUT, ORDER, OUTPUT)
        n_accounts = (5, 6, 8, 30)[level]
        delay = 0.01 if level >= 3 else 0.002
        fee = rng.randint(2, 5)
        for _attempt in range(50):
            names = sorted(
                f"{rng.choice('ABC')}-{number}"
                for number in rng.sample(range(100, 999), n_accounts)
            )
            if len({name[0] for name in names}) < 2:
                names[0] = ("B" if names[0][0] == "A" else "A") + names[0][1:]
                names.sort()
            balances = {name: rng.randint(10, 100) * 10 for name in names}
            ops, final, fees = _operations(rng, level, names, balances, fee)
            values = _report(tags, balances, final)
            by_value = sorted(values, key=lambda name: (-values[name], name))
            if by_value != sorted(values):  # the two orders give different outputs
                break
        else:
            raise RenderError(f"{self.name}: no data orders the report differently by value")
        expected = [f"{name} {values[name]}" for name in sorted(values)]
        if "byvalue" in tags:
            expected = [f"{name} {values[name]}" for name in by_value]
        if level >= 2:
            expected.append(f"fees {fees}")
        lib = LEDGER_LIB.replace("__DELAY__", str(delay))
        limit = 0.0
        if level >= 3:
            calls = sum(4 if op[0] == "TRANSFER" else 2 for op in ops)
            limit = round(0.6 * calls * delay, 2)
        task = """
            Apply bank operations concurrently without losing updates. `ledger.py` (already in the
            directory) keeps the balances: change them only with `ledger.read_balance(account)`
            and `ledger.write_balance(account, value)`; `ledger.accounts()` lists the accounts and
            `ledger.snapshot()` returns all balances at once (for the starting balances and for
            the report at the end). Each call is slow and the ledger is not thread-safe: if two
            threads read the same balance before either writes it back, one update is lost. Apply
            the operations with at least 4 worker threads (for example
            `ThreadPoolExecutor(max_workers=8)`) and protect every read-modify-write with a
            `threading.Lock`. Balances may go below 0.
        """
        if "csv" in tags:
            op_file = {
                "operations.csv": "op,account,target,amount\n" + "".join(_csv_row(op) for op in ops)
            }
            inputs = """
                `operations.csv`, a CSV file with the header `op,account,target,amount` and one
                operation per row: a `TRANSFER` row moves AMOUNT from ACCOUNT to TARGET;
                `accounts.txt` (starting balances) and `ledger.py` (do not change them).
            """
            more = (
                "There are two more operations, with an empty TARGET: `DEPOSIT` adds AMOUNT to "
                "ACCOUNT, and `WITHDRAW` subtracts it."
            )
        else:
            op_file = {"operations.txt": "".join(" ".join(op) + "\n" for op in ops)}
            inputs = """
                `operations.txt`, one operation per line: `TRANSFER FROM TO AMOUNT` moves AMOUNT
                from account FROM to account TO; `accounts.txt` (starting balances) and
                `ledger.py` (do not change them).
            """
            more = (
                "There are two more operations: `DEPOSIT ACCOUNT AMOUNT` adds AMOUNT, and "
                "`WITHDRAW ACCOUNT AMOUNT` subtracts it."
            )
        report = next(t for t in REPORT if t in tags)
        order = next(t for t in ORDER if t in tags)
        where = "write `report.txt` with" if "file" in tags else "print"
        output = f"after all operations, {where} {_WHAT[report]}, one per line, {_ORDER[order]}."
        rules = [
            more,
            f"A transfer between accounts of different branches (the letter before the `-`, as "
            f"in `A-104`) costs the sender a fee of {fee} on top of the amount. After the other "
            f"lines add one more line, `fees TOTAL`, with the fees collected.",
            f"The ledger is slower here ({delay} s per call) and the program must finish within "
            f"{limit} s. One global lock makes every operation wait for all others and is too "
            "slow: use one lock per account, a transfer holding both of its accounts' locks, "
            "always taken in sorted order of account name (so two transfers cannot deadlock).",
        ]
        data = {"expected": expected, "balances": final, "limit": limit, "file": "file" in tags}
        source = _SOLUTION.replace("__FEE__", str(fee))
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(
                {
                    "accounts.txt": "".join(f"{k} {v}\n" for k, v in balances.items()),
                    **op_file,
                    "ledger.py": lib.lstrip(),
                }
            ),
            validation_script=validator_script(_CHECK, data),
            reference_solution=select(source, tags | twists(level)),
            wrong_solution=select(source, tags | near_miss(level)),
        )
