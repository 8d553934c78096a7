"""Quality gates for challenges the model writes: pure checks and sandbox dry runs.

Every gate returns None when the challenge passes it, or a one-line rejection
detail. The validator self-test is in `_selftest` (it returns a
`SelfTestResult`: passed, rejected or skipped, so that benches can count how
often it could not run).

Where the checks come from:

- `preflight` and `validator_self_test`: the predecessor system's "validator
  self-test gate" (PRIOR-ART: generated validators crash on their own expected
  output: a `%` suffix then `float()`, a literal backslash-n split, import
  mix-ups). Best effort: a gate that cannot run skips rather than blocks
  (false negatives are preferred over false positives).
- `validator_crash`: its "widened runtime crash detector": a validator that
  raises in its own code while judging is broken, not the solver.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from dataclasses import dataclass

from nightschool.challenges._model import Challenge
from nightschool.sandbox import ExecResult, Sandbox, Workspace, python_argv

SOLUTION_FILE = "solution.py"
"""The file every generated (program-style) challenge asks for."""

PROMPT_CHARS = (40, 4000)
"""Shortest and longest acceptable challenge prompt, characters."""

SCRIPT_CHARS = 50_000
"""Longest acceptable setup, validation or reference script, characters (the template
bank's validators, checker library included, run to about 22,000)."""

NETWORK_MODULES = frozenset(
    {
        "aiohttp", "ftplib", "http", "httpx", "imaplib", "paramiko", "poplib", "requests",
        "smtplib", "socket", "socketserver", "ssl", "telnetlib", "urllib", "urllib2",
        "urllib3", "webbrowser", "websocket", "websockets", "xmlrpc",
    }
)  # fmt: skip
"""Modules no challenge script may import (the sandbox has no network anyway)."""

EXPECTED_NAMES: tuple[str, ...] = (
    "expected_output", "expected_stdout", "expected_lines", "expected", "expected_text",
    "expected_result", "expected_answer", "golden_output", "golden", "answer", "correct_output",
)  # fmt: skip
"""Variables the self-test probe looks for, in this order; after them, any other
name starting with `expected` (in source order). From the predecessor's gate."""

SOLUTION_RUNNERS = frozenset({"run", "check_output", "Popen", "call", "check_call"})
"""`subprocess` functions a validator may run the solution with."""

LOAD_ERRORS = frozenset(
    {"NameError", "UnboundLocalError", "ImportError", "ModuleNotFoundError",
     "SyntaxError", "IndentationError", "TabError"}
)  # fmt: skip
"""Exceptions that, raised in the validator's own code on an empty solution,
mean the validator cannot work for any solution (preflight)."""

NOT_CRASHES = frozenset({"AssertionError", "KeyboardInterrupt", "SystemExit"})
"""Exceptions that are a validator's way of failing, not a crash: `assert out
== expected` is how many generated validators say "wrong"."""

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+?))?\s*$')
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::[ ]?(?P<msg>.*))?$")
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\b|import\s+([\w., \t]+))", re.M)
_DYNAMIC_IMPORT = re.compile(r"""(?:__import__|import_module)\(\s*['"]([\w.]+)""")


@dataclass(frozen=True)
class ChallengeSpec:
    """The four sections of a model-written challenge, before any gate.

    Attributes:
        prompt: the task as the solver will see it.
        setup_script: Python source run as `python3 -` in the empty workspace.
        validation_script: Python source run as `python3 -` after `solution.py`
            is written; exit 0 means pass.
        reference_solution: the text of a correct `solution.py`.
    """

    prompt: str
    setup_script: str
    validation_script: str
    reference_solution: str


Scripts = ChallengeSpec | Challenge
"""What a gate reads: the four texts, of a candidate or of a stored challenge."""


@dataclass(frozen=True)
class _Traceback:
    files: tuple[str, ...]
    """Frame files, outermost first."""
    lines: tuple[int, ...]
    exception: str
    """The `Type: message` line ("" when none was found)."""
    text: str

    @property
    def exception_type(self) -> str:
        match = _EXCEPTION.match(self.exception)
        return match["type"].rsplit(".", 1)[-1] if match else ""


# -- pure checks -------------------------------------------------------------------------


