"""The strategy contract and its AST lint.

A strategy is a Python module with one entry point, `solve(task, harness) -> str`,
that may spend compute only through the harness (PRIOR-ART: "author blindness"
— it cannot read the validator or anything outside its own calls — and
"conserved dose" — no out-of-band compute). `lint_strategy` enforces the
contract on the source before it ever runs; the source also runs inside the
sandbox (`nightschool.strategies.runner`), so a lint bypass still has no
network and no host filesystem.

Import allow-list: `re`, `math` and nothing else, each used only as
`module.<public name>` from `MODULE_API`. Both are pure standard library with
no I/O and no process control, but `re` holds other modules as attributes
(`re.enum.sys`, `re.functools`, `from re import enum`), so the module object
itself may not be aliased, passed or matched on, and only its documented API
(`re.__all__`, the public functions and constants of `math`) may be named.
Reflection is closed without dunders too: no private attributes (`_x`) and no
frame/code/traceback attributes (`gi_frame.f_builtins` reaches every builtin),
in attribute chains and in `match` class patterns alike.

Multi-role strategies are within the contract: `persona="..."` on `sample`,
`refine` and `critique` makes one call speak as a role (researcher -> engineer
hand-offs, a reviewer panel), each call metered from the same budget; the
lint admits it as any keyword argument of a harness method.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = [
    "ALLOWED_IMPORTS",
    "CONTRACT_TEXT",
    "FORBIDDEN_NAMES",
    "HARNESS_API",
    "INTROSPECTION_PREFIXES",
    "MODULE_API",
    "ContractViolation",
    "StrategyContractError",
    "check_strategy",
    "lint_strategy",
]

ALLOWED_IMPORTS: frozenset[str] = frozenset({"re", "math"})
"""Modules a strategy may import (pure stdlib, no I/O)."""

MODULE_API: dict[str, frozenset[str]] = {
    "re": frozenset(
        [
            "match",
            "fullmatch",
            "search",
            "sub",
            "subn",
            "split",
            "findall",
            "finditer",
            "compile",
            "purge",
            "escape",
            "error",
            "Pattern",
            "Match",
            "RegexFlag",
            "A",
            "I",
            "L",
            "M",
            "S",
            "X",
            "U",
            "ASCII",
            "IGNORECASE",
            "LOCALE",
            "MULTILINE",
            "DOTALL",
            "VERBOSE",
            "UNICODE",
            "NOFLAG",
        ]
    ),
    "math": frozenset(
        [
            "acos",
            "acosh",
            "asin",
            "asinh",
            "atan",
            "atan2",
            "atanh",
            "cbrt",
            "ceil",
            "comb",
            "copysign",
            "cos",
            "cosh",
            "degrees",
            "dist",
            "e",
            "erf",
            "erfc",
            "exp",
            "exp2",
            "expm1",
            "fabs",
            "factorial",
            "floor",
            "fmod",
            "frexp",
            "fsum",
            "gamma",
            "gcd",
            "hypot",
            "inf",
            "isclose",
            "isfinite",
            "isinf",
            "isnan",
            "isqrt",
            "lcm",
            "ldexp",
            "lgamma",
            "log",
            "log10",
            "log1p",
            "log2",
            "modf",
            "nan",
            "nextafter",
            "perm",
            "pi",
            "pow",
            "prod",
            "radians",
            "remainder",
            "sin",
            "sinh",
            "sqrt",
            "tan",
            "tanh",
            "tau",
            "trunc",
            "ulp",
        ]
    ),
}
"""The names a strategy may use from each allowed module (Python 3.11: `re.__all__`
without the deprecated `template`, and every public name of `math`). None of
them leads to a module, frame or code object by a public attribute chain (a
test walks them)."""

INTROSPECTION_PREFIXES: tuple[str, ...] = ("gi_", "cr_", "ag_", "f_", "tb_", "co_")
"""Attribute prefixes of generator, coroutine, frame, traceback and code objects
(`g.gi_frame.f_globals`, `.f_builtins`, `.f_back`): reflection on globals."""

HARNESS_API: frozenset[str] = frozenset(
    {"sample", "refine", "critique", "run_tests", "budget_left"}
)
"""The only attributes a strategy may use on its `harness` argument."""

FORBIDDEN_NAMES: frozenset[str] = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "open",
        "input",
        "breakpoint",
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "help",
        "exit",
        "quit",
        "memoryview",
        "__builtins__",
        "__loader__",
        "__spec__",
        "os",
        "sys",
        "subprocess",
        "socket",
        "importlib",
        "pathlib",
        "shutil",
        "ctypes",
        "builtins",
        "signal",
        "threading",
        "multiprocessing",
        "io",
        "pickle",
        "marshal",
        # site's builtins: `license()` reads files from disk and calls input().
        "license",
        "credits",
        "copyright",
    }
)
"""Names a strategy may not mention: dynamic code, reflection, filesystem, processes, network."""

CONTRACT_TEXT = """\
STRATEGY CONTRACT (nightschool)
A strategy is ONE Python module defining exactly this entry point:

    def solve(task, harness):
        ...
        return code   # str: the complete solution file

