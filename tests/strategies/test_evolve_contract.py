"""The strategy contract lint: baselines pass, every forbidden construct is caught with its line."""

from __future__ import annotations

import pytest

from nightschool.strategies import BASELINES, CONTRACT_TEXT, StrategyContractError, check_strategy
from nightschool.strategies.contract import ALLOWED_IMPORTS, HARNESS_API, lint_strategy

OK = "def solve(task, harness):\n    return harness.sample()\n"


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baselines_pass_the_lint(name: str) -> None:
    assert lint_strategy(BASELINES[name]) == []
    check_strategy(BASELINES[name])


def test_allowed_strategy_with_allowed_imports_and_helpers() -> None:
    source = (
        "import re\nimport math\nfrom math import ceil\n\n"
        "def _short(text):\n    return re.sub(r'\\s+', ' ', text)[:200]\n\n"
        "def solve(task, harness):\n"
        "    n = math.ceil(harness.budget_left / 2)\n"
        "    code = harness.sample(prompt_extra=task['prompt'][:10], temperature=0.5)\n"
        "    for _ in range(n):\n"
        "        fb = harness.run_tests(code)\n"
        "        if fb == 'PASSED':\n            return code\n"
        "        code = harness.refine(code, _short(fb + harness.critique(code)))\n"
        "    return code\n"
    )
    assert lint_strategy(source) == []


FORBIDDEN = [
    ("import os", "import of 'os'"),
    ("import subprocess", "import of 'subprocess'"),
    ("import socket", "import of 'socket'"),
    ("from pathlib import Path", "import from 'pathlib'"),
    ("import importlib", "import of 'importlib'"),
    ("from . import x", "import from '.'"),
    ("from math import *", "import of '*'"),
    ("x = eval('1')", "forbidden name 'eval'"),
    ("exec('x = 1')", "forbidden name 'exec'"),
    ("c = compile('1', 'f', 'eval')", "forbidden name 'compile'"),
    ("m = __import__('os')", "forbidden name '__import__'"),
    ("f = open('/etc/passwd')", "forbidden name 'open'"),
    ("g = getattr(object, 'x')", "forbidden name 'getattr'"),
    ("setattr(object, 'x', 1)", "forbidden name 'setattr'"),
    ("g = globals()", "forbidden name 'globals'"),
    ("l = locals()", "forbidden name 'locals'"),
    ("v = vars()", "forbidden name 'vars'"),
    ("s = sys.argv", "forbidden name 'sys'"),
    ("d = solve.__dict__", "dunder attribute access .__dict__"),
    ("k = ().__class__.__bases__", "dunder attribute access .__class__"),
    ("b = __builtins__", "forbidden name '__builtins__'"),
    ("q = '{0.__globals__}'.format(solve)", "dunder name inside a string"),
    ("global counter", "global statement"),
    ("class K:\n    pass", "class definitions are not allowed"),
]


@pytest.mark.parametrize(("line", "expected"), FORBIDDEN, ids=[f[0][:24] for f in FORBIDDEN])
def test_each_forbidden_construct_is_reported_with_its_line(line: str, expected: str) -> None:
    source = OK + "\n\ndef helper():\n    " + line.replace("\n", "\n    ") + "\n"
    if line.startswith(("import", "from", "class")):
        source = OK + "\n" + line + "\n"
    violations = lint_strategy(source)
    assert violations, source
    assert any(expected in v.message for v in violations), violations
    first_line = 4 if line.startswith(("import", "from", "class")) else 6
    assert any(v.line == first_line for v in violations), (violations, first_line)
    with pytest.raises(StrategyContractError) as caught:
        check_strategy(source)
    assert f"line {first_line}:" in str(caught.value)


def test_harness_attributes_outside_the_api_are_rejected() -> None:
    source = "def solve(task, h):\n    h._model.complete([])\n    return h.sample()\n"
    [violation] = lint_strategy(source)
    assert violation.line == 2 and "h._model" not in violation.message
    assert "harness._model is not part of the harness API" in violation.message


def test_entry_point_is_required_with_two_arguments() -> None:
    assert "no top-level `def solve" in lint_strategy("x = 1\n")[0].message
    [violation] = lint_strategy("def solve(task):\n    return ''\n")
    assert "exactly two arguments" in violation.message and violation.line == 1
    assert "syntax error" in lint_strategy("def solve(task, harness)\n  return")[0].message


def test_contract_text_names_the_whole_api_and_the_allow_list() -> None:
    for name in HARNESS_API:
        assert f"harness.{name}" in CONTRACT_TEXT
    for module in ALLOWED_IMPORTS:
        assert f"`{module}`" in CONTRACT_TEXT


