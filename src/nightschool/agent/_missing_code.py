"""A request to write code answered without code: ask once more for the code itself.

Measured (`bench/bench_tool_leak.py`, Qwen2.5-Coder-1.5B through the agent, 32
whole-program requests): after running its program in the sandbox the agent
answered "The number of words in the input is 0." (the run's output, not the
program) and, for FizzBuzz, a fence holding only `# Your Python code here`; the
same model with no agent around it answered both with a program. When the
request asks for code to be written (`asks_for_code`) and the final reply has
no substantive code (`has_code`), one more direct call (the agent's system
prompt without tools, the conversation, the reply, then `missing_code_note`:
one fenced block in the request's language, `_leak.reply_to_the_reply`)
asks for the code; the new reply is kept only when it has code. A request that
does not ask for code, or a reply that has it, costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from nightschool.agent._leak import code_blocks, reply_to_the_reply
from nightschool.agent.loop import TurnRun
from nightschool.errors import InfrastructureError
from nightschool.llm import ChatModel, Message

__all__ = [
    "MISSING_CODE_NOTE",
    "ask_for_missing_code",
    "asks_for_code",
    "has_code",
    "missing_code_note",
    "requested_language",
]

_NOTE = (
    "Your reply does not contain the code I asked for. Reply with the complete code in one "
    "```{fence} block: the code itself, not its output or a placeholder."
)
MISSING_CODE_NOTE = _NOTE.format(fence="python")
"""The user message of the follow-up call for a Python request (the measured wording)."""

_LANGUAGES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("bash", re.compile(r"\bbash\b|\bshell\s+(?:script|command|one-liner)s?\b", re.I)),
    ("sql", re.compile(r"\bsql(?:ite)?\b", re.I)),
    ("javascript", re.compile(r"\b(?:javascript|node\.?js)\b", re.I)),
    ("typescript", re.compile(r"\btypescript\b", re.I)),
)
"""Request wording that names a language other than Python, checked in order."""


def requested_language(request: str) -> str:
    """The fence language a code request asks for: `python` unless it names another.

    "a bash script", "a shell command" -> `bash`; "SQL", "SQLite" -> `sql`;
    JavaScript or Node.js -> `javascript`; TypeScript -> `typescript`;
    anything else (Python named, or no language) -> `python`. A request
    naming Python beside another language stays `python`.
    """
    if re.search(r"\bpython\b", request, re.IGNORECASE):
        return "python"
    for name, pattern in _LANGUAGES:
        if pattern.search(request):
            return name
    return "python"


def missing_code_note(request: str) -> str:
    """`MISSING_CODE_NOTE` with the fence of the language `request` asks for.

    A Python request (or one naming no language) gets `MISSING_CODE_NOTE`
    word for word; "create a bash script ..." asks for one ```bash block, so
    the follow-up is not steered into Python.
    """
    return _NOTE.format(fence=requested_language(request))


_ASKS = re.compile(
    r"\b(?:write|create|implement|generate|build|make|code)\b(?:\W+\w+){0,6}?\W+"
    r"(?:program|script|function|code|class|method)s?\b",
    re.IGNORECASE,
)
_NOT_CODE = re.compile(r"^\s*(?:#.*|pass|\.\.\.|)\s*$")


def asks_for_code(request: str) -> bool:
    """Whether `request` asks for code to be written ("write a program that ...").

    A writing verb (write, create, implement, generate, build, make, code)
    followed within seven words by a code noun (program, script, function,
    code, class, method). "What does this function do?" is not asking.
    """
    return _ASKS.search(request) is not None


def has_code(reply: str) -> bool:
    """Whether `reply` holds code that is more than a placeholder.

    True when a fenced block (or a raw code reply, `_leak.code_blocks`) has a
    line that is not blank, a comment, `pass` or `...`: a fence holding only
    `# Your code here` is not code.
    """
    return any(
        not _NOT_CODE.match(line) for block in code_blocks(reply) for line in block.splitlines()
    )


def ask_for_missing_code(
    model: ChatModel,
    run: TurnRun,
    window: Sequence[Message],
    *,
    client_system: str,
    temperature: float,
    max_tokens: int,
) -> dict[str, Any] | None:
    """Ask once for the code a code request's final reply lacks; keep it if it has code.

    Args:
        model: the agent's model.
        run: the step loop's result; its reply is replaced when the follow-up
            has code, and the call is added to its `n_steps`, tokens, `model_s`
            and `finish_reasons` (`_leak.follow_up_call`).
        window: the conversation without its system prompt, the request last.
        client_system: the client's own system messages joined ("" if none).
        temperature: sampling temperature of the follow-up call.
        max_tokens: completion cap of the follow-up call, tokens.

    Returns:
        None when it does not apply (a fault, steps ran out, an empty reply,
        a request that does not ask for code, a reply with code); else the
        record for `extra["missing_code"]`: `redraw` is `kept`, `no code`
        (the follow-up had none either; the first reply stays) or
        `unavailable` (the model failed; recorded in the run as a fault).
    """
    if run.infrastructure_error is not None or run.aborted or not run.reply.strip():
        return None
    if not window or window[-1]["role"] != "user":
        return None
    if not asks_for_code(window[-1]["content"]) or has_code(run.reply):
        return None
    try:
        text = reply_to_the_reply(
            model,
            run,
            window,
            missing_code_note(window[-1]["content"]),
            client_system=client_system,
            temperature=temperature,
            max_tokens=max_tokens,
        )
    except InfrastructureError:
        return {"redraw": "unavailable"}
    if text is None or not has_code(text):
        return {"redraw": "no code"}
    run.reply = run.final_response = text
    return {"redraw": "kept"}
