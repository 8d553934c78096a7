"""OpenAI wire format: the request model, its checks, and the response bodies.

Request fields follow the OpenAI Chat Completions API
(https://platform.openai.com/docs/api-reference/chat/create). `temperature`
(0..2) and `max_tokens` / `max_completion_tokens` are honoured (the tokens cap
never above the server's own); other fields (`top_p`, `tools`, ...) are
accepted and ignored. Error bodies have the
OpenAI shape `{"error": {"message", "type", "code", "param"}}`, so the
`openai` SDK raises its usual `APIStatusError` subclasses with our message.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from nightschool.llm import Message

SESSION_HEADER = "X-Nightschool-Session"

TASK_KIND_HEADER = "X-Nightschool-Task-Kind"
"""Optional request header: `chat` (default) or `eval`. Eval turns are recorded with
`task_kind="eval"`, so an eval suite run over HTTP never feeds the Reflector."""

TASK_KINDS = ("chat", "eval")
"""Values `TASK_KIND_HEADER` accepts."""
"""Request header that names the chat session (workspace and correction tracking)."""

MAX_SESSION_ID_CHARS = 128
"""Longest session id accepted from a header or the `user` field."""


class ServerLimits(BaseModel):
    """Bounds on what one request may carry; over a bound is a 4xx, never work done.

    Defaults are generous for chat (a long pasted file fits) and small enough
    that one request cannot exhaust memory: 1 MiB of JSON decodes to a few MiB of
    Python objects at most.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_body_bytes: int = Field(default=1 << 20, gt=0)
    """Largest request body, bytes (over it: 413)."""
    max_messages: int = Field(default=256, gt=0)
    """Most messages in one conversation (over it: 400)."""
    max_message_chars: int = Field(default=100_000, gt=0)
    """Longest single message after joining its text parts, characters (over it: 400)."""
    stream_chunk_chars: int = Field(default=24, gt=0)
    """About how many characters of the reply go in one streamed chunk."""


class ApiError(Exception):
    """A request the server answers with an OpenAI-style error body.

    Attributes:
        status_code: HTTP status (4xx for the client's mistakes, 5xx otherwise).
        message: one sentence saying what is wrong and, where it helps, what to do.
        type: OpenAI error type (`invalid_request_error`, `authentication_error`,
            `server_error`, ...).
        code: short machine-readable code (`invalid_messages`, `model_unavailable`, ...).
        param: the offending request field, when there is one.
    """

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.type = type
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        """The JSON error body."""
        return error_body(self.message, type=self.type, code=self.code, param=self.param)


def error_body(
    message: str,
    *,
    type: str,
    code: str,
    param: str | None = None,
) -> dict[str, Any]:
    """Return `{"error": {"message", "type", "code", "param"}}`."""
    return {"error": {"message": message, "type": type, "code": code, "param": param}}


def _published_text_part(schema: dict[str, Any]) -> None:
    """State in the published schema what `to_messages` accepts: a text part with its text.

    Validation stays in `to_messages`, whose 400s say in words what is wrong.
    """
    schema["required"] = ["type", "text"]
    schema["properties"]["type"]["enum"] = ["text"]
    schema["properties"]["text"] = {"type": "string", "title": "Text"}


