"""Starter tier of cluster `concurrency`: a thread pool, a queue pipeline, a locked ledger.

The function gets a slow callable (or a slow ledger) built by the validator's
prelude, which records how many calls overlapped and in which threads, so the
checks do not depend on timing; the sleeps keep each case well under a second.
"""

from __future__ import annotations

import random

from nightschool.challenges._templates._kit import (
    WORDS,
    Case,
    Expr,
    Parts,
    call,
    function_parts,
    shown_example,
)

_PEAK = """
    import threading
    import time

    _lock = threading.Lock()
    _state = {"active": 0, "peak": 0, "threads": set()}


    def _enter():
        with _lock:
            _state["active"] += 1
            _state["peak"] = max(_state["peak"], _state["active"])
            _state["threads"].add(threading.get_ident())


    def _leave():
        with _lock:
            _state["active"] -= 1


    def peak():
        return _state["peak"]


    def threads():
        return len(_state["threads"])
"""

# --------------------------------------------------------------------------- thread_pool

_POOL_SOURCE = """
    from concurrent.futures import ThreadPoolExecutor  #-bug
    from concurrent.futures import ThreadPoolExecutor, as_completed  #+bug


    def run_all(work, numbers):
        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(work, numbers))  #-bug
            futures = [pool.submit(work, x) for x in numbers]  #+bug
            return [future.result() for future in as_completed(futures)]  #+bug
"""

_OVERLAP = (
    "peak() >= 2",
    "the work() calls never overlapped: run them at the same time in threads",
)


def _numbers(rng: random.Random, n: int) -> list[int]:
    """`n` inputs, the first slow (0.15 s) and the second instant, so finishing order differs."""
    numbers = [6 * rng.randint(1, 40) + 5, 6 * rng.randint(1, 40)]
    numbers += [rng.randint(0, 250) for _ in range(n - 2)]
    return numbers[:n]


def _pool_example(rng: random.Random) -> Case:
    numbers = rng.sample(range(20), rng.randint(3, 4))
    shown = ", ".join(f"work({x})" for x in numbers)
    return Case(call("run_all", Expr("work"), numbers), Expr(f"[{shown}]"))


def thread_pool(rng: random.Random) -> Parts:
    """Starter of `concurrency.thread_pool`."""
    func = "run_all"
    mul, add = rng.randint(3, 97), rng.randint(1, 999)
    prelude = (
        _PEAK
        + f"""

    def work(x):
        _enter()
        try:
            time.sleep(0.03 * (x % 6))
            return (x * {mul} + {add}) % 1000
        finally:
            _leave()
    """
    )
    work = Expr("work")
    inputs = [[], [rng.randint(0, 250)], *(_numbers(rng, n) for n in (2, 4, 6, 8))]
    cases = [
        Case(
            call(func, work, xs),
            [(x * mul + add) % 1000 for x in xs],
            (_OVERLAP,) if len(xs) >= 2 else (),
        )
        for xs in inputs
    ]
    return function_parts(
        func=func,
        signature="def run_all(work, numbers: list[int]) -> list[int]:",
        spec="""
            Call work(x) for every x in numbers and return the results in the order of
            numbers (not in the order the calls finish). work is slow (up to 0.15 s per
            call), so make the calls at the same time, in threads (for example with
            concurrent.futures.ThreadPoolExecutor).
        """,
        examples=[shown_example(rng, _pool_example, cases)],
        cases=cases,
        source=_POOL_SOURCE,
        prelude=prelude,
    )


# --------------------------------------------------------------------------- pipeline

_PIPE_SOURCE = """
    import queue
    import threading


    def pipeline(messages, handle, consumers):
        tasks = queue.Queue()
        results = {}
        finished = []  #+bug
        lock = threading.Lock()

        def consume():
            while True:
                item = tasks.get()
                if item is None:
                    return
                index, message = item
                result = handle(message)
                with lock:
                    results[index] = result
                    finished.append(result)  #+bug

        workers = [threading.Thread(target=consume) for _ in range(consumers)]
        for worker in workers:
            worker.start()
        for item in enumerate(messages):
            tasks.put(item)
        for _ in range(consumers):
            tasks.put(None)
        for worker in workers:
            worker.join()
        return [results[i] for i in range(len(messages))]  #-bug
        return finished  #+bug
"""

_PIPE_PRELUDE = (
    _PEAK
    + """

    def handle(message):
        _enter()
        try:
            time.sleep(min(0.15, 0.03 * (len(message) - 3)))
            return message[::-1].upper() + str(len(message))
        finally:
            _leave()
"""
)


def _result(word: str) -> str:
    return word[::-1].upper() + str(len(word))


