"""Template `concurrency.pipeline`: a producer/consumer queue, drawn from a family.

Axes (`variant`): what the program reports (`ordered`: `ID RESULT` per message
in file order; `grouped`: `KEY RESULT...` per key; `last` / `first`: `KEY
RESULT` with the result of each key's last / first message); the input
(`txt`: `messages.txt`, `ID KEY PAYLOAD` lines; `csv`: `messages.csv` with an
`id,key,payload` header); where the output goes (`file`: `results.txt`, or
`stdout`). 16 tasks per tier. The first two messages share a key no other
message has and finish in the wrong order, which separates every report from
the others and from the near-miss. Twists on top: per-key ordering, a STOP
line, retries.
"""

from __future__ import annotations

import random

from nightschool.challenges._templates._concurrency_libs import PIPE_LIB
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
    variant,
)
from nightschool.challenges._templates.starters.concurrency_pipeline import pipeline

REPORT = ("ordered", "grouped", "last", "first")
INPUT = ("txt", "csv")
OUTPUT = ("file", "stdout")
"""The program tiers' axes; `family_size(REPORT, INPUT, OUTPUT)` is 16."""

_SOLUTION = """
    import csv  #+csv
    import queue
    import threading

    import lib

    CONSUMERS = __CONSUMERS__
    tasks = queue.Queue()  #-t1
    queues = [queue.Queue() for _ in range(CONSUMERS)]  #+t1
    route = {}  #+t1
    order = []  # (ID, KEY) of each message, in file order
    finished = []  #+bug
    results = {}
    lock = threading.Lock()


    def producer():
        with open("messages.txt") as handle:  #+txt
            rows = [line.split() for line in handle if line.strip()]  #+txt
        with open("messages.csv", newline="") as handle:  #+csv
            rows = [row for row in csv.reader(handle) if row][1:]  #+csv
        for row in rows:
            if row == ["STOP"]:  #+t2
                break  #+t2
            if row == ["STOP"]:  #+stopskip
                continue  #+stopskip
            order.append((row[0], row[1]))
            tasks.put(row)  #-t1
            index = route.setdefault(row[1], len(route) % CONSUMERS)  #+t1
            queues[index].put(row)  #+t1
        for _ in range(CONSUMERS):  #-t1
            tasks.put(None)  #-t1
        for q in queues:  #+t1
            q.put(None)  #+t1


    def consumer(source):
        while True:
            row = source.get()
            if row is None:
                return
            result = lib.handle(*row)  #-t3|t3bug
            result = "FAILED"  #+t3|t3bug
            for _attempt in range(3):  #+t3
            for _attempt in range(2):  #+t3bug
                try:  #+t3|t3bug
                    result = lib.handle(*row)  #+t3|t3bug
                    break  #+t3|t3bug
                except lib.TransientError:  #+t3|t3bug
                    pass  #+t3|t3bug
            with lock:
                results[row[0]] = result
                finished.append((row[0], row[1]))  #+bug


    threads = [threading.Thread(target=consumer, args=(tasks,)) for _ in range(CONSUMERS)]  #-t1
    threads = [threading.Thread(target=consumer, args=(q,)) for q in queues]  #+t1
    threads.append(threading.Thread(target=producer))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    order = finished  #+bug
    keys = sorted({key for mid, key in order})  #-ordered
    lines = [f"{mid} {results[mid]}" for mid, key in order]  #+ordered
    lines = [" ".join([k] + [results[m] for m, key in order if key == k]) for k in keys]  #+grouped
    lines = [f"{k} {[results[m] for m, key in order if key == k][-1]}" for k in keys]  #+last
    lines = [f"{k} {[results[m] for m, key in order if key == k][0]}" for k in keys]  #+first
    print("\\n".join(lines))  #+stdout
    with open("results.txt", "w") as out:  #+file
        out.write("\\n".join(lines) + "\\n")  #+file
"""

_CHECK = """
    import json as _json
    out, _ = run_solution(SOLUTION)
    if not os.path.isfile("lib_report.json"):
        fail("lib.handle() was never used (call it for each message; let the program end normally)")
    with open("lib_report.json") as _handle:
        report = _json.load(_handle)
    if report["violations"]:
        fail(f"{report['violations'][0]} ({len(report['violations'])} ordering violations)")
    late = [m for m in report["handled"] if m > DATA["last_id"]]
    if late:
        fail(f"message {late[0]} comes after the STOP line but was handled")
    if DATA["file"]:
        check_lines(read_output("results.txt"), DATA["expected"], "results.txt")
    else:
        check_lines(out, DATA["expected"], "stdout")
    if report["threads"] < 2 or report["max_active"] < 2:
        fail(
            f"lib.handle() ran in {report['threads']} thread(s), never two at the same time: "
            f"use {DATA['consumers']} consumer threads that handle messages concurrently"
        )
    passed()
"""

_REPORT = {
    "ordered": "one line per message, `ID RESULT`, in the order of the input (not in the order "
    "the consumers finish)",
    "grouped": "one line per KEY, sorted by KEY: the KEY, then the results of its messages in "
    "input order (not in the order the consumers finish), separated by spaces",
    "last": "one line per KEY, sorted by KEY: `KEY RESULT`, with the result of the KEY's last "
    "message in the input (not the one that finishes last)",
    "first": "one line per KEY, sorted by KEY: `KEY RESULT`, with the result of the KEY's first "
    "message in the input (not the one that finishes first)",
}