def quality_check(spec: Scripts) -> str | None:
    """Reject a challenge whose texts are clearly broken, without running anything.

    Checks: the prompt is 40-4000 characters (`PROMPT_CHARS`) and names
    `solution.py`; every script is non-empty and under `SCRIPT_CHARS`; the
    validator runs `solution.py` through `subprocess` (`run`, `check_output`,
    `Popen`, `call`); no script imports a network module (`NETWORK_MODULES`)
    or a module outside the standard library (unless the setup script writes
    it as `name.py`); the prompt does not contain the reference solution's code
    (half or more of its substantive lines, at least 2); the validator does not
    print an expected-value variable wholesale (`print(expected_output)`).

    Args:
        spec: the four texts.

    Returns:
        None when nothing is clearly wrong, else a one-line detail.
    """
    low, high = PROMPT_CHARS
    prompt = spec.prompt.strip()
    if not low <= len(prompt) <= high:
        return f"the prompt has {len(prompt)} characters; {low}-{high} are expected"
    if SOLUTION_FILE not in prompt:
        return f"the prompt does not name the file to write ({SOLUTION_FILE})"
    scripts = {
        "setup script": spec.setup_script,
        "validation script": spec.validation_script,
        "reference solution": spec.reference_solution,
    }
    for label, text in scripts.items():
        if not text.strip():
            return f"the {label} is empty"
        if len(text) > SCRIPT_CHARS:
            return f"the {label} has {len(text)} characters (at most {SCRIPT_CHARS})"
    validator = spec.validation_script
    if SOLUTION_FILE not in validator or not _runs_subprocess(validator):
        return f"the validator does not run {SOLUTION_FILE} with subprocess.run"
    for label, text in scripts.items():
        problem = _import_problem(text, spec.setup_script)
        if problem:
            return f"the {label} {problem}"
    if _prompt_leaks(prompt, spec.reference_solution):
        return "the prompt contains the reference solution's code"
    printed = _prints_expected(validator)
    if printed:
        return f"the validator prints `{printed}` wholesale (the hidden answer)"
    return None


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _runs_subprocess(source: str) -> bool:
    tree = _parse(source)
    if tree is None:
        return (
            re.search(r"\b(?:subprocess\.)?(?:run|check_output|Popen|call)\s*\(", source)
            is not None
        )
    aliases = _subprocess_aliases(tree)
    return any(_is_runner_call(node, aliases) for node in ast.walk(tree))


def _imported_modules(source: str) -> set[str]:
    """Top-level names of every module `source` imports (statically or by string)."""
    names: set[str] = set()
    tree = _parse(source)
    if tree is None:
        for match in _IMPORT_LINE.finditer(source):
            if match[1]:
                names.add(match[1])
            else:
                names.update(part.split()[0] for part in match[2].split(",") if part.strip())
    else:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    names.update(_DYNAMIC_IMPORT.findall(source))
    return {name.split(".")[0] for name in names if name}


def _import_problem(source: str, setup: str) -> str | None:
    for name in sorted(_imported_modules(source)):
        if name in NETWORK_MODULES:
            return f"imports the network module {name}"
        if name not in sys.stdlib_module_names and f"{name}.py" not in setup:
            return f"imports {name}, which is not in the standard library"
    return None


def _prompt_leaks(prompt: str, reference: str) -> bool:
    """Whether half or more (at least 2) of the reference's substantive lines are in the prompt."""
    skip = ("#", "import ", "from ", "def main", "if __name__", "return", "else:", "try:")
    lines = {
        line.strip()
        for line in reference.splitlines()
        if len(line.strip()) >= 12 and not line.strip().startswith(skip)
    }
    if len(lines) < 2:
        return False
    found = sum(1 for line in lines if line in prompt)
    return found >= max(2, math.ceil(len(lines) / 2))


def _is_expected_name(name: str) -> bool:
    return name in EXPECTED_NAMES or name.startswith("expected")


def _prints_expected(validator: str) -> str | None:
    """The expected-value variable passed bare to `print`/`write`, if any."""
    tree = _parse(validator)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        is_print = isinstance(func, ast.Name) and func.id == "print"
        is_write = isinstance(func, ast.Attribute) and func.attr == "write"
        if not (is_print or is_write):
            continue
        for arg in node.args:
            inner = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(inner, ast.Name) and _is_expected_name(inner.id):
                return inner.id
    return None


# -- tracebacks --------------------------------------------------------------------------


def _tracebacks(text: str) -> list[_Traceback]:
    """Every Python traceback in `text`, including the header-less SyntaxError form."""
    lines = text.splitlines()
    found: list[_Traceback] = []
    i = 0
    while i < len(lines):
        frame = _FRAME.match(lines[i])
        header = lines[i].strip().startswith("Traceback (most recent call last)")
        if not header and not (frame and frame["func"] is None):
            i += 1
            continue
        start = i
        files: list[str] = []
        numbers: list[int] = []
        if not header and frame:
            files.append(frame["file"])
            numbers.append(int(frame["line"]))
        i += 1
        exception = ""
        while i < len(lines):
            line = lines[i]
            frame = _FRAME.match(line)
            i += 1
            if frame:
                files.append(frame["file"])
                numbers.append(int(frame["line"]))
            elif line[:1].isspace() or not line.strip():
                continue
            else:
                exception = line.strip() if _EXCEPTION.match(line.strip()) else ""
                break
        block = "\n".join(lines[start:i])
        found.append(_Traceback(tuple(files), tuple(numbers), exception, block))
    return found


