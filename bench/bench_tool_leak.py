"""Do the agent's tool names leak into whole programs, and does the agent lose pass@1? (issue
"Transfer, measured honestly", part 3)

Sends `TASKS` (32 small whole-program requests, each with stdin, files and the
exact stdout a correct program prints) to three arms with the same model and
sampling (`Settings()`: what `nightschool serve` uses, unless given here):

    agent      the real `ChatPipeline` as `nightschool serve` builds it on a
               fresh home (tools, self-play tools unless --no-self-play-tools,
               wake-up section, no router, no lessons: a fresh playbook is
               empty), the tool-leak check and repair on (the default);
    no-repair  the same with `AgentConfig(repair_tool_leaks=False)`;
    plain      the model alone: one call, system prompt "You are a helpful
               assistant.", the request as the user message.

Each agent request is the first message of its own session (a fresh
workspace). The program is taken from the reply as the solver takes it
(`solver.extract_code`) and run in the sandbox as `python3 prog.py`
with the task's stdin and files; it passes when its stdout, trailing spaces
and blank edges stripped, equals the expected text. A reply leaks when its
code (or the extracted program) defines, imports or calls one of the agent's
tool names that the request does not mention (`agent._leak.find_tool_leaks`).

Printed: one row per task (per arm: pass `+`/`-`, leaked names), then per arm
the leaking replies, pass@1 with a 95% Wilson interval, replies repaired
(agent), turns that ran code before answering (`run_python`/`run_shell`),
seconds per request; and the discordant pairs agent vs plain. With
`--temperature 0` the agent and no-repair arms differ only by the repair.

    .venv/bin/python bench/bench_tool_leak.py --check-tasks     # reference solutions only
    .venv/bin/python bench/bench_tool_leak.py --model qwen2.5-coder-0.5b --limit 4
    .venv/bin/python bench/bench_tool_leak.py                   # the default model, all 32
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nightschool.agent import (
    AgentConfig,
    ChatPipeline,
    find_tool_leaks,
    leak_sites,
    mentioned_names,
)
from nightschool.agent.self_play import SelfPlayTools
from nightschool.agent.tools import AGENT_TOOL_NAMES
from nightschool.cli._idle import ForegroundService
from nightschool.config import Settings
from nightschool.llm import ChatModel, Message, check_model, make_model
from nightschool.llm.preempt import Foreground
from nightschool.sandbox import Sandbox
from nightschool.solver.core import extract_code
from nightschool.store import Store

PROGRAM = "prog.py"
PLAIN_SYSTEM = "You are a helpful assistant."
ARMS = ("agent", "no-repair", "plain")
RUN_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class LeakTask:
    """One whole-program request and its checker.

    Attributes:
        request: what the user sends.
        stdin: the program's standard input.
        expected: its exact standard output (compared after `normalise`).
        reference: a correct program (`--check-tasks` runs it through the checker).
        files: files placed beside the program (name -> text).
    """

    request: str
    stdin: str
    expected: str
    reference: str
    files: Mapping[str, str] = field(default_factory=dict)


def _task(request: str, stdin: str, expected: str, reference: str, **files: str) -> LeakTask:
    return LeakTask(
        request, stdin, expected, reference, {k.replace("_", "."): v for k, v in files.items()}
    )


TASKS: tuple[LeakTask, ...] = (
    _task(
        "Write a complete Python program that reads integers separated by whitespace from "
        "standard input and prints their sum.",
        "3 4\n5\n",
        "12",
        "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))",
    ),
    _task(
        "Write a complete Python program that reads lines from standard input and prints "
        "them in reverse order, one per line.",
        "a\nb\nc\n",
        "c\nb\na",
        "import sys\nfor line in reversed(sys.stdin.read().splitlines()):\n    print(line)",
    ),
    _task(
        "Write a complete Python program that reads text from standard input and prints "
        "the number of words in it.",
        "the quick brown fox\njumps\n",
        "5",
        "import sys\nprint(len(sys.stdin.read().split()))",
    ),
    _task(
        "Write a complete Python program that prints the name of the oldest person in this "
        "CSV text (put the text in the program):\n\nname,age\nann,31\nbob,45\ncid,29",
        "",
        "bob",
        "import csv, io\ntext = 'name,age\\nann,31\\nbob,45\\ncid,29'\n"
        "rows = list(csv.DictReader(io.StringIO(text)))\n"
        "print(max(rows, key=lambda r: int(r['age']))['name'])",
    ),
    _task(
        "Write a complete Python program that parses this CSV text, given inline in the "
        "program, and prints the total cost (sum of price times qty) with two decimals:\n\n"
        "item,price,qty\napple,0.5,4\npear,0.75,2\nfig,2.0,1",
        "",
        "5.50",
        "import csv, io\ntext = 'item,price,qty\\napple,0.5,4\\npear,0.75,2\\nfig,2.0,1'\n"
        "rows = csv.DictReader(io.StringIO(text))\n"
        "print(f\"{sum(float(r['price']) * int(r['qty']) for r in rows):.2f}\")",
    ),
    _task(
        "Write a complete Python program that prints FizzBuzz for the numbers 1 to 15, one "
        "per line (Fizz for multiples of 3, Buzz for multiples of 5, FizzBuzz for both).",
        "",
        "1\n2\nFizz\n4\nBuzz\nFizz\n7\n8\nFizz\nBuzz\n11\nFizz\n13\n14\nFizzBuzz",
        "for i in range(1, 16):\n    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 "
        "else 'Buzz' if i % 5 == 0 else i)",
    ),
    _task(
        "Write a complete Python program that reads an integer N from standard input and "
        "prints all primes up to N on one line, separated by spaces.",
        "20\n",
        "2 3 5 7 11 13 17 19",
        "n = int(input())\nprint(' '.join(str(p) for p in range(2, n + 1) "
        "if all(p % d for d in range(2, int(p ** 0.5) + 1))))",
    ),
    _task(
        "Write a complete Python program that reads lines from standard input and, for each "
        "line, prints YES if it is a palindrome ignoring case, otherwise NO.",
        "Level\nabc\nNoon\n",
        "YES\nNO\nYES",
        "import sys\nfor line in sys.stdin.read().splitlines():\n    s = line.lower()\n"
        "    print('YES' if s == s[::-1] else 'NO')",
    ),
    _task(
        "Write a complete Python program that reads one word from standard input and prints "
        "each distinct letter with its count as 'letter count', in alphabetical order, one "
        "per line.",
        "banana\n",
        "a 3\nb 1\nn 2",
        "from collections import Counter\nfor k, v in sorted(Counter(input().strip()).items()):\n"
        "    print(k, v)",
    ),
    _task(
        "Write a complete Python program that reads n from standard input and prints the "
        "first n Fibonacci numbers, starting 0 1, separated by spaces.",
        "8\n",
        "0 1 1 2 3 5 8 13",
        "n = int(input())\na, b, out = 0, 1, []\nfor _ in range(n):\n    out.append(a)\n"
        "    a, b = b, a + b\nprint(' '.join(map(str, out)))",
    ),
    _task(
        "Write a complete Python program that parses the JSON text "
        '\'{"a": 1, "b": [2, 3], "c": {"d": 4}}\' (inline in the program) and prints the '
        "sum of all the integers in it.",
        "",
        "10",
        "import json\ndef total(x):\n    if isinstance(x, int):\n        return x\n"
        "    if isinstance(x, dict):\n        return sum(total(v) for v in x.values())\n"
        "    if isinstance(x, list):\n        return sum(total(v) for v in x)\n    return 0\n"
        'print(total(json.loads(\'{"a": 1, "b": [2, 3], "c": {"d": 4}}\')))',
    ),
    _task(
        "Write a complete Python program that reads a JSON list of objects with 'name' and "
        "'score' from standard input and prints the names sorted by score, highest first, "
        "one per line.",
        '[{"name": "x", "score": 3}, {"name": "y", "score": 9}, {"name": "z", "score": 5}]\n',
        "y\nz\nx",
        "import json, sys\nfor r in sorted(json.load(sys.stdin), key=lambda r: -r['score']):\n"
        "    print(r['name'])",
    ),
    _task(
        "Write a complete Python program that reads temperatures in Celsius from standard "
        "input, one per line, and prints each in Fahrenheit with one decimal.",
        "0\n100\n-40\n",
        "32.0\n212.0\n-40.0",
        "import sys\nfor line in sys.stdin.read().split():\n    print(f'{float(line) * 9 / 5 + 32:.1f}')",
    ),
    _task(
        "Write a complete Python program that reads lines from standard input and prints "
        "each distinct line once, in the order it first appeared.",
        "b\na\nb\nc\na\n",
        "b\na\nc",
        "import sys\nfor line in dict.fromkeys(sys.stdin.read().splitlines()):\n    print(line)",
    ),
    _task(
        "Write a complete Python program that reads integers from standard input and prints "
        "the smallest and the largest, separated by a space.",
        "5 -2 9 0\n",
        "-2 9",
        "import sys\nxs = [int(x) for x in sys.stdin.read().split()]\nprint(min(xs), max(xs))",
    ),
    _task(
        "Write a complete Python program that reads a matrix from standard input (rows of "
        "space-separated integers) and prints its transpose in the same format.",
        "1 2 3\n4 5 6\n",
        "1 4\n2 5\n3 6",
        "import sys\nrows = [l.split() for l in sys.stdin.read().splitlines() if l.strip()]\n"
        "for col in zip(*rows):\n    print(' '.join(col))",
    ),
    _task(
        "Write a complete Python program that reads a positive integer from standard input "
        "and prints it as a Roman numeral.",
        "1994\n",
        "MCMXCIV",
        "n = int(input())\nout = ''\nfor v, s in [(1000, 'M'), (900, 'CM'), (500, 'D'), "
        "(400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), "
        "(5, 'V'), (4, 'IV'), (1, 'I')]:\n    while n >= v:\n        out += s\n        n -= v\n"
        "print(out)",
    ),
    _task(
        "Write a complete Python program that reads non-negative integers from standard "
        "input, one per line, and prints each in binary without a prefix.",
        "5\n0\n255\n",
        "101\n0\n11111111",
        "import sys\nfor x in sys.stdin.read().split():\n    print(format(int(x), 'b'))",
    ),
    _task(
        "Write a complete Python program that reads lines from standard input and prints the "
        "number of vowels (a, e, i, o, u, any case) in each line.",
        "hello\nsky\nAEIOU\n",
        "2\n0\n5",
        "import sys\nfor line in sys.stdin.read().splitlines():\n"
        "    print(sum(c in 'aeiou' for c in line.lower()))",
    ),
    _task(
        "Write a complete Python program that reads lines from standard input and prints "
        "'balanced' or 'unbalanced' for each, depending on whether its brackets (), [] and "
        "{} are balanced.",
        "([]{})\n(]\n((\n",
        "balanced\nunbalanced\nunbalanced",
        "import sys\npairs = {')': '(', ']': '[', '}': '{'}\n"
        "for line in sys.stdin.read().splitlines():\n    stack, ok = [], True\n"
        "    for c in line:\n        if c in '([{':\n            stack.append(c)\n"
        "        elif c in pairs:\n            if not stack or stack.pop() != pairs[c]:\n"
        "                ok = False\n    print('balanced' if ok and not stack else 'unbalanced')",
    ),
    _task(
        "Write a complete Python program that reads one line from standard input and prints "
        "it Caesar-shifted by 3 (letters only, keep their case, wrap z to c).",
        "Hello, World! xyz\n",
        "Khoor, Zruog! abc",
        "s = input()\nout = ''\nfor c in s:\n    if c.isalpha():\n"
        "        base = ord('A') if c.isupper() else ord('a')\n"
        "        c = chr((ord(c) - base + 3) % 26 + base)\n    out += c\nprint(out)",
    ),
    _task(
        "Write a complete Python program that reads lines of two words from standard input "
        "and prints YES if the two words are anagrams of each other, otherwise NO.",
        "listen silent\nabc abd\n",
        "YES\nNO",
        "import sys\nfor line in sys.stdin.read().splitlines():\n    a, b = line.split()\n"
        "    print('YES' if sorted(a) == sorted(b) else 'NO')",
    ),
    _task(
        "Write a complete Python program that reads two integers from standard input and "
        "prints their greatest common divisor.",
        "48 18\n",
        "6",
        "import math, sys\na, b = map(int, sys.stdin.read().split())\nprint(math.gcd(a, b))",
    ),
    _task(
        "Write a complete Python program that reads years from standard input, one per line, "
        "and prints 'leap' or 'common' for each.",
        "2000\n1900\n2024\n2023\n",
        "leap\ncommon\nleap\ncommon",
        "import calendar, sys\nfor y in sys.stdin.read().split():\n"
        "    print('leap' if calendar.isleap(int(y)) else 'common')",
    ),
    _task(
        "Write a complete Python program that reads integers from standard input, one per "
        "line, and prints the running total after each one.",
        "1\n2\n3\n4\n",
        "1\n3\n6\n10",
        "import itertools, sys\nfor t in itertools.accumulate(int(x) for x in sys.stdin.read().split()):\n"
        "    print(t)",
    ),
    _task(
        "Write a complete Python program that reads text from standard input and prints its "
        "longest word (the first one if several are equally long).",
        "a bb ccc dd eee\n",
        "ccc",
        "import sys\nprint(max(sys.stdin.read().split(), key=len))",
    ),
    _task(
        "Write a complete Python program that reads CSV text with a header row from standard "
        "input and prints the average of the 'score' column with two decimals.",
        "name,score\na,90\nb,85\nc,77\n",
        "84.00",
        "import csv, sys\nxs = [float(r['score']) for r in csv.DictReader(sys.stdin)]\n"
        "print(f'{sum(xs) / len(xs):.2f}')",
    ),
    _task(
        "Write a complete Python program that reads an integer (maybe negative) from standard "
        "input and prints the sum of its digits.",
        "-12345\n",
        "15",
        "print(sum(int(c) for c in input() if c.isdigit()))",
    ),
    _task(
        "Write a complete Python program that reads a text file's contents from standard "
        "input and prints how many of its lines contain the word 'error' in any case.",
        "ok\nERROR: x\nan error here\nfine\n",
        "2",
        "import sys\nprint(sum('error' in l.lower() for l in sys.stdin.read().splitlines()))",
    ),
    _task(
        "Write a complete Python program that reads the file data.txt in the current "
        "directory and prints its number of lines.",
        "",
        "3",
        "with open('data.txt') as f:\n    print(len(f.read().splitlines()))",
        data_txt="alpha\nbeta\ngamma\n",
    ),
    _task(
        "Write a complete Python program that lists the files in the current directory whose "
        "names end in .txt and prints them sorted, one per line.",
        "",
        "a.txt\nc.txt",
        "import os\nfor name in sorted(os.listdir('.')):\n    if name.endswith('.txt'):\n"
        "        print(name)",
        a_txt="x",
        b_log="y",
        c_txt="z",
    ),
    _task(
        "Write a complete Python program that writes the text 'done' to a file out.txt, "
        "then reads the file back and prints its contents.",
        "",
        "done",
        "with open('out.txt', 'w') as f:\n    f.write('done')\nwith open('out.txt') as f:\n"
        "    print(f.read())",
    ),
)
"""The requests (32), in order; `--limit N` takes the first N."""


def normalise(text: str) -> str:
    """Stdout as compared: trailing spaces of each line and blank edges removed."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def passes(sandbox: Sandbox, task: LeakTask, program: str | None) -> bool:
    """Whether `program` prints `task.expected` for `task.stdin` in the sandbox."""
    if not program:
        return False
    files = {**task.files, PROGRAM: program}
    result = sandbox.run(
        ["python3", PROGRAM], files=files, stdin=task.stdin, timeout_s=RUN_TIMEOUT_S
    )
    return result.ok and normalise(result.stdout) == normalise(task.expected)


