"""The request's own examples run against the reply's code, and redraws when they fail.

Measured (MBPP stream, order 0, 200 tasks, Qwen2.5-Coder-1.5B,
`bench/results/stream-mbpp-order0-n200`, `bench/bench_stream.py`): answering
once, running the request's one public test, and only where it failed asking
the very same request again (temperature + 0.35, another seed, nothing shown)
passed 136 of 200 hidden test suites against 124 for one answer: 12 wins, 0
losses, exact one-sided p = 0.00024 (Holm 0.0017 over the seven arms tried),
at 1.3 model calls per task; the only arm the promotion gate kept. A repair
that shows the model its failing program and the test's output fixed 5 of the
same 61 failures where the plain redraw fixed 12; showing worked examples on
the second try fixed 11-16 (no difference from the redraw the gate can see).
No learned memory beat it. Through this module on HumanEval (the 76 prompts
stating examples, the agent as `eval run` builds it, temperature 0,
`bench/bench_examples_check.py`): 59 -> 63 passed, 4 wins / 0 losses, exact
one-sided p = 0.0625 (the same direction, not significant alone).
A third draw where the second failed too (`resample2` arm, temperature 0.9, a
seed of its own) took the same MBPP stream to 145 of 200: 9 more repairs than
one redraw, 9 wins / 0 losses against it (exact one-sided p = 0.002), 21 / 0
against one answer (p = 5e-7), at 1.54 model calls per task.

So a chat reply whose code fails an example the user wrote into the request
gets up to `AgentConfig.example_redraws` redraws (2), each only after the one
before failed too: the request asked again, as a direct answer (the agent's
system prompt without tools, the same conversation), hotter and with a
seed of its own. A redraw replaces the reply only when its code passes
every example; otherwise the first reply stays. A reply that passes, a
request with no examples, or a reply with no code costs nothing but, for
the first two, one sandbox run.

Examples read from the request (`request_examples`): `assert` lines, and
doctest pairs (`>>> expr` followed by the expected output, compared with the
value's `repr` or `str`). Each must parse as Python; at most `MAX_EXAMPLES`.
"""

from __future__ import annotations

import ast
import hashlib
import re
import secrets
import textwrap
from collections.abc import Sequence
from typing import Any, Literal

from nightschool.agent._leak import code_blocks, fenced_blocks, follow_up_call
from nightschool.agent._types import MAX_EXAMPLE_REDRAWS
from nightschool.agent.loop import TurnRun
from nightschool.errors import InfrastructureError
from nightschool.llm import ChatModel, Message
from nightschool.sandbox import Sandbox, python_argv

__all__ = [
    "EXAMPLE_TIMEOUT_S",
    "MAX_EXAMPLES",
    "REDRAW_TEMPERATURE_STEP",
    "RedrawStatus",
    "check_examples",
    "request_examples",
    "run_examples",
]

MAX_EXAMPLES = 8
"""Examples taken from one request at most (the first ones). A bound on one run's
work, above every HumanEval prompt (at most 7 examples each, 76 of 164 state any)."""

EXAMPLE_TIMEOUT_S = 10.0
"""Wall-clock limit of the examples' run, seconds (as a stream's hidden tests)."""

REDRAW_TEMPERATURE_STEP = 0.35
"""Added to the turn's temperature for the redraw (capped at 1.0): the solver's
`temperature_step`, the resample arm's second draw (0.2 -> 0.55)."""

RedrawStatus = Literal["off", "fixed", "still fails", "no code", "unavailable"]
"""What the redraw did: not asked (`AgentConfig.check_examples` off), its code
passed (the user gets it), its code failed too, it held no code, or the model
failed during the call."""


def _expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


_DELIMITERS = ('"""', "'''")


def _doctest(body: str, expected: str) -> str | None:
    """The check of one `>>> body` line and the line after it, or None when there is none."""
    tree = _expression(body)
    if tree is None:
        return None
    if not expected or expected.startswith(">>>") or expected.startswith(_DELIMITERS):
        # no output line: a comparison written as the example is its own check
        return f"assert {body}" if isinstance(tree, ast.Compare) else None
    try:
        value = ast.literal_eval(expected)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        check = f"repr(_got) == {expected!r} or str(_got) == {expected!r}"
    else:  # a literal: compared by value, whatever its quoting or spacing
        check = f"_got == {value!r}"
    return f"_got = {body}\nassert {check}, {body + ' gave '!r} + repr(_got)"


