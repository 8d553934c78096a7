"""The published API description: `/openapi.json`, behind the API key like every route.

Routes declare the error statuses they really return with `responses=errors(...)`
(each an OpenAI-style `{"error": {...}}` body); `install_openapi` then adds the
bearer security scheme (on every path but `/health`) and drops FastAPI's
default 422, which this server never sends (validation problems are 400).
`tests/server/test_server_schema.py` runs schemathesis against the result.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from fastapi import FastAPI

from nightschool.server._wire import (
    MAX_SESSION_ID_CHARS,
    SESSION_HEADER,
    TASK_KIND_HEADER,
    TASK_KINDS,
)

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "code": {"type": "string"},
                "param": {"type": ["string", "null"]},
            },
        }
    },
}
"""JSON schema of every error body (`_wire.error_body`)."""

ERROR_DESCRIPTIONS = {
    400: "Malformed request: not JSON, the wrong shape, or outside a documented bound.",
    401: "Missing or wrong API key (`Authorization: Bearer <NIGHTSCHOOL_API_KEY>`).",
    404: "No such record, or a feature this server runs without (the skill playbook).",
    409: "The request conflicts with work in progress (background self-play already running).",
    413: "The request body is over the server's byte bound (`ServerLimits.max_body_bytes`).",
    500: "The database cannot be used (the turn could not be recorded).",
    503: "The model server or the sandbox is unavailable; the turn was recorded as an "
    "infrastructure error. Sent with `x-should-retry: false`: retrying re-runs the turn.",
}
"""What each error status means, as published."""


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` entries for `statuses`, each with the OpenAI-style error body."""
    return {
        status: {
            "description": ERROR_DESCRIPTIONS[status],
            "content": {"application/json": {"schema": ERROR_SCHEMA}},
        }
        for status in statuses
    }


_USAGE = {
    "type": "object",
    "required": ["prompt_tokens", "completion_tokens", "total_tokens"],
    "properties": {
        name: {"type": "integer", "minimum": 0}
        for name in ("prompt_tokens", "completion_tokens", "total_tokens")
    },
}

_EXTENSION = {
    "type": "object",
    "description": "nightschool's extension: the stored trajectory and what the agent used.",
    "required": ["trajectory_id", "session_id", "outcome", "lessons_shown", "tool_calls"],
    "properties": {
        "trajectory_id": {"type": "string"},
        "session_id": {"type": "string"},
        "outcome": {"enum": ["passed", "failed", "unknown"]},
        "lessons_shown": {"type": "array", "items": {"type": "string"}},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "correction": {"type": ["object", "null"]},
    },
}

CHAT_COMPLETION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices", "usage", "nightschool"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,
            "items": {
                "type": "object",
                "required": ["index", "message", "finish_reason"],
                "properties": {
                    "index": {"const": 0},
                    "message": {
                        "type": "object",
                        "required": ["role", "content"],
                        "properties": {
                            "role": {"const": "assistant"},
                            "content": {"type": "string"},
                        },
                    },
                    "finish_reason": {
                        "enum": ["stop", "length"],
                        "description": "`length` when the completion cap (`max_tokens`) cut "
                        "the reply, else `stop`.",
                    },
                },
            },
        },
        "usage": _USAGE,
        "nightschool": _EXTENSION,
    },
}
"""JSON schema of a non-streaming `chat.completion` body (`_wire.completion_body`)."""

CHUNK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "chat.completion.chunk"},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {
            "type": "array",
            "maxItems": 1,
            "items": {
                "type": "object",
                "required": ["index", "delta", "finish_reason"],
                "properties": {
                    "index": {"const": 0},
                    "delta": {"type": "object"},
                    "finish_reason": {"enum": [None, "stop", "length"]},
                },
            },
        },
        "usage": _USAGE,
        "nightschool": _EXTENSION,
    },
}
"""JSON schema of one streamed `chat.completion.chunk` (`_wire.sse_chunks`): the last
chunk with choices carries `finish_reason`, `usage` and the `nightschool` extension;
with `stream_options.include_usage`, a final chunk has no choices and the usage."""

SSE_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "oneOf": [
                {"const": "[DONE]"},
                {"contentMediaType": "application/json", "contentSchema": CHUNK_SCHEMA},
            ]
        }
    },
}
"""One server-sent event of a streamed reply (OpenAPI 3.1: the schema of one event)."""

CHAT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "One agent turn: a `chat.completion`, or with `stream: true` "
        "server-sent `chat.completion.chunk` events ending `data: [DONE]`.",
        "content": {
            "application/json": {"schema": CHAT_COMPLETION_SCHEMA},
            "text/event-stream": {"schema": SSE_EVENT_SCHEMA},
        },
    },
    **errors(400, 401, 413, 500, 503),
}
"""`responses=` of `POST /v1/chat/completions`."""

CHAT_HEADERS: dict[str, Any] = {
    "parameters": [
        {
            "name": SESSION_HEADER,
            "in": "header",
            "required": False,
            "description": "The chat session (workspace, correction tracking); default: "
            "the `user` field, else a hash of the first user message.",
            "schema": {"type": "string", "minLength": 1, "maxLength": MAX_SESSION_ID_CHARS},
        },
        {
            "name": TASK_KIND_HEADER,
            "in": "header",
            "required": False,
            "description": "`eval` turns are recorded as such and never reflected on.",
            "schema": {"enum": list(TASK_KINDS)},
        },
    ]
}
"""`openapi_extra` of the chat route: the headers it reads beside the body."""


def install_openapi(app: FastAPI, *, open_paths: Collection[str]) -> None:
    """Make `app.openapi()` publish the bearer scheme and drop the unused 422 responses.

    Args:
        app: the app, with every route added.
        open_paths: paths served without the API key (no security requirement).
    """
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            _finish(schema, open_paths)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _finish(schema: dict[str, Any], open_paths: Collection[str]) -> None:
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})["bearer"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "The server's NIGHTSCHOOL_API_KEY.",
    }
    for path, operations in schema.get("paths", {}).items():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
            operation["security"] = [] if path in open_paths else [{"bearer": []}]
    schemas = components.get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
