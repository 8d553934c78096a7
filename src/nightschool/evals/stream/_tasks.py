"""Stream tasks: one function to write, one public test shown, every test scored.

A `StreamTask` is a benchmark problem as a user's request would reach the
agent: the function's signature and docstring, plus **one public test** (the
first assert of the benchmark's `check(candidate)`, rewritten to call the
function by name) that the agent may learn from. The **hidden tests** (the
whole `check`) only score the answer; they never enter a prompt, a
trajectory or the memory.

`challenge_for` turns a task into a `Challenge` whose validator runs the
public test alone, so the solver, the trajectory and the lesson extractor
see exactly what a user would have. `hidden_program` is the scoring program:
the problem's prompt (imports and helpers), the answer, then every test.
"""

from __future__ import annotations

import ast
import hashlib
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from nightschool.challenges import Challenge

STREAM_CLUSTER = "python_general"
"""Cluster recorded on stream challenges: both benchmarks are general Python functions."""

INSTRUCTION = (
    "Complete the following Python function. Reply with the complete function "
    "(signature and body) in one ```python code block. Use only the standard library.\n\n"
)
"""Put before the problem in the request (the `humaneval` suite's wording)."""

PUBLIC_NOTE = "Your function must pass this test (other tests are hidden):"
"""Introduces the public test in the request."""


@dataclass(frozen=True)
class StreamTask:
    """One problem of a stream.

    Attributes:
        task_id: the benchmark's id (`HumanEval/12`, `mbpp_464_check_value`).
        suite: `humaneval` or `mbpp`.
        prompt: the benchmark prompt: imports, signature, docstring (no body).
        entry_point: the function under test.
        public_test: one assert calling `entry_point` by name (shown, learned from).
        check_source: the public test as the body of `check(candidate)`
            (statements before the first assert, then that assert).
        hidden_test: the benchmark's whole test source (defines `check`;
            scoring only).
    """

    task_id: str
    suite: str
    prompt: str
    entry_point: str
    public_test: str
    check_source: str
    hidden_test: str

    @property
    def request(self) -> str:
        """The text the agent is asked: instruction, prompt, the public test."""
        return f"{INSTRUCTION}{self.prompt.rstrip()}\n\n{PUBLIC_NOTE}\n{self.public_test}\n"


