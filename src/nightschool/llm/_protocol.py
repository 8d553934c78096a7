"""The `ChatModel` contract every model backend satisfies, with native tool calling.

Side-effect free: importing this module loads no model and opens no connection.

Native tool calling follows the OpenAI chat-completions wire format: the caller
offers `tools` (function-tool JSON schemas), the model may answer with
`Completion.tool_calls`, the caller then sends back an `assistant` message
carrying those `tool_calls` and one `tool` message per call (`tool_call_id`).
A backend whose model cannot do that reports `supports_tools = False`, ignores
`tools`, and sends such tool turns as plain text (`plain_messages`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, Protocol, TypedDict, TypeGuard, runtime_checkable

ToolSpec = Mapping[str, Any]
"""One OpenAI function tool: `{"type": "function", "function": {"name": str,
"description": str, "parameters": <JSON Schema object>}}`."""


class WireFunction(TypedDict):
    """The `function` part of a tool call in OpenAI wire format."""

    name: str
    arguments: str
    """The arguments object as JSON text (as the model wrote it)."""


class WireToolCall(TypedDict):
    """One tool call inside an assistant message, in OpenAI wire format."""

    id: str
    type: Literal["function"]
    function: WireFunction


class Message(TypedDict):
    """One chat message in OpenAI wire format.

    `tool_calls` appears only on `assistant` messages that called tools
    (`content` is then the prose around the calls, often ""); `tool_call_id`
    only on `tool` messages, naming the call whose result `content` holds.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: NotRequired[list[WireToolCall]]
    tool_call_id: NotRequired[str]


@dataclass(frozen=True)
class NativeToolCall:
    """One tool call a model made through native tool calling.

    Attributes:
        id: the call's id, unique within the conversation (echoed back as the
            `tool_call_id` of the result message).
        name: the tool's name as the model wrote it (not checked against the
            tools offered: a model may call one that does not exist).
        arguments: the decoded arguments object; {} when they are not valid
            (see `arguments_error`).
        raw_arguments: the arguments as the model wrote them (JSON text).
        arguments_error: why `raw_arguments` is not a JSON object, or None
            when it is.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = "{}"
    arguments_error: str | None = None

    @classmethod
    def decode(cls, call_id: str, name: str, arguments: object) -> NativeToolCall:
        """Build a call from arguments as a backend received them.

        Args:
            call_id: the call's id.
            name: the tool's name (surrounding whitespace removed).
            arguments: JSON text (the OpenAI wire format), an already decoded
                mapping (some servers), or None / "" (no arguments: `{}`).

        Returns:
            The call; text that is not a JSON object is kept in `raw_arguments`
            with `arguments_error` set and `arguments == {}`. Never raises.
        """
        name = name.strip()
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            return cls(call_id, name, {}, "{}")
        if isinstance(arguments, Mapping):
            decoded = {str(k): v for k, v in arguments.items()}
            return cls(call_id, name, decoded, json.dumps(decoded, default=repr))
        raw = arguments if isinstance(arguments, str) else repr(arguments)
        try:
            value = json.loads(raw)
        except ValueError as exc:
            return cls(call_id, name, {}, raw, f"arguments are not valid JSON ({exc})")
        if not isinstance(value, dict):
            what = type(value).__name__
            return cls(call_id, name, {}, raw, f"arguments must be a JSON object, not {what}")
        return cls(call_id, name, {str(k): v for k, v in value.items()}, raw)

    def to_wire(self) -> WireToolCall:
        """The call as it goes into an assistant message's `tool_calls`."""
        return WireToolCall(
            id=self.id,
            type="function",
            function=WireFunction(name=self.name, arguments=self.raw_arguments),
        )


@dataclass(frozen=True)
class Completion:
    """A model's answer to one `complete` call.

    Attributes:
        text: the assistant message content (may be empty, never None); with
            tool calls, the prose around them.
        tokens_in: prompt tokens as counted by the backend.
        tokens_out: completion tokens as counted by the backend.
        model: name of the model that answered.
        duration_s: wall-clock seconds the call took, retries included.
        finish_reason: backend's reason (`stop`, `length`, `tool_calls`, ...)
            or `unknown`.
        tool_calls: native tool calls, in the order the model made them; ()
            when the call offered no `tools`, the backend cannot do native
            tools, or the model answered in text.
        tokens_cached: of `tokens_in`, those served from the backend's KV cache
            (a prefix shared with the previous call) instead of decoded again;
            0 when the backend does not say.
    """

    text: str
    tokens_in: int
    tokens_out: int
    model: str
    duration_s: float
    finish_reason: str = "unknown"
    tool_calls: tuple[NativeToolCall, ...] = ()
    tokens_cached: int = 0


