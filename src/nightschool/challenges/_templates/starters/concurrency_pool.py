"""Starter of `concurrency.thread_pool`: slow calls on a thread pool, drawn from a family.

Axes (`variant`): what the function returns (`each`: the results in input
order, `total`: their sum, `best`: the input with the largest result,
`count`: how many results exceed a threshold, `rank`: the inputs sorted by
result); the argument shape (`list`:
a list of inputs, `dict`: job name -> input); the concurrency cap (`free`: any
number of threads, `cap`: at most `workers` calls at once). 20 tasks. The
function name follows what it returns; the shapes and the cap change the
signature, so another seed's reference fails the call.
"""

from __future__ import annotations

import random
import textwrap

from nightschool.challenges._templates._concurrency_libs import PEAK_PRELUDE
from nightschool.challenges._templates._kit import (
    WORDS,
    Case,
    Expr,
    Parts,
    call,
    function_parts,
    shown_example,
    variant,
)

WHAT = ("each", "total", "best", "count", "rank")
SHAPE = ("list", "dict")
CAP = ("free", "cap")
"""The starter's axes; `family_size(WHAT, SHAPE, CAP)` is 20."""

_FUNC = {
    "each": "run_all",
    "total": "total_work",
    "best": "best_job",
    "count": "count_above",
    "rank": "rank_jobs",
}

_SOURCE = """
    from concurrent.futures import ThreadPoolExecutor  #-bug
    from concurrent.futures import ThreadPoolExecutor, as_completed  #+bug


    def run_all(work, numbers, workers):  #=each&list&cap
    def run_all(work, numbers):  #=each&list&!cap
    def run_all(work, jobs, workers):  #=each&dict&cap
    def run_all(work, jobs):  #=each&dict&!cap
    def total_work(work, numbers, workers):  #=total&list&cap
    def total_work(work, numbers):  #=total&list&!cap
    def total_work(work, jobs, workers):  #=total&dict&cap
    def total_work(work, jobs):  #=total&dict&!cap
    def best_job(work, numbers, workers):  #=best&list&cap
    def best_job(work, numbers):  #=best&list&!cap
    def best_job(work, jobs, workers):  #=best&dict&cap
    def best_job(work, jobs):  #=best&dict&!cap
    def count_above(work, numbers, threshold, workers):  #=count&list&cap
    def count_above(work, numbers, threshold):  #=count&list&!cap
    def count_above(work, jobs, threshold, workers):  #=count&dict&cap
    def count_above(work, jobs, threshold):  #=count&dict&!cap
    def rank_jobs(work, numbers, workers):  #=rank&list&cap
    def rank_jobs(work, numbers):  #=rank&list&!cap
    def rank_jobs(work, jobs, workers):  #=rank&dict&cap
    def rank_jobs(work, jobs):  #=rank&dict&!cap
        names = list(jobs)  #+dict
        values = [jobs[name] for name in names]  #+dict
        values = list(numbers)  #+list
        names = values  #+list
        size = 8  #-cap
        size = workers  #+cap
        size = 1  # one call after another  #=bug&!each
        with ThreadPoolExecutor(max_workers=size) as pool:
            results = list(pool.map(work, values))  #-each
            results = list(pool.map(work, values))  #=each&!bug
            futures = [pool.submit(work, x) for x in values]  #=each&bug
            results = [future.result() for future in as_completed(futures)]  #=each&bug
        return results  #=each&list
        return dict(zip(names, results))  #=each&dict
        return sum(results)  #+total
        best = 0  #+best
        for index, result in enumerate(results):  #+best
            if result > results[best]:  #+best
                best = index  #+best
        return names[best]  #+best
        return sum(1 for result in results if result > threshold)  #+count
        order = sorted(range(len(results)), key=lambda i: -results[i])  #+rank
        return [names[i] for i in order]  #+rank
"""

_SPEC = {
    ("each", "list"): "Call work(x) for every x in numbers; return the results in the order of "
    "numbers (not the order the calls finish).",
    ("each", "dict"): "Call work(x) for every value x of jobs (job name -> x); return a dict "
    "job name -> work(x).",
    ("total", "list"): "Return the sum of work(x) over every x in numbers.",
    ("total", "dict"): "Return the sum of work(x) over every value x of jobs (job name -> x).",
    ("best", "list"): "Return the x in numbers with the largest work(x) (a tie: the earliest x).",
    ("best", "dict"): "Return the job name in jobs (job name -> x) whose work(x) is largest (a "
    "tie: the earliest name).",
    ("count", "list"): "Return how many x in numbers have work(x) > threshold.",
    ("count", "dict"): "Return how many values x of jobs (job name -> x) have work(x) > threshold.",
    ("rank", "list"): "Return numbers sorted by work(x), largest first (equal results keep "
    "their order).",
    ("rank", "dict"): "Return the job names of jobs (job name -> x) sorted by work(x), largest "
    "first (equal results keep their order).",
}


