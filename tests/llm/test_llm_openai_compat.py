"""The OpenAI-compatible client against a real HTTP server on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import ValidationError

from nightschool.errors import ModelResponseError, ModelUnavailableError
from nightschool.llm import ChatModel, Message, OpenAICompatibleConfig, OpenAICompatibleModel

USER: list[Message] = [{"role": "user", "content": "Say hi"}]


def completion_body(
    content: str | None = "hello there", usage: dict[str, int] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "served-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@dataclass
class Reply:
    """What the fake server answers to one request."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=completion_body)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False  # close the connection without answering


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


class FakeServer:
    """A scripted OpenAI-compatible server: replies are consumed in order, the last repeats."""

    def __init__(self) -> None:
        self.replies: list[Reply] = [Reply()]
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                server.handle(self)

            def do_POST(self) -> None:
                server.handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        with self._lock:
            self.requests.append(
                Request(
                    method=handler.command,
                    path=handler.path,
                    headers={k.lower(): v for k, v in handler.headers.items()},
                    json=json.loads(raw) if raw else None,
                )
            )
            reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.drop:
            handler.close_connection = True
            return
        payload = (
            reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode()
        )
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


def make(url: str, sleeps: list[float] | None = None, **overrides: Any) -> OpenAICompatibleModel:
    settings: dict[str, Any] = {
        "base_url": url,
        "model": "test-model",
        "api_key": "sk-test",
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.01,
    }
    settings.update(overrides)
    config = OpenAICompatibleConfig(**settings)
    if sleeps is None:
        return OpenAICompatibleModel(config)
    return OpenAICompatibleModel(config, sleep=sleeps.append)


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_normal_completion_sends_model_max_tokens_and_bearer(server: FakeServer) -> None:
    server.script(Reply(body=completion_body(usage={"prompt_tokens": 9, "completion_tokens": 3})))
    with make(server.url) as model:
        assert isinstance(model, ChatModel)
        result = model.complete(USER, temperature=0.0, max_tokens=64, seed=7)
    assert result.text == "hello there"
    assert (result.tokens_in, result.tokens_out) == (9, 3)
    assert result.model == "served-model" and result.finish_reason == "stop"
    assert result.duration_s > 0
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "Say hi"}],
        "temperature": 0.0,
        "max_tokens": 64,
        "seed": 7,
    }


def test_default_max_tokens_is_sent_seed_omitted_and_no_key_no_header(server: FakeServer) -> None:
    with make(server.url, api_key=None) as model:
        result = model.complete(USER)
    [request] = server.requests
    assert request.json["max_tokens"] == 512
    assert "seed" not in request.json
    assert "authorization" not in request.headers
    assert (result.tokens_in, result.tokens_out) == (0, 0)  # no usage in the body


def test_429_with_retry_after_is_retried_and_the_wait_capped(server: FakeServer) -> None:
    server.script(
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "30"}),
        Reply(),
    )
    sleeps: list[float] = []
    with make(server.url, sleeps) as model:
        assert model.complete(USER).text == "hello there"
    assert len(server.requests) == 2
    assert sleeps == [0.01]  # Retry-After 30 s capped at backoff_max_s


def test_retry_after_zero_is_honoured(server: FakeServer) -> None:
    server.script(Reply(status=503, body="busy", headers={"Retry-After": "0"}), Reply())
    sleeps: list[float] = []
    with make(server.url, sleeps) as model:
        model.complete(USER)
    assert sleeps == [0.0]


def test_backoff_grows_exponentially_with_jitter(server: FakeServer) -> None:
    server.script(Reply(status=502, body="bad gateway"))
    sleeps: list[float] = []
    with (
        make(server.url, sleeps, max_retries=3, backoff_base_s=0.1, backoff_max_s=0.3) as model,
        pytest.raises(ModelUnavailableError),
    ):
        model.complete(USER)
    assert len(sleeps) == 3
    for delay, (low, high) in zip(sleeps, [(0.05, 0.1), (0.1, 0.2), (0.15, 0.3)], strict=True):
        assert low <= delay <= high


def test_persistent_500_becomes_model_unavailable_with_status(server: FakeServer) -> None:
    server.script(Reply(status=500, body={"error": {"message": "kaboom"}}))
    with make(server.url) as model, pytest.raises(ModelUnavailableError) as info:
        model.complete(USER)
    error = info.value
    assert error.status_code == 500
    assert len(server.requests) == 3  # first attempt + max_retries=2
    assert f"{server.url}/chat/completions" in error.message
    assert "HTTP 500" in error.message and "kaboom" in error.message
    assert "3 attempts" in error.message
    assert error.hint is not None and "server running" in error.hint


