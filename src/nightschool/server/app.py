"""The FastAPI app behind `nightschool serve`: OpenAI-compatible chat plus an admin API.

`create_app(pipeline, ...)` wires a chat pipeline (`nightschool.agent.ChatPipeline`
or anything with the same methods) to:

- `POST /v1/chat/completions` — one agent turn per request; non-streaming JSON or
  `stream: true` server-sent events in OpenAI chunk format ending `data: [DONE]`.
  The turn runs first, then its reply streams in chunks (the agent loop is not
  token-streamed). Every response carries the `nightschool` extension object.
- `GET /v1/models`, `GET /health` (no auth), and the `/admin` API (`_admin.py`).
- `GET /openapi.json`: the API description, with the error statuses each route
  really returns (`_openapi.py`).
- `/dashboard`: the browser dashboard (`server.dashboard`), which checks the
  same key itself through a login form and a session cookie.

Guard (a pure ASGI middleware, before any parsing): bearer API key on every path
but `/health`, compared in constant time; request bodies over
`ServerLimits.max_body_bytes` get 413 without being read further. Malformed
requests of any shape get a 4xx OpenAI-style error body, never a 500.
Infrastructure faults (model or sandbox down) get 503 with `x-should-retry:
false` (the `openai` SDK would otherwise re-run the whole turn twice); the
pipeline has already recorded the turn as an infrastructure error.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from nightschool.errors import (
    InfrastructureError,
    ModelResponseError,
    ModelUnavailableError,
    SandboxFaultError,
    SandboxUnavailableError,
    StoreError,
    UserError,
)
from nightschool.llm import Message
from nightschool.server._admin import admin_router, extension_json
from nightschool.server._openapi import CHAT_HEADERS, CHAT_RESPONSES, errors, install_openapi
from nightschool.server._wire import (
    SESSION_HEADER,
    TASK_KIND_HEADER,
    TASK_KINDS,
    ApiError,
    ChatCompletionRequest,
    ServerLimits,
    completion_body,
    session_id_for,
    sse_chunks,
    to_messages,
    turn_finish_reason,
    usage,
)

if TYPE_CHECKING:
    from nightschool.playbook import SkillMemory
    from nightschool.store import Store

logger = logging.getLogger("nightschool.server")

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[ASGIMessage]]
Send = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/health"})
"""Paths served without the API key."""

SELF_GUARDED_PREFIX = "/dashboard"
"""Paths under it check the key themselves (a browser login, then a cookie:
`server.dashboard`), so the bearer check here lets them through."""


class ChatService(Protocol):
    """What the server needs from a chat pipeline (`nightschool.agent.ChatPipeline`).

    `handle` blocks for the whole turn and must be thread-safe: the server calls
    it from many worker threads at once.
    """

    def handle(
        self,
        messages: Sequence[Message],
        *,
        session_id: str,
        task_kind: str = "chat",
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Any:
        """Run one turn; return a `TurnResult`.

        Raises:
            UserError: the conversation cannot be handled as given.
            InfrastructureError: model or sandbox failed; the turn is already recorded.
        """
        ...

    def background_results(self, since: int = 0) -> list[Any]:
        """Finished background reflections after the first `since`, in order."""
        ...

    def pending_background(self) -> int:
        """Background reflections scheduled and not finished."""
        ...


def create_app(
    pipeline: ChatService,
    *,
    store: Store,
    memory: SkillMemory | None,
    api_key: str | None,
    model_name: str,
    limits: ServerLimits | None = None,
) -> FastAPI:
    """Build the app.

    Args:
        pipeline: runs one chat turn per request (thread-safe).
        store: the database the pipeline records into (read by the admin API).
        memory: the skill playbook, or None when the server runs without one.
        api_key: the bearer token clients must send; None disables the check
            (the caller, `nightschool serve`, allows that only on loopback).
        model_name: the id reported by `/v1/models` and in every completion.
        limits: request bounds; None means `ServerLimits()`.

    Returns:
        The FastAPI app; serve it with uvicorn (or `fastapi.testclient.TestClient`).
    """
    limits = limits or ServerLimits()
    app = FastAPI(
        title="nightschool",
        summary="OpenAI-compatible chat with an agent that learns from its users.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",  # behind the key, like every path but /health
    )
    _install_error_handlers(app)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "model": model_name}

    @app.get("/v1/models", responses=errors(401))
    def list_models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": model_name, "object": "model", "created": 0, "owned_by": "nightschool"}
            ],
        }

    @app.post(
        "/v1/chat/completions",
        response_model=None,
        responses=CHAT_RESPONSES,
        openapi_extra=CHAT_HEADERS,
    )
    def chat_completions(
        payload: ChatCompletionRequest, request: Request
    ) -> JSONResponse | StreamingResponse:
        messages = to_messages(payload, limits)
        session_id = session_id_for(request.headers.get(SESSION_HEADER), payload.user, messages)
        task_kind = (request.headers.get(TASK_KIND_HEADER) or "chat").strip().lower()
        if task_kind not in TASK_KINDS:
            raise ApiError(
                400,
                f"{TASK_KIND_HEADER} must be one of {', '.join(TASK_KINDS)}, got {task_kind!r}",
                code="invalid_task_kind",
            )
        try:
            result = pipeline.handle(
                messages,
                session_id=session_id,
                task_kind=task_kind,
                temperature=payload.temperature,
                max_tokens=payload.max_completion_tokens or payload.max_tokens,
            )
        except (UserError, InfrastructureError, StoreError) as exc:
            raise _api_error_for(exc) from exc
        tokens = usage(int(result.tokens_in), int(result.tokens_out))
        extension = extension_json(result, session_id)
        completion_id = f"chatcmpl-{result.trajectory.id}"
        finish = turn_finish_reason(result.trajectory.extra)
        logger.info(
            "turn %s session %s: %s, %d tool call(s), %d lesson(s) shown",
            result.trajectory.id,
            session_id,
            result.trajectory.outcome.value,
            len(result.tool_calls),
            len(result.lessons_shown),
        )
        if not payload.stream:
            return JSONResponse(
                completion_body(
                    completion_id=completion_id,
                    model=model_name,
                    reply=result.reply,
                    usage_=tokens,
                    extension=extension,
                    finish_reason=finish,
                )
            )
        include_usage = bool(payload.stream_options and payload.stream_options.include_usage)

        def events() -> Iterator[str]:
            for chunk in sse_chunks(
                completion_id=completion_id,
                model=model_name,
                reply=result.reply,
                usage_=tokens,
                extension=extension,
                include_usage=include_usage,
                chunk_chars=limits.stream_chunk_chars,
                finish_reason=finish,
            ):
                yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    app.include_router(admin_router(store=store, memory=memory, background=pipeline))
    # function-local: start-up time (the dashboard loads evals' numpy and scipy and jinja2,
    # ~1.5 s; `nightschool chat` imports this package for its chat backends, builds no app)
    from nightschool.server.dashboard import create_dashboard

    app.mount(
        SELF_GUARDED_PREFIX, create_dashboard(store, memory=memory, api_key=api_key)
    )  # the dashboard: `/dashboard`, read-only but for a confirmed retraction
    app.add_middleware(_Guard, api_key=api_key, max_body_bytes=limits.max_body_bytes)
    install_openapi(app, open_paths=OPEN_PATHS)
    return app


def _api_error_for(exc: Exception) -> ApiError:
    """Map a pipeline exception to the HTTP error the client sees."""
    if isinstance(exc, UserError):
        return ApiError(400, exc.message, code="invalid_request")
    if isinstance(exc, InfrastructureError):
        code = "infrastructure_error"
        what = "a service the agent depends on failed"
        if isinstance(exc, ModelUnavailableError):
            code, what = "model_unavailable", "the model server is unavailable"
        elif isinstance(exc, ModelResponseError):
            code, what = "model_bad_response", "the model server answered with something unusable"
        elif isinstance(exc, SandboxUnavailableError | SandboxFaultError):
            code, what = "sandbox_unavailable", "the sandbox could not run the agent's tools"
        return ApiError(
            503,
            f"{what}: {exc.message}. The turn was recorded as an infrastructure error "
            "(not as a failure of the agent); try again when the service is back.",
            type="service_unavailable",
            code=code,
        )
    message = exc.message if isinstance(exc, StoreError) else "internal error"
    return ApiError(
        500, f"the database cannot be used: {message}", type="server_error", code="store_error"
    )


_NO_RETRY = {"x-should-retry": "false"}
"""Tells the `openai` SDK not to retry: a retried chat turn would run (and be recorded) again."""


def _json_error(exc: ApiError, headers: dict[str, str] | None = None) -> JSONResponse:
    merged = dict(_NO_RETRY) if exc.status_code >= 500 else {}
    merged.update(headers or {})
    return JSONResponse(exc.body(), status_code=exc.status_code, headers=merged)


def _install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as an OpenAI-style body; validation problems are 400, not 422."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return _json_error(exc)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _json_error(_validation_error(exc.errors()))

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = str(exc.detail)
        if exc.status_code == 400 and "parsing the body" in message:
            code, message = "invalid_json", "the request body could not be parsed as JSON"
        api = ApiError(exc.status_code, message, code=code)
        return _json_error(api, dict(exc.headers or {}))

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error on %s %s", request.method, request.url.path)
        api = ApiError(
            500, "internal error; see the server log", type="server_error", code="internal_error"
        )
        return _json_error(api)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)


def _validation_error(errors: Sequence[Any]) -> ApiError:
    """One clear sentence from pydantic's first error: where, and what was expected."""
    if not errors:
        return ApiError(400, "the request is not valid", code="invalid_request")
    first = errors[0]
    kind = str(first.get("type", ""))
    if kind == "json_invalid":
        return ApiError(400, "the request body is not valid JSON", code="invalid_json")
    loc = list(first.get("loc", ()))
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    where = _param(loc)
    if "content" in loc:
        where = _param(loc[: loc.index("content") + 1])
        message = (
            f"`{where}` must be a string or a list of text parts "
            '(`[{"type": "text", "text": "..."}]`)'
        )
    elif kind == "missing" and where:
        message = f"`{where}` is required"
    elif kind in ("model_attributes_type", "dict_type") and not where:
        message = (
            "the request body must be a JSON object with `messages` "
            "(sent as Content-Type: application/json)"
        )
    else:
        message = f"`{where or 'body'}`: {first.get('msg', 'invalid value')}"
    more = len(errors) - 1
    if more and "content" not in loc:
        message += f" (and {more} more problem{'s' * (more > 1)})"
    return ApiError(400, message, code="invalid_request", param=where or None)


