"""Starter of `concurrency.pipeline`: a queue and consumer threads, drawn from a family.

Axes (`variant`): what `pipeline` returns (`list`: the results in message
order; `dict`: message -> result); a message `handle` rejects (`none`: its
result is None; `skip`: it is left out); the word `STOP` (`stop`: it ends the
messages; `all`: it is a message like any other); repeated messages (`repeat`:
handled again; `once`: handled once, the result reused). 16 tasks. Every
hidden case with several messages holds a rejected message, a repeat and a
`STOP` with messages after it, and the prelude counts the `handle` calls, so a
reference written for another convention fails.
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

RETURN = ("list", "dict")
REJECT = ("none", "skip")
STOP = ("stop", "all")
REPEAT = ("repeat", "once")
"""The starter's axes; `family_size(RETURN, REJECT, STOP, REPEAT)` is 16."""

_SOURCE = """
    import queue
    import threading


    def pipeline(messages, handle, consumers):
        if "STOP" in messages:  #+stop
            messages = messages[: messages.index("STOP")]  #+stop
        todo = list(messages)  #-once
        todo = list(dict.fromkeys(messages))  # each distinct message once  #+once
        tasks = queue.Queue()
        results = {}
        finished = []  #=bug&list
        lock = threading.Lock()

        def consume():
            while True:
                item = tasks.get()
                if item is None:
                    return
                index, message = item
                try:
                    result = handle(message)
                except ValueError:
                    result = None
                with lock:
                    results[index] = result
                    finished.append(index)  #=bug&list

        count = consumers
        count = 1  #=bug&dict
        workers = [threading.Thread(target=consume) for _ in range(count)]
        for worker in workers:
            worker.start()
        for item in enumerate(todo):
            tasks.put(item)
        for _ in range(count):
            tasks.put(None)
        for worker in workers:
            worker.join()
        order = range(len(todo))  #-once
        order = [todo.index(message) for message in messages]  #+once
        order = finished  #=bug&list
        pairs = [(todo[i], results[i]) for i in order]
        pairs = [(message, result) for message, result in pairs if result is not None]  #+skip
        return [result for message, result in pairs]  #+list
        return dict(pairs)  #+dict
"""

_PRELUDE = (
    PEAK_PRELUDE
    + """

    _calls = []


    def handle(message):
        _enter()
        try:
            _calls.append(message)
            time.sleep(min(0.15, 0.03 * max(1, len(message) - 3)))
            if any(c.isdigit() for c in message):
                raise ValueError(f"bad message {message!r}")
            return message[::-1].upper() + str(len(message))
        finally:
            _leave()


    def calls():
        return len(_calls)
"""
)

_RULES = {
    "stop": "Stop at the first 'STOP' (do not handle it or later ones).",
    "all": "'STOP' is an ordinary message.",
    "once": "Handle each distinct message once (reuse its result).",
    "repeat": "Repeats are handled again.",
    "none": "handle raises ValueError on a bad message: its result is None.",
    "skip": "handle raises ValueError on a bad message: leave it out.",
    "list": "Return the results in message order.",
    "dict": "Return a dict message -> result.",
}


def _result(word: str) -> str | None:
    if any(c.isdigit() for c in word):
        return None
    return word[::-1].upper() + str(len(word))


def _handled(tags: set[str], messages: list[str]) -> list[str]:
    """The messages the reference hands to `handle`, in order."""
    if "stop" in tags and "STOP" in messages:
        messages = messages[: messages.index("STOP")]
    return list(dict.fromkeys(messages)) if "once" in tags else list(messages)


def _value(tags: set[str], messages: list[str]) -> object:
    if "stop" in tags and "STOP" in messages:
        messages = messages[: messages.index("STOP")]
    pairs = [(m, _result(m)) for m in messages]
    if "skip" in tags:
        pairs = [(m, r) for m, r in pairs if r is not None]
    return dict(pairs) if "dict" in tags else [r for _m, r in pairs]


def _messages(rng: random.Random, n: int) -> list[str]:
    """`n` messages: slow then quick, a bad one, a repeat, `STOP` and messages after it."""
    slow = rng.choice([w for w in WORDS if len(w) >= 7])
    quick = rng.choice([w for w in WORDS if len(w) == 4])
    if n < 7:
        return [slow, quick, *rng.sample(WORDS, 4)][:n]
    head = [slow, quick, f"{rng.choice(WORDS)[:3]}{rng.randint(1, 9)}"]
    head += rng.sample(WORDS, n - 6)
    rng.shuffle(head)
    head.insert(rng.randint(1, len(head)), rng.choice(head))  # a repeat
    return [*head, "STOP", *rng.sample(WORDS, 2)]


def _case(tags: set[str], messages: list[str], consumers: int) -> Case:
    handled = _handled(tags, messages)
    checks = [
        (
            f"threads() <= {consumers}",
            f"handle() ran in more than {consumers} threads: use exactly `consumers` threads",
        ),
        (
            f"calls() == {len(handled)}",
            f"handle() must be called {len(handled)} times here",
        ),
    ]
    if len(set(handled)) >= 2:
        checks.append(
            ("peak() >= 2", "handle() never ran in two threads at once: start all consumers first")
        )
    return Case(
        call("pipeline", messages, Expr("handle"), consumers), _value(tags, messages), tuple(checks)
    )


def _shown(tags: set[str], messages: list[str]) -> Expr:
    """The example's value written with `handle(...)` calls, as the prompt shows it."""
    value = _value(tags, messages)
    if isinstance(value, dict):
        items = (f"{m!r}: {'None' if r is None else f'handle({m!r})'}" for m, r in value.items())
        return Expr("{" + ", ".join(items) + "}")
    kept = [m for m in messages if "skip" not in tags or _result(m) is not None]
    return Expr(
        "[" + ", ".join("None" if _result(m) is None else f"handle({m!r})" for m in kept) + "]"
    )


def pipeline(rng: random.Random) -> Parts:
    """Starter of `concurrency.pipeline`: see the module docstring for the family."""
    tags = variant(rng, RETURN, REJECT, STOP, REPEAT)
    cases = [
        _case(tags, _messages(rng, n), consumers)
        for n, consumers in ((0, 2), (1, 2), (4, 2), (7, 3), (8, 3), (10, 4))
    ]

    def example(r: random.Random) -> Case:
        words = r.sample([w for w in WORDS if len(w) <= 6], 2)
        words.insert(r.randint(0, 2), f"{r.choice(WORDS)[:2]}{r.randint(1, 9)}")
        value = _shown(tags, words)
        return Case(call("pipeline", words, Expr("handle"), 2), value)

    order = ("stop", "all", "once", "repeat", "none", "skip", "list", "dict")
    spec = (
        "Put each message, then one None per consumer, on a queue.Queue. Start `consumers` "
        "threads that call handle(message) on what they take until they get None (handle is "
        "slow: run them at the same time). " + " ".join(_RULES[t] for t in order if t in tags)
    )
    return function_parts(
        func="pipeline",
        signature="def pipeline(messages: list[str], handle, consumers: int) -> "
        + ("dict:" if "dict" in tags else "list:"),
        spec=textwrap.fill(spec, width=84),
        examples=[shown_example(rng, example, cases)],
        cases=cases,
        source=_SOURCE,
        prelude=_PRELUDE,
        features=tags,
    )
