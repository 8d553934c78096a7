"""The agent turn: two tool-call protocols, blob detection, and the step loop.

Native protocol (`protocol="native"`, for a model whose `supports_tools` is
True: `uses_native_tools`): the agent's tools go to the model as OpenAI function tools
(`TOOL_SCHEMAS`); its `Completion.tool_calls` run, and the results go back as
`tool` messages after an `assistant` message carrying the calls. A text reply
that still holds a call (a ```json fence, a `<tool_call>` block: small models
drift) is read with `parse_tool_call` and handled the same way.

Fenced protocol (`protocol="fenced"`, the fallback): to call a tool the model
replies with one fenced block tagged `tool` holding JSON `{"name": ...,
"arguments": {...}}`; the tool's output comes back as the next user message.
Parsing is lenient (`parse_tool_call`): other fence tags (`json`, none), a
bare JSON object, `args`/`parameters`/`input` for `arguments`, a string
argument, OpenAI-style `{"function": {...}}`, Python-dict quoting,
`<tool_call>` blocks and `list_files {...}` are accepted, because small models
drift from any format.

In both, a reply without a tool call is the final answer, unless it is a
tool-call blob (`detect_blob`: a call to a tool that does not exist, such as
`{"name": "solution", "arguments": {"code": "..."}}`). A blob is never the
answer: the model is told the tool does not exist and to reply with the
code or text itself, and the loop goes on (the blob's step counts). When the
steps run out, code or text a blob carried (`ToolBlob.answer`) is the answer;
without one, the turn ends with `STEP_LIMIT_MARKER`.

Up to `max_steps` model calls per turn (fenced: one tool call per reply;
native: up to `MAX_CALLS_PER_REPLY`). A turn that is still calling tools at
its last step ends with `STEP_LIMIT_MARKER`, which the outcome heuristics read
as a failed turn.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from nightschool.agent._parsing import (
    ParsedToolCall,
    ToolBlob,
    answer_text,
    detect_blob,
    parse_tool_call,
)
from nightschool.agent.tools import TOOL_SPECS, SessionWorkspace, cap_text
from nightschool.errors import InfrastructureError
from nightschool.feedback.heuristics import STEP_LIMIT_MARKER
from nightschool.llm import (
    ChatModel,
    Completion,
    Message,
    NativeToolCall,
    supports_native_tools,
)
from nightschool.trajectory import ToolCall

__all__ = [
    "CLIENT_SYSTEM_CHARS",
    "DIRECT_SYSTEM_PROMPT",
    "FINAL_STEP_NOTE",
    "MAX_CALLS_PER_REPLY",
    "NATIVE_PRACTICE_USES",
    "NATIVE_SYSTEM_PROMPT",
    "NATIVE_TOOL_USES",
    "PROGRAMS_NOTE",
    "REPEAT_NOTE",
    "SYSTEM_PROMPT",
    "ParsedToolCall",
    "ToolBlob",
    "ToolProtocol",
    "TurnRun",
    "blob_correction",
    "build_system_prompt",
    "conversation_window",
    "detect_blob",
    "parse_tool_call",
    "run_steps",
    "tool_result_message",
    "uses_native_tools",
]

ToolProtocol = Literal["native", "fenced"]
"""How the model calls tools: OpenAI-native tool calls, or fenced JSON in text."""

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
"""Fenced-protocol system prompt template (`{tools}`: one line per tool). Kept short
for small models; `build_system_prompt` appends `PROGRAMS_NOTE`."""

NATIVE_SYSTEM_PROMPT = """You are a helpful assistant. Your tools work in a private \
workspace directory: call one only when you need to run code, run a command or look \
at files; you then get its output.

The only tools are {names}. When you can answer, reply to the user directly with \
the answer itself, not a tool call; put code in a fenced block. Follow the user's \
instructions about the form of the answer."""
"""Native-protocol system prompt template (`{names}`: the tool names). The tools'
schemas travel in the request; a chat template such as Qwen2.5's appends them to
this prompt. `build_system_prompt` appends `PROGRAMS_NOTE`."""

PROGRAMS_NOTE = (
    "The tools are only for you to call here; they do not exist inside programs. A program "
    "you write for the user must be self-contained: standard library only, unless the user "
    "asks otherwise."
)
"""Ends both tool prompts (`build_system_prompt`). Why (issue "Transfer, measured
honestly", part 3): asked for whole programs through `nightschool serve` at default
settings, the agent wrote its tool names into 19 of 32 programs (`def run_python(code)`,
`from tools import read_file`). The note's own effect is not measured yet
(`bench/bench_tool_leak.py`); the reply is also checked and repaired (`agent._leak`)."""

