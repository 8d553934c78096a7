"""Template building blocks: the marker preprocessor and the checker library (unsandboxed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nightschool.challenges._templates._kit import (
    Case,
    Expr,
    call,
    function_prompt,
    function_validator,
    near_miss,
    script_validator,
    select,
    starter_validator_script,
    twists,
    validator_script,
)

SOURCE = """
    keep = 1
    only_t1 = 1  #+t1
    unless_t1 = 1  #-t1
    either = 1  #+t1|bug
    neither = 1  #-t1|bug
    t1_not_t2 = 1  #=t1&!t2
"""


@pytest.mark.parametrize(
    ("features", "expected"),
    [
        (set(), ["keep", "unless_t1", "neither"]),
        ({"t1"}, ["keep", "only_t1", "either", "t1_not_t2"]),
        ({"t1", "t2"}, ["keep", "only_t1", "either"]),
        ({"bug"}, ["keep", "unless_t1", "either"]),
    ],
)
def test_select_keeps_the_lines_of_the_features(features: set[str], expected: list[str]) -> None:
    out = select(SOURCE, features)
    assert [line.split(" = ")[0] for line in out.splitlines()] == expected
    assert "#" not in out


def test_feature_sets_of_tiers() -> None:
    assert twists(0) == set() and twists(3) == {"t1", "t2", "t3"}
    assert near_miss(0) == {"bug"} and near_miss(2) == {"t1"}


def run_check(tmp_path: Path, body: str, data: object, solution: str, name: str = "solution.py"):
    """Run a validator over `solution` in a fresh folder under `tmp_path`."""
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(solution)
    return subprocess.run(
        [sys.executable, "-"],
        input=validator_script(body, data, name),
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=30,
    )


LINES = """
    out, _ = run_solution(SOLUTION)
    check_lines(out, DATA, "stdout")
    passed()
