"""The server on real parts: `nightschool serve` with the embedded model and the real
`openai` client; 16 concurrent clients over real HTTP on the real pipeline; a model
server that goes down mid-session."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from nightschool.agent import VERIFIER_RUBRIC, ChatPipeline, session_dir_name
from nightschool.lessons.reflection import REFLECTION_SYSTEM_PROMPT, Reflector
from nightschool.lessons.sink import PlaybookSink
from nightschool.llm import Message, OpenAICompatibleConfig, OpenAICompatibleModel, ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.server import SESSION_HEADER, create_app, serve_in_thread
from nightschool.store import Store
from nightschool.trajectory import Outcome

KEY = "e2e-key-0123456789"
NIGHTSCHOOL = Path(sys.executable).parent / "nightschool"


# -- nightschool serve as a subprocess, the real openai client --------------------------------


@pytest.mark.e2e
def test_openai_client_against_nightschool_serve_with_the_embedded_model(
    tmp_path: Path, serve_process: Callable[..., Any]
) -> None:
    home = tmp_path / "home"
    server = serve_process(home, {"NIGHTSCHOOL_API_KEY": KEY, "NIGHTSCHOOL_MAX_TOKENS": "40"})
    try:
        base_url = server.base_url()
        root = base_url.removesuffix("/v1")
        deadline = time.monotonic() + 60
        while httpx.get(root + "/health").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert "API key required" in "".join(server.output)
        client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=300)
        assert [m.id for m in client.models.list()] == ["nightschool"]

        completion = client.chat.completions.create(
            model="nightschool",
            messages=[{"role": "user", "content": "Say hello in three words."}],
            extra_headers={SESSION_HEADER: "e2e-session"},
        )
        reply = completion.choices[0].message.content
        assert isinstance(reply, str)
        assert completion.usage is not None and completion.usage.completion_tokens > 0
        extension = (completion.model_extra or {})["nightschool"]
        assert extension["session_id"] == "e2e-session"

        stream = client.chat.completions.create(
            model="nightschool",
            messages=[
                {"role": "user", "content": "Say hello in three words."},
                {"role": "assistant", "content": reply},
                {"role": "user", "content": "Now name one colour."},
            ],
            stream=True,
            stream_options={"include_usage": True},
            extra_headers={SESSION_HEADER: "e2e-session"},
        )
        pieces, streamed_ext, usage_seen = [], None, False
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            streamed_ext = (chunk.model_extra or {}).get("nightschool") or streamed_ext
            usage_seen = usage_seen or chunk.usage is not None
        assert streamed_ext is not None and usage_seen

        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=base_url, api_key="wrong", max_retries=0).models.list()

        admin = httpx.get(
            root + "/admin/trajectories",
            params={"task_kind": "chat"},
            headers={"Authorization": f"Bearer {KEY}"},
        ).json()["data"]
        assert [t["id"] for t in admin] == [
            streamed_ext["trajectory_id"],
            extension["trajectory_id"],
        ]
        shown = httpx.get(
            f"{root}/admin/trajectories/{streamed_ext['trajectory_id']}",
            headers={"Authorization": f"Bearer {KEY}"},
        ).json()["trajectory"]
        assert shown["final_response"] == "".join(pieces)
        assert shown["user_request"] == "Now name one colour."
    finally:
        code = server.stop()
    assert code == 0, "".join(server.output)
    assert "stopped" in "".join(server.output)
    with sqlite3.connect(home / "nightschool.db") as db:
        rows = db.execute(
            "SELECT session_id, task_kind FROM trajectories ORDER BY timestamp"
        ).fetchall()
    assert rows == [("e2e-session", "chat"), ("e2e-session", "chat")]


# -- many concurrent clients on the real pipeline ---------------------------------------------

CLIENTS = 16
TURNS = 3


def tool_using_reply(messages: Sequence[Message]) -> str:
    """A scripted agent: write the request's marker to a file, then say so; verifier agrees."""
    if any(VERIFIER_RUBRIC[:40] in m["content"] for m in messages):
        return "VERDICT: CONFIRMED\nCONFIDENCE: 0.90\nNOTE: the tool output shows the write"
    request = next(
        m["content"]
        for m in reversed(messages)
        if m["role"] == "user" and not m["content"].startswith("TOOL RESULT")
    )
    marker = request.split()[-1]
    if messages[-1]["content"].startswith("TOOL RESULT"):
        return f"Done: wrote {marker}."
    call = {"name": "write_file", "arguments": {"path": "note.txt", "content": marker}}
    return f"```tool\n{json.dumps(call)}\n```"


