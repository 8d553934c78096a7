"""The agent turn: a text tool-call protocol a small local model can follow, and the step loop.

Protocol: to call a tool the model replies with one fenced block tagged `tool`
holding JSON `{"name": ..., "arguments": {...}}`; the tool's output comes back
as the next user message; any reply without a tool call is the final answer.
Parsing is lenient (`parse_tool_call`): other fence tags (`json`, none), a bare
JSON object, `args`/`parameters`/`input` for `arguments`, a string argument,
OpenAI-style `{"function": {...}}`, and Python-dict quoting are accepted,
because small models drift from any format.

One tool call per model reply; up to `max_steps` model calls per turn. A turn
that is still calling tools at its last step ends with `STEP_LIMIT_MARKER`,
which the outcome heuristics read as a failed turn.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nightschool.agent.tools import TOOL_SPECS, SessionWorkspace, cap_text
from nightschool.errors import InfrastructureError
from nightschool.feedback.heuristics import STEP_LIMIT_MARKER
from nightschool.llm import ChatModel, Message
from nightschool.trajectory import ToolCall

SYSTEM_PROMPT = """You are a helpful assistant. You have tools that work in a private \
workspace directory.

To use a tool, reply with ONLY a block like this and nothing else:
```tool
{{"name": "run_python", "arguments": {{"code": "print(2 + 2)"}}}}
```
You then get the tool's output and may use another tool or answer.

Tools (name, JSON arguments, what it does):
{tools}

When you can answer, reply to the user in plain text, without a tool block. \
Follow the user's instructions about the form of the answer."""
"""System prompt template (`{tools}`: one line per tool). Kept short for small models."""

CLIENT_SYSTEM_CHARS = 2000
"""Characters kept from the client's own system messages (added to the system prompt)."""

_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[^\n]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_TOOL_TAGS = {"tool", "tool_call", "tool_code", "json", "tools", "function", ""}
_DATA_TAGS = {"json", ""}
"""Fences that may hold an answer's data: a call only when it names a known tool."""
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input")
_PRIMARY_ARG = {"run_python": "code", "run_shell": "command", "read_file": "path"}
_PRIMARY_ARG.update({"list_files": "path", "write_file": "content"})


@dataclass(frozen=True)
class ParsedToolCall:
    """A tool call found in a model reply.

    Attributes:
        name: the tool's name as the model wrote it (not checked here).
        arguments: the arguments object.
        prose: reply text outside the tool block (the model's reasoning, if any).
    """

    name: str
    arguments: dict[str, Any]
    prose: str = ""


@dataclass
class TurnRun:
    """What the step loop produced for one turn (before verification and recording).

    Attributes:
        reply: text for the user ("" if the model said nothing).
        final_response: the reply as recorded (with the abort marker when aborted).
        tool_calls: every executed tool call, in order.
        n_steps: model calls made.
        tokens_in, tokens_out: summed over the model calls.
        model_s: seconds spent in model calls.
        tools_s: seconds spent running tools.
        finish_reasons: each model call's finish reason.
        planning: prose the model wrote around its tool calls.
        aborted: the step limit was reached while the model still called tools.
        infrastructure_error: the model or sandbox fault that ended the turn.
    """

    reply: str = ""
    final_response: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    n_steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model_s: float = 0.0
    tools_s: float = 0.0
    finish_reasons: list[str] = field(default_factory=list)
    planning: list[str] = field(default_factory=list)
    aborted: bool = False
    infrastructure_error: InfrastructureError | None = None


def build_system_prompt(playbook: str = "", client_system: str = "") -> str:
    """The agent's system prompt: tools, then the playbook section, then client instructions.

    Args:
        playbook: the `### SKILL PLAYBOOK` section (`format_playbook`), or "".
        client_system: the client's own system messages joined, or "" (capped at
            `CLIENT_SYSTEM_CHARS`).
    """
    tools = "\n".join(f"- {name} {spec}" for name, spec in TOOL_SPECS.items())
    parts = [SYSTEM_PROMPT.format(tools=tools)]
    if playbook.strip():
        parts.append(playbook.strip())
    if client_system.strip():
        text = cap_text(client_system.strip(), CLIENT_SYSTEM_CHARS)
        parts.append(f"Instructions from the application:\n{text}")
    return "\n\n".join(parts)


