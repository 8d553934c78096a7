"""Whole-program requests for `bench_tool_leak.py`: stdin, files, the exact stdout.

Each request asks for a complete Python program (not a function) with a checker:
the program runs as `python3 prog.py` with `stdin` and `files` beside it and
passes when its stdout equals `expected` (trailing spaces and blank edges
removed). Written here for the issue "Transfer, measured honestly", part 3,
from the failures a user met through `serve` (reading stdin when a file is
named, printing extra lines); `reference` is a correct program for each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
