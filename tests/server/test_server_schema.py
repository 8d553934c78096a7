"""The server against its own published schema: schemathesis, `/openapi.json`, finish reasons.

The app runs on real parts (ChatPipeline, SQLite store, playbook, bubblewrap
sandbox) with a scripted model, so no language model is loaded and the run
stays fast. The schemathesis run is capped at `MAX_EXAMPLES` per operation and
mode. Reproduce by hand (about 15 s on 2 cores; a longer hunt with
NIGHTSCHOOL_SCHEMA_EXAMPLES=500):

    .venv/bin/python -m pytest tests/server/test_server_schema.py -q
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from nightschool.agent import ChatPipeline
from nightschool.errors import ModelUnavailableError
from nightschool.llm import Message, ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.server import ServerLimits, create_app
from nightschool.server._wire import turn_finish_reason
from nightschool.store import Store

KEY = "schema-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
MAX_EXAMPLES = int(os.environ.get("NIGHTSCHOOL_SCHEMA_EXAMPLES", "50"))
"""Generated requests per operation and generation mode (11 operations, 2 modes): about
850 requests in 15 s on 2 cores. Raise it for a longer hunt."""

HYPOTHESIS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
"""Both tests' hypothesis settings: reproducible (derandomized, no example database)."""

REPLY = "one two three four five six seven eight"


def scripted_reply(messages: Sequence[Message]) -> str:
    return REPLY


def build_app(
    store: Store,
    tmp_path: Path,
    *,
    reply: Callable[[Sequence[Message]], str] = scripted_reply,
    limits: ServerLimits | None = None,
) -> tuple[FastAPI, Callable[[], None]]:
    model = ScriptedModel(reply)
    memory = SkillMemory(store, HashingEmbedder())
    pipeline = ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=memory,
        reflector=None,
        workspace_root=tmp_path / "ws",
    )
    app = create_app(
        pipeline, store=store, memory=memory, api_key=KEY, model_name="ns-schema", limits=limits
    )

    def close() -> None:
        pipeline.close()
        memory.close()

    return app, close


def test_every_operation_conforms_to_the_published_schema(store: Store, tmp_path: Path) -> None:
    """Schema-generated requests, valid and invalid, against every operation.

    schemathesis's checks on each response: no 5xx, only declared statuses,
    declared content types and body schemas, 4xx for invalid data, 401 without
    the key (the API declares bearer auth), 405 for undeclared methods. Not
    `positive_data_acceptance`: the chat route's rules that JSON Schema cannot
    state (the last message is the user's and not blank) make a schema-valid
    request a 400 by design.
    """
    app, close = build_app(store, tmp_path)
    try:
        config = schemathesis.Config()
        # The key is sent on every request (`headers=AUTH`), and `ignored_auth` checks
        # the 401 without it; unknown query parameters are ignored, as HTTP APIs do.
        config.projects.default.generation.update(
            with_security_parameters=False, allow_extra_parameters=False
        )
        api = schemathesis.openapi.from_asgi("/openapi.json", app, config=config, headers=AUTH)
        operations = [result.ok() for result in api.get_all_operations()]
        sent: dict[str, int] = {}
        for operation in operations:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                run_operation(operation, mode, sent)
    finally:
        close()
    assert len(operations) == 14, [op.label for op in operations]
    assert all(count > 0 for count in sent.values()) and len(sent) == len(operations)
    assert sum(sent.values()) >= 12 * MAX_EXAMPLES, sent


