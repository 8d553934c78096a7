"""run_eval with a fake pipeline and a real store and sandbox; runners; the egress guard."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nightschool.errors import ModelUnavailableError, SandboxUnavailableError, UserError
from nightschool.evals import (
    AgentReply,
    HttpRunner,
    InProcessRunner,
    Score,
    Suite,
    Task,
    get_suite,
    list_runs,
    load_run,
    run_eval,
)
from nightschool.evals._humaneval import load_problems
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import ToolCall


def canonical_or_wrong(good: set[int]) -> Callable[[str], str]:
    """Answer HumanEval prompts: the canonical body for problems in `good`, else junk code."""
    problems = load_problems()

    def answer(prompt: str) -> str:
        for index, problem in enumerate(problems):
            if prompt.endswith(problem.prompt):
                body = problem.canonical_solution if index in good else "    return None\n"
                return f"```python\n{body}```"
        raise AssertionError("unknown prompt")

    return answer


def toy_suite(n: int, scorer: Callable[[AgentReply, Any], Score] | None = None) -> Suite:
    def default(reply: AgentReply, sandbox: Any) -> Score:
        ok = "yes" in reply.text
        return Score(ok, float(ok), None if ok else "said no")

    tasks = tuple(Task(id=f"t{k}", prompt=f"task {k}", scorer=scorer or default) for k in range(n))
    return Suite("toy", 0, tasks)


def test_humaneval_run_is_stored_task_by_task(
    store: Store, sandbox: Sandbox, fake_pipeline: Any
) -> None:
    pipeline = fake_pipeline(canonical_or_wrong({0, 2}))
    seen: list[str] = []
    result = run_eval(
        get_suite("humaneval"),
        InProcessRunner(pipeline, model_name="fake-model"),
        store,
        sandbox,
        limit=4,
        timeout_s=30,
        on_result=lambda i, task, r: seen.append(task.id),
    )
    assert result.status == "completed" and result.n == 4 and result.passed == 2
    assert [r.passed for r in result.results] == [True, False, True, False]
    assert seen == ["HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/3"]
    assert all(r.trajectory_id and r.tokens_in == 10 for r in result.results)
    assert all(kind == "eval" for _, _, kind in pipeline.calls)
    assert len({session for _, session, _ in pipeline.calls}) == 4  # fresh session per task
    again = load_run(store, result.id[:10])
    assert again == result
    assert result.pass_rate.low < 0.5 < result.pass_rate.high
    [listed] = list_runs(store)
    assert listed.id == result.id and listed.model == "fake-model"


def test_timeout_fails_the_task_and_the_run_goes_on(store: Store, fake_pipeline: Any) -> None:
    slow = {"task 1"}

    def answer(prompt: str) -> str:
        if prompt in slow:
            threading.Event().wait(1.5)
        return "yes"

    runner = InProcessRunner(fake_pipeline(answer), drain_s=5)
    result = run_eval(toy_suite(3), runner, store, None, timeout_s=0.5)  # type: ignore[arg-type]
    assert [r.passed for r in result.results] == [True, False, True]
    assert result.results[1].error == "timeout"
    assert result.status == "completed"


def test_infrastructure_fault_aborts_and_is_not_scored(store: Store, fake_pipeline: Any) -> None:
    def answer(prompt: str) -> Any:
        if prompt == "task 2":
            return ModelUnavailableError("model server down")
        return "yes"

    with pytest.raises(ModelUnavailableError):
        run_eval(toy_suite(5), InProcessRunner(fake_pipeline(answer)), store, None)  # type: ignore[arg-type]
    [run] = list_runs(store)
    stored = load_run(store, run.id)
    assert stored.status == "aborted" and "model server down" in str(
        store.query("SELECT error FROM eval_runs")[0][0]
    )
    assert [r.task_id for r in stored.results] == ["t0", "t1"]  # t2 never scored


def test_sandbox_fault_in_scoring_aborts(store: Store, fake_pipeline: Any) -> None:
    def broken(reply: AgentReply, sandbox: Any) -> Score:
        raise SandboxUnavailableError("bwrap is gone")

    with pytest.raises(SandboxUnavailableError):
        run_eval(toy_suite(2, broken), InProcessRunner(fake_pipeline(lambda p: "x")), store, None)  # type: ignore[arg-type]
    assert load_run(store, list_runs(store)[0].id).results == ()


def test_agent_crash_is_a_failed_task(store: Store, fake_pipeline: Any) -> None:
    def answer(prompt: str) -> Any:
        return RuntimeError("bug in agent") if prompt == "task 0" else "yes"

    result = run_eval(toy_suite(2), InProcessRunner(fake_pipeline(answer)), store, None)  # type: ignore[arg-type]
    assert result.results[0].error == "agent crashed: RuntimeError: bug in agent"
    assert result.results[1].passed


def test_ctrl_c_keeps_finished_results_and_marks_interrupted(
    store: Store, fake_pipeline: Any
) -> None:
    def answer(prompt: str) -> str:
        return "yes"

    def on_result(index: int, task: Task, result: Any) -> None:
        if index == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(
            toy_suite(5),
            InProcessRunner(fake_pipeline(answer)),
            store,
            None,  # type: ignore[arg-type]
            on_result=on_result,
        )
    run = load_run(store, list_runs(store)[0].id)
    assert run.status == "interrupted" and run.finished_at
    assert [r.task_id for r in run.results] == ["t0", "t1"]


def test_non_loopback_connection_during_an_eval_raises(store: Store, fake_pipeline: Any) -> None:
    attempts: list[str] = []
    original_connect = socket.socket.connect

    def answer(prompt: str) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(2)
            sock.connect(("203.0.113.9", 80))  # TEST-NET-3: never reached either way
        except OSError as exc:
            attempts.append(f"reached the network stack: {exc}")
        finally:
            sock.close()
        return "yes"

    with pytest.raises(UserError, match=r"network egress blocked: connection to 203\.0\.113\.9"):
        run_eval(toy_suite(2), InProcessRunner(fake_pipeline(answer)), store, None)  # type: ignore[arg-type]
    assert attempts == []  # the guard raised before any packet left
    assert list_runs(store)[0].status == "aborted"
    assert socket.socket.connect is original_connect  # the guard is gone after the eval


def test_inprocess_runner_places_workspace_files(tmp_path: Path, fake_pipeline: Any) -> None:
    from nightschool.agent import session_dir_name

    seen: dict[str, str] = {}

    def answer(prompt: str) -> tuple[str, list[ToolCall]]:
        [session] = [s for _, s, _ in pipeline.calls]
        path = tmp_path / session_dir_name(session) / "deploy" / "config.yaml"
        seen["text"] = path.read_text()
        return "port 8123", [ToolCall(name="list_files"), ToolCall(name="read_file")]

    pipeline = fake_pipeline(answer, workspace_root=tmp_path)
    task = get_suite("post_learning").tasks[0]
    reply = InProcessRunner(pipeline).ask(task, session_id="eval-x-0001", timeout_s=5)
    assert "port: 8123" in seen["text"]
    assert reply.tool_calls_visible and [c.name for c in reply.tool_calls] == [
        "list_files",
        "read_file",
    ]
    assert task.scorer(reply, None).passed  # type: ignore[arg-type]


# -- the HTTP runner ---------------------------------------------------------------


@contextmanager
def nightschool_stub(
    reply: Callable[[dict[str, Any], dict[str, str]], tuple[int, dict[str, Any]]],
) -> Iterator[str]:
    """A loopback server answering /v1/chat/completions with `reply(body, headers)`."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": []})

        def do_PUT(self) -> None:  # seeding a session's workspace files
            files = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["files"]
            self._send(200, {"written": sorted(files)})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            code, answer = reply(body, dict(self.headers))
            self._send(code, answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def completion(text: str, extension: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "c1",
        "object": "chat.completion",
        "model": "served-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }
    if extension is not None:
        body["nightschool"] = extension
    return body


def test_http_runner_reads_the_extension_under_the_guard(store: Store) -> None:
    headers_seen: list[dict[str, str]] = []

    def reply(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        headers_seen.append(headers)
        ext = {
            "trajectory_id": "traj-1",
            "session_id": headers["X-Nightschool-Session"],
            "lessons_shown": [],
            "tool_calls": [{"name": "list_files", "error": None}, {"name": "read_file"}],
            "correction": None,
        }
        return 200, completion("The port is 8123.", ext)

    with nightschool_stub(reply) as url:
        runner = HttpRunner(url, "secret", "m", 10)
        result = run_eval(get_suite("post_learning"), runner, store, None, limit=2)  # type: ignore[arg-type]
        runner.close()
    assert result.runner == "http" and result.model == "served-model"
    assert result.results[0].passed and result.results[0].trajectory_id == "traj-1"
    assert result.results[0].tokens_in == 12
    assert headers_seen[0]["Authorization"] == "Bearer secret"
    assert headers_seen[0]["X-Nightschool-Session"] != headers_seen[1]["X-Nightschool-Session"]


def test_http_runner_without_extension_uses_keywords(store: Store) -> None:
    with nightschool_stub(lambda b, h: (200, completion("It is 8123.", None))) as url:
        reply = HttpRunner(url).ask(
            get_suite("post_learning").tasks[0], session_id="s", timeout_s=5
        )
    assert not reply.tool_calls_visible
    assert not get_suite("post_learning").tasks[0].scorer(reply, None).passed  # type: ignore[arg-type]


def test_http_runner_5xx_is_infrastructure_and_401_is_misuse() -> None:
    task = get_suite("post_learning").tasks[0]
    with (
        nightschool_stub(lambda b, h: (503, {"error": "model down"})) as url,
        pytest.raises(ModelUnavailableError),
    ):
        HttpRunner(url).ask(task, session_id="s", timeout_s=5)
    with (
        nightschool_stub(lambda b, h: (401, {"error": "bad key"})) as url,
        pytest.raises(UserError, match="API key"),
    ):
        HttpRunner(url).ask(task, session_id="s", timeout_s=5)


def test_http_runner_timeout_and_unreachable_server(store: Store) -> None:
    def slow(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        threading.Event().wait(2)
        return 200, completion("late", None)

    with nightschool_stub(slow) as url:
        result = run_eval(
            get_suite("post_learning"),
            HttpRunner(url),
            store,
            None,  # type: ignore[arg-type]
            limit=1,
            timeout_s=0.5,
        )
    assert result.results[0].error == "timeout"
    with pytest.raises(ModelUnavailableError, match="unreachable"):
        run_eval(get_suite("post_learning"), HttpRunner("http://127.0.0.1:9"), store, None)  # type: ignore[arg-type]


def test_http_runner_refuses_a_non_loopback_server() -> None:
    with pytest.raises(UserError, match="loopback"):
        HttpRunner("http://example.com:8000")


def test_real_pipeline_reads_the_placed_files(
    store: Store, sandbox: Sandbox, tmp_path: Path
) -> None:
    """Real ChatPipeline + sandbox tools, scripted model: discovery, then reading, then answer."""
    from nightschool.agent import AgentConfig, ChatPipeline
    from nightschool.llm import ScriptedModel

    def script(messages: Any) -> str:
        turn = [m for m in messages if m["role"] != "system"]
        if len(turn) == 1:
            return '```tool\n{"name": "list_files", "arguments": {"path": "."}}\n```'
        if len(turn) == 3:
            assert "deploy/config.yaml" in turn[-1]["content"], turn[-1]["content"]
            return (
                '```tool\n{"name": "read_file", "arguments": {"path": "deploy/config.yaml"}}\n```'
            )
        port = "8123" if "8123" in turn[-1]["content"] else "unknown"
        return f"The server port is {port}."

    root = tmp_path / "ws"
    root.mkdir(mode=0o711)
    pipeline = ChatPipeline(
        model=ScriptedModel(script),
        store=store,
        sandbox=sandbox,
        memory=None,
        reflector=None,
        workspace_root=root,
        config=AgentConfig(verify=False, reflect_on_correction=False),
    )
    try:
        result = run_eval(
            get_suite("post_learning"), InProcessRunner(pipeline), store, sandbox, limit=1
        )
    finally:
        pipeline.close()
    [task] = result.results
    assert task.passed and task.score == 1.0, task
    trajectory = store.get_trajectory(task.trajectory_id or "")
    assert trajectory is not None and trajectory.task_kind == "eval"
    assert [c.name for c in trajectory.tool_calls] == ["list_files", "read_file"]
