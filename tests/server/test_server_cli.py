"""`nightschool serve` start-up checks, the chat REPL, and the HTTP chat backend."""

from __future__ import annotations

import io
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from nightschool.agent import ChatPipeline
from nightschool.cli import app
from nightschool.cli._serve import run_repl
from nightschool.errors import InfrastructureError, ModelUnavailableError, UserError
from nightschool.llm import Message, ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.server import create_app, is_loopback, serve_in_thread
from nightschool.server._chat import HttpBackend, LearnedView, LocalBackend, TurnView
from nightschool.store import Store

runner = CliRunner()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.org", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_serve_refuses_a_public_address_without_a_key() -> None:
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0", "--port", str(free_port())])
    assert result.exit_code == 2, result.output
    assert "without an API key" in result.output
    assert "NIGHTSCHOOL_API_KEY" in result.output


def test_serve_exits_3_when_the_model_server_is_unreachable() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    result = runner.invoke(
        app,
        ["serve", "--port", str(free_port()), "--base-url", dead, "--model", "m"],
        env={"NIGHTSCHOOL_REQUEST_TIMEOUT_S": "2"},
    )
    assert result.exit_code == 3, result.output
    assert "error" in result.output


def test_serve_exits_2_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = runner.invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.output


def test_serve_and_chat_have_help() -> None:
    for command, flag in (("serve", "--host"), ("chat", "--server")):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0
        assert flag in result.output


# -- the REPL ---------------------------------------------------------------------------------


class FakeBackend:
    def __init__(self, turns: list[TurnView | Exception]) -> None:
        self.turns = turns
        self.sent: list[list[Message]] = []
        self.learned: list[list[LearnedView]] = []

    def send(self, messages: Sequence[Message]) -> TurnView:
        self.sent.append(list(messages))
        turn = self.turns.pop(0)
        if isinstance(turn, Exception):
            raise turn
        return turn

    def poll(self) -> list[LearnedView]:
        return self.learned.pop(0) if self.learned else []

    def pending(self) -> int:
        return 0


def turn(reply: str, **more: Any) -> TurnView:
    fields: dict[str, Any] = {
        "trajectory_id": "t" * 32,
        "outcome": "unknown",
        "lessons_shown": (),
        "tool_calls": (),
        "correction": None,
    }
    fields.update(more)
    return TurnView(reply=reply, **fields)


def lines(*items: str | type[BaseException]) -> Callable[[], str]:
    queue = list(items)

    def read() -> str:
        item = queue.pop(0)
        if isinstance(item, str):
            return item
        raise item()

    return read


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, color_system=None), out


def test_repl_keeps_the_conversation_and_shows_lessons_used_and_learned() -> None:
    backend = FakeBackend(
        [
            turn("first answer", lessons_shown=("L-aaaaaaaaaaaa",)),
            ModelUnavailableError("connection refused"),
            turn(
                "second answer",
                correction={
                    "trajectory_id": "a" * 32,
                    "jaccard": 0.61,
                    "lessons_retracted": 1,
                    "reflection_scheduled": True,
                },
                tool_calls=(("run_python", None), ("read_file", "no such file")),
            ),
        ]
    )
    backend.learned = [[], [], [], [LearnedView("a" * 32, "ok", "diagnosis", "L-bbbbbbbbbbbb")]]
    term, out = console()
    run_repl(backend, term, lines("first question", "", "broken", "no, I meant X", "/exit"))
    text = out.getvalue()
    assert "first answer" in text and "lessons used: L-aaaaaaaaaaaa" in text
    assert "error: connection refused" in text
    assert "correction" in text and "1 lesson(s) retracted" in text
    assert "tools: run_python, read_file (error)" in text
    assert "learned lesson L-bbbbbbbbbbbb" in text
    assert backend.sent[-1] == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "no, I meant X"},
    ]


@pytest.mark.parametrize("end", [EOFError, KeyboardInterrupt, "/quit"])
def test_repl_leaves_cleanly(end: str | type[BaseException]) -> None:
    backend = FakeBackend([turn("hello")])
    term, out = console()
    run_repl(backend, term, lines("hi", end))
    assert "hello" in out.getvalue()
    assert len(backend.sent) == 1


def test_repl_reset_starts_a_new_conversation() -> None:
    backend = FakeBackend([turn("one"), turn("two")])
    term, _ = console()
    run_repl(backend, term, lines("a", "/reset", "b", "/exit"))
    assert backend.sent[1] == [{"role": "user", "content": "b"}]


# -- backends on a real pipeline -------------------------------------------------------------