def _expected(tags: set[str], rows: list[tuple[str, str, str]]) -> list[str]:
    """Emulate the drawn report for the handled `rows` (ID, KEY, RESULT) in file order."""
    if "ordered" in tags:
        return [f"{mid} {result}" for mid, _key, result in rows]
    lines = []
    for key in sorted({key for _mid, key, _result in rows}):
        mine = [result for _mid, k, result in rows if k == key]
        if "grouped" in tags:
            lines.append(" ".join([key, *mine]))
        else:
            lines.append(f"{key} {mine[-1] if 'last' in tags else mine[0]}")
    return lines


def _failures(
    tags: set[str], msg_keys: list[str], last_id: int, rng: random.Random
) -> dict[str, int]:
    """Transient failures per message ID; the one failing twice shows in the drawn report."""
    kept = msg_keys[:last_id]
    shown = list(range(2, last_id))
    if "last" in tags:
        shown = [i for i in shown if kept[i] not in kept[i + 1 :]]
    elif "first" in tags:
        shown = [i for i in shown if kept[i] not in kept[:i]]
    twice = rng.choice(shown)
    picks = rng.sample([i for i in range(2, last_id) if i != twice], 3)
    return {str(picks[0] + 1): 1, str(twice + 1): 2, str(picks[1] + 1): 2, str(picks[2] + 1): 3}


class Pipeline(TemplateBase):
    """Producer/consumer queue; twists: per-key ordering, a STOP marker, retries."""

    name = "concurrency.pipeline"
    cluster = "concurrency"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return pipeline(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, REPORT, INPUT, OUTPUT)
        n, consumers = (12, 18, 24, 30)[level], (3, 3, 4, 4)[level]
        keys = rng.sample(("red", "green", "blue", "amber", "teal", "plum"), 2 + level)
        words = [rng.choice(WORDS) for _ in range(n)]
        words[0], words[1] = "lantern", "dune"  # a slow message, then a quick one
        msg_keys = [keys[0], keys[0]] + [rng.choice(keys[1:]) for _ in range(n - 2)]
        last_id = n
        if level >= 2:
            last_id = n - rng.randint(3, 5)
        failures = _failures(tags, msg_keys, last_id, rng) if level >= 3 else {}
        rows = []
        for i in range(last_id):
            ok = failures.get(str(i + 1), 0) < 3
            result = words[i][::-1].upper() + str(len(words[i])) if ok else "FAILED"
            rows.append((str(i + 1), msg_keys[i], result))
        messages = [
            [str(i + 1), k, w] for i, (k, w) in enumerate(zip(msg_keys, words, strict=True))
        ]
        if level >= 2:
            messages.insert(last_id, ["STOP"])
        lib = PIPE_LIB.replace("__ORDERED__", str(level >= 1)).replace(
            "__FAILURES__", repr(failures)
        )
        if "csv" in tags:
            data_file = {
                "messages.csv": "id,key,payload\n" + "".join(",".join(m) + "\n" for m in messages)
            }
            inputs = """
                `messages.csv`, a CSV file with the header `id,key,payload` and one message
                per row (IDs count up from 1); `lib.py` (do not change it).
            """
        else:
            data_file = {"messages.txt": "".join(" ".join(m) + "\n" for m in messages)}
            inputs = """
                `messages.txt`, one message per line as `ID KEY PAYLOAD` (IDs count up from 1);
                `lib.py` (do not change it).
            """
        task = f"""
            Build a producer/consumer pipeline with `queue.Queue` and threads. One producer
            thread reads the messages and puts them on a queue; {consumers} consumer threads take
            messages from the queue and call `lib.handle(ID, KEY, PAYLOAD)` (`lib.py` is already
            in the directory; each call is slow), which returns the message's RESULT string. The
            consumers must run at the same time.
        """
        where = "write `results.txt` with" if "file" in tags else "print"
        output = f"{where} {_REPORT[next(t for t in REPORT if t in tags)]}."
        rules = [
            "Messages with the same KEY must be handled one at a time and in input order "
            "(`lib.handle` raises `RuntimeError` otherwise). Hint: give each consumer its own "
            "queue and send all messages of one key to the same consumer.",
            "A line `STOP` ends the input: do not handle the messages after it (they count for "
            "nothing), and shut the consumers down cleanly (for example one `None` per consumer "
            "queue).",
            "`lib.handle` sometimes raises `lib.TransientError`: try the same message again "
            "right away, at most 3 attempts in total; if all 3 fail, its RESULT is `FAILED`.",
        ]
        if level == 2:
            wrong = {"t1", "stopskip"}
        elif level == 3:
            wrong = {"t1", "t2", "t3bug"}
        else:
            wrong = near_miss(level)
        source = _SOLUTION.replace("__CONSUMERS__", str(consumers))
        data = {
            "expected": _expected(tags, rows),
            "last_id": last_id,
            "consumers": consumers,
            "file": "file" in tags,
        }
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({**data_file, "lib.py": lib.lstrip()}),
            validation_script=validator_script(_CHECK, data),
            reference_solution=select(source, tags | twists(level)),
            wrong_solution=select(source, tags | wrong),
        )
