"""`ChatModel` over any OpenAI-compatible HTTP server (llama.cpp server, vLLM, Ollama).

Base URL rule: `base_url` is the URL that ends right before `/chat/completions`,
for example `http://127.0.0.1:8080/v1` (llama.cpp server, vLLM) or
`http://127.0.0.1:11434/v1` (Ollama). Nothing is appended to it: no `/v1` is
guessed. A trailing `/` and a pasted `/chat/completions` suffix are removed.

Requests go to `POST {base_url}/chat/completions`; the preflight `check()` goes
to `GET {base_url}/models`.

Native tools: `tools` are sent with `tool_choice: "auto"` and
`choices[0].message.tool_calls` is parsed. Servers that cannot do tools say so
differently (llama.cpp server without `--jinja`: "tools param requires --jinja
flag"; vLLM without `--enable-auto-tool-choice`: HTTP 400 naming it; Ollama: "...
does not support tools"): an HTTP 400/422/500/501 whose error mentions tools
turns `supports_tools` off for the life of the model object and the same
request is sent again without them (tool turns as plain text).
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from nightschool.errors import ModelResponseError, ModelUnavailableError
from nightschool.llm._protocol import (
    Completion,
    Message,
    NativeToolCall,
    ToolSpec,
    plain_messages,
)

logger = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 5.0
"""Timeout of the `check()` preflight, seconds: long enough for a loaded local
server to answer `/models`, short enough that a wrong URL fails fast at startup."""

ERROR_TEXT_LIMIT = 500
"""Characters of a server's error body quoted in exception messages."""

RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
"""HTTP statuses retried with backoff: request timeout, rate limit, server errors."""

TOOLS_REJECTED_STATUS = frozenset({400, 422, 500, 501})
"""Statuses that, with an error message mentioning tools, mean "this server
cannot do native tools" when the request carried them (llama.cpp server answers
500 for a request with tools when started without `--jinja`)."""

SERVER_HINT = (
    "is the server running? start one with e.g. "
    "`llama-server -m MODEL.gguf --port 8080` and pass --base-url http://127.0.0.1:8080/v1, "
    "or drop --base-url to use the embedded model"
)
"""Hint attached to every `ModelUnavailableError` raised here."""


