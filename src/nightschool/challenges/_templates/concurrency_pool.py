"""Template `concurrency.thread_pool`: slow calls on a thread pool, drawn from a family.

Axes (`variant`): what the program reports (`each`: every result in input
order, `ranked`: `INPUT RESULT` lines sorted by result, `total`: the sum of the
results, `best`: the input with the largest result); the input file (`lines`:
`inputs.txt`, one integer a line; `json`: `inputs.json`, a JSON list); where the
output goes (`stdout`, or `file`: `results.txt`). 16 tasks per tier. Twists on
top: failing inputs, a cap of 4 calls at once, one call per distinct value.
"""

from __future__ import annotations

import json
import random

from nightschool.challenges._templates._concurrency_libs import JOBS_LIB
from nightschool.challenges._templates._kit import (
    Parts,
    TemplateBase,
    files_setup,
    near_miss,
    prompt,
    select,
    twists,
    validator_script,
    variant,
)
from nightschool.challenges._templates.starters.concurrency_pool import thread_pool

WHAT = ("each", "ranked", "total", "best")
INPUT = ("lines", "json")
OUTPUT = ("stdout", "file")
"""The program tiers' axes; `family_size(WHAT, INPUT, OUTPUT)` is 16."""

_SOLUTION = """
    import json  #+json
    from concurrent.futures import ThreadPoolExecutor  #-bug
    from concurrent.futures import ThreadPoolExecutor, as_completed  #+bug

    from jobs import work

    with open("inputs.txt") as handle:  #+lines
        numbers = [int(line) for line in handle if line.strip()]  #+lines
    with open("inputs.json") as handle:  #+json
        numbers = json.load(handle)  #+json


    def safe_work(x):  #+t1
        try:  #+t1
            return work(x)  #+t1
        except ValueError:  #+t1
            return None  #+t1


    job = work  #-t1
    job = safe_work  #+t1
    todo = numbers  #-t3
    todo = list(dict.fromkeys(numbers))  # each distinct value once  #+t3
    workers = 8  #-t2
    workers = 4  #+t2
    workers = 1  # one call after another  #=bug&!ordered
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = dict(zip(todo, pool.map(job, todo)))  #-bug
        done = dict(zip(todo, pool.map(job, todo)))  #=bug&!ordered
        futures = [pool.submit(job, x) for x in todo]  #=bug&ordered
        done = dict(zip(todo, [f.result() for f in as_completed(futures)]))  #=bug&ordered
    pairs = [(x, done[x]) for x in numbers]
    ok = [(x, result) for x, result in pairs if result is not None]
    lines = ["error" if result is None else str(result) for x, result in pairs]  #+each
    ok.sort(key=lambda pair: -pair[1])  # stable: equal results keep the input order  #+ranked
    lines = [f"{x} {result}" for x, result in ok]  #+ranked
    lines = [str(sum(result for x, result in ok))]  #+total
    best = ok[0]  #+best
    for pair in ok:  #+best
        if pair[1] > best[1]:  #+best
            best = pair  #+best
    lines = [f"{best[0]} {best[1]}"]  #+best
    lines.append(f"errors {len(pairs) - len(ok)}")  #=t1&!each
    print("\\n".join(lines))  #+stdout
    with open("results.txt", "w") as out:  #+file
        out.write("\\n".join(lines) + "\\n")  #+file
"""

_CHECK = """
    out, elapsed = run_solution(SOLUTION)
    if DATA["file"]:
        check_lines(read_output("results.txt"), DATA["expected"], "results.txt")
    else:
        check_lines(out, DATA["expected"], "stdout")
    if elapsed > DATA["limit"]:
        fail(
            f"the output is right but the program took {elapsed:.2f} s; the limit is "
            f"{DATA['limit']} s (one call after another takes {DATA['serial']} s): "
            "run the work() calls concurrently"
        )
    passed()
"""

_REPORT = {
    "each": "`work(x)` for every input, one per line, in the same order as the input (not in "
    "the order the calls finish)",
    "ranked": "one line `INPUT RESULT` per input, RESULT being `work(INPUT)`, sorted by RESULT "
    "from highest to lowest; inputs with equal results keep their input order",
    "total": "one line: the sum of `work(x)` over all inputs (a repeated input counts each time)",
    "best": "one line `INPUT RESULT`: the input with the highest `work(INPUT)` and that result "
    "(on a tie, the input that comes first)",
}


def _expected(tags: set[str], numbers: list[int], mul: int, add: int) -> list[str]:
    """Emulate the drawn task: the output lines for `numbers`."""
    pairs = [(x, None if x < 0 else (x * mul + add) % 1000) for x in numbers]
    ok = [(x, r) for x, r in pairs if r is not None]
    if "each" in tags:
        return ["error" if r is None else str(r) for _x, r in pairs]
    if "ranked" in tags:
        lines = [f"{x} {r}" for x, r in sorted(ok, key=lambda pair: -pair[1])]
    elif "total" in tags:
        lines = [str(sum(r for _x, r in ok))]
    else:
        best = max(ok, key=lambda pair: pair[1])  # the first of equal maxima
        lines = [f"{best[0]} {best[1]}"]
    if len(ok) < len(pairs):
        lines.append(f"errors {len(pairs) - len(ok)}")
    return lines


class ThreadPool(TemplateBase):
    """Run slow calls on a thread pool; twists: errors, a concurrency cap, compute-once."""

    name = "concurrency.thread_pool"
    cluster = "concurrency"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return thread_pool(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, WHAT, INPUT, OUTPUT)
        if tags & {"each", "ranked"}:
            tags.add("ordered")  # the near-miss pairs results with the wrong inputs
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
        if "json" in tags:
            inputs = "`inputs.json`, a JSON list of integers; `jobs.py` (do not change it)."
            data_file = {"inputs.json": json.dumps(numbers) + "\n"}
        else:
            inputs = "`inputs.txt`, one integer per line; `jobs.py` (do not change it)."
            data_file = {"inputs.txt": "".join(f"{x}\n" for x in numbers)}
        where = "write `results.txt` with" if "file" in tags else "print"
        output = f"{where} {_REPORT[next(t for t in WHAT if t in tags)]}."
        failing = (
            "print `error` on that input's line and carry on with the others."
            if "each" in tags
            else "leave that input out, carry on with the others, and add a last line "
            "`errors N`, N being how many input lines failed."
        )
        rules = [
            f"`work(x)` raises `ValueError` for some inputs: {failing}",
            "`work` allows at most 4 calls running at the same time (a fifth raises "
            "`RuntimeError`): use at most 4 worker threads.",
            "Some inputs repeat. `work` must be called only once per distinct value (a second "
            "call with the same value raises `RuntimeError`): reuse the first result.",
        ]
        data = {
            "expected": _expected(tags, numbers, mul, add),
            "limit": limit,
            "serial": round(serial, 2),
            "file": "file" in tags,
        }
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({**data_file, "jobs.py": lib.lstrip()}),
            validation_script=validator_script(_CHECK, data),
            reference_solution=select(_SOLUTION, tags | twists(level)),
            wrong_solution=select(_SOLUTION, tags | near_miss(level)),
        )