def _load_object(text: str) -> dict[str, Any] | None:
    """Parse a JSON (or Python-literal) object at the start of `text`, leniently."""
    text = text.strip()
    start = text.find("{")
    if start < 0:
        return None
    candidate = text[start:]
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(candidate)
    except json.JSONDecodeError:
        end = candidate.rfind("}")
        try:
            value = ast.literal_eval(candidate[: end + 1]) if end > 0 else None
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def _normalise(obj: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) from a tool-call object in any of the accepted shapes, or None."""
    inner = obj.get("function")
    if isinstance(inner, Mapping) and "name" in inner:
        obj = inner
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if not name:
        return None
    name = name.strip()
    raw: Any = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    if raw is None:
        raw = {k: v for k, v in obj.items() if k not in _NAME_KEYS}
    if isinstance(raw, str):
        loaded = _load_object(raw) if raw.strip().startswith("{") else None
        raw = loaded if loaded is not None else {_PRIMARY_ARG.get(name, "input"): raw}
    if not isinstance(raw, Mapping):
        return None
    return name, {str(k): v for k, v in raw.items()}


def parse_tool_call(text: str) -> ParsedToolCall | None:
    """Find the first tool call in a model reply; None means the reply is the final answer.

    Accepted: a fenced block tagged `tool` (or `tool_call`, ...) holding a JSON
    object with a tool name; a `json` or untagged block, or a bare JSON object
    with `"name"`/`"tool"`, only when it names a known tool (an answer "as
    JSON" with a `name` field is not a call). Fenced code in other languages (python,
    bash) is part of an answer, never a call.
    """
    for match in _FENCE.finditer(text):
        tag = match.group(1).lower()
        if tag not in _TOOL_TAGS:
            continue
        obj = _load_object(match.group(2))
        found = _normalise(obj) if obj is not None else None
        if found is not None and (tag not in _DATA_TAGS or found[0] in TOOL_SPECS):
            prose = (text[: match.start()] + text[match.end() :]).strip()
            return ParsedToolCall(found[0], found[1], prose)
    bare = re.search(r"\{\s*[\"'](?:name|tool)[\"']\s*:", text)
    if bare is not None and not _FENCE.search(text[: bare.start()]):
        obj = _load_object(text[bare.start() :])
        found = _normalise(obj) if obj is not None else None
        if found is not None and found[0] in TOOL_SPECS:
            return ParsedToolCall(found[0], found[1], text[: bare.start()].strip())
    return None


def conversation_window(messages: Sequence[Message], budget_chars: int) -> list[Message]:
    """The newest user/assistant messages that fit `budget_chars` (system messages dropped).

    The last message is always kept (cut to the budget, head and tail, if it is
    longer); older ones are kept newest first while they fit; the window then
    starts at a user message where possible.
    """
    chat = [m for m in messages if m["role"] in ("user", "assistant")]
    if not chat:
        return []
    last = chat[-1]
    kept: list[Message] = [
        Message(role=last["role"], content=cap_text(last["content"], budget_chars))
    ]
    used = len(kept[0]["content"])
    for message in reversed(chat[:-1]):
        used += len(message["content"])
        if used > budget_chars:
            break
        kept.append(Message(role=message["role"], content=message["content"]))
    kept.reverse()
    while len(kept) > 1 and kept[0]["role"] != "user":
        kept.pop(0)
    return kept


def tool_result_message(call: ToolCall, limit: int) -> Message:
    """The user message that hands a tool's output back to the model."""
    if call.error and call.result:
        body = f"ERROR: {call.error}\n{call.result}"
    elif call.error:
        body = f"ERROR: {call.error}"
    else:
        body = call.result or "(no output)"
    return Message(
        role="user",
        content=f"TOOL RESULT ({call.name}):\n{cap_text(body, limit)}\n\n"
        "Use another tool if needed, otherwise answer the user.",
    )


def run_steps(
    model: ChatModel,
    workspace: SessionWorkspace,
    messages: list[Message],
    *,
    max_steps: int,
    max_tokens: int,
    temperature: float,
    max_tool_output_chars: int,
) -> TurnRun:
    """Run the model/tool loop on `messages` (system prompt first); extends `messages`.

    Returns:
        The `TurnRun`. A model or sandbox fault ends the loop and is kept in
        `infrastructure_error` (not raised), so the caller can record the turn.
    """
    run = TurnRun()
    for step in range(1, max_steps + 1):
        try:
            started = time.perf_counter()
            completion = model.complete(messages, temperature=temperature, max_tokens=max_tokens)
            run.model_s += time.perf_counter() - started
        except InfrastructureError as exc:
            run.model_s += time.perf_counter() - started
            run.infrastructure_error = exc
            return run
        run.n_steps = step
        run.tokens_in += completion.tokens_in
        run.tokens_out += completion.tokens_out
        run.finish_reasons.append(completion.finish_reason)
        parsed = parse_tool_call(completion.text)
        if parsed is None:
            run.reply = run.final_response = completion.text.strip()
            return run
        if parsed.prose:
            run.planning.append(parsed.prose)
        if step == max_steps:
            break
        started = time.perf_counter()
        try:
            call = workspace.call(parsed.name, parsed.arguments)
        except InfrastructureError as exc:
            run.tools_s += time.perf_counter() - started
            run.infrastructure_error = exc
            return run
        run.tools_s += time.perf_counter() - started
        run.tool_calls.append(call)
        messages.append(Message(role="assistant", content=completion.text))
        messages.append(tool_result_message(call, max_tool_output_chars))
    run.aborted = True
    last = run.tool_calls[-1] if run.tool_calls else None
    tail = ""
    if last is not None:
        tail = (
            f"\nLast tool output ({last.name}):\n{cap_text(last.error or last.result or '', 600)}"
        )
    run.reply = (
        f"I stopped after {run.n_steps} steps without reaching an answer.{tail}\n\n"
        f"{STEP_LIMIT_MARKER}"
    )
    run.final_response = run.reply
    return run