def test_400_is_a_response_error_with_server_text_and_no_retry(server: FakeServer) -> None:
    server.script(Reply(status=400, body={"error": {"message": "context length exceeded"}}))
    with make(server.url) as model, pytest.raises(ModelResponseError) as info:
        model.complete(USER)
    assert "HTTP 400" in info.value.message
    assert "context length exceeded" in info.value.message
    assert len(server.requests) == 1


def test_server_error_text_is_truncated(server: FakeServer) -> None:
    server.script(Reply(status=422, body="x" * 5000))
    with make(server.url) as model, pytest.raises(ModelResponseError) as info:
        model.complete(USER)
    assert len(info.value.message) < 700


def test_401_hints_at_the_api_key(server: FakeServer) -> None:
    server.script(Reply(status=401, body={"error": "invalid api key"}))
    with make(server.url) as model, pytest.raises(ModelResponseError) as info:
        model.complete(USER)
    assert "invalid api key" in info.value.message
    assert info.value.hint is not None and "API key" in info.value.hint


@pytest.mark.parametrize(
    "body",
    [
        "this is not json",
        {"id": "x", "object": "chat.completion"},  # no choices
        {"choices": []},
        {"choices": [{"index": 0}]},  # no message
        ["a", "list"],
    ],
)
def test_unusable_2xx_bodies_are_response_errors(server: FakeServer, body: Any) -> None:
    server.script(Reply(body=body))
    with make(server.url) as model, pytest.raises(ModelResponseError):
        model.complete(USER)
    assert len(server.requests) == 1


def test_null_content_is_empty_text(server: FakeServer) -> None:
    server.script(Reply(body=completion_body(content=None)))
    with make(server.url) as model:
        assert model.complete(USER).text == ""


def test_connection_refused_fails_fast_with_no_status() -> None:
    url = closed_port_url()
    start = time.perf_counter()
    with make(url) as model, pytest.raises(ModelUnavailableError) as info:
        model.complete(USER)
    assert time.perf_counter() - start < 2.0
    assert info.value.status_code is None
    assert url in info.value.message and "cannot reach" in info.value.message
    assert info.value.hint is not None


def test_dropped_connection_is_retried(server: FakeServer) -> None:
    server.script(Reply(drop=True), Reply())
    with make(server.url) as model:
        assert model.complete(USER).text == "hello there"
    assert len(server.requests) == 2


def test_read_timeout_is_retried(server: FakeServer) -> None:
    server.script(Reply(delay_s=1.0), Reply())
    with make(server.url, timeout_s=0.2) as model:
        assert model.complete(USER).text == "hello there"
    assert len(server.requests) == 2


def test_read_timeout_every_time_is_unavailable(server: FakeServer) -> None:
    server.script(Reply(delay_s=0.5))
    with (
        make(server.url, timeout_s=0.1, max_retries=1) as model,
        pytest.raises(ModelUnavailableError) as info,
    ):
        model.complete(USER)
    assert "timed out" in info.value.message
    assert info.value.status_code is None


def test_check_gets_models_once(server: FakeServer) -> None:
    server.script(Reply(body={"object": "list", "data": [{"id": "test-model"}]}))
    with make(server.url) as model:
        model.check()
    [request] = server.requests
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == "Bearer sk-test"


def test_check_refused_is_unavailable() -> None:
    url = closed_port_url()
    with make(url) as model, pytest.raises(ModelUnavailableError) as info:
        model.check()
    assert f"{url}/models" in info.value.message
    assert info.value.hint is not None and "--base-url" in info.value.hint


def test_check_does_not_retry_5xx(server: FakeServer) -> None:
    server.script(Reply(status=503, body="loading model"))
    with make(server.url) as model, pytest.raises(ModelUnavailableError) as info:
        model.check()
    assert info.value.status_code == 503
    assert len(server.requests) == 1


def test_check_404_hints_at_the_base_url(server: FakeServer) -> None:
    server.script(Reply(status=404, body="not found"))
    with make(server.url) as model, pytest.raises(ModelResponseError) as info:
        model.check()
    assert info.value.hint is not None and "/v1" in info.value.hint


@pytest.mark.parametrize(
    "given",
    [
        "http://127.0.0.1:8080/v1",
        "http://127.0.0.1:8080/v1/",
        "http://127.0.0.1:8080/v1/chat/completions",
        " http://127.0.0.1:8080/v1/chat/completions/ ",
    ],
)
def test_base_url_is_normalised(given: str) -> None:
    config = OpenAICompatibleConfig(base_url=given, model="m")
    assert config.base_url == "http://127.0.0.1:8080/v1"
    model = OpenAICompatibleModel(config)
    assert model.chat_url == "http://127.0.0.1:8080/v1/chat/completions"
    assert model.name == "m"
    model.close()


def test_base_url_without_scheme_is_rejected() -> None:
    with pytest.raises(ValidationError, match="http://"):
        OpenAICompatibleConfig(base_url="127.0.0.1:8080/v1", model="m")