def _check_def(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return node
    return None


def split_public(test: str, entry_point: str) -> tuple[str, str]:
    """The public test of a benchmark's `check(candidate)`: (shown text, check body).

    The first top-level statement of `check` that holds an `assert` (an
    assert, or a loop of asserts) is the public test; statements before it
    (helper imports, local data; not docstrings or bare calls) come with it
    so it runs and reads as it would in the benchmark.

    Args:
        test: the benchmark's test source defining `def check(candidate)`.
        entry_point: the function's name, replacing `candidate` in the shown text.

    Returns:
        (the test as shown to the agent, calling `entry_point`; the body of a
        `check(candidate)` that runs only that test, unindented).

    Raises:
        ValueError: the source has no `check` function with an assert.
    """
    tree = ast.parse(test)
    check = _check_def(tree)
    if check is None:
        raise ValueError("the test source defines no check(candidate)")
    before: list[str] = []
    for node in check.body:
        segment = ast.get_source_segment(test, node)
        if segment is None:  # pragma: no cover - parsed from this very text
            continue
        segment = textwrap.dedent(" " * node.col_offset + segment)
        if any(isinstance(inner, ast.Assert) for inner in ast.walk(node)):
            body = "\n".join([*before, segment])
            return re.sub(r"\bcandidate\b", entry_point, body), body
        if not isinstance(node, ast.Expr):  # docstrings and bare prints are dropped
            before.append(segment)
    raise ValueError("check(candidate) has no assert")


_DEF = "^def\\s+{name}\\s*\\("


def compose(prompt: str, entry_point: str, code: str) -> str:
    """The program text of an answer: the prompt, then the function (or body).

    A reply holding the whole function (`def <entry_point>(`) follows the
    prompt, so the prompt's imports and helpers stay defined and the new
    definition wins; anything else is taken as the body and indented under
    the prompt's signature (the `humaneval` suite's rule).
    """
    code = textwrap.dedent(code).strip("\n")
    if re.search(_DEF.format(name=re.escape(entry_point)), code, re.MULTILINE):
        return prompt + "\n" + code + "\n"
    return prompt + textwrap.indent(code, "    ") + "\n"


def hidden_program(task: StreamTask, code: str) -> str:
    """The scoring program: the composed answer, every test, then `check(entry_point)`."""
    program = compose(task.prompt, task.entry_point, code)
    return f"{program}\n\n{task.hidden_test}\n\ncheck({task.entry_point})\n"


_VALIDATOR = """\
import re, sys, textwrap
PROMPT = {prompt!r}
ENTRY = {entry!r}
SHOWN = {shown!r}
try:
    code = open("solution.py", encoding="utf-8").read()
except OSError:
    print("no solution.py was written"); sys.exit(1)
code = textwrap.dedent(code).strip("\\n")
if re.search({pattern!r}, code, re.MULTILINE):
    program = PROMPT + "\\n" + code + "\\n"
else:
    program = PROMPT + textwrap.indent(code, "    ") + "\\n"
namespace = {{"__name__": "solution"}}
try:
    exec(compile(program, "solution.py", "exec"), namespace)
except BaseException as exc:
    print(f"solution.py failed to load: {{type(exc).__name__}}: {{exc}}"[:400]); sys.exit(1)
if not callable(namespace.get(ENTRY)):
    print(f"solution.py defines no function {{ENTRY}}()"); sys.exit(1)
namespace["candidate"] = namespace[ENTRY]
try:
    exec(compile({check!r}, "public_test", "exec"), namespace)
except AssertionError:
    got = ""
    try:
        if {left!r}:
            got = "; got " + repr(eval(compile({left!r}, "public_test", "eval"), namespace))[:200]
    except BaseException:
        pass
    print(f"public test failed: {{SHOWN}}{{got}}"[:400]); sys.exit(1)
except BaseException as exc:
    print(f"public test raised {{type(exc).__name__}}: {{exc}}"[:400]); sys.exit(1)
print("public test passed")
"""


def _left_side(check_source: str) -> str:
    """The compared expression of the public assert (`candidate(...)`), for the 'got' value.

    "" when the public test is not a plain `assert <expr> <op> <expected>`.
    """
    try:
        check = _check_def(ast.parse(check_source))
    except SyntaxError:
        return ""
    node = check.body[-1] if check is not None and check.body else None
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
        return ast.unparse(node.test.left)
    return ""


def validator_source(task: StreamTask) -> str:
    """The public-test validator, run as `python3 -` beside `solution.py`.

    It composes the program as `compose` does, runs the public assert only,
    prints one line (`public test failed: <assert>; got <value>`, a load
    error, or a pass) and exits 0 only on a pass. It holds no hidden test.
    """
    return _VALIDATOR.format(
        prompt=task.prompt,
        entry=task.entry_point,
        shown=task.public_test,
        pattern=_DEF.format(name=re.escape(task.entry_point)),
        check=task.check_source,
        left=_left_side(task.check_source),
    )


def challenge_for(task: StreamTask) -> Challenge:
    """The task as a `Challenge` judged by its public test alone.

    Every task is its own template (`<suite>.<task_id>`), tier `starter`,
    source `stream`; `reference_solution` and `wrong_solution` are empty
    (benchmarks ship no reference the agent may see).
    """
    return Challenge(
        template=f"{task.suite}.{task.task_id}",
        cluster=STREAM_CLUSTER,
        tier="starter",
        seed=0,
        prompt=task.request,
        setup_script="",
        validation_script=validator_source(task),
        reference_solution="",
        wrong_solution="",
        solution_file="solution.py",
        source="stream",
    )


def make_task(*, task_id: str, suite: str, prompt: str, entry_point: str, test: str) -> StreamTask:
    """A `StreamTask` from a benchmark row (see `split_public`).

    Raises:
        ValueError: the test source has no `check(candidate)` with an assert.
    """
    shown, body = split_public(test, entry_point)
    return StreamTask(
        task_id=task_id,
        suite=suite,
        prompt=prompt,
        entry_point=entry_point,
        public_test=shown,
        check_source=(
            f"def check(candidate):\n{textwrap.indent(body, '    ')}\n\ncheck(candidate)\n"
        ),
        hidden_test=test,
    )


def ordered(tasks: Sequence[StreamTask], order_seed: int) -> list[StreamTask]:
    """`tasks` in the stream's fixed order for `order_seed`.

    The order sorts by sha256 of `f"{order_seed}:{task_id}"`: the same seed
    gives the same order on every machine and Python version, and a prefix
    (`--limit`) of one order is a uniform sample of the suite.
    """

    def key(task: StreamTask) -> str:
        return hashlib.sha256(f"{order_seed}:{task.task_id}".encode()).hexdigest()

    return sorted(tasks, key=key)