def request_examples(text: str) -> list[str]:
    """The Python checks a request states, as statements to run after the reply's code.

    Args:
        text: the user's request.

    Returns:
        Up to `MAX_EXAMPLES` statements, in the request's order, without
        repeats: each `assert ...` line (a leading `>>> ` dropped) that parses;
        for each doctest pair (`>>> expr`, then a line of expected output) an
        assertion that the value equals the output read as a Python literal,
        or else that its `repr` or `str` is the output's text; and a `>>> `
        comparison with no output line after it (`>>> f(1) == 2` closing a
        docstring) as an assertion itself. Empty when the request states none.

    Measured on HumanEval's 164 prompts: 76 state examples this way; the
    canonical solution passes its own examples in 73 (the other 3 prompts'
    examples are wrong or malformed in the dataset: HumanEval/47, /113, /116).
    """
    lines = text.splitlines()
    found: list[str] = []
    for k, raw in enumerate(lines):
        line = raw.strip().strip("`").strip()
        prompt = line.startswith(">>>")
        body = line[3:].strip() if prompt else line
        if body.startswith("assert ") or body.startswith("assert("):
            try:
                ast.parse(body)
            except SyntaxError:
                continue
            found.append(body)
        elif prompt and body:
            after = lines[k + 1].strip().strip("`").strip() if k + 1 < len(lines) else ""
            check = _doctest(body, after)
            if check is not None:
                found.append(check)
    unique = list(dict.fromkeys(found))
    return unique[:MAX_EXAMPLES]


def run_examples(
    sandbox: Sandbox, code: str, examples: Sequence[str], timeout_s: float = EXAMPLE_TIMEOUT_S
) -> tuple[bool, str]:
    """Run `code`, then `examples`, in a fresh sandbox workspace.

    The program ends with `raise SystemExit(k)`, k drawn in 3..120 per run: it
    passes only when it reaches that line (code that exits early, or catches
    the examples' failure and exits 0, does not pass).

    Returns:
        (passed, the failure's last line or "" on a pass).

    Raises:
        SandboxFaultError: the sandbox could not start the run.
    """
    finished = 3 + secrets.randbelow(118)
    program = "\n\n".join([code, *examples, f"raise SystemExit({finished})"]) + "\n"
    result = sandbox.run(python_argv("check.py"), files={"check.py": program}, timeout_s=timeout_s)
    if result.returncode == finished and not result.timed_out:
        return True, ""
    if result.timed_out:
        return False, f"the examples timed out after {timeout_s:g} s"
    lines = result.stderr.strip().splitlines() or result.stdout.strip().splitlines()
    return False, (lines[-1] if lines else f"exit status {result.returncode}")[:300]


_PYTHON_TAGS = {"", "python", "py", "python3"}