DIRECT_SYSTEM_PROMPT = """You are a helpful assistant. Answer the user directly in \
one reply; you cannot run anything, so put code in a fenced block. Follow the \
user's instructions about the form of the answer."""
"""System prompt of a turn the chat router sends `direct` (no tools offered,
one model call: `learners.chat_router`)."""

NATIVE_TOOL_USES = "run code, run a command or look at files"
"""When `NATIVE_SYSTEM_PROMPT` says to call a tool."""
NATIVE_PRACTICE_USES = f"{NATIVE_TOOL_USES}, or when the user asks you to practise"
"""`NATIVE_TOOL_USES` when the self-play tools are offered: the plain sentence told
the model to call tools only for code, commands and files. Measured with
`bench/bench_self_play_tools.py` on Qwen2.5-Coder-1.5B, 4 practice requests per
run: 2/4 and 1/4 called the right tool with the plain prompt, 0/4 with a
separate "when the user asks you to practise, call ..." paragraph instead
(dropped)."""

CLIENT_SYSTEM_CHARS = 2000
"""Characters kept from the client's own system messages (added to the system prompt)."""

MAX_CALLS_PER_REPLY = 4
"""Native tool calls run from one reply; further ones get a "not run" result."""

REPEAT_NOTE = (
    "(You already made this exact call in this turn. Answer the user now, or do "
    "something different.)"
)
"""Added to the result of a call identical to an earlier one in the turn. Measured:
Qwen2.5-Coder-0.5B repeated the same call (e.g. `list_files` on an empty
workspace) until the steps ran out."""

FINAL_STEP_NOTE = (
    "This is your last step: answer the user now, using the tool output above. Do not call a tool."
)
"""Sent with the tool results before the turn's last model call (a call made then is
never run). Measured on Qwen2.5-Coder-0.5B after an empty `list_files`: with it
the model answered, without it the model called the tool again."""


def uses_native_tools(model: ChatModel) -> bool:
    """Whether the agent uses the native protocol with `model` (`supports_native_tools`).

    True when the model reports `supports_tools`; a model without that
    attribute (a wrapper written before it existed) gets the fenced protocol.
    May load a lazily loaded model.
    """
    return supports_native_tools(model)


def blob_correction(name: str, tools: Sequence[str] = tuple(TOOL_SPECS)) -> str:
    """What the model is told after a tool-call blob naming `name` (`tools`: the real ones)."""
    return (
        f"`{name}` is not a tool; the tools are {', '.join(tools)}. To answer, reply with "
        "the code or text itself, not a tool call."
    )


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
        aborted: the step limit was reached without an answer.
        infrastructure_error: the model or sandbox fault that ended the turn.
        protocol: the tool protocol used (`native` or `fenced`).
        blob_replies: replies that were tool-call blobs (`detect_blob`), each
            answered with `blob_correction`.
        blob_text: the code or text the latest blob carried, or "".
        blob_answer: the reply is `blob_text` because the steps ran out.
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
    protocol: ToolProtocol = "fenced"
    blob_replies: int = 0
    blob_text: str = ""
    blob_answer: bool = False


def build_system_prompt(
    playbook: str = "",
    client_system: str = "",
    *,
    worked_examples: str = "",
    protocol: ToolProtocol = "fenced",
    tools: Mapping[str, str] = TOOL_SPECS,
) -> str:
    """The agent's system prompt: tools, playbook, worked examples, client instructions.

    Args:
        playbook: the `### SKILL PLAYBOOK` section (`format_playbook`), or "".
        client_system: the client's own system messages joined, or "" (capped at
            `CLIENT_SYSTEM_CHARS`).
        worked_examples: the `### WORKED EXAMPLES` section
            (`format_worked_examples`), or ""; placed after the playbook.
        protocol: `fenced` describes the fenced tool format and lists the
            tools; `native` only names them (their schemas go with the request).
        tools: tool name → description (`SessionWorkspace.specs`); empty: a
            direct answer (`DIRECT_SYSTEM_PROMPT`, no tool instructions).
    """
    if not tools:
        parts = [DIRECT_SYSTEM_PROMPT]
    elif protocol == "native":
        prompt = NATIVE_SYSTEM_PROMPT.format(names=", ".join(tools))
        if "self_play" in tools:
            prompt = prompt.replace(NATIVE_TOOL_USES, NATIVE_PRACTICE_USES)
        parts = [f"{prompt} {PROGRAMS_NOTE}"]
    else:
        listed = "\n".join(f"- {name} {spec}" for name, spec in tools.items())
        parts = [f"{SYSTEM_PROMPT.format(tools=listed)} {PROGRAMS_NOTE}"]
    for section in (playbook, worked_examples):
        if section.strip():
            parts.append(section.strip())
    if client_system.strip():
        text = cap_text(client_system.strip(), CLIENT_SYSTEM_CHARS)
        parts.append(f"Instructions from the application:\n{text}")
    return "\n\n".join(parts)


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