def test_config_defaults() -> None:
    config = OpenAICompatibleConfig(base_url="http://h/v1", model="m")
    assert (config.timeout_s, config.max_retries) == (120.0, 3)
    assert (config.backoff_base_s, config.backoff_max_s) == (0.5, 8.0)
    assert config.api_key is None


def test_api_key_stays_out_of_repr() -> None:
    config = OpenAICompatibleConfig(base_url="http://h/v1", model="m", api_key="sk-secret")
    assert "sk-secret" not in repr(config)


# -- native tools -----------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List files.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def tool_call_body(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    body = completion_body(content)
    body["choices"][0]["message"]["tool_calls"] = list(calls)
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def wire_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_tools_are_sent_and_tool_calls_parsed(server: FakeServer) -> None:
    server.script(
        Reply(
            body=tool_call_body(
                wire_call("call_a", "list_files", '{"path": "."}'),
                wire_call("call_b", "read_file", '{"path": "a.txt"'),  # cut-off JSON
                wire_call("", "run_python", {"code": "print(1)"}),  # an object, no id
                {"type": "function", "function": {"arguments": "{}"}},  # no name: skipped
            )
        )
    )
    with make(server.url) as model:
        assert model.supports_tools
        result = model.complete(USER, tools=TOOLS)
    [request] = server.requests
    assert request.json["tools"] == TOOLS and request.json["tool_choice"] == "auto"
    assert result.text == "" and result.finish_reason == "tool_calls"
    first, cut, obj = result.tool_calls
    assert (first.id, first.name, first.arguments) == ("call_a", "list_files", {"path": "."})
    assert first.arguments_error is None and first.raw_arguments == '{"path": "."}'
    assert cut.arguments == {} and cut.raw_arguments == '{"path": "a.txt"'
    assert cut.arguments_error is not None and "not valid JSON" in cut.arguments_error
    assert (obj.id, obj.arguments) == ("call_2", {"code": "print(1)"})


def test_no_tools_no_tool_fields(server: FakeServer) -> None:
    with make(server.url) as model:
        result = model.complete(USER)
    assert "tools" not in server.requests[0].json and result.tool_calls == ()


def test_tool_turns_go_out_in_wire_format(server: FakeServer) -> None:
    call = wire_call("call_a", "list_files", '{"path": "."}')
    messages: list[Message] = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "", "tool_calls": [call]},  # type: ignore[list-item]
        {"role": "tool", "content": "a.txt (3 bytes)", "tool_call_id": "call_a"},
    ]
    with make(server.url) as model:
        model.complete(messages, tools=TOOLS)
    sent = server.requests[0].json["messages"]
    assert sent[1] == {"role": "assistant", "content": None, "tool_calls": [call]}
    assert sent[2] == {"role": "tool", "content": "a.txt (3 bytes)", "tool_call_id": "call_a"}


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'),
        (500, "tools param requires --jinja flag"),
        (400, "registry.ollama.ai/library/smollm2:135m does not support tools"),
    ],
)
def test_server_rejecting_tools_turns_them_off_and_the_request_is_resent(
    server: FakeServer, status: int, message: str
) -> None:
    server.script(Reply(status=status, body={"error": {"message": message}}), Reply())
    call = wire_call("call_a", "list_files", '{"path": "."}')
    messages: list[Message] = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "", "tool_calls": [call]},  # type: ignore[list-item]
        {"role": "tool", "content": "a.txt (3 bytes)", "tool_call_id": "call_a"},
    ]
    sleeps: list[float] = []
    with make(server.url, sleeps) as model:
        result = model.complete(messages, tools=TOOLS)
        assert result.text == "hello there" and not model.supports_tools
        model.complete(USER, tools=TOOLS)  # never offered again
    first, resent, later = (r.json for r in server.requests)
    assert "tools" in first and "tools" not in resent and "tools" not in later
    assert sleeps == []  # no retry with backoff: the rejection is not transient
    assert [m["role"] for m in resent["messages"]] == ["user", "assistant", "user"]
    assert '"name": "list_files"' in resent["messages"][1]["content"]
    assert resent["messages"][2]["content"] == "TOOL RESULT (list_files):\na.txt (3 bytes)"


def test_other_400_with_tools_is_still_an_error(server: FakeServer) -> None:
    server.script(Reply(status=400, body={"error": {"message": "max_tokens is too large"}}))
    with make(server.url) as model, pytest.raises(ModelResponseError, match="too large"):
        model.complete(USER, tools=TOOLS)
    assert model.supports_tools


def test_native_tools_can_be_switched_off(server: FakeServer) -> None:
    with make(server.url, native_tools=False) as model:
        assert not model.supports_tools
        model.complete(USER, tools=TOOLS)
    assert "tools" not in server.requests[0].json