"""


def test_lines_match_ignoring_spacing_and_last_decimal(tmp_path: Path) -> None:
    solution = "print('a ,  1.51');print();print('b 2 50%')\n"
    result = run_check(tmp_path, LINES, ["a,1.50", "b 2 50.0%"], solution)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "PASS"


@pytest.mark.parametrize(
    ("solution", "message"),
    [
        ("print('a 1')\nprint('b 3')\n", "stdout line 2: expected 'b 2', got 'b 3'"),
        ("print('a 1')\n", "stdout line 2: expected 'b 2', got nothing"),
        ("print('a 1\\nb 2\\nc 3')\n", "unexpected extra line 'c 3'"),
        ("print('a 1.0')\nprint('b 2')\n", "expected 'a 1', got 'a 1.0'"),
        ("", "stdout line 1: expected 'a 1', got nothing"),
        ("import sys\nsys.exit('boom')\n", "exited with status 1"),
    ],
)
def test_line_mismatch_says_what_differed(tmp_path: Path, solution: str, message: str) -> None:
    result = run_check(tmp_path, LINES, ["a 1", "b 2"], solution)
    assert result.returncode == 1
    assert result.stdout.startswith("FAIL: ")
    assert message in result.stdout
    assert "def check_lines" not in result.stdout + result.stderr


def test_decimal_tolerance_is_one_unit_in_the_last_place(tmp_path: Path) -> None:
    assert run_check(tmp_path, LINES, ["x 2.50"], "print('x 2.51')").returncode == 0
    assert run_check(tmp_path, LINES, ["x 2.50"], "print('x 2.53')").returncode == 1
    assert run_check(tmp_path, LINES, ["x 2.50"], "print('x abc')").returncode == 1


def test_exact_mode_compares_spaces(tmp_path: Path) -> None:
    body = 'out, _ = run_solution(SOLUTION)\ncheck_lines(out, DATA, "stdout", exact=True)\npassed()'
    assert run_check(tmp_path, body, ["a  | b"], "print('a  | b   ')\nprint()").returncode == 0
    result = run_check(tmp_path, body, ["a  | b"], "print('a | b')")
    assert result.returncode == 1 and "expected 'a  | b', got 'a | b'" in result.stdout


def test_json_file_diff_names_the_path(tmp_path: Path) -> None:
    body = "run_solution(SOLUTION)\ncheck_json_file('out.json', DATA)\npassed()"
    write = "import json\njson.dump({}, open('out.json', 'w'))\n"
    expected = {"a": {"b": [1, 2]}, "c": True}
    ok = run_check(tmp_path, body, expected, write.replace("{}", repr(expected)))
    assert ok.returncode == 0, ok.stdout
    bad = run_check(tmp_path, body, expected, write.replace("{}", "{'a': {'b': [1, 3]}, 'c': 1}"))
    assert bad.returncode == 1 and "at $.a.b[1]: expected 2, got '3'" in bad.stdout
    missing = run_check(tmp_path, body, expected, "pass\n")
    assert "the output file out.json was not created" in missing.stdout
    broken = run_check(tmp_path, body, expected, "open('out.json', 'w').write('{')\n")
    assert "out.json is not valid JSON" in broken.stdout


def test_solution_timeout_and_missing_file(tmp_path: Path) -> None:
    body = "run_solution(SOLUTION, timeout_s=0.5)\npassed()"
    slow = run_check(tmp_path, body, None, "import time\ntime.sleep(5)\n")
    assert slow.returncode == 1 and "did not finish within 0.5 s" in slow.stdout
    absent = subprocess.run(
        [sys.executable, "-"],
        input=validator_script(body, None),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "solution.py was not found" in absent.stdout


def test_shell_solutions_run_with_bash(tmp_path: Path) -> None:
    result = run_check(tmp_path, LINES, ["hi 1"], "echo hi $((0 + 1))\n", name="solution.sh")
    assert result.returncode == 0, result.stdout


# --------------------------------------------------------------------------- starter checks


def run_script(tmp_path: Path, script: str, solution: str, name: str = "solution.py"):
    """Run a validation script over `solution` in a fresh folder under `tmp_path`."""
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(solution)
    return subprocess.run(
        [sys.executable, "-"], input=script, capture_output=True, text=True, cwd=folder, timeout=60
    )


SQUARES = [Case(call("square", x), x * x) for x in (2, -3, 0, 7)]


def test_call_and_expr_write_python_calls() -> None:
    assert call("f", [1, (2, "a")], None) == "f([1, (2, 'a')], None)"
    assert call("total", Expr("con"), "amy") == "total(con, 'amy')"


def test_function_prompt_is_humaneval_shaped() -> None:
    text = function_prompt("square", "def square(x: int) -> int:", "Return x squared.", SQUARES[:1])
    assert '```python\ndef square(x: int) -> int:\n    """Return x squared.' in text
    assert ">>> square(2)\n    4\n" in text
    assert "`solution.py`" in text and "calls `square` on hidden tests" in text


def test_function_validator_passes_a_correct_function(tmp_path: Path) -> None:
    script = function_validator("square", SQUARES)
    result = run_script(tmp_path, script, "def square(x):\n    return x * x\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "PASS"


def test_failure_names_the_first_failing_call_only(tmp_path: Path) -> None:
    script = function_validator("square", SQUARES)
    result = run_script(tmp_path, script, "def square(x):\n    return x * abs(x)\n")
    assert result.returncode == 1
    assert result.stdout.strip() == "FAIL: square(-3) returned -9, expected 9 (test 2 of 4)"
    for hidden in ("square(7)", "square(0)", "49", "DATA", "def check_calls"):
        assert hidden not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("solution", "message"),
    [
        (
            "def square(x):\n    return x**3 // x\n",
            "square(0) raised ZeroDivisionError: integer division or modulo by zero "
            "(solution.py line 2) (test 3 of 4)",
        ),
        ("def cube(x):\n    return x ** 3\n", "does not define a function named `square`"),
        ("def square(x) return x\n", "importing solution.py failed: SyntaxError"),
        ("x = int(input())\n", "EOFError: EOF when reading a line (solution.py line 1)"),
        ("import sys\nx = sys.stdin.read()\ndef square(x):\n    return x\n", "returned 2"),
        ("def square(x):\n    print(x * x)\n", "returned None, expected 4 (it printed '4\\n'"),
        ("def square(x):\n    return str(x * x)\n", "returned '4', expected 4"),
        ("def square(x):\n    return {x * x}\n", "returned {4}, expected 4"),
        ("import os\nprint('PASS')\nos._exit(0)\n", "stopped the checker"),
        ("raise SystemExit(0)\n", "importing solution.py failed: SystemExit: 0"),
    ],
)
def test_starter_failures_say_what_went_wrong(tmp_path: Path, solution: str, message: str) -> None:
    result = run_script(tmp_path, function_validator("square", SQUARES), solution)
    assert result.returncode == 1, result.stdout
    assert result.stdout.startswith("FAIL: ")
    assert message in result.stdout
    assert "def _same_value" not in result.stdout + result.stderr