def _result_text(call: ToolCall, limit: int) -> str:
    if call.error and call.result:
        body = f"ERROR: {call.error}\n{call.result}"
    elif call.error:
        body = f"ERROR: {call.error}"
    else:
        body = call.result or "(no output)"
    return cap_text(body, limit)


def tool_result_message(call: ToolCall, limit: int, note: str = "") -> Message:
    """The user message that hands a tool's output back to the model (fenced protocol).

    Args:
        call: the call and its outcome.
        limit: characters of the output shown (head and tail kept).
        note: a line added after the output (e.g. `REPEAT_NOTE`), or "".
    """
    after = note or "Use another tool if needed, otherwise answer the user."
    return Message(
        role="user",
        content=f"TOOL RESULT ({call.name}):\n{_result_text(call, limit)}\n\n{after}",
    )


@dataclass(frozen=True)
class _Reading:
    """One reply, read: the calls it makes, its prose, or the blob it is."""

    calls: list[NativeToolCall]
    prose: str
    blob: ToolBlob | None = None


def _read(
    completion: Completion, *, native: bool, step: int, tools: Collection[str] = TOOL_SPECS
) -> _Reading:
    """The calls in a reply (native calls first, else calls written in its text).

    A reply whose every call names none of `tools` is a blob.
    """
    text = completion.text
    if native and completion.tool_calls:
        calls, prose = list(completion.tool_calls), text.strip()
    else:
        parsed = parse_tool_call(text)
        if parsed is None:
            return _Reading([], text.strip(), detect_blob(text))
        raw = json.dumps(parsed.arguments, default=repr)
        call_id = f"call_{step}" if native else ""
        calls, prose = [NativeToolCall(call_id, parsed.name, parsed.arguments, raw)], parsed.prose
    if all(call.name not in tools for call in calls):
        first = calls[0]
        return _Reading(
            calls, prose, ToolBlob(first.name, first.arguments, answer_text(first.arguments))
        )
    return _Reading(calls, prose)


def _blob_messages(
    text: str, reading: _Reading, *, native: bool, tools: Sequence[str]
) -> list[Message]:
    """The blob as the model wrote it, then the correction."""
    assert reading.blob is not None
    if native and reading.calls:
        return [
            Message(
                role="assistant",
                content=reading.prose,
                tool_calls=[call.to_wire() for call in reading.calls],
            ),
            *(
                Message(
                    role="tool", content=blob_correction(call.name, tools), tool_call_id=call.id
                )
                for call in reading.calls
            ),
        ]
    return [
        Message(role="assistant", content=text),
        Message(role="user", content=blob_correction(reading.blob.name, tools)),
    ]


def _run_calls(
    workspace: SessionWorkspace,
    reading: _Reading,
    run: TurnRun,
    *,
    text: str,
    native: bool,
    limit: int,
    seen: set[str],
    last_next: bool,
) -> list[Message]:
    """Run a reply's calls; return the messages that hand the results back.

    `seen` holds the calls made earlier in the turn (name and arguments); a
    repeat gets `REPEAT_NOTE`, and this reply's calls are added. When the next
    model call is the turn's last (`last_next`), `FINAL_STEP_NOTE` goes with
    the results.

    Raises:
        SandboxUnavailableError, SandboxFaultError: the sandbox itself failed
            (calls run before it are in `run.tool_calls`).
    """
    if not native:
        call = reading.calls[0]
        record = _timed_call(workspace, call, run)
        notes = [REPEAT_NOTE] * _repeated(call, seen) + [FINAL_STEP_NOTE] * last_next
        return [
            Message(role="assistant", content=text),
            tool_result_message(record, limit, "\n".join(notes)),
        ]
    results: list[Message] = []
    for index, call in enumerate(reading.calls):
        if index >= MAX_CALLS_PER_REPLY:
            content = f"not run: at most {MAX_CALLS_PER_REPLY} tool calls per reply"
        elif call.name not in workspace.specs:
            content = blob_correction(call.name, workspace.names)
        else:
            content = _result_text(_timed_call(workspace, call, run), limit)
            if _repeated(call, seen):
                content += f"\n{REPEAT_NOTE}"
        results.append(Message(role="tool", content=content, tool_call_id=call.id))
    wire = [call.to_wire() for call in reading.calls]
    if last_next:
        results.append(Message(role="user", content=FINAL_STEP_NOTE))
    return [Message(role="assistant", content=reading.prose, tool_calls=wire), *results]


