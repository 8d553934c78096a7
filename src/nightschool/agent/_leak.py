"""The agent's own tool names in the code of its reply: finding them, and one repair call.

Measured (issue "Transfer, measured honestly", part 3): asked for complete
programs through `nightschool serve` (default settings, fresh home), 19 of 32
replies defined or called the agent's own tool names inside the program
(`def self_play(): pass`, `def run_python(code)`, one failing with `TypeError:
self_play() takes 0 positional arguments but 4 were given`); without the
self-play tools 24 of 30 (`from tools import read_file`, `def run_shell`,
`NameError: name 'list_files' is not defined`). The tool names rendered into
the prompt pull a small model into writing them into the program.

`find_tool_leaks` reads every fenced code block of a reply (a reply without a
fence is read whole when it parses as Python): definitions (`def`, `class`,
an assignment to the bare name), imports (`import run_shell`, `from tools
import read_file`, `from run_python import x`) and calls (`read_file(...)`,
`tools.read_file(...)`) of a tool name, with `ast` where the block parses and
regular expressions where it does not. Names the conversation's user
messages or the client's instructions mention are not leaks (asked for a
function called `read_file`, the model should write one).

`repair_tool_leak` runs after the step loop: a final reply that leaks gets
one more model call (`leak_note`: the names, and that a program must be
self-contained) under the direct-answer system prompt with no tools offered,
and the repaired reply replaces the original only when it still has code and
no longer leaks. The call is counted like a step (`TurnRun.n_steps`, tokens,
model seconds, finish reasons) but, like the verifier's, is not bounded by
`max_steps`: it is at most one per turn and only after a leak.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nightschool.agent._parsing import detect_blob, parse_tool_call
from nightschool.agent.loop import TurnRun, build_system_prompt
from nightschool.agent.tools import LEAK_CHECKED_NAMES
from nightschool.errors import InfrastructureError
from nightschool.llm import ChatModel, Message

__all__ = [
    "LEAK_NOTE",
    "LeakKind",
    "LeakSite",
    "RepairStatus",
    "code_blocks",
    "find_tool_leaks",
    "leak_note",
    "leak_sites",
    "mentioned_names",
    "repair_tool_leak",
]

LeakKind = Literal["def", "import", "call"]
"""How a tool name appears in code: defined (or assigned), imported, or called."""

RepairStatus = Literal["fixed", "still leaks", "no code", "off", "unavailable"]
"""`extra["tool_leak"]["repair"]`: the repaired reply was used (`fixed`); it
leaked too (`still leaks`) or held no code or was a tool call (`no code`), so
the original was kept; the repair is switched off (`off`,
`AgentConfig.repair_tool_leaks`); the model failed during the repair call
(`unavailable`: the turn ends as an infrastructure error)."""

LEAK_NOTE = (
    "Your code uses your own tool names: {names}. Your tools do not exist when the user "
    "runs the program. Rewrite your answer so the program is self-contained (standard "
    "library only, unless I asked otherwise) and does not define, import or call {names}. "
    "Reply with the whole answer, code in a fenced block."
)
"""The user-turn note of the repair call (`{names}`: the leaked names, back-quoted)."""

_FENCE = re.compile(r"```([^\n]*)\n(.*?)(?:```|\Z)", re.DOTALL)


@dataclass(frozen=True)
class LeakSite:
    """One use of a tool name in code.

    Attributes:
        name: the tool name.
        kind: `def`, `import` or `call`.
        line: 1-based line in its code block.
    """

    name: str
    kind: LeakKind
    line: int


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, code) of every fenced block in `text`, in order.

    An unclosed last fence runs to the end; the info string is lower-cased and
    stripped (`python`, `""`).
    """
    return [(tag.strip().lower(), body) for tag, body in _FENCE.findall(text)]


def code_blocks(text: str) -> list[str]:
    """The code of every fenced block in `text` (an unclosed last fence runs to the end).

    Without a fence, `[text]` when the whole text parses as Python and holds a
    statement other than a bare expression (a raw code reply, e.g. a blob's
    code), else `[]`.
    """
    blocks = [body for _, body in fenced_blocks(text)]
    if blocks or "```" in text:
        return blocks
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [text] if any(not isinstance(node, ast.Expr) for node in tree.body) else []


