"""Template building blocks: the marker preprocessor and the checker library (unsandboxed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nightschool.challenges._templates._kit import (
    near_miss,
    select,
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