def _repeated(call: NativeToolCall, seen: set[str]) -> bool:
    """Whether `call` was made before (by name and arguments); remembers it."""
    arguments = call.arguments if call.arguments_error is None else call.raw_arguments
    key = json.dumps([call.name, arguments], sort_keys=True, default=repr)
    if key in seen:
        return True
    seen.add(key)
    return False


def _timed_call(workspace: SessionWorkspace, call: NativeToolCall, run: TurnRun) -> ToolCall:
    """Run one known tool (or record its unreadable arguments) and add it to `run`."""
    started = time.perf_counter()
    try:
        if call.arguments_error is not None:
            record = ToolCall(
                name=call.name,
                error=f"{call.arguments_error}; got {cap_text(call.raw_arguments, 200)!r}; "
                f"usage: {call.name} {workspace.specs[call.name]}",
            )
        else:
            record = workspace.call(call.name, call.arguments)
    finally:
        run.tools_s += time.perf_counter() - started
    run.tool_calls.append(record)
    return record


def run_steps(
    model: ChatModel,
    workspace: SessionWorkspace,
    messages: list[Message],
    *,
    max_steps: int,
    max_tokens: int,
    temperature: float,
    max_tool_output_chars: int,
    protocol: ToolProtocol = "fenced",
    offer_tools: bool = True,
) -> TurnRun:
    """Run the model/tool loop on `messages` (system prompt first); extends `messages`.

    Args:
        model: the agent's model; offered the workspace's tools
            (`SessionWorkspace.schemas`) on every call when `protocol` is
            `native` (a fenced call passes no `tools`).
        workspace: where the tools run.
        messages: the conversation, system prompt first; the loop appends the
            assistant replies and tool results it sends on.
        max_steps: model calls at most, >= 1.
        max_tokens: completion cap per model call, tokens.
        temperature: sampling temperature.
        max_tool_output_chars: characters of one tool result shown to the model.
        protocol: `native` or `fenced` (see the module docstring).
        offer_tools: False: no tools are offered or run (a direct answer); a
            reply that calls one is a blob.

    Returns:
        The `TurnRun`. A model or sandbox fault ends the loop and is kept in
        `infrastructure_error` (not raised), so the caller can record the turn.
    """
    run = TurnRun(protocol=protocol)
    native = protocol == "native"
    seen: set[str] = set()
    names, schemas = (workspace.names, workspace.schemas) if offer_tools else ((), ())
    for step in range(1, max_steps + 1):
        started = time.perf_counter()
        try:
            if native and schemas:
                completion = model.complete(
                    messages, temperature=temperature, max_tokens=max_tokens, tools=schemas
                )
            else:
                completion = model.complete(
                    messages, temperature=temperature, max_tokens=max_tokens
                )
        except InfrastructureError as exc:
            run.infrastructure_error = exc
            return run
        finally:
            run.model_s += time.perf_counter() - started
        run.n_steps = step
        run.tokens_in += completion.tokens_in
        run.tokens_out += completion.tokens_out
        run.finish_reasons.append(completion.finish_reason)
        reading = _read(completion, native=native, step=step, tools=names)
        if reading.blob is not None:
            run.blob_replies += 1
            run.blob_text = reading.blob.answer or run.blob_text
            if step < max_steps:
                messages.extend(
                    _blob_messages(completion.text, reading, native=native, tools=names)
                )
            continue
        if not reading.calls:
            run.reply = run.final_response = reading.prose
            return run
        if reading.prose:
            run.planning.append(reading.prose)
        if step == max_steps:
            break
        try:
            messages.extend(
                _run_calls(
                    workspace,
                    reading,
                    run,
                    text=completion.text,
                    native=native,
                    limit=max_tool_output_chars,
                    seen=seen,
                    last_next=step + 1 == max_steps,
                )
            )
        except InfrastructureError as exc:
            run.infrastructure_error = exc
            return run
    return _out_of_steps(run)


def _out_of_steps(run: TurnRun) -> TurnRun:
    """End a turn whose steps ran out: a blob's code or text, else the abort marker."""
    if run.blob_text:
        run.reply = run.final_response = run.blob_text
        run.blob_answer = True
        return run
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
