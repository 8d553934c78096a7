"""Unit tests of the FastAPI app with a fake pipeline: auth, bounds, malformed input,
streaming format, admin API, error mapping."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from nightschool.errors import (
    ModelResponseError,
    ModelUnavailableError,
    SandboxUnavailableError,
    StoreError,
    UserError,
)
from nightschool.llm import Message
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.server import SESSION_HEADER, ServerLimits, create_app
from nightschool.server._wire import split_reply
from nightschool.store import Store
from nightschool.trajectory import Outcome, ToolCall, Trajectory

KEY = "s3cret-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@dataclass(frozen=True)
class FakeCorrection:
    trajectory_id: str
    jaccard: float
    signals: tuple[str, ...]
    lessons_retracted: int
    reflection_scheduled: bool


@dataclass(frozen=True)
class FakeTurn:
    reply: str
    trajectory: Trajectory
    lessons_shown: tuple[str, ...]
    tool_calls: tuple[ToolCall, ...]
    correction: FakeCorrection | None
    tokens_in: int
    tokens_out: int
    timings: dict[str, float]


@dataclass(frozen=True)
class FakeBackground:
    trajectory_id: str
    status: str
    detail: str
    lesson_id: str | None


@dataclass
class FakePipeline:
    """Same methods as `nightschool.agent.ChatPipeline`; records into a real store."""

    store: Store
    reply: Callable[[Sequence[Message]], str] = lambda messages: "echo: " + messages[-1]["content"]
    fail_with: BaseException | None = None
    calls: list[tuple[list[Message], str]] = field(default_factory=list)
    sampling: list[tuple[float | None, int | None]] = field(default_factory=list)
    background: list[FakeBackground] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(
        self,
        messages: Sequence[Message],
        *,
        session_id: str,
        task_kind: str = "chat",
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> FakeTurn:
        with self.lock:
            self.calls.append((list(messages), session_id))
            self.sampling.append((temperature, max_tokens))
        if self.fail_with is not None:
            if not isinstance(self.fail_with, UserError):
                self.store.append_trajectory(
                    Trajectory(
                        task_kind=task_kind,
                        session_id=session_id,
                        user_request=messages[-1]["content"],
                        extra={"infrastructure_error": type(self.fail_with).__name__},
                    )
                )
            raise self.fail_with
        text = self.reply(messages)
        stored = self.store.append_trajectory(
            Trajectory(
                task_kind=task_kind,
                session_id=session_id,
                user_request=messages[-1]["content"],
                final_response=text,
                tool_calls=[ToolCall(name="list_files", result="a.txt")],
            )
        )
        return FakeTurn(
            reply=text,
            trajectory=stored,
            lessons_shown=("L-000000000001",),
            tool_calls=tuple(stored.tool_calls),
            correction=FakeCorrection("t-prev", 0.5, ("phrase:no",), 1, True)
            if "no, i meant" in messages[-1]["content"].lower()
            else None,
            tokens_in=5,
            tokens_out=len(text.split()),
            timings={"model": 0.0},
        )

    def background_results(self, since: int = 0) -> list[FakeBackground]:
        return self.background[since:]

    def pending_background(self) -> int:
        return 0


@pytest.fixture
def memory(store: Store) -> SkillMemory:
    return SkillMemory(store, HashingEmbedder())


@pytest.fixture
def pipeline(store: Store) -> FakePipeline:
    return FakePipeline(store)


def make_client(
    pipeline: FakePipeline,
    store: Store,
    memory: SkillMemory | None,
    *,
    api_key: str | None = KEY,
    limits: ServerLimits | None = None,
) -> TestClient:
    app = create_app(
        pipeline, store=store, memory=memory, api_key=api_key, model_name="ns-test", limits=limits
    )
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def client(pipeline: FakePipeline, store: Store, memory: SkillMemory) -> TestClient:
    return make_client(pipeline, store, memory)


def chat(client: TestClient, body: Any, **headers: str) -> Any:
    return client.post("/v1/chat/completions", json=body, headers={**AUTH, **headers})


USER_HI = {"messages": [{"role": "user", "content": "hi there"}]}


def assert_openai_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"}
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return dict(error)


# -- the chat endpoint ------------------------------------------------------------------------


def test_non_streaming_completion_has_openai_shape_and_extension(
    client: TestClient, pipeline: FakePipeline, store: Store
) -> None:
    response = chat(client, {"model": "whatever", **USER_HI})
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "ns-test"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "echo: hi there"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    ext = body["nightschool"]
    assert store.get_trajectory(ext["trajectory_id"]) is not None
    assert body["id"] == f"chatcmpl-{ext['trajectory_id']}"
    assert ext["lessons_shown"] == ["L-000000000001"]
    assert ext["tool_calls"] == [{"name": "list_files", "error": None}]
    assert ext["correction"] is None
    assert ext["session_id"] == pipeline.calls[0][1]


def test_task_kind_header_records_eval_turns_and_rejects_unknown_kinds(
    client: TestClient, store: Store
) -> None:
    body = chat(client, USER_HI, **{"X-Nightschool-Task-Kind": "eval"}).json()
    stored = store.get_trajectory(body["nightschool"]["trajectory_id"])
    assert stored is not None and stored.task_kind == "eval"
    assert body["nightschool"]["model"] == stored.model
    plain = chat(client, USER_HI).json()["nightschool"]["trajectory_id"]
    assert store.get_trajectory(plain).task_kind == "chat"  # type: ignore[union-attr]
    bad = chat(client, USER_HI, **{"X-Nightschool-Task-Kind": "selfplay"})
    assert_openai_error(bad, 400, "invalid_task_kind")


def test_client_temperature_and_token_cap_reach_the_pipeline(
    client: TestClient, pipeline: FakePipeline
) -> None:
    assert chat(client, {**USER_HI, "temperature": 0.7, "max_tokens": 64}).status_code == 200
    assert chat(client, {**USER_HI, "max_completion_tokens": 32}).status_code == 200
    assert chat(client, USER_HI).status_code == 200
    assert pipeline.sampling == [(0.7, 64), (None, 32), (None, None)]
    for bad in ({"temperature": 2.5}, {"temperature": -1}, {"max_tokens": 0}):
        assert_openai_error(chat(client, {**USER_HI, **bad}), 400)


def test_correction_is_reported_in_the_extension(client: TestClient) -> None:
    body = chat(client, {"messages": [{"role": "user", "content": "No, I meant bash"}]}).json()
    assert body["nightschool"]["correction"] == {
        "trajectory_id": "t-prev",
        "jaccard": 0.5,
        "signals": ["phrase:no"],
        "lessons_retracted": 1,
        "reflection_scheduled": True,
    }


def test_session_id_header_then_user_then_hash_of_first_user_message(
    client: TestClient, pipeline: FakePipeline
) -> None:
    chat(client, USER_HI, **{SESSION_HEADER: "sess-1"})
    chat(client, {**USER_HI, "user": "alice"}, **{SESSION_HEADER: "sess-2"})
    chat(client, {**USER_HI, "user": "alice"})
    longer = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi there"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "and now?"},
        ]
    }
    chat(client, USER_HI)
    chat(client, longer)
    chat(client, {"messages": [{"role": "user", "content": "something else"}]})
    sessions = [session for _, session in pipeline.calls]
    assert sessions[:3] == ["sess-1", "sess-2", "alice"]
    assert sessions[3] == sessions[4] != sessions[5]
    assert sessions[3].startswith("h-")


def test_list_of_text_parts_is_joined_and_developer_is_system(
    client: TestClient, pipeline: FakePipeline
) -> None:
    body = {
        "messages": [
            {"role": "developer", "content": "rules"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}],
            },
        ]
    }
    assert chat(client, body).status_code == 200
    messages, _ = pipeline.calls[0]
    assert messages == [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "part one\ntwo"},
    ]


def test_streaming_sends_openai_chunks_then_done(client: TestClient, store: Store) -> None:
    long_text = "word " * 40 + "end"
    pipeline_reply = f"echo: {long_text}"
    with client.stream(
        "POST",
        "/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": long_text}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        headers=AUTH,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[len("data: ") :]) for line in lines[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content = [c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]]
    assert len([c for c in content if c]) > 3
    assert "".join(content) == pipeline_reply
    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and finish[0]["choices"][0]["finish_reason"] == "stop"
    assert store.get_trajectory(finish[0]["nightschool"]["trajectory_id"]) is not None
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


def test_split_reply_is_lossless() -> None:
    for text in ("", "a", "  lead and trail  ", "x" * 100, "one two\n\nthree\tfour " * 9):
        pieces = split_reply(text, 7)
        assert "".join(pieces) == text
        assert all(pieces)


# -- auth -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {KEY}"},
        {"Authorization": KEY},
        {"Authorization": f"Bearer {KEY}x"},
        {"Authorization": "Bearer "},
    ],
)
def test_wrong_or_missing_key_is_401_everywhere_but_health(
    client: TestClient, pipeline: FakePipeline, headers: dict[str, str]
) -> None:
    for method, path in (
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("GET", "/admin/trajectories"),
        ("GET", "/admin/background"),
        ("GET", "/no/such/path"),
    ):
        response = client.request(method, path, json=USER_HI, headers=headers)
        error = assert_openai_error(response, 401, "invalid_api_key")
        assert "NIGHTSCHOOL_API_KEY" in error["message"]
        assert response.headers["www-authenticate"] == "Bearer"
    assert pipeline.calls == []
    assert client.get("/health").json()["status"] == "ok"


def test_key_scheme_is_case_insensitive_and_models_lists_one(client: TestClient) -> None:
    response = client.get("/v1/models", headers={"Authorization": f"bearer {KEY}"})
    assert response.status_code == 200
    assert [m["id"] for m in response.json()["data"]] == ["ns-test"]


def test_without_a_key_configured_requests_are_served(
    pipeline: FakePipeline, store: Store, memory: SkillMemory
) -> None:
    client = make_client(pipeline, store, memory, api_key=None)
    assert client.post("/v1/chat/completions", json=USER_HI).status_code == 200


# -- bounds and malformed requests ------------------------------------------------------------


def test_body_over_the_byte_bound_is_413_before_the_pipeline(
    pipeline: FakePipeline, store: Store, memory: SkillMemory
) -> None:
    client = make_client(pipeline, store, memory, limits=ServerLimits(max_body_bytes=2000))
    big = {"messages": [{"role": "user", "content": "x" * 3000}]}
    assert_openai_error(chat(client, big), 413, "request_too_large")

    def chunked() -> Any:
        for _ in range(10):
            yield b"x" * 500

    response = client.post(
        "/v1/chat/completions",
        content=chunked(),
        headers={**AUTH, "content-type": "application/json"},
    )
    assert_openai_error(response, 413, "request_too_large")
    assert pipeline.calls == []


def test_message_count_and_length_bounds(
    pipeline: FakePipeline, store: Store, memory: SkillMemory
) -> None:
    client = make_client(
        pipeline, store, memory, limits=ServerLimits(max_messages=4, max_message_chars=50)
    )
    many = {"messages": [{"role": "user", "content": "hi"}] * 5}
    assert_openai_error(chat(client, many), 400, "too_many_messages")
    long = {"messages": [{"role": "user", "content": "y" * 51}]}
    assert_openai_error(chat(client, long), 400, "message_too_long")
    ok = {"messages": [{"role": "user", "content": "y" * 50}] * 4}
    assert chat(client, ok).status_code == 200


GARBAGE: list[Any] = [
    None,
    1,
    "text",
    [],
    [1, 2],
    {},
    {"messages": None},
    {"messages": "hi"},
    {"messages": {}},
    {"messages": []},
    {"messages": [None]},
    {"messages": [1]},
    {"messages": ["hi"]},
    {"messages": [{}]},
    {"messages": [{"role": "user"}]},
    {"messages": [{"content": "hi"}]},
    {"messages": [{"role": 7, "content": "hi"}]},
    {"messages": [{"role": "user", "content": 7}]},
    {"messages": [{"role": "user", "content": ["hi"]}]},
    {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
    {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
    {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
    {"messages": [{"role": "user", "content": ""}]},
    {"messages": [{"role": "user", "content": "   \n"}]},
    {"messages": [{"role": "user", "content": None}]},
    {"messages": [{"role": "wizard", "content": "hi"}]},
    {"messages": [{"role": "tool", "content": "hi", "tool_call_id": "x"}]},
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
    {"messages": [{"role": "system", "content": "only system"}]},
    {"messages": [{"role": "user", "content": "hi"}], "stream": "yes"},
    {"messages": [{"role": "user", "content": "hi"}], "stream": 1},
    {"messages": [{"role": "user", "content": "hi"}], "model": 3},
    {"messages": [{"role": "user", "content": "hi"}], "user": ""},
    {"messages": [{"role": "user", "content": "hi"}], "user": "u" * 500},
    {"messages": [{"role": "user", "content": "hi"}], "n": 2},
    {"messages": [{"role": "user", "content": "hi"}], "stream_options": "x"},
    {"messages": [{"role": "user", "content": "bad \ud800 surrogate"}]},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "\udfff"}]}]},
    {"messages": [{"role": "user", "content": "hi"}], "user": "\ud800"},
    {"messages": [{"role": "user", "content": "hi"}], "stream_options": {"include_usage": "x"}},
]


@pytest.mark.parametrize("body", GARBAGE, ids=lambda b: json.dumps(b)[:60])
def test_malformed_json_shapes_are_400_with_a_clear_message(
    client: TestClient, pipeline: FakePipeline, body: Any
) -> None:
    response = client.post(
        "/v1/chat/completions",
        content=json.dumps(body),
        headers={**AUTH, "content-type": "application/json"},
    )
    error = assert_openai_error(response, 400)
    assert error["type"] == "invalid_request_error"
    assert "Input should be" not in error["message"] or "`" in error["message"]
    assert pipeline.calls == []


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"", "application/json"),
        (b"\xff\xfe\x00garbage", "application/json"),
        (b'{"messages": [', "application/json"),
        (b"messages=hi", "application/x-www-form-urlencoded"),
        (b"hello", "text/plain"),
        (b"[" * 5000, "application/json"),
    ],
)
def test_unparseable_bodies_are_4xx_never_500(
    client: TestClient, pipeline: FakePipeline, content: bytes, content_type: str
) -> None:
    response = client.post(
        "/v1/chat/completions", content=content, headers={**AUTH, "content-type": content_type}
    )
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error"]["message"]
    assert pipeline.calls == []


def test_last_message_error_names_the_role(client: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]}
    error = assert_openai_error(chat(client, body), 400)
    assert "last message" in error["message"] and "assistant" in error["message"]
    error = assert_openai_error(
        chat(client, {"messages": [{"role": "wizard", "content": "x"}]}), 400
    )
    assert "wizard" in error["message"] and error["param"] == "messages[0].role"
    error = assert_openai_error(chat(client, {"message": []}), 400)
    assert "`messages` is required" in error["message"]
    error = assert_openai_error(
        client.post(
            "/v1/chat/completions",
            content=b"{",
            headers={**AUTH, "content-type": "application/json"},
        ),
        400,
        "invalid_json",
    )


def test_wrong_method_and_unknown_path_are_openai_errors(client: TestClient) -> None:
    assert_openai_error(client.get("/v1/chat/completions", headers=AUTH), 405)
    assert_openai_error(client.get("/v1/nothing", headers=AUTH), 404, "not_found")


# -- pipeline errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (ModelUnavailableError("connection refused"), 503, "model_unavailable"),
        (ModelResponseError("HTTP 400 from the model server"), 503, "model_bad_response"),
        (SandboxUnavailableError("bwrap missing"), 503, "sandbox_unavailable"),
        (UserError("conversation too odd"), 400, "invalid_request"),
        (StoreError("disk full"), 500, "store_error"),
        (RuntimeError("boom"), 500, "internal_error"),
    ],
)
def test_pipeline_errors_map_to_clear_statuses(
    pipeline: FakePipeline, client: TestClient, exc: BaseException, status: int, code: str
) -> None:
    pipeline.fail_with = exc
    for stream in (False, True):
        response = chat(client, {**USER_HI, "stream": stream})
        error = assert_openai_error(response, status, code)
        if status == 503:
            assert "infrastructure error" in error["message"]
            assert str(exc) in error["message"]
            assert response.headers["x-should-retry"] == "false"
    if code == "internal_error":
        assert "boom" not in response.text


# -- admin API ------------------------------------------------------------------------------


def test_admin_trajectories_list_filters_and_show(
    client: TestClient, store: Store, pipeline: FakePipeline
) -> None:
    for text in ("first", "second", "third"):
        chat(client, {"messages": [{"role": "user", "content": text}]})
    store.append_trajectory(Trajectory(task_kind="selfplay", outcome=Outcome.FAILED))
    items = client.get("/admin/trajectories", headers=AUTH).json()["data"]
    assert len(items) == 4
    chats = client.get("/admin/trajectories?task_kind=chat&limit=2", headers=AUTH).json()["data"]
    assert [c["user_request"] for c in chats] == ["third", "second"]
    failed = client.get("/admin/trajectories?outcome=failed", headers=AUTH).json()["data"]
    assert [f["task_kind"] for f in failed] == ["selfplay"]
    error = assert_openai_error(client.get("/admin/trajectories?outcome=maybe", headers=AUTH), 400)
    assert error["message"].startswith("`outcome`:") and error["param"] == "outcome"
    assert_openai_error(client.get("/admin/trajectories?limit=0", headers=AUTH), 400)
    assert_openai_error(client.get("/admin/trajectories?limit=abc", headers=AUTH), 400)
    shown = client.get(f"/admin/trajectories/{chats[0]['id']}", headers=AUTH).json()
    assert shown["trajectory"]["final_response"] == "echo: third"
    assert shown["trajectory"]["tool_calls"][0]["name"] == "list_files"
    assert shown["corrections"] == []
    assert_openai_error(client.get("/admin/trajectories/nope", headers=AUTH), 404, "not_found")


def test_infrastructure_errors_are_listed_as_unknown_not_failed(
    client: TestClient, pipeline: FakePipeline
) -> None:
    pipeline.fail_with = ModelUnavailableError("down")
    chat(client, USER_HI)
    [item] = client.get("/admin/trajectories", headers=AUTH).json()["data"]
    assert item["outcome"] == "unknown"
    assert item["infrastructure_error"] == "ModelUnavailableError"


def _lesson(memory: SkillMemory, trajectory_id: str, trigger: str) -> str:
    result = memory.learn(
        trigger=trigger,
        anti_pattern="guessing the path",
        correct_pattern="list the files first, then open the right one",
        domains=["python_general"],
        source="reflection",
        source_trajectory_id=trajectory_id,
    )
    assert result.lesson_id is not None
    return result.lesson_id


def test_admin_lessons_list_show_and_retract(
    client: TestClient, memory: SkillMemory, store: Store
) -> None:
    first = _lesson(memory, "traj-a", "When reading a CSV file with missing values")
    second = _lesson(memory, "traj-b", "When renaming log files in a cron job with spaces")
    listed = client.get("/admin/lessons", headers=AUTH).json()["data"]
    assert {lesson["id"] for lesson in listed} == {first, second}
    shown = client.get(f"/admin/lessons/{first}", headers=AUTH).json()
    assert shown["source_trajectory_id"] == "traj-a"
    response = client.post(f"/admin/lessons/{first}/retract", headers=AUTH, json={"reason": "bad"})
    assert response.json() == {"lesson_id": first, "retracted": 1}
    assert_openai_error(client.get(f"/admin/lessons/{first}", headers=AUTH), 404)
    assert_openai_error(client.post(f"/admin/lessons/{first}/retract", headers=AUTH), 404)
    [archived] = memory.archived("traj-a")
    assert archived.id == first
    response = client.post("/admin/trajectories/traj-b/retract-lessons", headers=AUTH)
    assert response.json() == {"trajectory_id": "traj-b", "retracted": 1}
    assert client.get("/admin/lessons", headers=AUTH).json()["data"] == []


def test_admin_lessons_without_a_playbook_is_404(pipeline: FakePipeline, store: Store) -> None:
    client = make_client(pipeline, store, None)
    assert_openai_error(client.get("/admin/lessons", headers=AUTH), 404, "no_playbook")


def test_admin_background_pages_with_since(client: TestClient, pipeline: FakePipeline) -> None:
    pipeline.background.extend(
        [
            FakeBackground("t1", "ok", "diagnosis", "L-1"),
            FakeBackground("t2", "no lesson", "duplicate", None),
        ]
    )
    page = client.get("/admin/background", headers=AUTH).json()
    assert [r["status"] for r in page["data"]] == ["ok", "no lesson"]
    assert page["next"] == 2 and page["pending"] == 0
    page = client.get("/admin/background?since=1", headers=AUTH).json()
    assert page["data"] == [
        {"trajectory_id": "t2", "status": "no lesson", "detail": "duplicate", "lesson_id": None}
    ]
    assert_openai_error(client.get("/admin/background?since=-1", headers=AUTH), 400)


def test_fake_pipeline_records_into_a_real_store(tmp_path: Path) -> None:
    """Sanity check of the double itself: what the app reads is what it wrote."""
    with Store.open(tmp_path / "x.db") as own:
        turn = FakePipeline(own).handle([{"role": "user", "content": "q"}], session_id="s")
        assert own.get_trajectory(turn.trajectory.id) is not None