def run_operation(operation: Any, mode: GenerationMode, sent: dict[str, int]) -> None:
    """Up to `MAX_EXAMPLES` requests of `mode` to `operation`; raises on a failed check."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @HYPOTHESIS
    def check(case: Any) -> None:
        sent[operation.label] = sent.get(operation.label, 0) + 1
        case.call_and_validate(headers=AUTH, excluded_checks=[positive_data_acceptance])

    try:
        check()
    except Unsatisfiable:
        if mode is not GenerationMode.NEGATIVE:
            raise
        # No invalid form exists: no parameters, or only free-form strings (GET /health,
        # GET /admin/lessons/{lesson_id}).


ROLES = ["system", "developer", "user", "assistant"]

conversations = st.builds(
    lambda prior, ask, options: {"messages": [*prior, ask], **options},
    st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(ROLES)},
            optional={"content": st.none() | st.text(max_size=40), "name": st.text(max_size=8)},
        ),
        max_size=3,
    ),
    st.fixed_dictionaries(
        {
            "role": st.just("user"),
            "content": st.text(min_size=1, max_size=60).filter(str.strip)
            | st.lists(
                st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}),
                min_size=1,
                max_size=3,
            ).filter(lambda parts: "".join(p["text"] for p in parts).strip()),
        }
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "model": st.text(max_size=12),
            "stream": st.booleans(),
            "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
            "max_tokens": st.integers(min_value=1, max_value=12),
            "max_completion_tokens": st.integers(min_value=1, max_value=12),
            "temperature": st.floats(min_value=0, max_value=2),
            "n": st.just(1),
            "top_p": st.floats(min_value=0, max_value=1),
        },
    ),
)
"""Conversations the chat route must answer 200: the schema-generated ones above
rarely end with a non-blank user message, so this runs the turn path itself."""


def test_valid_conversations_get_turns_that_conform(store: Store, tmp_path: Path) -> None:
    """Real turns (JSON and streamed, cut by `max_tokens` or not) under every check."""
    app, close = build_app(store, tmp_path)
    statuses: list[int] = []
    try:
        api = schemathesis.openapi.from_asgi("/openapi.json", app, headers=AUTH)
        chat = api["/v1/chat/completions"]["POST"]

        @given(body=conversations)
        @HYPOTHESIS
        def turn(body: dict[str, Any]) -> None:
            case = chat.Case(body=body, media_type="application/json")
            response = case.call_and_validate(headers=AUTH)
            statuses.append(response.status_code)

        turn()
    finally:
        close()
    assert statuses and set(statuses) == {200}, statuses


# -- the published schema itself ----------------------------------------------------------


@pytest.fixture
def client(store: Store, tmp_path: Path) -> Iterator[TestClient]:
    app, close = build_app(store, tmp_path, limits=ServerLimits(max_body_bytes=4096))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
    close()


def published(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json", headers=AUTH)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_openapi_is_behind_the_key_and_declares_bearer_auth(client: TestClient) -> None:
    assert client.get("/openapi.json").status_code == 401
    bad = client.get("/openapi.json", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401
    doc = published(client)
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert doc["paths"]["/health"]["get"]["security"] == []
    chat = doc["paths"]["/v1/chat/completions"]["post"]
    assert chat["security"] == [{"bearer": []}]
    assert {"200", "400", "401", "413", "503"} <= set(chat["responses"])
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            assert "422" not in operation["responses"], (method, path)  # never sent: 400
    finish = chat["responses"]["200"]["content"]["application/json"]["schema"]
    choice = finish["properties"]["choices"]["items"]["properties"]
    assert choice["finish_reason"]["enum"] == ["stop", "length"]


def test_statuses_the_chat_route_really_returns_are_declared(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    declared = set(published(client)["paths"]["/v1/chat/completions"]["post"]["responses"])
    user = {"messages": [{"role": "user", "content": "hi"}]}
    seen = {
        client.post("/v1/chat/completions", json=user, headers=AUTH).status_code,
        client.post("/v1/chat/completions", json=user).status_code,
        client.post("/v1/chat/completions", json={"messages": []}, headers=AUTH).status_code,
        client.post("/v1/chat/completions", content=b"{" * 5000, headers=AUTH).status_code,
    }
    down, close = build_app(store, tmp_path, reply=model_down)
    with TestClient(down, raise_server_exceptions=False) as down_client:
        seen.add(down_client.post("/v1/chat/completions", json=user, headers=AUTH).status_code)
    close()
    assert seen == {200, 401, 400, 413, 503}
    assert {str(status) for status in seen} <= declared


def model_down(messages: Sequence[Message]) -> str:
    raise ModelUnavailableError("connection refused")


# -- finish_reason ----------------------------------------------------------------------------


def test_finish_reason_is_length_when_max_tokens_cut_the_reply(client: TestClient) -> None:
    ask = {"messages": [{"role": "user", "content": "count"}]}
    full = client.post("/v1/chat/completions", json=ask, headers=AUTH).json()
    assert full["choices"][0]["message"]["content"] == REPLY
    assert full["choices"][0]["finish_reason"] == "stop"

    for cap in ("max_tokens", "max_completion_tokens"):
        cut = client.post("/v1/chat/completions", json={**ask, cap: 3}, headers=AUTH).json()
        assert cut["choices"][0]["message"]["content"] == "one two three"
        assert cut["choices"][0]["finish_reason"] == "length", cap

    with client.stream(
        "POST", "/v1/chat/completions", json={**ask, "max_tokens": 3, "stream": True}, headers=AUTH
    ) as streamed:
        events = [line for line in streamed.iter_lines() if line.startswith("data: {")]
    reasons = [json.loads(e[6:])["choices"][0]["finish_reason"] for e in events]
    assert reasons[-1] == "length" and set(reasons[:-1]) == {None}


def test_turn_finish_reason_follows_the_last_model_call() -> None:
    assert turn_finish_reason({"finish_reasons": ["tool_calls", "length"]}) == "length"
    assert turn_finish_reason({"finish_reasons": ["length", "stop"]}) == "stop"
    assert turn_finish_reason({"finish_reasons": []}) == "stop"
    assert turn_finish_reason({}) == "stop"
    # steps ran out: the reply is composed by the agent, not the cut call's text
    cut = {"finish_reasons": ["length"]}
    assert turn_finish_reason({**cut, "aborted": True}) == "stop"
    assert turn_finish_reason({**cut, "blob_answer": True}) == "stop"
