"""Cluster `concurrency`: a thread pool, a producer/consumer pipeline, lock-protected transfers.

The helper modules the setup writes (`jobs.py`, `lib.py`, `ledger.py`) check the
concurrency rules themselves (too many calls at once, out-of-order handling)
and write a report that the validator reads; their delays are sleeps, so the
time limits hold on a loaded 2-core machine.
"""

from __future__ import annotations

import random

from nightschool.challenges._templates._concurrency_libs import JOBS_LIB, LEDGER_LIB, PIPE_LIB
from nightschool.challenges._templates._kit import (
    WORDS,
    Parts,
    TemplateBase,
    files_setup,
    near_miss,
    prompt,
    select,
    twists,
    validator_script,
)
from nightschool.challenges._templates.starters import concurrency as starters

# --------------------------------------------------------------------------- thread_pool


_POOL_SOLUTION = """
    from concurrent.futures import ThreadPoolExecutor  #-bug
    from concurrent.futures import ThreadPoolExecutor, as_completed  #+bug

    from jobs import work

    with open("inputs.txt") as handle:
        numbers = [int(line) for line in handle if line.strip()]


    def safe_work(x):  #+t1
        try:  #+t1
            return work(x)  #+t1
        except ValueError:  #+t1
            return "error"  #+t1


    todo = numbers  #-t3
    todo = list(dict.fromkeys(numbers))  # each distinct value once  #+t3
    with ThreadPoolExecutor(max_workers=8) as pool:  #-t2
    with ThreadPoolExecutor(max_workers=4) as pool:  #+t2
        done = dict(zip(todo, pool.map(work, todo)))  #-t1|bug
        done = dict(zip(todo, pool.map(safe_work, todo)))  #+t1
        results = [done[x] for x in numbers]  #-bug
        futures = [pool.submit(work, x) for x in numbers]  #+bug
        results = [f.result() for f in as_completed(futures)]  #+bug
    for result in results:
        print(result)
"""

_POOL_CHECK = """
    out, elapsed = run_solution(SOLUTION)
    check_lines(out, DATA["expected"], "stdout")
    if elapsed > DATA["limit"]:
        fail(
            f"the output is right but the program took {elapsed:.2f} s; the limit is "
            f"{DATA['limit']} s (one call after another takes {DATA['serial']} s): "
            "run the work() calls concurrently"
        )
    passed()
"""


class ThreadPool(TemplateBase):
    """Run slow calls on a thread pool; twists: errors, a concurrency cap, compute-once."""

    name = "concurrency.thread_pool"
    cluster = "concurrency"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.thread_pool(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n = (24, 30, 30, 34)[level]
        numbers = [rng.randint(0, 300) for _ in range(n)]
        numbers[0] = 7 * rng.randint(1, 40) + 6  # slowest first, quick second
        numbers[1] = 7 * rng.randint(1, 40)
        if level >= 1:
            for i in rng.sample(range(2, n), 3):
                numbers[i] = -rng.randint(1, 50)
        if level >= 3:
            for i in rng.sample(range(2, n), 6):
                numbers[i] = numbers[rng.randrange(n)]
        mul, add = rng.randint(3, 97), rng.randint(1, 999)

        def serial_s() -> float:
            return sum(0.02 * (x % 7) for x in (dict.fromkeys(numbers) if level >= 3 else numbers))

        while serial_s() < 1.4:  # enough work that one-at-a-time misses the limit clearly
            numbers.append(7 * rng.randint(41, 90) + rng.choice((5, 6)))
        serial = serial_s()
        limit = round(0.7 * serial, 2)  # measured: 8 threads ~0.3 s, 4 threads ~0.3 * serial
        expected = ["error" if x < 0 else str((x * mul + add) % 1000) for x in numbers]
        lib = (
            JOBS_LIB.replace("__CAP__", "4" if level >= 2 else "0")
            .replace("__ONCE__", str(level >= 3))
            .replace("__MUL__", str(mul))
            .replace("__ADD__", str(add))
        )
        task = f"""
            Compute results with a slow function, concurrently. `jobs.py` (already in the
            directory) defines `work(x)`, which takes up to 0.12 s per call. Calling it for every
            input one after another takes about {serial:.1f} s, but your program must finish
            within {limit} s, so run the calls concurrently with threads (for example
            `concurrent.futures.ThreadPoolExecutor`). Use it with `from jobs import work`.
        """
        inputs = "`inputs.txt`, one integer per line; `jobs.py` (do not change it)."
        output = """
            print `work(x)` for every input, one per line, in the same order as `inputs.txt`
            (not in the order the calls finish).
        """
        rules = [
            "`work(x)` raises `ValueError` for some inputs: print `error` on that input's line "
            "and carry on with the others.",
            "`work` allows at most 4 calls running at the same time (a fifth raises "
            "`RuntimeError`): use at most 4 worker threads.",
            "Some inputs repeat. `work` must be called only once per distinct value (a second "
            "call with the same value raises `RuntimeError`): reuse the first result.",
        ]
        data = {"expected": expected, "limit": limit, "serial": round(serial, 2)}
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(
                {"inputs.txt": "".join(f"{x}\n" for x in numbers), "jobs.py": lib.lstrip()}
            ),
            validation_script=validator_script(_POOL_CHECK, data),
            reference_solution=select(_POOL_SOLUTION, twists(level)),
            wrong_solution=select(_POOL_SOLUTION, near_miss(level)),
        )