@runtime_checkable
class ChatModel(Protocol):
    """Turns a list of messages into one assistant reply.

    Contract:
        - `messages` is not mutated; it holds at least one message.
        - `max_tokens` is always honoured (sent to servers on every request).
        - With the same `seed`, a deterministic backend returns the same text.
        - Never returns None text; an empty reply is `Completion(text="")`.
        - `grammar` is an optional GBNF grammar the reply must match. The
          embedded llama.cpp model enforces it (a 135M model only follows a
          format when constrained); server backends and the scripted double
          ignore it, so callers still parse replies leniently.
        - `tools` offers native tools (OpenAI function tools). A backend that
          can use them is a `ToolCallingModel` whose `supports_tools` is True
          (`supports_native_tools`); its reply may then carry
          `Completion.tool_calls` (possibly naming a tool that was not
          offered, or with arguments that are not JSON: callers check).
          Otherwise `tools` is ignored, `tool_calls` stays (), and messages
          with tool turns are sent as plain text. Callers that do not use
          native tools pass no `tools` and never see a `tool` message.

    Raises:
        ModelUnavailableError: the backend cannot be reached or kept failing
            (after the backend's own retries). An infrastructure fault, never
            the agent's failure.
        ModelResponseError: the backend answered with something unusable.
    """

    @property
    def name(self) -> str:
        """Model identifier recorded in trajectories."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        """Return the model's reply to `messages`."""
        ...


class ToolCallingModel(ChatModel, Protocol):
    """A `ChatModel` that says whether it can do native tool calls.

    Not runtime-checkable on purpose: on Python 3.11 `isinstance` against a
    protocol with a property evaluates the property, and the embedded model's
    loads the model. Use `supports_native_tools(model)`.
    """

    @property
    def supports_tools(self) -> bool:
        """Whether `complete(..., tools=...)` can answer with native tool calls now.

        May change once during the process (a server that rejects `tools` turns
        it off); a lazily loaded model may load to find out.
        """
        ...


def supports_native_tools(model: object) -> bool:
    """Whether `model` reports `supports_tools` True (a model without the attribute: False).

    May load a lazily loaded model (see `ToolCallingModel.supports_tools`).
    """
    return getattr(model, "supports_tools", False) is True


class AbortableModel(Protocol):
    """A `ChatModel` whose `complete` also takes `abort=` (see `accepts_abort`)."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        abort: Callable[[], bool] | None = None,
    ) -> Completion:
        """Generate one reply; stop decoding once `abort()` returns True."""
        ...


def accepts_abort(model: object) -> TypeGuard[AbortableModel]:
    """Whether `model.complete` takes `abort=` (a callable polled between tokens).

    A capability a backend declares with the class attribute `supports_abort =
    True` (the embedded llama.cpp model does); `PreemptibleModel` then stops a
    decode mid-reply when a user turn starts, instead of after it.
    """
    return getattr(type(model), "supports_abort", False) is True


def tool_names(tools: Sequence[ToolSpec] | None) -> list[str]:
    """The function names of `tools`, in order (entries without one are skipped)."""
    names: list[str] = []
    for tool in tools or ():
        function = tool.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def plain_messages(messages: Sequence[Message]) -> list[Message]:
    """The conversation with native tool turns rewritten as plain text turns.

    For backends (or servers) without native tools: an assistant message's
    `tool_calls` are appended to its text as fenced `tool` blocks
    (`{"name": ..., "arguments": ...}`), and each `tool` message becomes a
    `user` message `TOOL RESULT (<tool name>):` followed by its content.
    Other messages are copied with only `role` and `content`. Never mutates
    `messages`.
    """
    names: dict[str, str] = {}
    plain: list[Message] = []
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "tool":
            name = names.get(message.get("tool_call_id", ""), "tool")
            plain.append(Message(role="user", content=f"TOOL RESULT ({name}):\n{content}"))
            continue
        blocks = []
        for call in message.get("tool_calls") or ():
            function = call["function"]
            names[call["id"]] = function["name"]
            blocks.append(
                f'```tool\n{{"name": {json.dumps(function["name"])}, '
                f'"arguments": {function["arguments"] or "{}"}}}\n```'
            )
        text = "\n".join([content, *blocks]).strip() if blocks else content
        plain.append(Message(role=role, content=text))
    return plain