# Escapes that passed the first version of the lint (review of 2026-11-21): each
# reaches `sys`, the builtins or the runner's globals without a dunder or getattr.
BYPASSES = [
    (
        "re.enum.sys",
        "import re\n\ndef solve(task, harness):\n    return str(re.enum.sys.modules)\n",
    ),
    (
        "from re import enum",
        "from re import enum\n\ndef solve(task, harness):\n    return enum.sys\n",
    ),
    ("re.functools", "import re\n\ndef solve(task, harness):\n    return re.functools\n"),
    ("re private module", "import re\n\ndef solve(task, harness):\n    return re._compiler\n"),
    (
        "alias by walrus",
        "import re\n\ndef solve(task, harness):\n    (m := re)\n    return m.enum\n",
    ),
    (
        "alias by assignment",
        "import re as r\n\ndef solve(task, harness):\n    m = r\n    return m\n",
    ),
    (
        "alias by lambda default",
        "import re\n\ndef solve(task, harness):\n    return (lambda m=re: m)()\n",
    ),
    (
        "match on the module",
        "import re\n\ndef solve(task, harness):\n    match re:\n"
        "        case object(enum=e):\n            return e.sys\n    return ''\n",
    ),
    (
        "generator frame builtins",
        "def solve(task, harness):\n    g = (i for i in [0])\n"
        "    return g.gi_frame.f_builtins['op' + 'en']\n",
    ),
    (
        "caller frame globals",
        "def solve(task, harness):\n    def gen():\n        yield 1\n    g = gen()\n"
        "    return g.gi_frame.f_back.f_globals\n",
    ),
    (
        "match class pattern attribute",
        "def solve(task, harness):\n    g = (i for i in [0])\n    match g:\n"
        "        case object(gi_frame=f):\n            return f\n    return ''\n",
    ),
    ("code object", "def solve(task, harness):\n    return (i for i in []).gi_code.co_consts\n"),
    ("private attribute", "def solve(task, harness):\n    return task._cache\n"),
    ("f-string", "import re\n\ndef solve(task, harness):\n    return f'{re.enum.sys}'\n"),
    ("site license", "def solve(task, harness):\n    return str(license())\n"),
]


@pytest.mark.parametrize(("name", "source"), BYPASSES, ids=[b[0] for b in BYPASSES])
def test_reflection_bypasses_are_rejected(name: str, source: str) -> None:
    assert lint_strategy(source), name


def test_module_api_is_usable_and_reaches_no_module_or_frame() -> None:
    import math
    import re
    import types

    from nightschool.strategies.contract import INTROSPECTION_PREFIXES, MODULE_API

    source = (
        "import re\nfrom math import floor\n\ndef solve(task, harness):\n"
        "    m = re.compile(r'(\\d+)').search(task['prompt'])\n"
        "    n = floor(int(m.group(1)) / 2) if m else 1\n"
        "    return re.sub(r'x', 'y', harness.sample(prompt_extra=str(n)), flags=re.M)\n"
    )
    assert lint_strategy(source) == []
    seen: set[int] = set()
    reached: list[str] = []

    def walk(obj: object, path: str, depth: int) -> None:
        if depth > 4 or id(obj) in seen:
            return
        seen.add(id(obj))
        for attr in dir(obj):
            if attr.startswith("_") or attr.startswith(INTROSPECTION_PREFIXES):
                continue
            try:
                value = getattr(obj, attr)
            except Exception:
                continue
            if isinstance(value, types.ModuleType | types.FrameType | types.CodeType):
                reached.append(f"{path}.{attr}")
            walk(value, f"{path}.{attr}", depth + 1)

    modules = {"re": re, "math": math}
    for module, names in MODULE_API.items():
        for name in sorted(names):
            walk(getattr(modules[module], name), f"{module}.{name}", 1)
    assert reached == []


def test_contract_text_states_the_harness_text_limits() -> None:
    from nightschool.strategies.harness import (
        MAX_CODE_CHARS,
        MAX_FEEDBACK_CHARS,
        MAX_PROMPT_EXTRA_CHARS,
    )

    assert MAX_PROMPT_EXTRA_CHARS == MAX_FEEDBACK_CHARS
    assert f"prompt_extra and feedback at most {MAX_FEEDBACK_CHARS} characters" in CONTRACT_TEXT
    assert f"code at most {MAX_CODE_CHARS}" in CONTRACT_TEXT