# --------------------------------------------------------------------------- pipeline


_PIPE_SOLUTION = """
    import queue
    import threading

    import lib

    CONSUMERS = {consumers}
    tasks = queue.Queue()  #-t1
    queues = [queue.Queue() for _ in range(CONSUMERS)]  #+t1
    route = {{}}  #+t1
    order = []
    finished = []  #+bug
    results = {{}}
    lock = threading.Lock()


    def producer():
        with open("messages.txt") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                if line == "STOP":  #+t2
                    break  #+t2
                if line == "STOP":  #+stopskip
                    continue  #+stopskip
                order.append(line.split()[0])
                tasks.put(line)  #-t1
                key = line.split()[1]  #+t1
                index = route.setdefault(key, len(route) % CONSUMERS)  #+t1
                queues[index].put(line)  #+t1
        for _ in range(CONSUMERS):  #-t1
            tasks.put(None)  #-t1
        for q in queues:  #+t1
            q.put(None)  #+t1


    def consumer(source):
        while True:
            line = source.get()
            if line is None:
                return
            result = lib.handle(line)  #-t3|t3bug
            result = "FAILED"  #+t3|t3bug
            for _attempt in range(3):  #+t3
            for _attempt in range(2):  #+t3bug
                try:  #+t3|t3bug
                    result = lib.handle(line)  #+t3|t3bug
                    break  #+t3|t3bug
                except lib.TransientError:  #+t3|t3bug
                    pass  #+t3|t3bug
            with lock:
                results[line.split()[0]] = result
                finished.append(line.split()[0])  #+bug


    threads = [threading.Thread(target=consumer, args=(tasks,)) for _ in range(CONSUMERS)]  #-t1
    threads = [threading.Thread(target=consumer, args=(q,)) for q in queues]  #+t1
    threads.append(threading.Thread(target=producer))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open("results.txt", "w") as out:
        for mid in order:  #-bug
        for mid in finished:  #+bug
            out.write(f"{{mid}} {{results[mid]}}\\n")
"""

_PIPE_CHECK = """
    import json as _json
    run_solution(SOLUTION)
    if not os.path.isfile("lib_report.json"):
        fail("lib.handle() was never used (call it for each message; let the program end normally)")
    with open("lib_report.json") as _handle:
        report = _json.load(_handle)
    if report["violations"]:
        fail(f"{report['violations'][0]} ({len(report['violations'])} ordering violations)")
    late = [m for m in report["handled"] if m > DATA["last_id"]]
    if late:
        fail(f"message {late[0]} comes after the STOP line but was handled")
    check_lines(read_output("results.txt"), DATA["expected"], "results.txt")
    if report["threads"] < 2 or report["max_active"] < 2:
        fail(
            f"lib.handle() ran in {report['threads']} thread(s), never two at the same time: "
            f"use {DATA['consumers']} consumer threads that handle messages concurrently"
        )
    passed()
"""