@pytest.fixture
def real_pipeline(store: Store, tmp_path: Path) -> Iterator[ChatPipeline]:
    memory = SkillMemory(store, HashingEmbedder())
    memory.learn(
        trigger="When writing a marker to a note file",
        anti_pattern="printing it instead",
        correct_pattern="write it with write_file, then confirm",
        domains=["python_general"],
        source="manual",
    )
    pipeline = ChatPipeline(
        model=ScriptedModel(tool_using_reply),
        store=store,
        sandbox=Sandbox(),
        memory=memory,
        reflector=None,
        workspace_root=tmp_path / "ws",
    )
    yield pipeline
    pipeline.close()
    memory.close()


@pytest.mark.e2e
def test_sixteen_concurrent_clients_each_turn_one_complete_trajectory(
    real_pipeline: ChatPipeline, store: Store
) -> None:
    web = create_app(real_pipeline, store=store, memory=None, api_key=KEY, model_name="ns")

    def client_session(index: int, root: str) -> list[tuple[str, str, str]]:
        session = f"client-{index}"
        history: list[dict[str, str]] = []
        seen = []
        with httpx.Client(
            base_url=root, headers={"Authorization": f"Bearer {KEY}"}, timeout=120
        ) as http:
            for turn in range(TURNS):
                marker = f"m{index}x{turn}"
                history.append({"role": "user", "content": f"please save marker {marker}"})
                response = http.post(
                    "/v1/chat/completions",
                    json={"model": "ns", "messages": history},
                    headers={SESSION_HEADER: session},
                )
                assert response.status_code == 200, response.text
                body = response.json()
                reply = body["choices"][0]["message"]["content"]
                assert reply == f"Done: wrote {marker}."
                history.append({"role": "assistant", "content": reply})
                seen.append((body["nightschool"]["trajectory_id"], session, marker))
        return seen

    with serve_in_thread(web) as root, ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(lambda i: client_session(i, root), range(CLIENTS)))

    turns = [item for per_client in results for item in per_client]
    assert len(turns) == CLIENTS * TURNS
    assert len({trajectory_id for trajectory_id, _, _ in turns}) == len(turns)
    stored = list(store.iter_trajectories(task_kind="chat"))
    assert len(stored) == len(turns)
    by_id = {t.id: t for t in stored}
    for trajectory_id, session, marker in turns:
        record = by_id[trajectory_id]
        assert record.session_id == session
        assert record.user_request == f"please save marker {marker}"
        assert record.final_response == f"Done: wrote {marker}."
        assert [(c.name, c.arguments["content"], c.error) for c in record.tool_calls] == [
            ("write_file", marker, None)
        ]
        assert record.outcome != Outcome.FAILED
    for index in range(CLIENTS):
        note = real_pipeline.workspace_root / session_dir_name(f"client-{index}") / "note.txt"
        assert note.read_text() == f"m{index}x{TURNS - 1}"


# -- the model server goes down mid-session -------------------------------------------------


@pytest.mark.e2e
def test_model_server_down_mid_session_is_a_503_and_an_infrastructure_error(
    store: Store,
    tmp_path: Path,
    openai_stub: Callable[..., AbstractContextManager[str]],
) -> None:
    stub = openai_stub(lambda messages: "The answer is 4.")
    model_url = stub.__enter__()
    model = OpenAICompatibleModel(
        OpenAICompatibleConfig(base_url=model_url, model="stub", max_retries=0, timeout_s=5)
    )
    pipeline = ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "ws",
    )
    web = create_app(pipeline, store=store, memory=None, api_key=KEY, model_name="ns")
    with serve_in_thread(web) as root:
        client = openai.OpenAI(base_url=root + "/v1", api_key=KEY)  # SDK retries left on
        history: list[Any] = [{"role": "user", "content": "What is 2 + 2?"}]
        first = client.chat.completions.create(model="ns", messages=history, user="sess-down")
        assert first.choices[0].message.content == "The answer is 4."
        history += [
            {"role": "assistant", "content": "The answer is 4."},
            {"role": "user", "content": "And 3 + 3?"},
        ]
        stub.__exit__(None, None, None)  # the model server goes down mid-session
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model="ns", messages=history, user="sess-down")
    assert caught.value.status_code == 503
    assert "model server is unavailable" in caught.value.message
    assert "infrastructure error" in caught.value.message
    records = list(store.iter_trajectories(task_kind="chat"))
    assert len(records) == 2, "the client must not have retried the turn"
    down = records[-1]
    assert down.session_id == "sess-down" and down.user_request == "And 3 + 3?"
    assert down.outcome == Outcome.UNKNOWN and down.failure_reason is None
    assert (down.infrastructure_error or "").startswith("ModelUnavailableError")
    assert store.counts()["failed"] == 0
    pipeline.close()