def test_input_hint_and_tuple_and_number_leniency(tmp_path: Path) -> None:
    cases = [Case(call("pair", 1), [1, 0.5]), Case(call("pair", 4), [4, 2.0])]
    script = function_validator("pair", cases)
    good = run_script(tmp_path, script, "def pair(x):\n    return (x, x / 2)\n")
    assert good.returncode == 0, good.stdout
    strict = run_script(tmp_path, script, "def pair(x):\n    return (x, True)\n")
    assert strict.returncode == 1
    reads = run_script(tmp_path, script, "def pair(x):\n    return input()\n")
    assert "do not read input: the function gets its data as arguments" in reads.stdout


def test_a_hanging_call_is_named(tmp_path: Path) -> None:
    data = {
        "func": "square",
        "prelude": "",
        "cases": [case.data() for case in SQUARES],
    }
    script = starter_validator_script("check_calls(SOLUTION, DATA, timeout_s=1.5)", data)
    hang = "def square(x):\n    while x == 0:\n        pass\n    return x * x\n"
    result = run_script(tmp_path, script, hang)
    assert result.returncode == 1
    assert "FAIL: square(0) did not return within 1.5 s" in result.stdout


def test_prelude_fixtures_and_checks(tmp_path: Path) -> None:
    prelude = "calls = []\ndef note(x):\n    calls.append(x)\n    return x\n"
    cases = [
        Case(call("twice", Expr("note"), 3), 6, (("len(calls) == 2", "call note() twice"),)),
    ]
    script = function_validator("twice", cases, prelude=prelude)
    good = run_script(tmp_path, script, "def twice(f, x):\n    return f(x) + f(x)\n")
    assert good.returncode == 0, good.stdout
    once = run_script(tmp_path, script, "def twice(f, x):\n    return 2 * f(x)\n")
    assert once.stdout.strip() == "FAIL: twice(note, 3): call note() twice (test 1 of 1)"


def test_script_rounds_catch_a_hardcoded_answer(tmp_path: Path) -> None:
    rounds = [
        {"stdout": ["a 2"]},
        {"files": {"in.txt": "b\nb\nb\n"}, "shown": "b\nb\nb\n", "stdout": ["b 3"]},
    ]
    script = script_validator(rounds)
    folder_text = "a\na\n"
    honest = "sort in.txt | uniq -c | awk '{print $2, $1}'\n"
    for solution, code in ((honest, 0), ("echo a 2\n", 1)):
        folder = tmp_path / f"r{code}"
        folder.mkdir()
        (folder / "in.txt").write_text(folder_text)
        (folder / "solution.sh").write_text(solution)
        result = subprocess.run(
            [sys.executable, "-"], input=script, capture_output=True, text=True, cwd=folder
        )
        assert result.returncode == code, result.stdout
    assert result.stdout.startswith("FAIL: on another input (run 2), stdout line 1: expected")
    assert "That input:\nb\nb\nb" in result.stdout