class Pipeline(TemplateBase):
    """Producer/consumer queue; twists: per-key ordering, a STOP marker, retries."""

    name = "concurrency.pipeline"
    cluster = "concurrency"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.pipeline(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n, consumers = (12, 18, 24, 30)[level], (3, 3, 4, 4)[level]
        keys = rng.sample(("red", "green", "blue", "amber", "teal", "plum"), 2 + level)
        words = [rng.choice(WORDS) for _ in range(n)]
        words[0], words[1] = "lantern", "dune"  # a slow message, then a quick one
        msg_keys = [rng.choice(keys) for _ in range(n)]
        msg_keys[1] = msg_keys[0]  # the first two messages share a key
        lines = [f"{i + 1} {k} {w}" for i, (k, w) in enumerate(zip(msg_keys, words, strict=True))]
        last_id = n
        if level >= 2:
            last_id = n - rng.randint(3, 5)
            lines.insert(last_id, "STOP")
        failures: dict[str, int] = {}
        if level >= 3:
            picks = rng.sample(range(2, last_id + 1), 4)
            failures = {str(picks[0]): 1, str(picks[1]): 2, str(picks[2]): 2, str(picks[3]): 3}
        expected = []
        for i, word in enumerate(words[:last_id]):
            ok = failures.get(str(i + 1), 0) < 3
            expected.append(f"{i + 1} {word[::-1].upper() + str(len(word)) if ok else 'FAILED'}")
        lib = PIPE_LIB.replace("__ORDERED__", str(level >= 1)).replace(
            "__FAILURES__", repr(failures)
        )
        task = f"""
            Build a producer/consumer pipeline with `queue.Queue` and threads. One producer
            thread reads the messages and puts them on a queue; {consumers} consumer threads take
            messages from the queue and call `lib.handle(line)` (already in the directory; each
            call is slow) with the whole message line; it returns the result string. The
            consumers must run at the same time.
        """
        inputs = """
            `messages.txt`, one message per line as `ID KEY PAYLOAD` (IDs count up from 1);
            `lib.py` (do not change it).
        """
        output = """
            write `results.txt` with one line per message, `ID RESULT`, in the order of
            `messages.txt` (not in the order the consumers finish).
        """
        rules = [
            "Messages with the same KEY must be handled one at a time and in file order "
            "(`lib.handle` raises `RuntimeError` otherwise). Hint: give each consumer its own "
            "queue and send all messages of one key to the same consumer.",
            "A line `STOP` ends the input: do not handle the messages after it, and shut the "
            "consumers down cleanly (for example one `None` per consumer queue).",
            "`lib.handle` sometimes raises `lib.TransientError`: try the same message again "
            "right away, at most 3 attempts in total; if all 3 fail, its result is `FAILED`.",
        ]
        if level == 2:
            wrong = {"t1", "stopskip"}
        elif level == 3:
            wrong = {"t1", "t2", "t3bug"}
        else:
            wrong = near_miss(level)
        source = _PIPE_SOLUTION.format(consumers=consumers)
        data = {"expected": expected, "last_id": last_id, "consumers": consumers}
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(
                {"messages.txt": "\n".join(lines) + "\n", "lib.py": lib.lstrip()}
            ),
            validation_script=validator_script(_PIPE_CHECK, data),
            reference_solution=select(source, twists(level)),
            wrong_solution=select(source, wrong),
        )


# --------------------------------------------------------------------------- bank_transfers


_BANK_SOLUTION = """
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import contextmanager

    import ledger

    FEE = {fee}  #+t2
    lock = threading.Lock()  #-t3
    locks = {{name: threading.Lock() for name in ledger.accounts()}}  #+t3


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


    def fee_of(line):  #+t2
        parts = line.split()  #+t2
        if parts[0] == "TRANSFER" and parts[1].split("-")[0] != parts[2].split("-")[0]:  #+t2
            return FEE  #+t2
        return 0  #+t2


    def apply(line):
        parts = line.split()
        kind, account, amount = parts[0], parts[1], int(parts[-1])
        if kind == "TRANSFER":
            target = parts[2]
            with guard(account, target):
                add(account, -amount)  #-t2
                add(account, -amount - fee_of(line))  #+t2
                add(target, amount)
        elif kind in ("DEPOSIT", "WITHDRAW"):  #+t1
            with guard(account):  #+t1
                add(account, amount if kind == "DEPOSIT" else -amount)  #+t1


    with open("operations.txt") as handle:
        lines = [line for line in handle if line.strip()]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(apply, lines))
    for name, balance in sorted(ledger.snapshot().items()):
        print(name, balance)
    print("fees", sum(fee_of(line) for line in lines))  #+t2
"""

