"""Strip a function-completion answer down to what the checker imports.

At the `starter` tier the checker imports `solution.py` and calls one function.
Small models append their own test code anyway (an `assert` on a made-up
expected value, a `check()` call, a connection to a database that is not
there), even when told not to; at import time that code crashes or prints, and
the attempt fails before the function is ever called. Replayed by
`bench/bench_sanitize.py` on 169 recorded starter attempts of
Qwen2.5-Coder-0.5B, 67 (40%) carried top-level code; stripping it turned 2
failures into passes (34 -> 36) and no pass into a failure. Of 70 attempts of
Qwen2.5-Coder-1.5B none carried any: a small, free gain for the small model.

The remedy is the standard one of code-generation harnesses (EvalPlus's
`sanitize`, Liu et al. 2023; the bigcode harness's stop sequences at a line
starting `if __name__`, `print(` or `assert`): keep imports, function and
class definitions, and module-level assignments that a kept definition reads;
drop every other top-level statement (calls, asserts, loops, `if __name__`
blocks, prints). Source that does not parse is returned unchanged (the
checker reports the syntax error).
"""

from __future__ import annotations

import ast

_KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def strip_test_code(code: str) -> tuple[str, int]:
    """Drop top-level statements the checker does not need from Python `code`.

    Kept: imports, `def`/`async def`/`class`, `from __future__`, and
    assignments (`x = ...`, `x: T = ...`) whose target a kept definition or
    another kept assignment reads by name. A module docstring is kept.
    Everything else at the top level is dropped, each statement whole.

    Args:
        code: the solution source.

    Returns:
        (source, dropped): the stripped source (the original text of the kept
        statements, in order, so comments inside them survive) and how many
        top-level statements were dropped; `(code, 0)` when nothing was
        dropped or the source does not parse.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code, 0
    body = tree.body
    kept = [
        isinstance(node, _KEPT) or (index == 0 and _is_docstring(node))
        for index, node in enumerate(body)
    ]
    read = _names_read([node for node, keep in zip(body, kept, strict=True) if keep])
    changed = True
    while changed:  # an assignment read by a kept one is needed too
        changed = False
        for index, node in enumerate(body):
            if kept[index] or not isinstance(node, ast.Assign | ast.AnnAssign):
                continue
            if _targets(node) & read:
                kept[index] = True
                read |= _names_read([node])
                changed = True
    dropped = kept.count(False)
    if dropped == 0 or not any(kept):
        return code, 0
    lines = code.splitlines(keepends=True)
    parts = []
    for node, keep in zip(body, kept, strict=True):
        if keep:
            start = node.lineno - 1
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                start = min([start, *(d.lineno - 1 for d in node.decorator_list)])
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            parts.append("".join(lines[start:end]).rstrip() + "\n")
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n", dropped


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _names_read(nodes: list[ast.stmt]) -> set[str]:
    """Every name loaded anywhere inside `nodes`."""
    return {
        sub.id
        for node in nodes
        for sub in ast.walk(node)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
    }


def _targets(node: ast.Assign | ast.AnnAssign) -> set[str]:
    """Names an assignment binds (tuple targets unpacked)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {
        sub.id
        for target in targets
        for sub in ast.walk(target)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)
    }


__all__ = ["strip_test_code"]