class ContentPart(BaseModel):
    """One part of a list-of-parts message content; only `text` parts are supported."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_published_text_part)

    type: StrictStr
    text: StrictStr | None = None


class MessageIn(BaseModel):
    """One message as a client sends it.

    `developer` is OpenAI's newer name for `system` and is treated as such.
    `tool` and `function` messages are refused: the agent runs its own tools.
    """

    model_config = ConfigDict(extra="allow")

    role: StrictStr = Field(
        json_schema_extra={"enum": ["system", "developer", "user", "assistant"]}
    )
    content: StrictStr | list[ContentPart] | None = None
    name: StrictStr | None = None


class StreamOptions(BaseModel):
    """`stream_options` of a streaming request."""

    model_config = ConfigDict(extra="allow")

    include_usage: StrictBool = False


class ChatCompletionRequest(BaseModel):
    """Body of `POST /v1/chat/completions` (the fields the server reads)."""

    model_config = ConfigDict(extra="allow")

    model: StrictStr | None = None
    messages: list[MessageIn] = Field(
        description="The conversation; the last message is the user's request (not blank).",
        json_schema_extra={"minItems": 1},
    )
    stream: StrictBool | None = False
    stream_options: StreamOptions | None = None
    user: StrictStr | None = None
    n: int | None = Field(default=None, ge=1, le=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)


_ROLES: Mapping[str, Literal["system", "user", "assistant"]] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
}


def to_messages(request: ChatCompletionRequest, limits: ServerLimits) -> list[Message]:
    """Check the conversation and convert it to the pipeline's `Message` list.

    Text parts of a list content are joined with newlines; `null` content (an
    assistant message that only carried tool calls) becomes "".

    Raises:
        ApiError: 400 for no messages, too many, an unknown role, a non-text part,
            a message over `max_message_chars`, or a last message that is not a
            non-empty user message.
    """
    if not request.messages:
        raise _bad("`messages` is empty; send at least one user message", "messages")
    if len(request.messages) > limits.max_messages:
        raise _bad(
            f"too many messages: {len(request.messages)} (at most {limits.max_messages})",
            "messages",
            code="too_many_messages",
        )
    out: list[Message] = []
    for index, message in enumerate(request.messages):
        where = f"messages[{index}]"
        role = _ROLES.get(message.role)
        if role is None:
            raise _bad(
                f"{where}.role {message.role!r} is not supported; use system, user or "
                "assistant (nightschool runs its own tools, so tool messages are refused)",
                f"{where}.role",
            )
        text = _text_of(message, where)
        if not _is_utf8(text):
            raise _bad(
                f"{where}.content is not valid Unicode text (it holds a lone surrogate)",
                f"{where}.content",
            )
        if len(text) > limits.max_message_chars:
            raise _bad(
                f"{where} has {len(text):,} characters (at most {limits.max_message_chars:,})",
                f"{where}.content",
                code="message_too_long",
            )
        out.append(Message(role=role, content=text))
    last = out[-1]
    if last["role"] != "user":
        raise _bad(
            f"the last message must be the user's request, not {request.messages[-1].role!r}",
            f"messages[{len(out) - 1}].role",
        )
    if not last["content"].strip():
        raise _bad("the last user message is empty", f"messages[{len(out) - 1}].content")
    return out


def _text_of(message: MessageIn, where: str) -> str:
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for index, part in enumerate(content):
        if part.type == "text" and part.text is None:
            raise _bad(
                f"{where}.content[{index}] is a text part without `text`", f"{where}.content"
            )
        if part.type != "text" or part.text is None:
            raise _bad(
                f"{where}.content[{index}] is a {part.type!r} part; only text parts are supported",
                f"{where}.content",
            )
        texts.append(part.text)
    return "\n".join(texts)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _bad(message: str, param: str, *, code: str = "invalid_messages") -> ApiError:
    return ApiError(400, message, code=code, param=param)


def session_id_for(header: str | None, user: str | None, messages: Sequence[Message]) -> str:
    """The session id: the header, else the `user` field, else a hash of the first user message.

    The hash fallback keeps a client that re-sends the whole conversation each
    turn (every OpenAI client does) in one session without any extra field.

    Raises:
        ApiError: 400 when the given id is blank or longer than `MAX_SESSION_ID_CHARS`.
    """
    for source, value in ((SESSION_HEADER, header), ("user", user)):
        if value is None:
            continue
        value = value.strip()
        if not value or len(value) > MAX_SESSION_ID_CHARS or not _is_utf8(value):
            raise ApiError(
                400,
                f"{source} must be 1 to {MAX_SESSION_ID_CHARS} non-blank characters",
                code="invalid_session",
                param=source if source == "user" else None,
            )
        return value
    first = next((m["content"] for m in messages if m["role"] == "user"), "")
    return "h-" + hashlib.sha256(first.encode()).hexdigest()[:20]


def usage(tokens_in: int, tokens_out: int) -> dict[str, int]:
    """OpenAI `usage` object (tokens as counted by the model backend, all agent steps)."""
    return {
        "prompt_tokens": tokens_in,
        "completion_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }


FinishReason = Literal["stop", "length"]
"""Why the reply ended: `length` when the completion cap cut it, else `stop`."""


def turn_finish_reason(extra: Mapping[str, Any]) -> FinishReason:
    """The OpenAI `finish_reason` of a turn, from its trajectory's `extra`.

    A turn's reply is the text of its last model call (the agent loop ends on
    a call without tool calls), so the turn ends as that call did: `length`
    when its `finish_reason` was `length` (the `max_tokens` cap cut it), else
    `stop`. A turn whose steps ran out (`aborted`, or `blob_answer`) answers
    with a text the agent composed, not the last call's: `stop`.
    """
    if extra.get("aborted") or extra.get("blob_answer"):
        return "stop"
    reasons = extra.get("finish_reasons")
    if isinstance(reasons, list) and reasons and reasons[-1] == "length":
        return "length"
    return "stop"


def completion_body(
    *,
    completion_id: str,
    model: str,
    reply: str,
    usage_: Mapping[str, int],
    extension: Mapping[str, Any],
    created: int | None = None,
    finish_reason: FinishReason = "stop",
) -> dict[str, Any]:
    """A non-streaming `chat.completion` body with the `nightschool` extension."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": dict(usage_),
        "nightschool": dict(extension),
    }


_PIECE = re.compile(r"\s*\S+")


def split_reply(text: str, chunk_chars: int) -> list[str]:
    """Cut `text` into pieces of about `chunk_chars`, at word boundaries, losslessly.

    `"".join(split_reply(t, n)) == t` for every `t`.
    """
    pieces: list[str] = []
    current = ""
    end = 0
    for match in _PIECE.finditer(text):
        current += match.group(0)
        end = match.end()
        if len(current) >= chunk_chars:
            pieces.append(current)
            current = ""
    current += text[end:]
    if current:
        pieces.append(current)
    return pieces


def sse_chunks(
    *,
    completion_id: str,
    model: str,
    reply: str,
    usage_: Mapping[str, int],
    extension: Mapping[str, Any],
    include_usage: bool,
    chunk_chars: int,
    finish_reason: FinishReason = "stop",
) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed reply, in order.

    A first chunk with the role, one chunk per piece of text, a last chunk
    with `finish_reason` (`stop` or `length`), `usage` and the `nightschool` extension; when
    the client asked for `stream_options.include_usage`, a final chunk with
    empty `choices` and `usage`, as OpenAI sends it.
    """
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None, **more: Any) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **more,
        }

    yield chunk({"role": "assistant", "content": ""}, None)
    for piece in split_reply(reply, chunk_chars):
        yield chunk({"content": piece}, None)
    yield chunk({}, finish_reason, usage=dict(usage_), nightschool=dict(extension))
    if include_usage:
        yield {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": dict(usage_),
        }