@pytest.fixture
def scripted_pipeline(store: Store, tmp_path: Path) -> Iterator[ChatPipeline]:
    model = ScriptedModel(lambda messages: "reply to " + messages[-1]["content"])
    memory = SkillMemory(store, HashingEmbedder())
    pipeline = ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=memory,
        reflector=None,
        workspace_root=tmp_path / "ws",
    )
    yield pipeline
    pipeline.close()
    memory.close()


def test_local_backend_runs_turns_on_the_pipeline(
    scripted_pipeline: ChatPipeline, store: Store
) -> None:
    backend = LocalBackend(scripted_pipeline, "s-local")
    view = backend.send([{"role": "user", "content": "ping"}])
    assert view.reply == "reply to ping"
    stored = store.get_trajectory(view.trajectory_id)
    assert stored is not None and stored.session_id == "s-local"
    assert backend.poll() == [] and backend.pending() == 0


def test_http_backend_against_a_served_app(scripted_pipeline: ChatPipeline, store: Store) -> None:
    web = create_app(scripted_pipeline, store=store, memory=None, api_key="k", model_name="ns")
    with serve_in_thread(web) as root:
        backend = HttpBackend(root + "/v1", api_key="k", session_id="s-http")
        try:
            backend.check()
            view = backend.send([{"role": "user", "content": "ping"}])
            assert view.reply == "reply to ping"
            stored = store.get_trajectory(view.trajectory_id)
            assert stored is not None and stored.session_id == "s-http"
            assert backend.poll() == []
            with pytest.raises(UserError, match="last message"):
                backend.send([{"role": "assistant", "content": "x"}])
        finally:
            backend.close()
        wrong = HttpBackend(root, api_key="nope", session_id="s")
        with pytest.raises(UserError, match="API key"):
            wrong.check()
        wrong.close()
    gone = HttpBackend(root, api_key="k", session_id="s", timeout_s=2)
    with pytest.raises(InfrastructureError, match="cannot reach"):
        gone.check()
    gone.close()


def test_chat_command_against_a_server(scripted_pipeline: ChatPipeline, store: Store) -> None:
    web = create_app(scripted_pipeline, store=store, memory=None, api_key="k", model_name="ns")
    with serve_in_thread(web) as root:
        result = runner.invoke(
            app,
            ["chat", "--server", root + "/v1", "--session", "cli-s"],
            input="ping\n/exit\n",
            env={"NIGHTSCHOOL_API_KEY": "k"},
        )
    assert result.exit_code == 0, result.output
    assert "reply to ping" in result.output
    [stored] = store.iter_trajectories(task_kind="chat")
    assert stored.session_id == "cli-s"


def test_chat_command_with_a_wrong_server_key_exits_2(
    scripted_pipeline: ChatPipeline, store: Store
) -> None:
    web = create_app(scripted_pipeline, store=store, memory=None, api_key="k", model_name="ns")
    with serve_in_thread(web) as root:
        result = runner.invoke(app, ["chat", "--server", root, "--server-api-key", "bad"])
    assert result.exit_code == 2
    assert "API key" in result.output


@pytest.mark.e2e
def test_chat_command_in_process_with_the_embedded_model(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["chat", "--session", "embedded-cli", "--no-lessons"],
        input="Say hi.\n/exit\n",
        env={"NIGHTSCHOOL_MAX_TOKENS": "24"},
    )
    assert result.exit_code == 0, result.output
    assert "agent>" in result.output
    with Store.open(tmp_path / "home" / "nightschool.db") as opened:
        [stored] = opened.iter_trajectories(task_kind="chat")
    assert stored.session_id == "embedded-cli" and stored.user_request == "Say hi."


@pytest.mark.e2e
def test_chat_in_process_reports_a_correction_and_what_it_taught(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["chat", "--session", "embedded-learn"],
        input=(
            "What is 2+2? Answer with just the number.\n"
            "no, I meant what is 2+3? answer with just the number\n/exit\n"
        ),
        env={"NIGHTSCHOOL_MAX_TOKENS": "40"},
    )
    assert result.exit_code == 0, result.output
    assert "↺ correction: the previous turn" in result.output
    # the background reflection finished before exit and its outcome was shown
    assert re.search(
        r"✓ learned lesson L-|· no lesson from turn|✗ reflection on turn", result.output
    )
    with Store.open(tmp_path / "home" / "nightschool.db") as opened:
        [correction] = opened.query("SELECT source, authority FROM corrections")
    assert correction == ("user_correction", "human")