task: a dict with keys "id", "prompt" (the full task text), "solution_file"
("solution.py" or "solution.sh"), "cluster", "tier".
harness: the ONLY way to spend compute. Every model call costs one call from a
fixed budget that is the same for every strategy; a call over budget raises an
exception (catch it with `except Exception`).
  harness.sample(prompt_extra="", temperature=None, persona="") -> str
      a fresh solution from the model; prompt_extra is appended to the task.
  harness.refine(code, feedback, persona="") -> str
      an improved solution given your code and a feedback text.
  harness.critique(code, persona="") -> str
      the model's review of the code (prose, no code).
  harness.run_tests(code) -> str
      runs the task's checker: "PASSED" when it passes, else "FAILED: " and the
      checker's output tail. Costs no model call (limited to budget + 1 runs).
  harness.budget_left -> int   (a property: model calls left)
Personas: persona="..." makes the model play a role for that one call (it is
put before the call's instructions), so one strategy can run several roles
over the same budget, each call costing one call as usual. For example a
researcher hands notes to an engineer:
    notes = harness.critique("", persona="a tester listing the task's edge cases")
    code = harness.sample(prompt_extra="Handle: " + notes[:1500],
                          persona="a careful engineer")
or a panel reviews one draft, and its remarks go into one refine call.
Text limits (a longer argument raises an exception and costs nothing):
prompt_extra and feedback at most 2000 characters, code at most 6000,
persona at most 300.
Rules (checked by a linter; violations reject the strategy):
  - imports: only `re` and `math`;
  - re and math only as re.<function>(...) / math.<function>(...) (or
    `from math import floor`): no other use of the module object itself;
  - no eval, exec, compile, __import__, open, getattr/setattr/delattr/hasattr,
    globals, locals, vars, dir, input; no dunder names or attributes (__x__),
    no private attributes (._x), no frame/generator/code attributes (gi_*, f_*,
    tb_*, co_*, cr_*, ag_*), also not as `match` class-pattern keywords;
  - no os, sys, subprocess, socket, importlib, pathlib or other system modules;
  - only harness.sample/refine/critique/run_tests/budget_left on the harness.
The harness re-runs the checker on the code you return; a claimed score is ignored.
The code runs in a sandbox without network or files.
"""
"""The contract as shown to an authoring model (and to people)."""


@dataclass(frozen=True)
class ContractViolation:
    """One breach of the strategy contract.

    Attributes:
        line: 1-based source line (0 when the whole module is at fault).
        col: 0-based column.
        message: what is forbidden and why.
    """

    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class StrategyContractError(ValueError):
    """A strategy's source breaks the contract.

    Attributes:
        violations: every violation found, in source order.
    """

    def __init__(self, violations: list[ContractViolation]) -> None:
        super().__init__("; ".join(str(v) for v in violations))
        self.violations = violations


_DUNDER_IN_TEXT = re.compile(r"__\w+__")


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _attribute_problem(attr: str) -> str | None:
    """Why an attribute name is forbidden on any object, or None."""
    if _is_dunder(attr):
        return f"dunder attribute access .{attr}"
    if attr.startswith("_"):
        return f"private attribute access .{attr}"
    if attr.startswith(INTROSPECTION_PREFIXES):
        return f"frame/code introspection attribute .{attr}"
    return None


class _Linter(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[ContractViolation] = []
        self.harness_names: set[str] = set()
        self.module_aliases: dict[str, str] = {}

    def flag(self, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", 0)
        self.found.append(ContractViolation(line, col, message))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS:
                allowed = ", ".join(sorted(ALLOWED_IMPORTS))
                self.flag(node, f"import of {alias.name!r} (allowed: {allowed})")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        if node.level or module not in ALLOWED_IMPORTS:
            allowed = ", ".join(sorted(ALLOWED_IMPORTS))
            self.flag(node, f"import from {module!r} (allowed: {allowed})")
        for alias in node.names:
            if alias.name == "*" or _is_dunder(alias.name):
                self.flag(node, f"import of {alias.name!r} from a module")
            elif module in MODULE_API and alias.name not in MODULE_API[module]:
                self.flag(node, f"import of {alias.name!r} from {module!r} (not part of its API)")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self.flag(node, f"use of forbidden name {node.id!r}")
        elif _is_dunder(node.id):
            self.flag(node, f"use of dunder name {node.id!r}")
        elif node.id in self.module_aliases:
            module = self.module_aliases[node.id]
            self.flag(node, f"module {module!r} may only be used as {module}.<name>")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        if isinstance(value, ast.Name) and value.id in self.module_aliases:
            module = self.module_aliases[value.id]
            if node.attr not in MODULE_API[module]:
                self.flag(node, f"{module}.{node.attr} is not part of the {module!r} API")
            return  # `re.sub` is the one allowed use of the module name
        problem = _attribute_problem(node.attr)
        if (
            isinstance(value, ast.Name)
            and value.id in self.harness_names
            and node.attr not in HARNESS_API
            and not _is_dunder(node.attr)
        ):
            api = ", ".join(sorted(HARNESS_API))
            self.flag(node, f"harness.{node.attr} is not part of the harness API ({api})")
        elif problem is not None:
            self.flag(node, problem)
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        # `case object(gi_frame=f)` reads an attribute without an Attribute node.
        for attr in node.kwd_attrs:
            problem = _attribute_problem(attr)
            if problem is not None:
                self.flag(node, f"{problem} (in a match class pattern)")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.flag(node, "global statement")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # A dunder in a string is how getattr-free reflection usually starts
        # (e.g. operator.attrgetter("__globals__")); nothing legitimate needs it.
        if isinstance(node.value, str):
            match = _DUNDER_IN_TEXT.search(node.value)
            if match:
                self.flag(node, f"dunder name inside a string: {match.group(0)[:40]!r}")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for decorator in node.decorator_list:
            self.flag(decorator, "decorators are not allowed")
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.flag(node, "async functions are not allowed")
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if _is_dunder(node.name):
            self.flag(node, f"dunder function name {node.name!r}")
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.flag(node, "class definitions are not allowed")
        self.generic_visit(node)


def lint_strategy(source: str) -> list[ContractViolation]:
    """Check `source` against the strategy contract.

    Args:
        source: the strategy module's text.

    Returns:
        Every violation, sorted by line; empty when the source is acceptable.
        A syntax error is one violation at its line.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [ContractViolation(exc.lineno or 0, exc.offset or 0, f"syntax error: {exc.msg}")]
    linter = _Linter()
    solve = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "solve"
    ]
    if not solve:
        linter.flag(tree, "no top-level `def solve(task, harness)`")
    else:
        args = solve[0].args
        positional = [a.arg for a in args.posonlyargs + args.args]
        if len(positional) != 2 or args.vararg or args.kwarg or args.kwonlyargs:
            linter.flag(solve[0], "solve must take exactly two arguments: (task, harness)")
        if len(positional) >= 2:
            linter.harness_names.add(positional[1])
    # Parameters of helper functions named `harness` are harnesses too.
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                if arg.arg == "harness":
                    linter.harness_names.add("harness")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULE_API:
                    linter.module_aliases[alias.asname or alias.name] = alias.name
    linter.visit(tree)
    return sorted(linter.found, key=lambda v: (v.line, v.col))


def check_strategy(source: str) -> None:
    """Raise when `source` breaks the contract.

    Raises:
        StrategyContractError: with every violation (line numbers included).
    """
    violations = lint_strategy(source)
    if violations:
        raise StrategyContractError(violations)
