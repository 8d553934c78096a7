"""The `ChatModel` contract every model backend satisfies.

Side-effect free: importing this module loads no model and opens no connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict, runtime_checkable


class Message(TypedDict):
    """One chat message in OpenAI wire format."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    """A model's answer to one `complete` call.

    Attributes:
        text: the assistant message content (may be empty, never None).
        tokens_in: prompt tokens as counted by the backend.
        tokens_out: completion tokens as counted by the backend.
        model: name of the model that answered.
        duration_s: wall-clock seconds the call took, retries included.
        finish_reason: backend's reason (`stop`, `length`, ...) or `unknown`.
    """

    text: str
    tokens_in: int
    tokens_out: int
    model: str
    duration_s: float
    finish_reason: str = "unknown"


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
    ) -> Completion:
        """Return the model's reply to `messages`."""
        ...
