"""Stripping top-level test code from function-completion answers."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from nightschool.challenges import evaluate, render
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver, SolverConfig
from nightschool.solver.sanitize import strip_test_code

ANSWER = textwrap.dedent(
    '''\
    """Top players."""
    import re
    from collections import Counter

    PATTERN = re.compile(r"\\w+")
    UNUSED = 3


    @staticmethod
    def helper(x):
        return PATTERN.findall(x)


    def top_k(games, k):
        # totals per player
        totals = Counter()
        for player, points in games:
            totals[player] += points
        return totals.most_common(k)


    def check():
        assert top_k([("a", 1)], 1) == [("b", 2)]


    result = top_k([("a", 1)], 1)
    print(result)
    assert result == [("z", 0)]
    check()
    for i in range(3):
        print(i)
    if __name__ == "__main__":
        check()
    '''
)


def test_strip_keeps_definitions_and_what_they_read_and_drops_the_rest() -> None:
    clean, dropped = strip_test_code(ANSWER)
    assert dropped == 7  # UNUSED, result =, print, assert, check(), for, if __name__
    assert "def top_k(games, k):\n    # totals per player" in clean  # kept verbatim
    assert "@staticmethod\ndef helper" in clean and 'PATTERN = re.compile(r"\\w+")' in clean
    assert "def check():" in clean  # defined, never called: harmless
    assert clean.startswith('"""Top players."""\n') and "import re" in clean
    for gone in ("UNUSED", "print(", "result =", "__main__", "for i in"):
        assert gone not in clean
    namespace: dict[str, object] = {}
    exec(compile(clean, "solution.py", "exec"), namespace)  # imports without running tests
    assert callable(namespace["top_k"])
    assert strip_test_code(clean) == (clean, 0)  # idempotent


@pytest.mark.parametrize(
    "code",
    [
        "def f(:\n    pass\nassert False\n",  # does not parse: the checker reports it
        "def f(x):\n    return x\n",  # nothing to drop
        "print('only a script')\n",  # nothing would be left: not a function answer
    ],
)
def test_strip_leaves_unparseable_clean_or_script_source_alone(code: str) -> None:
    assert strip_test_code(code) == (code, 0)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_stripping_turns_an_import_crash_into_a_judged_function_in_the_real_sandbox() -> None:
    sandbox = Sandbox()
    challenge = render("algo.top_k", "starter", 11)
    crash = "\n\nassert top_k([], 1) == ['made up']\n"
    right = challenge.reference_solution + crash
    wrong = challenge.wrong_solution + crash
    assert not evaluate(sandbox, challenge, right).passed  # fails before any call
    assert evaluate(sandbox, challenge, strip_test_code(right)[0]).passed
    # stripping cannot make a wrong function right
    assert not evaluate(sandbox, challenge, strip_test_code(wrong)[0]).passed

    reply = f"```python\n{right}\n```"
    solver = Solver(ScriptedModel([reply]), sandbox, SolverConfig(max_attempts=1))
    result = solver.solve(challenge)
    assert result.passed
    call = result.trajectory.tool_calls[0]
    assert call.arguments["stripped_statements"] == 1
    assert "made up" not in str(call.arguments["code"])  # the skill would store clean code

    raw = Solver(
        ScriptedModel([reply]), sandbox, SolverConfig(max_attempts=1, strip_test_code=False)
    )
    assert not raw.solve(challenge).passed  # the ablation: code judged as written