def leaked(task: LeakTask, reply: str, program: str | None) -> list[str]:
    """Tool names the reply's code or its program uses that the request does not mention."""
    names = set(find_tool_leaks(reply, allowed=task.request))
    wanted = AGENT_TOOL_NAMES - mentioned_names(task.request)
    names |= {site.name for site in leak_sites(program or "", wanted)}
    return sorted(names)


@dataclass
class Row:
    """One arm's answer to one task."""

    passed: bool
    leaks: list[str]
    seconds: float
    repaired: bool = False
    ran_code: bool = False


def ask_agent(chat: Any, arm: str, index: int, task: LeakTask) -> tuple[str, dict[str, Any], bool]:
    """The agent's reply, its `extra`, and whether it ran code before answering."""
    result = chat.handle([Message(role="user", content=task.request)], session_id=f"{arm}-{index}")
    ran = any(call.name in ("run_python", "run_shell") for call in result.tool_calls)
    return result.reply, dict(result.trajectory.extra), ran


def ask_plain(model: ChatModel, task: LeakTask, temperature: float, max_tokens: int) -> str:
    """The model's reply with no agent around it."""
    messages = [
        Message(role="system", content=PLAIN_SYSTEM),
        Message(role="user", content=task.request),
    ]
    return model.complete(messages, temperature=temperature, max_tokens=max_tokens).text


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of k successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def check_tasks(sandbox: Sandbox) -> None:
    """Run every reference solution through its checker; print failures."""
    bad = [i for i, task in enumerate(TASKS) if not passes(sandbox, task, task.reference)]
    print(f"{len(TASKS) - len(bad)}/{len(TASKS)} reference solutions pass their checkers")
    for index in bad:
        print(f"  task {index} FAILS: {TASKS[index].request[:80]}")
    assert not bad, "a checker or reference solution is wrong"


