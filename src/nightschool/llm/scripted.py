"""A scripted `ChatModel` test double, shipped in the package.

Tests and offline demos use it instead of a real backend, so the suite can never
reach a paid API by accident (pattern from pydantic-ai `models/test.py`).
"""

from __future__ import annotations

import copy
import dataclasses
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nightschool.errors import ModelResponseError
from nightschool.llm._protocol import Completion, Message, NativeToolCall, ToolSpec

_WORD = re.compile(r"\S+")

Reply = str | Completion
"""One scripted answer: a text, or a `Completion` (to script native tool calls,
see `tool_reply`)."""

ReplyFunction = Callable[[Sequence[Message]], Reply]
"""Computes a reply from the messages of one call."""


def tool_reply(
    name: str,
    arguments: Mapping[str, Any] | str,
    *,
    text: str = "",
    call_id: str = "call_1",
) -> Completion:
    """A scripted reply that makes one native tool call.

    Args:
        name: the tool called (any name: scripts may call tools that do not exist).
        arguments: the arguments object, or raw JSON text (invalid JSON is kept
            and flagged, as a real backend would).
        text: prose beside the call.
        call_id: the call's id.

    Returns:
        A `Completion` to put in a `ScriptedModel` script (token counts and the
        model name are filled in when it is served).
    """
    call = NativeToolCall.decode(call_id, name, arguments)
    return Completion(text, 0, 0, "", 0.0, "tool_calls", (call,))


@dataclass(frozen=True)
class ScriptedCall:
    """One recorded `complete` call.

    Attributes:
        messages: a copy of the messages passed in (later mutation by the caller
            does not change it).
        temperature: sampling temperature requested.
        max_tokens: completion cap requested, tokens (here: words).
        seed: seed requested, or None.
        grammar: GBNF grammar requested, or None (recorded, not enforced).
        tools: native tools offered, or None.
    """

    messages: tuple[Message, ...]
    temperature: float
    max_tokens: int
    seed: int | None
    grammar: str | None = None
    tools: tuple[ToolSpec, ...] | None = None


class ScriptedModel:
    """`ChatModel` that answers from a fixed script or a function.

    Tokens are whitespace-separated words: `tokens_in` is the word count of all
    message contents, `tokens_out` that of the reply. A reply longer than
    `max_tokens` words is cut after its `max_tokens`-th word (original spacing
    kept) and gets `finish_reason="length"`, so the double honours the
    `ChatModel` contract; otherwise `finish_reason="stop"`. `duration_s` is
    always 0.0. Fully deterministic; `seed` and `temperature` are only recorded.

    Native tool calls are scripted as `Completion` replies (`tool_reply` builds
    one): served with this model's name, word counts (the calls' raw
    arguments count as output words) and `finish_reason` `tool_calls` when it
    makes calls and gives no other reason. They come back as scripted whatever `tools`
    was offered; `supports_tools` only tells the agent which protocol to use.

    Thread-safe: calls are served one at a time in arrival order.

    Args:
        replies: either a sequence consumed in order, where a `str` or
            `Completion` item is returned and an exception item (any
            `BaseException`) is raised (to simulate, say, a
            `ModelUnavailableError` mid-run); or a function from the messages to
            the reply (text or `Completion`), used for every call (it may raise too).
        name: model name reported in `Completion.model`.
        supports_tools: what `supports_tools` reports (False: the agent uses its
            text protocol, as with a model without native tools).

    Attributes:
        calls: every call's messages and keyword arguments, in order, including
            calls that raised.
    """

    def __init__(
        self,
        replies: Sequence[Reply | BaseException] | ReplyFunction,
        *,
        name: str = "scripted",
        supports_tools: bool = False,
    ) -> None:
        self._replies = replies
        self._name = name
        self._supports_tools = supports_tools
        self._next = 0
        self._lock = threading.Lock()
        self.calls: list[ScriptedCall] = []

    @property
    def name(self) -> str:
        """The name given at construction."""
        return self._name

    @property
    def supports_tools(self) -> bool:
        """The `supports_tools` given at construction."""
        return self._supports_tools

    @property
    def remaining(self) -> int | None:
        """Scripted replies not yet consumed, or None for a function-backed model."""
        if callable(self._replies):
            return None
        return len(self._replies) - self._next

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
        """Return (or raise) the next scripted reply.

        Raises:
            ModelResponseError: the script is exhausted ("scripted model has no
                more replies").
            Exception: whatever exception item is next in the script, or
                whatever the reply function raises.
        """
        with self._lock:
            self.calls.append(
                ScriptedCall(
                    messages=tuple(copy.deepcopy(m) for m in messages),
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    grammar=grammar,
                    tools=None if tools is None else tuple(copy.deepcopy(list(tools))),
                )
            )
            if callable(self._replies):
                reply: Reply | BaseException = self._replies(messages)
            else:
                if self._next >= len(self._replies):
                    raise ModelResponseError("scripted model has no more replies")
                reply = self._replies[self._next]
                self._next += 1
        if isinstance(reply, BaseException):
            raise reply
        tokens_in = sum(_count_words(m["content"]) for m in messages)
        if isinstance(reply, Completion):
            return self._served(reply, tokens_in, max_tokens)
        text, finish_reason = _truncate_words(reply, max_tokens)
        return Completion(
            text=text,
            tokens_in=tokens_in,
            tokens_out=_count_words(text),
            model=self._name,
            duration_s=0.0,
            finish_reason=finish_reason,
        )

    def _served(self, reply: Completion, tokens_in: int, max_tokens: int) -> Completion:
        """A scripted `Completion` with this model's name and word counts."""
        text, finish_reason = _truncate_words(reply.text, max_tokens)
        if finish_reason != "length":
            finish_reason = reply.finish_reason
            if finish_reason == "unknown":
                finish_reason = "tool_calls" if reply.tool_calls else "stop"
        arguments = sum(_count_words(call.raw_arguments) for call in reply.tool_calls)
        return dataclasses.replace(
            reply,
            text=text,
            tokens_in=tokens_in,
            tokens_out=_count_words(text) + arguments,
            model=self._name,
            duration_s=0.0,
            finish_reason=finish_reason,
        )

    def check(self) -> None:
        """Do nothing: a scripted model is always available."""


def _count_words(text: str) -> int:
    return len(text.split())


def _truncate_words(text: str, max_words: int) -> tuple[str, str]:
    """Cut `text` after its `max_words`-th word; return the text and the finish reason."""
    if max_words < 0:
        max_words = 0
    for index, match in enumerate(_WORD.finditer(text)):
        if index == max_words:
            return text[: match.start()].rstrip(), "length"
    return text, "stop"
