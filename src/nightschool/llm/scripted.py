"""A scripted `ChatModel` test double, shipped in the package.

Tests and offline demos use it instead of a real backend, so the suite can never
reach a paid API by accident (pattern from pydantic-ai `models/test.py`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nightschool.errors import ModelResponseError
from nightschool.llm._protocol import Completion, Message

_WORD = re.compile(r"\S+")

ReplyFunction = Callable[[Sequence[Message]], str]
"""Computes a reply from the messages of one call."""


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
    """

    messages: tuple[Message, ...]
    temperature: float
    max_tokens: int
    seed: int | None
    grammar: str | None = None


class ScriptedModel:
    """`ChatModel` that answers from a fixed script or a function.

    Tokens are whitespace-separated words: `tokens_in` is the word count of all
    message contents, `tokens_out` that of the reply. A reply longer than
    `max_tokens` words is cut after its `max_tokens`-th word (original spacing
    kept) and gets `finish_reason="length"`, so the double honours the
    `ChatModel` contract; otherwise `finish_reason="stop"`. `duration_s` is
    always 0.0. Fully deterministic; `seed` and `temperature` are only recorded.

    Thread-safe: calls are served one at a time in arrival order.

    Args:
        replies: either a sequence consumed in order, where a `str` item is
            returned and an exception item (any `BaseException`) is raised (to simulate, say, a
            `ModelUnavailableError` mid-run); or a function from the messages to
            the reply text, used for every call (it may raise too).
        name: model name reported in `Completion.model`.

    Attributes:
        calls: every call's messages and keyword arguments, in order, including
            calls that raised.
    """

    def __init__(
        self, replies: Sequence[str | BaseException] | ReplyFunction, *, name: str = "scripted"
    ) -> None:
        self._replies = replies
        self._name = name
        self._next = 0
        self._lock = threading.Lock()
        self.calls: list[ScriptedCall] = []

    @property
    def name(self) -> str:
        """The name given at construction."""
        return self._name

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
                    messages=tuple(Message(role=m["role"], content=m["content"]) for m in messages),
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    grammar=grammar,
                )
            )
            if callable(self._replies):
                reply: str | BaseException = self._replies(messages)
            else:
                if self._next >= len(self._replies):
                    raise ModelResponseError("scripted model has no more replies")
                reply = self._replies[self._next]
                self._next += 1
        if isinstance(reply, BaseException):
            raise reply
        text, finish_reason = _truncate_words(reply, max_tokens)
        return Completion(
            text=text,
            tokens_in=sum(_count_words(m["content"]) for m in messages),
            tokens_out=_count_words(text),
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