def summarise(arms: list[str], rows: dict[str, list[Row]]) -> None:
    """Print the per-arm figures and the agent/plain discordant pairs."""
    print(
        f"\n{'arm':<10} {'leaking':>9} {'pass@1':>8} {'95% CI':>13} {'repaired':>9} "
        f"{'ran code':>9} {'s/req':>7}"
    )
    for arm in arms:
        got = rows[arm]
        n = len(got)
        k = sum(r.passed for r in got)
        low, high = wilson(k, n)
        leaks = sum(bool(r.leaks) for r in got)
        repaired = f"{sum(r.repaired for r in got)}" if arm == "agent" else "-"
        ran = f"{sum(r.ran_code for r in got)}" if arm != "plain" else "-"
        seconds = sum(r.seconds for r in got) / max(n, 1)
        print(
            f"{arm:<10} {leaks:>5}/{n:<3} {k:>4}/{n:<3} {low:>6.2f}-{high:<6.2f} "
            f"{repaired:>9} {ran:>9} {seconds:>7.1f}"
        )
    if "agent" in rows and "plain" in rows:
        pairs = list(zip(rows["agent"], rows["plain"], strict=True))
        only_agent = sum(a.passed and not p.passed for a, p in pairs)
        only_plain = sum(p.passed and not a.passed for a, p in pairs)
        print(f"\ndiscordant pairs: agent only {only_agent}, plain only {only_plain}")