class OpenAICompatibleConfig(BaseModel):
    """Where the server is and how patiently to talk to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    """Server URL up to (not including) `/chat/completions`, e.g. `http://127.0.0.1:8080/v1`."""
    api_key: str | None = Field(default=None, repr=False)
    """Sent as `Authorization: Bearer <api_key>` when set; kept out of `repr` and logs."""
    model: str
    """Model name sent in every request body (llama.cpp server ignores it; Ollama needs it)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Read/write timeout per attempt, seconds (a 512-token reply from a local 7B model
    takes tens of seconds)."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    """Connect timeout per attempt, seconds (capped by `timeout_s`)."""
    max_retries: int = Field(default=3, ge=0)
    """Retries after the first attempt, so at most `max_retries + 1` requests per call."""
    backoff_base_s: float = Field(default=0.5, ge=0)
    """Backoff before retry k (k = 0, 1, ...) is drawn from
    `[d/2, d]` with `d = min(backoff_max_s, backoff_base_s * 2**k)`, seconds."""
    backoff_max_s: float = Field(default=8.0, ge=0)
    """Cap on any single wait, `Retry-After` included, seconds."""
    native_tools: bool = True
    """Send native `tools` when a caller offers them; False never sends them (the
    agent then uses its text protocol). A server that rejects them turns this
    off for the process (`supports_tools`)."""

    @field_validator("base_url")
    @classmethod
    def _normalise_base_url(cls, value: str) -> str:
        url = value.strip().rstrip("/")
        url = url.removesuffix("/chat/completions").rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(
                f"base URL must start with http:// or https://, got {value!r} "
                "(example: http://127.0.0.1:8080/v1)"
            )
        return url


class _ToolsRejectedError(Exception):
    """The server refused a request because it carried `tools` (internal signal)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class OpenAICompatibleModel:
    """`ChatModel` that POSTs to `{base_url}/chat/completions` with retries.

    Every request carries `model`, `messages`, `temperature` and `max_tokens`,
    plus `seed` when one is given, and `tools` with `tool_choice: "auto"` when
    tools are offered and `supports_tools` is True. Transient failures (HTTP 408, 429, 5xx,
    connect/read timeouts, dropped connections) are retried with exponential
    backoff and "equal jitter" (M. Brooker, "Exponential Backoff And Jitter",
    AWS Architecture Blog, 2015); a `Retry-After` header replaces the computed
    wait, capped at `backoff_max_s`.

    Thread-safe: `httpx.Client` may be shared between threads.

    Args:
        config: server location and retry policy.
        transport: httpx transport to use instead of the network (tests).
        sleep: function that waits the given seconds between retries (tests).
    """

    def __init__(
        self,
        config: OpenAICompatibleConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self._sleep = sleep
        self._rng = random.Random()
        self._tools_ok = config.native_tools
        self._tools_lock = threading.Lock()
        headers = {"Accept": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self._client = httpx.Client(
            transport=transport,
            headers=headers,
            timeout=httpx.Timeout(
                config.timeout_s, connect=min(config.connect_timeout_s, config.timeout_s)
            ),
        )

    @property
    def name(self) -> str:
        """The configured model name, as sent to the server."""
        return self.config.model

    @property
    def supports_tools(self) -> bool:
        """True until the server rejected a request for its `tools` (or `native_tools=False`)."""
        return self._tools_ok

    @property
    def chat_url(self) -> str:
        """Full URL of the chat completions endpoint."""
        return f"{self.config.base_url}/chat/completions"

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
        """Send one chat completion request, retrying transient failures.

        Args:
            messages: the conversation, oldest first; not mutated.
            temperature: sampling temperature.
            max_tokens: completion cap in tokens; always sent.
            seed: sampling seed, sent only when not None.
            grammar: ignored: OpenAI-compatible servers do not share one grammar
                field, so the reply is parsed leniently instead.
            tools: native tools to offer (sent with `tool_choice: "auto"`) while
                `supports_tools`; a rejection turns it off and the request is
                sent again without them.

        Returns:
            The reply; `content: null` becomes `text=""`, missing `usage` counts
            become 0, `message.tool_calls` become `tool_calls` (arguments that
            are not JSON kept raw and flagged). `duration_s` spans all attempts
            and waits.

        Raises:
            ModelUnavailableError: every attempt failed with a retryable status or
                a transport error; `status_code` is the last HTTP status (None if
                the last failure was a connection error).
            ModelResponseError: a non-retryable HTTP error (400, 401, 404, ...) or
                a 2xx body that is not a chat completion.
        """
        start = time.perf_counter()
        offer = bool(tools) and self._tools_ok
        body = self._body(messages, temperature, max_tokens, seed, tools if offer else None)
        try:
            response = self._post_with_retries(body, tools_sent=offer)
        except _ToolsRejectedError as rejected:
            with self._tools_lock:
                if self._tools_ok:
                    logger.warning(
                        "model server %s rejected native tools (%s); using the text "
                        "protocol from now on",
                        self.chat_url,
                        rejected.detail,
                    )
                self._tools_ok = False
            body = self._body(messages, temperature, max_tokens, seed, None)
            response = self._post_with_retries(body, tools_sent=False)
        return _parse_completion(
            response,
            url=self.chat_url,
            default_model=self.config.model,
            duration_s=time.perf_counter() - start,
        )

    def _body(
        self,
        messages: Sequence[Message],
        temperature: float,
        max_tokens: int,
        seed: int | None,
        tools: Sequence[ToolSpec] | None,
    ) -> dict[str, Any]:
        """The request body; tool turns go as plain text when no tools are sent."""
        wire = [_wire_message(m) for m in (messages if tools else plain_messages(messages))]
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": wire,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if seed is not None:
            body["seed"] = seed
        if tools:
            body["tools"] = [dict(tool) for tool in tools]
            body["tool_choice"] = "auto"
        return body

    def check(self) -> None:
        """Preflight: `GET {base_url}/models` once, with a 5 s timeout and no retries.

        Raises:
            ModelUnavailableError: the server cannot be reached, timed out, or
                answered 5xx.
            ModelResponseError: the server answered 401/403 (bad API key) or 404
                (base URL probably wrong) or another 4xx.
        """
        url = f"{self.config.base_url}/models"
        try:
            response = self._client.get(url, timeout=CHECK_TIMEOUT_S)
        except httpx.TransportError as exc:
            raise ModelUnavailableError(
                f"cannot reach the model server at {url}: {_describe(exc)}", hint=SERVER_HINT
            ) from exc
        if response.status_code >= 500:
            raise ModelUnavailableError(
                f"model server at {url} answered HTTP {response.status_code}: "
                f"{_error_text(response)}",
                hint=SERVER_HINT,
                status_code=response.status_code,
            )
        if response.status_code >= 400:
            raise _response_error(response, url)

    def close(self) -> None:
        """Close the connection pool; the model cannot be used afterwards."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _post_with_retries(self, body: dict[str, Any], *, tools_sent: bool) -> httpx.Response:
        url = self.chat_url
        attempts = self.config.max_retries + 1
        failure = "no attempt made"
        status: int | None = None
        cause: httpx.TransportError | None = None
        for attempt in range(attempts):
            retry_after: float | None = None
            try:
                response = self._client.post(url, json=body)
            except httpx.TransportError as exc:
                failure, status, cause = _describe(exc), None, exc
            else:
                if response.is_success:
                    return response
                if tools_sent and _rejects_tools(response):
                    raise _ToolsRejectedError(
                        f"HTTP {response.status_code}: {_error_text(response)}"
                    )
                if response.status_code not in RETRYABLE_STATUS:
                    raise _response_error(response, url)
                status = response.status_code
                failure = f"HTTP {status}: {_error_text(response)}"
                retry_after = _retry_after_s(response)
                cause = None
            if attempt + 1 < attempts:
                delay = self._backoff_s(attempt, retry_after)
                logger.warning(
                    "model server %s failed (%s); retry %d/%d in %.2f s",
                    url,
                    failure,
                    attempt + 1,
                    self.config.max_retries,
                    delay,
                )
                self._sleep(delay)
        what = "cannot reach the model server" if status is None else "model server failed"
        raise ModelUnavailableError(
            f"{what} at {url} after {attempts} attempt{'s' if attempts > 1 else ''}: {failure}",
            hint=SERVER_HINT,
            status_code=status,
        ) from cause

    def _backoff_s(self, attempt: int, retry_after: float | None) -> float:
        cap = self.config.backoff_max_s
        if retry_after is not None:
            return min(max(retry_after, 0.0), cap)
        ceiling = min(cap, self.config.backoff_base_s * 2**attempt)
        return self._rng.uniform(ceiling / 2, ceiling)


def _rejects_tools(response: httpx.Response) -> bool:
    """Whether an error response says the server cannot take `tools`."""
    if response.status_code not in TOOLS_REJECTED_STATUS:
        return False
    return "tool" in _error_text(response).lower()


def _wire_message(message: Message) -> dict[str, Any]:
    """One message in OpenAI wire format (`content: null` beside tool calls with no prose)."""
    wire: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    calls = message.get("tool_calls")
    if calls:
        wire["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": dict(c["function"])} for c in calls
        ]
        if not message["content"]:
            wire["content"] = None
    if message["role"] == "tool":
        wire["tool_call_id"] = message.get("tool_call_id", "")
    return wire


def _retry_after_s(response: httpx.Response) -> float | None:
    """Seconds from a `Retry-After` header (delta-seconds or HTTP-date, RFC 9110 §10.2.3)."""
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _describe(exc: httpx.TransportError) -> str:
    kind = {
        httpx.ConnectError: "connection refused or host unreachable",
        httpx.ConnectTimeout: "connect timed out",
        httpx.ReadTimeout: "read timed out",
        httpx.WriteTimeout: "write timed out",
        httpx.PoolTimeout: "connection pool timed out",
        httpx.RemoteProtocolError: "server closed the connection",
    }.get(type(exc), type(exc).__name__)
    detail = str(exc)
    return f"{kind} ({detail})" if detail else kind


def _error_text(response: httpx.Response) -> str:
    """The server's error message: `error.message` from a JSON body, else the raw body."""
    text = response.text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(data.get("detail"), str):
            text = data["detail"]
    text = " ".join(text.split())
    if len(text) > ERROR_TEXT_LIMIT:
        text = text[:ERROR_TEXT_LIMIT] + "…"
    return text or "(empty body)"


def _response_error(response: httpx.Response, url: str) -> ModelResponseError:
    status = response.status_code
    hint = None
    if status in (401, 403):
        hint = "check the API key (--api-key or NIGHTSCHOOL_API_KEY)"
    elif status == 404:
        hint = (
            "the base URL must end right before /chat/completions, "
            "e.g. http://127.0.0.1:8080/v1; also check the model name"
        )
    return ModelResponseError(
        f"model server at {url} rejected the request with HTTP {status}: {_error_text(response)}",
        hint=hint,
    )


def _parse_completion(
    response: httpx.Response, *, url: str, default_model: str, duration_s: float
) -> Completion:
    """Turn a 2xx chat completion body into a `Completion`.

    Raises:
        ModelResponseError: the body is not JSON or has no `choices[0].message`.
    """
    try:
        data = response.json()
    except ValueError as exc:
        raise ModelResponseError(
            f"model server at {url} returned a body that is not JSON: {_error_text(response)}"
        ) from exc
    if not isinstance(data, dict):
        raise ModelResponseError(
            f"model server at {url} returned JSON that is not an object: {_error_text(response)}"
        )
    try:
        choice = data["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelResponseError(
            f"model server at {url} returned no choices[0].message: {_error_text(response)}"
        ) from exc
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        text = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    else:
        raise ModelResponseError(
            f"model server at {url} returned content of type {type(content).__name__}"
        )
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    model = data.get("model")
    finish = choice.get("finish_reason")
    return Completion(
        text=text,
        tokens_in=_as_int(usage.get("prompt_tokens")),
        tokens_out=_as_int(usage.get("completion_tokens")),
        model=model if isinstance(model, str) and model else default_model,
        duration_s=duration_s,
        finish_reason=finish if isinstance(finish, str) and finish else "unknown",
        tool_calls=_parse_tool_calls(message.get("tool_calls")),
    )


def _parse_tool_calls(raw: object) -> tuple[NativeToolCall, ...]:
    """`message.tool_calls` as `NativeToolCall`s; malformed entries are skipped.

    An entry needs `function.name`; a missing `id` becomes `call_<index>`.
    Arguments may be JSON text (the OpenAI format) or an object (some servers).
    """
    if not isinstance(raw, list):
        return ()
    calls: list[NativeToolCall] = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            continue
        function = entry.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        call_id = entry.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else f"call_{index}"
        calls.append(NativeToolCall.decode(call_id, function["name"], function.get("arguments")))
    return tuple(calls)


def _as_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