def _pipe_example(rng: random.Random) -> Case:
    words = rng.sample([w for w in WORDS if len(w) <= 6], rng.randint(2, 3))
    shown = ", ".join(f"handle({w!r})" for w in words)
    return Case(call("pipeline", words, Expr("handle"), rng.randint(2, 3)), Expr(f"[{shown}]"))


def pipeline(rng: random.Random) -> Parts:
    """Starter of `concurrency.pipeline`."""
    func = "pipeline"
    slow = [w for w in WORDS if len(w) >= 7]
    quick = [w for w in WORDS if len(w) == 4]
    handle = Expr("handle")
    cases = []
    for n, consumers in ((0, 2), (1, 2), (3, 2), (5, 3), (6, 3), (8, 4)):
        words = [rng.choice(slow), rng.choice(quick)] + [rng.choice(WORDS) for _ in range(n)]
        words = words[:n]
        checks = (
            ("peak() >= 2", "handle() never ran in two threads at once: start all consumers first"),
            (
                f"threads() <= {consumers}",
                f"handle() ran in more than {consumers} threads: use exactly `consumers` threads",
            ),
        )
        cases.append(
            Case(
                call(func, words, handle, consumers),
                [_result(w) for w in words],
                checks if n >= 2 else (),
            )
        )
    return function_parts(
        func=func,
        signature="def pipeline(messages: list[str], handle, consumers: int) -> list[str]:",
        spec="""
            Put each message on a queue.Queue, then one None per consumer. Start `consumers`
            threads; each takes messages from the queue and calls handle(message) until it
            gets None. handle is slow, so the consumers run at the same time. Return the
            results of handle in the order of messages (not the order they finish).
        """,
        examples=[shown_example(rng, _pipe_example, cases)],
        cases=cases,
        source=_PIPE_SOURCE,
        prelude=_PIPE_PRELUDE,
    )


# --------------------------------------------------------------------------- bank_transfers

_BANK_SOURCE = """
    import threading
    from concurrent.futures import ThreadPoolExecutor


    def transfer_all(ledger, transfers):
        lock = threading.Lock()

        def apply(transfer):
            source, target, amount = transfer
            with lock:  #-bug
            with threading.Lock():  #+bug
                ledger.write(source, ledger.read(source) - amount)
                ledger.write(target, ledger.read(target) + amount)

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(apply, transfers))
        return ledger.snapshot()
"""

_BANK_PRELUDE = """
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


def _ledger(balances: dict[str, int]) -> Expr:
    return Expr(f"Ledger({balances!r})")


def _bank_example(rng: random.Random) -> Case:
    """Two accounts, one transfer: the balances before and after."""
    source, target = (f"{c}-{rng.randint(100, 999)}" for c in rng.sample("ABC", 2))
    before = {source: rng.randint(20, 90) * 10, target: rng.randint(10, 90) * 10}
    amount = rng.randint(1, 19) * 10
    after = {source: before[source] - amount, target: before[target] + amount}
    return Case(call("transfer_all", _ledger(before), [(source, target, amount)]), after)


def bank_transfers(rng: random.Random) -> Parts:
    """Starter of `concurrency.bank_transfers`."""
    func = "transfer_all"
    cases = []
    for n_accounts, n_transfers in ((2, 0), (2, 1), (3, 8), (3, 12), (4, 12)):
        names = sorted(f"{rng.choice('ABC')}-{k}" for k in rng.sample(range(100, 999), n_accounts))
        balances = {name: rng.randint(10, 90) * 10 for name in names}
        final = dict(balances)
        transfers = []
        for _ in range(n_transfers):
            source, target = rng.sample(names, 2)
            amount = rng.randint(1, 120)
            final[source] -= amount
            final[target] += amount
            transfers.append((source, target, amount))
        checks = (
            (
                "len(LEDGERS[-1].writers) >= 2",
                "ledger.write ran in one thread only: apply the transfers on 4 threads",
            ),
        )
        cases.append(
            Case(call(func, _ledger(balances), transfers), final, checks if n_transfers > 4 else ())
        )
    return function_parts(
        func=func,
        signature=(
            "def transfer_all(ledger, transfers: list[tuple[str, str, int]]) -> dict[str, int]:"
        ),
        spec="""
            Apply each transfer (source, target, amount): move amount from source to
            target with ledger.read(account) and ledger.write(account, value), on 4
            threads (e.g. ThreadPoolExecutor(max_workers=4)). The ledger is slow and not
            thread-safe: guard each transfer's reads and writes with one shared
            threading.Lock. Return ledger.snapshot() (all balances).
        """,
        examples=[shown_example(rng, _bank_example, cases)],
        cases=cases,
        source=_BANK_SOURCE,
        prelude=_BANK_PRELUDE,
    )