def leak_sites(code: str, names: Collection[str] = LEAK_CHECKED_NAMES) -> list[LeakSite]:
    """Definitions, imports and calls of `names` in one block of code, in source order.

    Parsed with `ast` when the block is Python; otherwise (another language,
    a syntax error, a truncated reply) matched line by line with regular
    expressions, which may also hit a name inside a string there.

    Args:
        code: the block's text.
        names: identifiers to look for.

    Returns:
        One `LeakSite` per name, kind and line, sorted by line.
    """
    if not names:
        return []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        found = set(_regex_sites(code, names))
    else:
        found = set(_ast_sites(tree, names))
    return sorted(found, key=lambda site: (site.line, site.name, site.kind))


def _ast_sites(tree: ast.AST, names: Collection[str]) -> Iterator[LeakSite]:
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in names:
                yield LeakSite(node.name, "def", line)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            parts = [] if not isinstance(node, ast.ImportFrom) else (node.module or "").split(".")
            for alias in node.names:
                parts += [*alias.name.split("."), alias.asname or ""]
            yield from (LeakSite(part, "import", line) for part in parts if part in names)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called in names:
                yield LeakSite(str(called), "call", line)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in names:
            yield LeakSite(node.id, "def", line)


def _regex_sites(code: str, names: Collection[str]) -> Iterator[LeakSite]:
    alternation = "|".join(re.escape(name) for name in sorted(names))
    patterns: tuple[tuple[LeakKind, re.Pattern[str]], ...] = (
        ("def", re.compile(rf"\b(?:def|class|function|fn)\s+({alternation})\b")),
        ("def", re.compile(rf"^\s*({alternation})\s*=(?!=)")),
        ("import", re.compile(rf"^\s*(?:from|import)\s[^\n]*?\b({alternation})\b")),
        ("call", re.compile(rf"(?<![\w$])({alternation})\s*\(")),
    )
    for number, text in enumerate(code.splitlines(), start=1):
        for kind, pattern in patterns:
            for match in pattern.finditer(text):
                yield LeakSite(match.group(1), kind, number)


def mentioned_names(text: str, names: Collection[str] = LEAK_CHECKED_NAMES) -> frozenset[str]:
    """Those of `names` that occur in `text` as whole identifiers (case-sensitive)."""
    return frozenset(
        name for name in names if re.search(rf"(?<![\w]){re.escape(name)}(?!\w)", text)
    )


def find_tool_leaks(
    reply: str, *, names: Collection[str] = LEAK_CHECKED_NAMES, allowed: str = ""
) -> tuple[str, ...]:
    """The tool names a reply's code defines, imports or calls.

    Args:
        reply: the reply text (markdown with fenced code blocks, or raw code).
        names: the agent's tool names (default: every name it may have, the
            self-play tools included, whether offered this turn or not; the
            browser tool only when offered: `tools.leak_checked_names`).
        allowed: text whose mentions of a name make it no leak (the user's
            messages and the client's instructions).

    Returns:
        The leaked names, sorted, without duplicates; `()` when clean.
    """
    wanted = frozenset(names) - mentioned_names(allowed, names)
    found = {site.name for block in code_blocks(reply) for site in leak_sites(block, wanted)}
    return tuple(sorted(found))


def leak_note(names: Sequence[str]) -> str:
    """`LEAK_NOTE` for the leaked `names` (at least one)."""
    return LEAK_NOTE.format(names=", ".join(f"`{name}`" for name in names))