def main() -> None:
    """Run the arms on the tasks and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="catalog model (default: the default)")
    parser.add_argument("--limit", type=int, default=len(TASKS), help="first N tasks")
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma list of {ARMS}")
    parser.add_argument("--temperature", type=float, default=None, help="default: Settings")
    parser.add_argument("--max-tokens", type=int, default=None, help="default: Settings")
    parser.add_argument("--no-self-play-tools", action="store_true", help="as `serve` with it")
    parser.add_argument("--check-tasks", action="store_true", help="only check the checkers")
    args = parser.parse_args()
    sandbox = Sandbox()
    if args.check_tasks:
        check_tasks(sandbox)
        return
    arms = [arm.strip() for arm in args.arms.split(",") if arm.strip()]
    unknown = set(arms) - set(ARMS)
    if unknown:
        parser.error(f"unknown arm(s): {', '.join(sorted(unknown))}")
    settings = Settings(model=args.model) if args.model else Settings()
    temperature = settings.temperature if args.temperature is None else args.temperature
    max_tokens = settings.max_tokens if args.max_tokens is None else args.max_tokens
    model = make_model(settings)
    check_model(model)
    tasks = TASKS[: args.limit]
    rows: dict[str, list[Row]] = {arm: [] for arm in arms}
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "bench.db") as store:
        Path(tmp).chmod(0o711)  # the sandbox user must reach the workspaces under it
        foreground = Foreground()
        practice = None
        if not args.no_self_play_tools:
            practice = SelfPlayTools(
                store,
                model,
                sandbox,
                foreground=foreground,
                temperature=temperature,
                max_tokens=max_tokens,
                home=Path(tmp),
            )
        chats = {
            arm: ForegroundService(
                ChatPipeline(
                    model=model,
                    store=store,
                    sandbox=sandbox,
                    memory=None,
                    reflector=None,
                    workspace_root=Path(tmp) / "workspaces",
                    config=AgentConfig(
                        max_tokens=max_tokens,
                        temperature=temperature,
                        repair_tool_leaks=arm == "agent",
                    ),
                    practice=practice,
                ),
                foreground,
            )
            for arm in arms
            if arm != "plain"
        }
        print(
            f"model {model.name}; {len(tasks)} whole-program requests; temperature "
            f"{temperature}, max_tokens {max_tokens}; self-play tools "
            f"{'off' if practice is None else 'on'}\n"
        )
        print(f"{'#':>2} {'request':<52} " + " ".join(f"{arm:<22}" for arm in arms))
        for index, task in enumerate(tasks):
            cells = []
            for arm in arms:
                started = time.perf_counter()
                extra: dict[str, Any] = {}
                ran = False
                if arm == "plain":
                    reply = ask_plain(model, task, temperature, max_tokens)
                else:
                    reply, extra, ran = ask_agent(chats[arm], arm, index, task)
                seconds = time.perf_counter() - started
                program = extract_code(reply, PROGRAM)
                leak = extra.get("tool_leak") or {}
                row = Row(
                    passes(sandbox, task, program),
                    leaked(task, reply, program),
                    seconds,
                    repaired=bool(leak.get("repaired")),
                    ran_code=ran,
                )
                rows[arm].append(row)
                cells.append(f"{'+' if row.passed else '-'} {','.join(row.leaks) or '.'}"[:22])
            request = task.request.removeprefix("Write a complete Python program that ")
            print(f"{index:>2} {request[:52]:<52} " + " ".join(f"{c:<22}" for c in cells))
        for chat in chats.values():
            chat.close()
        if practice is not None:
            practice.stop("bench over")
    summarise(arms, rows)


if __name__ == "__main__":
    main()