def validator_crash(validation: ExecResult, solution_file: str) -> str | None:
    """Say whether a failed validator run crashed in the validator's own code.

    A crash is a Python traceback in the run's output whose innermost frame
    is the validator (`File "<stdin>"`: validators run as `python3 -`) and
    which does not mention `solution_file`, raising anything but the ways a
    validator fails on purpose (`NOT_CRASHES`: `assert` included). When any
    traceback in the output mentions `solution_file`, the solution crashed
    (and the validator may have printed its traceback): never a validator
    crash. Source: the predecessor's widened runtime crash detector.

    Args:
        validation: the validator's run (`Evaluation.validation`).
        solution_file: the solution's file name, e.g. `solution.py`.

    Returns:
        One line, `ExceptionType: message (validator line N)`, or None (a
        pass, a timeout, a clean failure, or a traceback of the solution's).
    """
    if validation.ok or validation.timed_out:
        return None
    blocks = _tracebacks(validation.stdout + "\n" + validation.stderr)
    if any(solution_file in block.text for block in blocks):
        return None
    for block in reversed(blocks):
        if not block.files or block.files[-1] != "<stdin>" or not block.exception:
            continue
        if block.exception_type in NOT_CRASHES:
            continue
        return f"{block.exception[:300]} (validator line {block.lines[-1]})"
    return None


def _load_error(run: ExecResult) -> str | None:
    """A NameError/ImportError/SyntaxError raised in the validator's own code, if any."""
    for block in _tracebacks(run.stdout + "\n" + run.stderr):
        if block.files and block.files[-1] == "<stdin>" and block.exception_type in LOAD_ERRORS:
            return f"{block.exception[:300]} (validator line {block.lines[-1]})"
    return None


# -- sandbox gates -----------------------------------------------------------------------


def _setup(ws: Workspace, spec: Scripts) -> str | None:
    """Run the setup script in `ws`; a rejection detail when it fails."""
    run = ws.run(python_argv("-"), stdin=spec.setup_script)
    if run.ok:
        return None
    reason = "timed out" if run.timed_out else f"exited {run.returncode}"
    return f"the setup script {reason}: {_one_line(run.output_tail(300))}"


def _one_line(text: str) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())[-300:]


def preflight(sandbox: Sandbox, spec: Scripts) -> str | None:
    """Parse the three scripts, then dry-run setup and validator in the sandbox.

    The setup script must exit 0. The validator is then run against an EMPTY
    `solution.py`: failing cleanly is expected, but a traceback raised in the
    validator's own code (innermost frame `<stdin>`) by a `LOAD_ERRORS`
    exception (NameError, ImportError, SyntaxError, ...) means it cannot work
    for any solution, and so does hanging until the sandbox's time limit.

    Args:
        sandbox: where to run; each run is bounded by `sandbox.config.timeout_s`.
        spec: the four texts.

    Returns:
        None, or a one-line rejection detail.

    Raises:
        SandboxFaultError: the sandbox itself failed to start a run.
    """
    for label, text in (
        ("setup script", spec.setup_script),
        ("validation script", spec.validation_script),
        ("reference solution", spec.reference_solution),
    ):
        try:
            ast.parse(text)
        except SyntaxError as exc:
            return f"the {label} does not parse: line {exc.lineno}: {exc.msg}"
        except (ValueError, RecursionError, MemoryError) as exc:
            return f"the {label} does not parse: {type(exc).__name__}"
    with sandbox.workspace() as ws:
        problem = _setup(ws, spec)
        if problem:
            return problem
        ws.write_file(SOLUTION_FILE, "")
        run = ws.run(python_argv("-"), stdin=spec.validation_script)
    if run.timed_out:
        return f"the validator timed out on an empty {SOLUTION_FILE}"
    error = _load_error(run)
    if error:
        return f"the validator itself fails to run: {error}"
    return None


# -- AST helpers (the quality check and the self-test) ------------------------------


def _subprocess_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names bound to the subprocess module, runner functions imported from it)."""
    modules: set[str] = {"subprocess"}
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name == "subprocess" and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "subprocess":
            functions.update(a.asname or a.name for a in node.names if a.name in SOLUTION_RUNNERS)
    return modules, functions


def _is_runner_call(node: ast.AST, aliases: tuple[set[str], set[str]]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    modules, functions = aliases
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in SOLUTION_RUNNERS:
        return isinstance(func.value, ast.Name) and func.value.id in modules
    return isinstance(func, ast.Name) and func.id in functions
