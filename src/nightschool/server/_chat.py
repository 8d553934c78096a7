"""Chat backends for `nightschool chat`: the pipeline in-process, or a server over HTTP.

Both speak the same small protocol (`ChatBackend`), so the terminal REPL does
not care where the agent runs: `send` runs one turn on the whole conversation,
`poll` returns background reflections finished since the last poll,
`self_play` the agent's background self-play runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from nightschool.errors import InfrastructureError, UserError
from nightschool.llm import Message
from nightschool.server._admin import background_json, correction_json
from nightschool.server._wire import SESSION_HEADER
from nightschool.server.app import ChatService


@dataclass(frozen=True)
class TurnView:
    """What the REPL shows about one turn.

    Attributes:
        reply: the assistant's text.
        trajectory_id: the stored record of the turn.
        outcome: `passed` | `failed` | `unknown` as recorded.
        lessons_shown: playbook lesson ids the model saw.
        tool_calls: (tool name, error or None) per call, in order.
        correction: the wire-format correction object when this message
            corrected the previous turn, else None.
    """

    reply: str
    trajectory_id: str
    outcome: str
    lessons_shown: tuple[str, ...]
    tool_calls: tuple[tuple[str, str | None], ...]
    correction: dict[str, Any] | None


@dataclass(frozen=True)
class LearnedView:
    """One finished background reflection (`status`: `ok` | `no lesson` | `failed`)."""

    trajectory_id: str
    status: str
    detail: str
    lesson_id: str | None


class ChatBackend(Protocol):
    """Where the REPL's turns run."""

    def send(self, messages: Sequence[Message]) -> TurnView:
        """Run one turn on the whole conversation (the last message is the user's).

        Raises:
            UserError: the request was refused (bad key, bad conversation).
            InfrastructureError: the model, sandbox or server is unavailable.
        """
        ...

    def poll(self) -> list[LearnedView]:
        """Background reflections finished since the previous poll."""
        ...

    def pending(self) -> int:
        """Background reflections still running."""
        ...

    def self_play(self) -> dict[str, Any] | None:
        """`SelfPlayTools.status()` (`{"active": ..., "runs": [...]}`), None without the tools."""
        ...


class LocalBackend:
    """Runs turns on an in-process pipeline (`nightschool.agent.ChatPipeline`)."""

    def __init__(self, pipeline: ChatService, session_id: str) -> None:
        self.pipeline = pipeline
        self.session_id = session_id
        self._seen = 0

    def send(self, messages: Sequence[Message]) -> TurnView:
        """Run one turn with `pipeline.handle` (blocking)."""
        result = self.pipeline.handle(messages, session_id=self.session_id, task_kind="chat")
        return TurnView(
            reply=result.reply,
            trajectory_id=result.trajectory.id,
            outcome=result.trajectory.outcome.value,
            lessons_shown=tuple(result.lessons_shown),
            tool_calls=tuple((call.name, call.error) for call in result.tool_calls),
            correction=correction_json(result.correction),
        )

    def poll(self) -> list[LearnedView]:
        """New entries of `pipeline.background_results`."""
        results = self.pipeline.background_results(self._seen)
        self._seen += len(results)
        return [LearnedView(**_learned_fields(background_json(r))) for r in results]

    def pending(self) -> int:
        """`pipeline.pending_background()`."""
        return self.pipeline.pending_background()

    def self_play(self) -> dict[str, Any] | None:
        """The pipeline's `practice.status()`, None when it has no self-play tools."""
        practice = getattr(self.pipeline, "practice", None)
        return dict(practice.status()) if practice is not None else None


class HttpBackend:
    """Runs turns on a `nightschool serve` server.

    Args:
        base_url: the server's root or its `/v1` URL, e.g. http://127.0.0.1:8000/v1.
        api_key: the server's NIGHTSCHOOL_API_KEY, or None when it needs none.
        session_id: sent as the `X-Nightschool-Session` header.
        timeout_s: seconds to wait for one turn (tool-using turns can be slow).
        transport: an httpx transport (tests pass an ASGI transport).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        session_id: str,
        timeout_s: float = 600.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        root = base_url.rstrip("/")
        root = root.removesuffix("/v1")
        headers = {SESSION_HEADER: session_id}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.base_url = root
        self.session_id = session_id
        self._client = httpx.Client(
            base_url=root, headers=headers, timeout=timeout_s, transport=transport
        )
        self._next = 0
        self._pending = 0

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def check(self) -> None:
        """Fail early when the server is unreachable or refuses the key.

        Raises:
            InfrastructureError: no server answers at the URL.
            UserError: the server refuses the API key.
        """
        self._request("GET", "/v1/models")

    def send(self, messages: Sequence[Message]) -> TurnView:
        """POST the conversation to `/v1/chat/completions`."""
        body = self._request(
            "POST",
            "/v1/chat/completions",
            json={"model": "nightschool", "messages": [dict(m) for m in messages]},
        )
        extension = body.get("nightschool") or {}
        return TurnView(
            reply=str(body["choices"][0]["message"]["content"] or ""),
            trajectory_id=str(extension.get("trajectory_id", "")),
            outcome=str(extension.get("outcome", "unknown")),
            lessons_shown=tuple(extension.get("lessons_shown") or ()),
            tool_calls=tuple(
                (str(call.get("name")), call.get("error"))
                for call in extension.get("tool_calls") or ()
            ),
            correction=extension.get("correction"),
        )

    def poll(self) -> list[LearnedView]:
        """GET `/admin/background?since=N` and advance N."""
        page = self._request("GET", "/admin/background", params={"since": self._next})
        self._next = int(page.get("next", self._next))
        self._pending = int(page.get("pending", 0))
        return [LearnedView(**_learned_fields(item)) for item in page.get("data", [])]

    def pending(self) -> int:
        """Pending count as of the last poll."""
        return self._pending

    def self_play(self) -> dict[str, Any] | None:
        """GET `/admin/self-play`; None when the server has no self-play tools (404)."""
        try:
            return self._request("GET", "/admin/self-play")
        except UserError:
            return None

    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise InfrastructureError(
                f"the nightschool server at {self.base_url} did not answer in time ({exc})"
            ) from exc
        except httpx.HTTPError as exc:
            raise InfrastructureError(
                f"cannot reach the nightschool server at {self.base_url}: {exc}",
                hint="start it with `nightschool serve`, or drop --server to chat in-process",
            ) from exc
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code >= 400:
            error = body.get("error") if isinstance(body, dict) else None
            message = (
                str(error.get("message"))
                if isinstance(error, dict)
                else f"HTTP {response.status_code}"
            )
            if response.status_code >= 500:
                raise InfrastructureError(message)
            raise UserError(message)
        if not isinstance(body, dict):
            raise InfrastructureError(f"{self.base_url}{path} answered with something not JSON")
        return body


def _learned_fields(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "trajectory_id": str(item.get("trajectory_id", "")),
        "status": str(item.get("status", "")),
        "detail": str(item.get("detail", "")),
        "lesson_id": item.get("lesson_id"),
    }