_BANK_CHECK = """
    import json as _json
    out, elapsed = run_solution(SOLUTION)
    if not os.path.isfile("ledger_report.json"):
        fail("the ledger was never used: import ledger and change balances only through it")
    with open("ledger_report.json") as _handle:
        report = _json.load(_handle)
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


class BankTransfers(TemplateBase):
    """Locked updates of a shared ledger; twists: more operations, fees, per-account locks."""

    name = "concurrency.bank_transfers"
    cluster = "concurrency"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.bank_transfers(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        n_accounts, n_ops = (5, 6, 8, 30)[level], (30, 36, 42, 48)[level]
        delay = 0.01 if level >= 3 else 0.002
        fee = rng.randint(2, 5)
        names = sorted(
            f"{rng.choice('ABC')}-{number}" for number in rng.sample(range(100, 999), n_accounts)
        )
        if len({name[0] for name in names}) < 2:
            names[0] = ("B" if names[0][0] == "A" else "A") + names[0][1:]
            names.sort()
        balances = {name: rng.randint(10, 100) * 10 for name in names}
        final = dict(balances)
        ops, fees = [], 0
        for _ in range(n_ops):
            kind = (
                "TRANSFER"
                if level == 0 or rng.random() < 0.7
                else rng.choice(("DEPOSIT", "WITHDRAW"))
            )
            amount = rng.randint(1, 200)
            if kind == "TRANSFER":
                src, dst = rng.sample(names, 2)
                cost = fee if level >= 2 and src[0] != dst[0] else 0
                final[src] -= amount + cost
                final[dst] += amount
                fees += cost
                ops.append(f"TRANSFER {src} {dst} {amount}")
            else:
                account = rng.choice(names)
                final[account] += amount if kind == "DEPOSIT" else -amount
                ops.append(f"{kind} {account} {amount}")
        if level >= 2 and not fees:
            ops.append(f"TRANSFER {names[0]} {names[-1]} 1")
            final[names[0]] -= 1 + fee
            final[names[-1]] += 1
            fees += fee
        expected = [f"{name} {final[name]}" for name in names]
        if level >= 2:
            expected.append(f"fees {fees}")
        lib = LEDGER_LIB.replace("__DELAY__", str(delay))
        limit = 0.0
        if level >= 3:
            calls = sum(4 if op.startswith("TRANSFER") else 2 for op in ops)
            limit = round(0.6 * calls * delay, 2)
        task = """
            Apply bank operations concurrently without losing updates. `ledger.py` (already in the
            directory) keeps the balances: change them only with `ledger.read_balance(account)`
            and `ledger.write_balance(account, value)`; `ledger.accounts()` lists the accounts and
            `ledger.snapshot()` returns all balances at once (for printing at the end).
            Each call is slow and the ledger is not thread-safe: if two threads read the same
            balance before either writes it back, one update is lost. Apply the operations with
            at least 4 worker threads (for example `ThreadPoolExecutor(max_workers=8)`) and
            protect every read-modify-write with a `threading.Lock`. Balances may go below 0.
        """
        inputs = """
            `operations.txt`, one operation per line: `TRANSFER FROM TO AMOUNT` moves AMOUNT
            from account FROM to account TO; `accounts.txt` (starting balances) and `ledger.py`
            (do not change them).
        """
        output = """
            after all operations, print every account's final balance as `ACCOUNT BALANCE`, one
            per line, sorted by account name.
        """
        rules = [
            "There are two more operations: `DEPOSIT ACCOUNT AMOUNT` adds AMOUNT, and "
            "`WITHDRAW ACCOUNT AMOUNT` subtracts it.",
            f"A transfer between accounts of different branches (the letter before the `-`, as "
            f"in `A-104`) costs the sender a fee of {fee} on top of the amount. After the "
            f"balances print one more line, `fees TOTAL`, with the fees collected.",
            f"The ledger is slower here ({delay} s per call) and the program must finish within "
            f"{limit} s. One global lock makes every operation wait for all others and is too "
            "slow: use one lock per account, a transfer holding both of its accounts' locks, "
            "always taken in sorted order of account name (so two transfers cannot deadlock).",
        ]
        data = {
            "expected": expected,
            "balances": final,
            "limit": limit,
        }
        source = _BANK_SOLUTION.format(fee=fee)
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(
                {
                    "accounts.txt": "".join(f"{k} {v}\n" for k, v in balances.items()),
                    "operations.txt": "".join(f"{op}\n" for op in ops),
                    "ledger.py": lib.lstrip(),
                }
            ),
            validation_script=validator_script(_BANK_CHECK, data),
            reference_solution=select(source, twists(level)),
            wrong_solution=select(source, near_miss(level)),
        )


TEMPLATES = (ThreadPool(), Pipeline(), BankTransfers())