# -- the correction loop over HTTP --------------------------------------------------------------

REQUEST_1 = "Reply with three words exactly: kangaroo trampoline lighthouse"
REPLY_1 = "Kangaroo trampoline lighthouse are three lovely words, here you go."
REQUEST_2 = "no, reply with three words exactly: kangaroo trampoline metronome"
REFLECTION = (
    "DIAGNOSIS: The reply added extra words instead of giving exactly three words.\n"
    "REVISED PLAN:\n1. Count the words the user asked for.\n"
    "2. Reply with exactly those words and nothing else.\n"
)


@pytest.mark.e2e
def test_correction_over_http_becomes_a_lesson_the_next_request_is_shown(
    store: Store, tmp_path: Path
) -> None:
    def reply(messages: Sequence[Message]) -> str:
        return REFLECTION if messages[0]["content"] == REFLECTION_SYSTEM_PROMPT else REPLY_1

    model = ScriptedModel(reply)
    memory = SkillMemory(store, HashingEmbedder())
    pipeline = ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=memory,
        reflector=Reflector(store, model, sink=PlaybookSink(memory)),
        workspace_root=tmp_path / "ws",
    )
    web = create_app(pipeline, store=store, memory=memory, api_key=KEY, model_name="ns")
    try:
        with serve_in_thread(web) as root:
            client = openai.OpenAI(base_url=root + "/v1", api_key=KEY, max_retries=0)
            auth = {"Authorization": f"Bearer {KEY}"}
            history: list[Any] = [{"role": "user", "content": REQUEST_1}]
            first = client.chat.completions.create(model="ns", messages=history, user="u1")
            first_id = (first.model_extra or {})["nightschool"]["trajectory_id"]
            history += [
                {"role": "assistant", "content": first.choices[0].message.content},
                {"role": "user", "content": REQUEST_2},
            ]
            second = client.chat.completions.create(model="ns", messages=history, user="u1")
            correction = (second.model_extra or {})["nightschool"]["correction"]
            assert correction["trajectory_id"] == first_id
            assert correction["reflection_scheduled"] is True

            deadline = time.monotonic() + 30
            while True:
                page = httpx.get(root + "/admin/background", headers=auth).json()
                if page["data"]:
                    break
                assert time.monotonic() < deadline, "no background result"
                time.sleep(0.05)
            [done] = page["data"]
            assert done["status"] == "ok" and done["trajectory_id"] == first_id
            lesson = httpx.get(f"{root}/admin/lessons/{done['lesson_id']}", headers=auth).json()
            assert lesson["source_trajectory_id"] == first_id
            shown = httpx.get(f"{root}/admin/trajectories/{first_id}", headers=auth).json()
            assert shown["trajectory"]["outcome"] == "failed"
            assert [c["source"] for c in shown["corrections"]] == ["user_correction"]

            # Chat shows verified entries (or unverified ones for nearly their own task);
            # re-solving a chat turn with and without its lesson is not built yet
            # (issue 26), so the verdict is set here.
            verdict = {"with": [1, 1], "without": [0, 0]}
            assert memory.set_verified(done["lesson_id"], True, verdict)
            third = client.chat.completions.create(
                model="ns", messages=[{"role": "user", "content": REQUEST_1}], user="u2"
            )
            assert done["lesson_id"] in (third.model_extra or {})["nightschool"]["lessons_shown"]
    finally:
        pipeline.close()
        memory.close()
