"""Reading tool calls and tool-call blobs out of a model's text reply.

`parse_tool_call` finds a call to one of the agent's tools in text (the fenced
protocol, and text replies in native mode). `detect_blob` finds a reply that
is a tool call to a tool that does not exist, e.g. `{"name": "solution",
"arguments": {"code": "..."}}`: measured with Qwen2.5-Coder-0.5B-Instruct,
asked for code it answered with such a blob (in a ```json or even a ```python
fence, naming `solution`, `is_palindrome`, `fib`, ...) under either protocol.
Such a reply must never be taken as the answer.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nightschool.agent.tools import AGENT_TOOL_NAMES

_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[^\n]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_TOOL_TAGS = {"tool", "tool_call", "tool_code", "json", "tools", "function", ""}
_DATA_TAGS = {"json", ""}
"""Fences that may hold an answer's data: a call only when it names a known tool."""
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input")
_PRIMARY_ARG = {"run_python": "code", "run_shell": "command", "read_file": "path"}
_PRIMARY_ARG.update({"list_files": "path", "write_file": "content"})
_NAMED_CALL = re.compile(
    r"\A\s*`?(" + "|".join(sorted(AGENT_TOOL_NAMES)) + r")`?\s*[:(]?\s*(\{.*\})\s*\)?\s*\Z",
    re.DOTALL,
)
"""`list_files {"path": "."}`: a known tool's name, then its arguments object."""

MISSING_BRACES = 2
"""Closing braces a call object may lack and still be read (a model stopping early)."""

BLOB_PROSE_CHARS = 200
"""Characters of prose a reply may hold beside a blob and still count as one
(a longer reply is an answer that happens to contain JSON)."""

ANSWER_KEYS = (
    "code",
    "solution",
    "answer",
    "text",
    "content",
    "response",
    "result",
    "output",
    "message",
    "source",
    "program",
    "script",
    "implementation",
    "function",
    "body",
)
"""Argument keys, in order of preference, whose string value is taken as the
answer a blob was carrying."""

_CODE_START = ("def ", "class ", "import ", "from ", "#!", "async def ", "@")


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


@dataclass(frozen=True)
class ToolBlob:
    """A reply that calls a tool that does not exist, instead of answering.

    Attributes:
        name: the non-existent tool's name (e.g. `solution`).
        arguments: its arguments object.
        answer: the code or text the arguments carry (`answer_text`), or "".
    """

    name: str
    arguments: dict[str, Any]
    answer: str = ""


def load_object(text: str) -> dict[str, Any] | None:
    """Parse a JSON (or Python-literal) object at the start of `text`, leniently."""
    found = _object_span(text)
    return found[0] if found is not None else None


def _object_span(text: str) -> tuple[dict[str, Any], int, int] | None:
    """(object, start, end) of the first JSON or Python-literal object in `text`."""
    start = text.find("{")
    if start < 0:
        return None
    candidate = text[start:]
    decoder = json.JSONDecoder(strict=False)
    try:
        value, length = decoder.raw_decode(candidate)
    except json.JSONDecodeError:
        length = candidate.rfind("}") + 1
        try:
            value = ast.literal_eval(candidate[:length]) if length > 1 else None
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            value = None
        if not isinstance(value, dict):
            value, length = (
                _with_closing_braces(decoder, candidate.rstrip()),
                len(candidate.rstrip()),
            )
        if not isinstance(value, dict):
            value, length = _with_triple_quotes(decoder, candidate)
    return (value, start, start + length) if isinstance(value, dict) else None


def _with_triple_quotes(decoder: json.JSONDecoder, text: str) -> tuple[Any, int]:
    """`text` decoded with its first-to-last triple-quoted span as one JSON string.

    Returns (value, characters of `text` it spans), or (None, 0). Measured
    (`bench/bench_tool_leak.py`, Qwen2.5-Coder-1.5B): a `run_python` call whose
    code was put between triple double quotes, around code with a
    triple-quoted string of its own, which neither JSON nor a Python literal
    reads (the inner quotes end the outer string), was taken as the answer and
    shown to the user. Taking the first and the last triple quote as the outer
    ones reads it as the model meant.
    """
    first, last = text.find('"""'), text.rfind('"""')
    if first < 0 or last <= first:
        return None, 0
    inner = json.dumps(text[first + 3 : last])
    rebuilt = text[:first] + inner + text[last + 3 :]
    try:
        value, length = decoder.raw_decode(rebuilt)
    except json.JSONDecodeError:
        return _with_closing_braces(decoder, rebuilt.rstrip()), len(text.rstrip())
    return value, length + (last + 3 - first) - len(inner)


def _with_closing_braces(decoder: json.JSONDecoder, text: str) -> Any:
    """`text` decoded after adding up to `MISSING_BRACES` closing braces, or None.

    Measured: Qwen2.5-Coder-0.5B wrote `{"name": "run_python", "arguments":
    {"code": "print(2**100)"}` (one brace short), which was then taken as its answer.
    """
    for missing in range(1, MISSING_BRACES + 1):
        try:
            value, length = decoder.raw_decode(text + "}" * missing)
        except json.JSONDecodeError:
            continue
        if length == len(text) + missing:
            return value
    return None