def follow_up_call(
    model: ChatModel,
    run: TurnRun,
    window: Sequence[Message],
    *,
    client_system: str,
    then: Sequence[Message] = (),
    temperature: float,
    max_tokens: int,
    seed: int | None = None,
) -> str | None:
    """One more model call after the step loop (a rewrite, a redraw), counted as a step.

    The call is a direct answer: the agent's system prompt without tools, the
    conversation `window`, then `then`. It is added to `run`'s `n_steps`,
    `tokens_in`/`tokens_out`, `model_s` and `finish_reasons`, and is not bounded
    by `max_steps` (each caller makes at most one per turn).

    Returns:
        The reply's text (stripped), or None when it is a tool call or a
        tool-call blob, which is not an answer.

    Raises:
        InfrastructureError: the model failed; it is also put in
            `run.infrastructure_error`, as the step loop does.
    """
    messages = [
        Message(role="system", content=build_system_prompt("", client_system, tools={})),
        *(Message(role=m["role"], content=m["content"]) for m in window),
        *then,
    ]
    started = time.perf_counter()
    try:
        completion = model.complete(
            messages, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
    except InfrastructureError as exc:
        run.infrastructure_error = exc
        raise
    finally:
        run.model_s += time.perf_counter() - started
    run.n_steps += 1
    run.tokens_in += completion.tokens_in
    run.tokens_out += completion.tokens_out
    run.finish_reasons.append(completion.finish_reason)
    text = completion.text.strip()
    if completion.tool_calls or parse_tool_call(text) is not None or detect_blob(text) is not None:
        return None
    return text


def reply_to_the_reply(
    model: ChatModel,
    run: TurnRun,
    window: Sequence[Message],
    note: str,
    *,
    client_system: str,
    temperature: float,
    max_tokens: int,
) -> str | None:
    """`follow_up_call` after the turn's reply and the user's `note` about it.

    The direct call sees the conversation, the reply as the assistant's, then
    `note` as the user's: the shape of a repair (`repair_tool_leak`) or of a
    request for what the reply lacks (`agent._missing_code`).

    Returns:
        As `follow_up_call`. Raises as it does.
    """
    return follow_up_call(
        model,
        run,
        window,
        client_system=client_system,
        then=[
            Message(role="assistant", content=run.reply),
            Message(role="user", content=note),
        ],
        temperature=temperature,
        max_tokens=max_tokens,
    )


def repair_tool_leak(
    model: ChatModel,
    run: TurnRun,
    window: Sequence[Message],
    *,
    client_system: str,
    repair: bool,
    temperature: float,
    max_tokens: int,
    names: Collection[str] = LEAK_CHECKED_NAMES,
) -> dict[str, Any] | None:
    """Check a finished turn's reply for tool names; repair it once if it leaks.

    Args:
        model: the agent's model.
        run: the step loop's result; its reply is replaced when the repair
            fixes it, and the repair call is added to its `n_steps`,
            `tokens_in`/`tokens_out`, `model_s` and `finish_reasons`. A model
            fault during the call is put in `infrastructure_error` (not
            raised), as the step loop does; the original reply stays.
        window: the conversation the loop was given, without its system
            prompt (user and assistant messages, the request last).
        client_system: the client's own system messages joined ("" if none).
        repair: False: only find and record (`repair: off`), no model call.
        temperature: sampling temperature of the repair call.
        max_tokens: completion cap of the repair call, tokens.
        names: the tool names looked for (`tools.leak_checked_names`).

    Returns:
        None when the check does not apply (the run ended in a fault, ran out
        of steps or is empty) or the reply is clean; else the record for
        `extra["tool_leak"]`: `names` (leaked, sorted), `repair`
        (`RepairStatus`), `repaired` (the reply the user gets is clean), and
        `names_after` when the repair leaked too.
    """
    if run.infrastructure_error is not None or run.aborted or not run.reply.strip():
        return None
    allowed = "\n".join([client_system, *(m["content"] for m in window if m["role"] == "user")])
    leaked = find_tool_leaks(run.reply, names=names, allowed=allowed)
    if not leaked:
        return None
    record: dict[str, Any] = {"names": list(leaked), "repair": "off", "repaired": False}
    if not repair:
        return record
    try:
        text = reply_to_the_reply(
            model,
            run,
            window,
            leak_note(leaked),
            client_system=client_system,
            temperature=temperature,
            max_tokens=max_tokens,
        )
    except InfrastructureError:
        record["repair"] = "unavailable"
        return record
    if text is None or not code_blocks(text):
        record["repair"] = "no code"
        return record
    after = find_tool_leaks(text, names=names, allowed=allowed)
    if after:
        record.update({"repair": "still leaks", "names_after": list(after)})
        return record
    run.reply = run.final_response = text
    record.update({"repair": "fixed", "repaired": True})
    return record
