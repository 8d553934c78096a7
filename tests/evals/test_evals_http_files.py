"""The HTTP runner seeds a task's workspace files through the server's admin API.

Real parts: the FastAPI app served by uvicorn, a real `ChatPipeline` (bubblewrap
sandbox, SQLite store) and the runner's httpx client; only the model is scripted.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from nightschool.agent import ChatPipeline
from nightschool.errors import UserError
from nightschool.evals import HttpRunner, get_suite
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.server import create_app, serve_in_thread
from nightschool.store import Store

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def _list_then_read_then_answer(messages: Sequence[Message]) -> str:
    """Discover first: list files, read the first listed file, then answer with its text."""
    tool_results = [m["content"] for m in messages if m["role"] == "user"][1:]
    if not tool_results:
        return '```tool\n{"name": "list_files", "arguments": {"path": "."}}\n```'
    if len(tool_results) == 1:
        listed = [w for w in tool_results[0].split() if "." in w and "/" in w]
        path = listed[0] if listed else "missing.txt"
        return json.dumps({"name": "read_file", "arguments": {"path": path}})
    return "From the workspace: " + tool_results[-1][-400:]


def test_http_runner_places_files_the_agent_then_finds(store: Store, tmp_path: Path) -> None:
    pipeline = ChatPipeline(
        model=ScriptedModel(_list_then_read_then_answer),
        store=store,
        sandbox=Sandbox(),
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "workspaces",
    )
    app = create_app(pipeline, store=store, memory=None, api_key="k", model_name="ns")
    task = get_suite("post_learning").tasks[0]
    try:
        with serve_in_thread(app) as root:
            runner = HttpRunner(root, api_key="k", timeout_s=60)
            reply = runner.ask(task, session_id="eval-files-1", timeout_s=60)
    finally:
        pipeline.close()
    names = [call.name for call in reply.tool_calls]
    assert names[:2] == ["list_files", "read_file"]
    assert task.meta["expected"].lower() in reply.text.lower()
    assert task.scorer(reply, Sandbox()).passed
    assert store.get_trajectory(str(reply.trajectory_id)).task_kind == "eval"  # type: ignore[union-attr]


def test_placed_paths_stay_inside_the_workspace(store: Store, tmp_path: Path) -> None:
    pipeline = ChatPipeline(
        model=ScriptedModel(["ok"]),
        store=store,
        sandbox=Sandbox(),
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "workspaces",
    )
    try:
        with pytest.raises(UserError, match="cannot place"):
            pipeline.place_files("s1", {"../escape.txt": "x"})
        assert pipeline.place_files("s1", {"notes/a.txt": "hello"}) == ["notes/a.txt"]
        app = create_app(pipeline, store=store, memory=None, api_key="k", model_name="ns")
        with serve_in_thread(app) as root:
            import httpx

            refused = httpx.put(
                f"{root}/admin/sessions/s2/files",
                json={"files": {"/etc/passwd": "x"}},
                headers={"Authorization": "Bearer k"},
            )
            unauthorised = httpx.put(f"{root}/admin/sessions/s2/files", json={"files": {}})
    finally:
        pipeline.close()
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_path"
    assert unauthorised.status_code == 401
    assert not (tmp_path / "escape.txt").exists()