def _parses(code: str) -> bool:
    """Whether `code` compiles (`ast.parse` alone accepts a `return` outside a function)."""
    try:
        compile(code, "<reply>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _code(text: str) -> str | None:
    """The reply's Python: its python (or untagged) fenced blocks joined, or None.

    Where there are several, a block that does not parse (a `>>>` transcript,
    shell output) is left out; a single block is kept whatever it holds, so a
    reply whose only program is broken fails its examples and is redrawn.
    """
    fenced = fenced_blocks(text)
    if not fenced:
        blocks = code_blocks(text)  # a raw code reply, read whole when it is Python
        return "\n\n".join(blocks) if blocks else None
    blocks = [body for tag, body in fenced if tag in _PYTHON_TAGS]
    if len(blocks) > 1:
        blocks = [body for body in blocks if _parses(body)]
    return "\n\n".join(blocks) if blocks else None


_CODE_START = re.compile(r"^(?:from |import |def |class |@)", re.MULTILINE)


def _program(request: str, code: str | None) -> str | None:
    """The program to run: `code`, or the request's own code then `code` for a body-only reply.

    A reply to a signature and docstring may hold only the function's body
    (HumanEval's completion form); it does not parse alone. The request's code
    (its python blocks, else the request from its first line that starts a
    definition or an import) followed by the body, as it came or indented one
    level, does.
    """
    if code is None or _parses(code):
        return code
    fenced = [body for tag, body in fenced_blocks(request) if tag in _PYTHON_TAGS]
    first = _CODE_START.search(request)
    prefixes = ["\n".join(fenced)] if fenced else []
    prefixes += [request[first.start() :]] if first else []
    bodies = (code, textwrap.indent(textwrap.dedent(code), "    "))
    for prefix in prefixes:
        joined = prefix if prefix.endswith("\n") else prefix + "\n"
        for body in bodies:
            if _parses(joined + body):
                return joined + body
    return code


def check_examples(
    model: ChatModel,
    sandbox: Sandbox,
    run: TurnRun,
    window: Sequence[Message],
    *,
    client_system: str,
    redraws: int,
    temperature: float,
    max_tokens: int,
    timeout_s: float = EXAMPLE_TIMEOUT_S,
) -> dict[str, Any] | None:
    """Run the request's examples against a finished turn's code; redraw if they fail.

    Args:
        model: the agent's model.
        sandbox: runs the examples (a fresh workspace, never the session's).
        run: the step loop's result; its reply is replaced when a redraw's
            code passes, and each call is added to its `n_steps`, tokens,
            `model_s` and `finish_reasons`. A model fault during a redraw is
            put in `infrastructure_error` (not raised); the first reply stays.
        window: the conversation the loop was given, without its system
            prompt (the request last).
        client_system: the client's own system messages joined ("" if none).
        redraws: redraws at most after a failure, each only when the one
            before failed too (0: only run and record the examples, `redraw:
            off`). Redraw k is hotter by k x `REDRAW_TEMPERATURE_STEP`
            (capped at 1.0) and has a seed of its own.
        temperature: the turn's temperature.
        max_tokens: completion cap of each redraw, tokens.
        timeout_s: limit of each examples run, seconds.

    Returns:
        None when the check does not apply (the run faulted, was aborted or is
        empty, the request states no example, or the reply holds no code); else
        the record for `extra["examples"]`: `examples` (how many), `passed`
        (the first reply passed them all), and after a failure `error`,
        `redraw` (`RedrawStatus`: of the last redraw made), `redraws` (how many
        were made) and `repaired` (the reply the user gets passes); a kept
        redraw also records the reply it replaced (`first_reply`), so one run
        also scores the answer the user would have had without the check
        (`bench/bench_examples_check.py`).

    Raises:
        SandboxFaultError: the sandbox could not start a run.
        ValueError: `redraws` outside 0..`MAX_EXAMPLE_REDRAWS`.
    """
    if not 0 <= redraws <= MAX_EXAMPLE_REDRAWS:
        raise ValueError(f"redraws must be 0 to {MAX_EXAMPLE_REDRAWS}")
    if run.infrastructure_error is not None or run.aborted or not run.reply.strip():
        return None
    if not window or window[-1]["role"] != "user":
        return None
    request = window[-1]["content"]
    examples = request_examples(request)
    code = _program(request, _code(run.reply)) if examples else None
    if code is None:
        return None
    passed, error = run_examples(sandbox, code, examples, timeout_s)
    record: dict[str, Any] = {"examples": len(examples), "passed": passed}
    if passed:
        return record
    record.update({"error": error, "redraw": "off", "repaired": False})
    digest = hashlib.sha256(request.encode()).digest()
    for draw in range(1, redraws + 1):
        record["redraws"] = draw
        hotter = min(temperature + draw * REDRAW_TEMPERATURE_STEP, max(1.0, temperature))
        try:
            text = follow_up_call(
                model,
                run,
                window,
                client_system=client_system,
                temperature=hotter,
                max_tokens=max_tokens,
                seed=int.from_bytes(digest[4 * (draw - 1) : 4 * draw], "big"),
            )
        except InfrastructureError:
            record["redraw"] = "unavailable"
            return record
        redrawn = None if text is None else _program(request, _code(text))
        if text is None or redrawn is None:
            record["redraw"] = "no code"
            continue
        fixed, after = run_examples(sandbox, redrawn, examples, timeout_s)
        if fixed:
            record.update({"redraw": "fixed", "repaired": True, "first_reply": run.reply})
            run.reply = run.final_response = text
            return record
        record.update({"redraw": "still fails", "error_after": after})
    return record