def normalise_call(
    obj: Mapping[str, Any], *, require_arguments: bool = False
) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) from a tool-call object in any of the accepted shapes, or None.

    Args:
        obj: `{"name": ..., "arguments": {...}}` and its variants (`tool`,
            `args`, `parameters`, `input`, OpenAI's `{"function": {...}}`,
            arguments as JSON text or as a bare string).
        require_arguments: only accept an object with an explicit arguments
            key (or a `function` wrapper); otherwise its other keys are taken
            as the arguments.
    """
    inner = obj.get("function")
    wrapped = isinstance(inner, Mapping) and "name" in inner
    if isinstance(inner, Mapping) and wrapped:
        obj = inner
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if not name or not name.strip():
        return None
    name = name.strip()
    raw: Any = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    if raw is None:
        if require_arguments and not wrapped:
            return None
        raw = {k: v for k, v in obj.items() if k not in _NAME_KEYS}
    if isinstance(raw, str):
        loaded = load_object(raw) if raw.strip().startswith("{") else None
        raw = loaded if loaded is not None else {_PRIMARY_ARG.get(name, "input"): raw}
    if not isinstance(raw, Mapping):
        return None
    return name, {str(k): v for k, v in raw.items()}


def parse_tool_call(text: str) -> ParsedToolCall | None:
    """Find the first tool call in a model reply; None means the reply is the final answer.

    Accepted: a fenced block tagged `tool` (or `tool_call`, ...) holding a JSON
    object with a tool name; a `<tool_call>` block (Qwen2.5's native format)
    naming a known tool; a `json` or untagged block, or a bare JSON object
    with `"name"`/`"tool"`, only when it names a known tool (an answer "as
    JSON" with a `name` field is not a call); a reply that is only a known
    tool's name followed by its arguments object. Fenced code in other
    languages (python, bash) is part of an answer, never a call.

    The name of a call from a `tool`-tagged fence is not checked: the caller
    treats an unknown name as a blob (`detect_blob`).
    """
    for match in _TOOL_CALL_TAG.finditer(text):
        obj = load_object(match.group(1))
        found = normalise_call(obj) if obj is not None else None
        if found is not None and found[0] in AGENT_TOOL_NAMES:
            prose = (text[: match.start()] + text[match.end() :]).strip()
            return ParsedToolCall(found[0], found[1], prose)
    for match in _FENCE.finditer(text):
        tag = match.group(1).lower()
        if tag not in _TOOL_TAGS:
            continue
        obj = load_object(match.group(2))
        found = normalise_call(obj) if obj is not None else None
        if found is not None and (tag not in _DATA_TAGS or found[0] in AGENT_TOOL_NAMES):
            prose = (text[: match.start()] + text[match.end() :]).strip()
            return ParsedToolCall(found[0], found[1], prose)
    bare = re.search(r"\{\s*[\"'](?:name|tool)[\"']\s*:", text)
    if bare is not None and not _FENCE.search(text[: bare.start()]):
        obj = load_object(text[bare.start() :])
        found = normalise_call(obj) if obj is not None else None
        if found is not None and found[0] in AGENT_TOOL_NAMES:
            return ParsedToolCall(found[0], found[1], text[: bare.start()].strip())
    named = _NAMED_CALL.match(text)
    if named is not None:
        obj = load_object(named.group(2))
        if obj is not None:
            return ParsedToolCall(named.group(1), {str(k): v for k, v in obj.items()})
    return None


def answer_text(arguments: Mapping[str, Any]) -> str:
    """The code or text a blob's arguments carry, or "".

    The first non-empty string under one of `ANSWER_KEYS`; else the first
    string value that looks like code or prose (several lines, or starting
    like Python code). A lone short value such as `{"s": "racecar"}` is an
    example input, not an answer.
    """
    for key in ANSWER_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip("\n")
    for value in arguments.values():
        if isinstance(value, str) and (
            "\n" in value.strip() or value.lstrip().startswith(_CODE_START)
        ):
            return value.strip("\n")
    return ""


def detect_blob(text: str) -> ToolBlob | None:
    """A reply that is a tool call naming a tool that does not exist, or None.

    Detected, when the name is not one of the agent's tools: a `<tool_call>`
    block (anywhere in the reply); a fenced block of any language, or a bare
    object, that is nothing but `{"name": ..., "arguments": ...}` (an
    explicit arguments key, or OpenAI's `{"function": {...}}`; `tool`,
    `args`, `parameters`, `input` accepted), with at most `BLOB_PROSE_CHARS`
    characters of other text in the reply. An answer given as JSON data
    (`{"name": "Alice", "age": 3}`) has no arguments key and is not a blob.
    """
    for match in _TOOL_CALL_TAG.finditer(text):
        blob = _blob(load_object(match.group(1)))
        if blob is not None:
            return blob
    for match in _FENCE.finditer(text):
        body = match.group(2).strip()
        span = _object_span(body)
        if span is None or span[1] != 0 or span[2] != len(body):
            continue
        outside = len(text) - (match.end() - match.start())
        if outside <= BLOB_PROSE_CHARS:
            blob = _blob(span[0])
            if blob is not None:
                return blob
    start = re.search(r"\{\s*[\"'](?:name|tool|tool_name|function)[\"']\s*:", text)
    if start is None or "```" in text[: start.start()]:
        return None  # no object, or one inside a fence (a fence holding only one is above)
    span = _object_span(text[start.start() :])
    if span is None:
        return None
    outside = len(text.strip()) - (span[2] - span[1])
    return _blob(span[0]) if outside <= BLOB_PROSE_CHARS else None


def _blob(obj: Mapping[str, Any] | None) -> ToolBlob | None:
    found = normalise_call(obj, require_arguments=True) if obj is not None else None
    if found is None or found[0] in AGENT_TOOL_NAMES:
        return None
    return ToolBlob(found[0], found[1], answer_text(found[1]))
