"""The agent as a service: an OpenAI-compatible chat server that learns from its users.

`create_app(pipeline, store=..., memory=..., api_key=..., model_name=...)` builds
the FastAPI app that `nightschool serve` runs with uvicorn; `ServerLimits` bounds
requests; `ChatService` is the pipeline contract the app needs (satisfied by
`nightschool.agent.ChatPipeline`). `is_loopback(host)` decides whether a server
may run without an API key; `serve_in_thread(app)` runs the app on a
background thread for tests and benchmarks. Importing this package starts nothing.
"""

from nightschool.server._net import is_loopback, serve_in_thread
from nightschool.server._wire import SESSION_HEADER, TASK_KIND_HEADER, ApiError, ServerLimits
from nightschool.server.app import ChatService, create_app

__all__ = [
    "SESSION_HEADER",
    "TASK_KIND_HEADER",
    "ApiError",
    "ChatService",
    "ServerLimits",
    "create_app",
    "is_loopback",
    "serve_in_thread",
]