def _numbers(rng: random.Random, n: int) -> list[int]:
    """`n` inputs, the first slow (0.15 s) and the second instant, so finishing order differs."""
    numbers = [6 * rng.randint(1, 40) + 5, 6 * rng.randint(1, 40)]
    numbers += [rng.randint(0, 250) for _ in range(n - 2)]
    return numbers[:n]


class _Task:
    """The drawn task: builds a call's arguments and computes its expected value."""

    def __init__(self, tags: set[str], mul: int, add: int) -> None:
        self.tags = tags
        self.mul, self.add = mul, add
        self.what = next(t for t in WHAT if t in tags)
        self.func = _FUNC[self.what]

    def work(self, x: int) -> int:
        return (x * self.mul + self.add) % 1000

    def case(self, rng: random.Random, xs: list[int], workers: int) -> Case:
        names = rng.sample([w for w in WORDS if len(w) <= 6], len(xs))
        arg: object = dict(zip(names, xs, strict=True)) if "dict" in self.tags else xs
        keys = names if "dict" in self.tags else xs
        results = [self.work(x) for x in xs]
        args: list[object] = [Expr("work"), arg]
        value: object
        if self.what == "each":
            value = dict(zip(names, results, strict=True)) if "dict" in self.tags else results
        elif self.what == "total":
            value = sum(results)
        elif self.what == "best":
            value = keys[results.index(max(results))]
        elif self.what == "rank":
            value = [keys[i] for i in sorted(range(len(xs)), key=lambda i: -results[i])]
        else:
            threshold = rng.randint(150, 850)
            args.append(threshold)
            value = sum(1 for r in results if r > threshold)
        checks: list[tuple[str, str]] = []
        if len(xs) >= 2:
            checks.append(
                ("peak() >= 2", "the work() calls never overlapped: run them at once in threads")
            )
        if "cap" in self.tags:
            args.append(workers)
            checks.append((f"peak() <= {workers}", f"more than {workers} work() calls ran at once"))
        return Case(call(self.func, *args), value, tuple(checks))


def thread_pool(rng: random.Random) -> Parts:
    """Starter of `concurrency.thread_pool`: see the module docstring for the family."""
    tags = variant(rng, WHAT, SHAPE, CAP)
    task = _Task(tags, rng.randint(3, 97), rng.randint(1, 999))
    prelude = (
        PEAK_PRELUDE
        + f"""

    def work(x):
        _enter()
        try:
            time.sleep(0.03 * (x % 6))
            return (x * {task.mul} + {task.add}) % 1000
        finally:
            _leave()
    """
    )
    sizes = (1, 2, 3, 4, 6, 8) if task.what == "best" else (0, 1, 2, 4, 6, 8)
    cases = [task.case(rng, _numbers(rng, n), rng.choice((2, 3))) for n in sizes]

    def example(r: random.Random) -> Case:
        return task.case(r, r.sample(range(20), r.randint(3, 4)), 2)

    arg = "jobs: dict[str, int]" if "dict" in tags else "numbers: list[int]"
    params = ["work", arg] + ["threshold: int"] * (task.what == "count")
    params += ["workers: int"] * ("cap" in tags)
    returns = {
        "each": "dict[str, int]" if "dict" in tags else "list[int]",
        "rank": "list[str]" if "dict" in tags else "list[int]",
        "best": "str" if "dict" in tags else "int",
    }.get(task.what, "int")
    how = "at most `workers` calls at once" if "cap" in tags else "e.g. with ThreadPoolExecutor"
    spec = textwrap.fill(
        f"{_SPEC[task.what, 'dict' if 'dict' in tags else 'list']} work is slow (up to 0.15 s), "
        f"so make the calls at the same time, in threads ({how}).",
        width=84,
    )
    return function_parts(
        func=task.func,
        signature=f"def {task.func}({', '.join(params)}) -> {returns}:",
        spec=spec,
        examples=[shown_example(rng, example, cases)],
        cases=cases,
        source=_SOURCE,
        prelude=prelude,
        features=tags,
    )