def _param(loc: Sequence[Any]) -> str:
    """`["messages", 0, "role"]` -> `messages[0].role`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _guarded_elsewhere(path: str) -> bool:
    """Open (`/health`), or checked by the dashboard itself (`/dashboard/...`)."""
    return (
        path in OPEN_PATHS
        or path == SELF_GUARDED_PREFIX
        or path.startswith(SELF_GUARDED_PREFIX + "/")
    )


class _Guard:
    """ASGI middleware: API key check, then the request-body byte bound.

    The body is read here, up to the bound, and replayed to the app: a body
    over the bound is refused with 413 before it is ever parsed.
    """

    def __init__(self, app: ASGIApp, *, api_key: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.api_key = api_key.encode() if api_key else None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not _guarded_elsewhere(scope["path"]) and not self._authorised(scope):
            await _send_error(
                send,
                ApiError(
                    401,
                    "missing or wrong API key: send `Authorization: Bearer <NIGHTSCHOOL_API_KEY>`",
                    type="authentication_error",
                    code="invalid_api_key",
                ),
                {"www-authenticate": "Bearer"},
            )
            return
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        replayed = False

        async def replay() -> ASGIMessage:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _authorised(self, scope: Scope) -> bool:
        if self.api_key is None:
            return True
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, token = bytes(value).strip().partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    token.strip(), self.api_key
                )
        return False

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        too_large = ApiError(
            413,
            f"the request body is over {self.max_body_bytes:,} bytes",
            code="request_too_large",
        )
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_body_bytes:
                    await _send_error(send, too_large)
                    return None
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            part = message.get("body", b"")
            total += len(part)
            if total > self.max_body_bytes:
                await _send_error(send, too_large)
                return None
            chunks.append(part)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def _send_error(send: Send, exc: ApiError, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(exc.body()).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *((k.encode(), v.encode()) for k, v in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": exc.status_code, "headers": raw})
    await send({"type": "http.response.body", "body": data})
