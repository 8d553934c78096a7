"""Runners: send one task's prompt to the agent and return its `AgentReply`.

`InProcessRunner` calls `ChatPipeline.handle` in this process (fresh session per
task, `task_kind="eval"`); `HttpRunner` posts to a running `nightschool serve`
over loopback and reads the `nightschool` response extension (tool calls,
trajectory id). Both raise `TaskTimeout` when the agent does not answer in
time, and let infrastructure faults (`InfrastructureError`) through: the
harness aborts the run on those instead of scoring them as failures.
`StubRunner` answers every task with its own prompt (no model, no agent):
the spec's (seed 002) runner that "echoes prompts and makes non-regression
tasks fail", so CI can exercise suite, scoring, storage, freeze and compare
without a live upstream.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import quote, urlsplit

import httpx

from nightschool.errors import ModelResponseError, ModelUnavailableError, UserError
from nightschool.evals._model import AgentReply, Task, ToolCallView
from nightschool.privacy import is_loopback

if TYPE_CHECKING:
    from nightschool.llm import Message


class TaskTimeout(Exception):
    """The agent did not answer within the per-task limit.

    Attributes:
        timeout_s: the limit that passed, seconds.
    """

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"no answer within {timeout_s:g} s")
        self.timeout_s = timeout_s


@runtime_checkable
class Runner(Protocol):
    """Sends prompts to the agent under test.

    Contract:
        - `ask` starts a fresh conversation (its own `session_id`) per task.
        - `ask` raises `TaskTimeout` when no reply came within `timeout_s`
          seconds, and `InfrastructureError` when the agent's model or sandbox,
          or the server itself, is unusable; any other reply is data.
    """

    name: str
    """`inprocess`, `http` or `stub`."""

    @property
    def model_name(self) -> str:
        """The model the agent answers with (as far as the runner knows)."""
        ...

    def check(self) -> None:
        """Preflight; raises `InfrastructureError` or `UserError` when unusable."""
        ...

    def ask(self, task: Task, *, session_id: str, timeout_s: float) -> AgentReply:
        """Send `task.prompt` as a new conversation and return the reply."""
        ...

    def close(self) -> None:
        """Release what the runner holds."""
        ...


@runtime_checkable
class Pipeline(Protocol):
    """The part of `nightschool.agent.ChatPipeline` the in-process runner uses."""

    def handle(
        self, messages: Sequence[Message], *, session_id: str, task_kind: str = "chat"
    ) -> Any:
        """Run one turn; returns a `TurnResult`."""
        ...


def write_workspace_files(root: Path, files: Mapping[str, str]) -> None:
    """Write `files` (relative path -> text) under `root`, refusing paths that escape it.

    Raises:
        ValueError: a path is absolute or climbs out of `root`.
    """
    base = root.resolve()
    for name, text in files.items():
        target = (base / name).resolve()
        if base not in target.parents:
            raise ValueError(f"workspace file escapes the workspace: {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _turn_to_reply(turn: Any) -> AgentReply:
    calls = tuple(
        ToolCallView(name=call.name, error=call.error, arguments=dict(call.arguments))
        for call in getattr(turn, "tool_calls", ())
    )
    trajectory = getattr(turn, "trajectory", None)
    return AgentReply(
        text=str(turn.reply),
        tool_calls=calls,
        tool_calls_visible=True,
        tokens_in=int(getattr(turn, "tokens_in", 0)),
        tokens_out=int(getattr(turn, "tokens_out", 0)),
        trajectory_id=getattr(trajectory, "id", None),
        model=str(getattr(trajectory, "model", "") or ""),
        lessons_shown=tuple(getattr(turn, "lessons_shown", ())),
    )


class InProcessRunner:
    """Runs tasks through a `ChatPipeline` in this process.

    Each task's turn runs in a daemon worker thread; the runner waits at most
    `timeout_s` for it and then raises `TaskTimeout`, leaving the thread to
    finish on its own (Python cannot kill a thread). Before the next task it
    waits up to `drain_s` for such a straggler, so the next task's clock does
    not include a model still busy with the previous one (the embedded model
    serves one call at a time).

    Args:
        pipeline: a `ChatPipeline` (or anything with its `handle`).
        model_name: the model name to record for the run.
        workspace_root: where session workspaces live when the pipeline has no
            `workspace_root` attribute (a `ChatPipeline`'s own, possibly
            relocated, root always wins); a task's `workspace_files` are
            written to `root / session_dir_name(session_id)`, as the pipeline
            names it, before the prompt.
        drain_s: longest wait for a timed-out turn before the next task, seconds.
    """

    name = "inprocess"

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        model_name: str = "",
        workspace_root: Path | None = None,
        drain_s: float = 120.0,
    ) -> None:
        self.pipeline = pipeline
        self._model_name = model_name
        found = getattr(pipeline, "workspace_root", None)
        self.workspace_root = Path(found) if found is not None else workspace_root
        self.drain_s = drain_s
        self._straggler: threading.Thread | None = None

    @property
    def model_name(self) -> str:
        """The model name given at construction."""
        return self._model_name

    def check(self) -> None:
        """Nothing to check beyond what building the pipeline checked."""

    def _workspace(self, session_id: str) -> Path | None:
        if self.workspace_root is None:
            return None
        # function-local: start-up time (the agent package, ~50 modules, ~200 ms beyond evals)
        from nightschool.agent import session_dir_name

        return self.workspace_root / session_dir_name(session_id)

    def ask(self, task: Task, *, session_id: str, timeout_s: float) -> AgentReply:
        """Run one turn for `task` in a fresh session (see the class docstring).

        Raises:
            TaskTimeout: no reply within `timeout_s` seconds.
            UserError: the task has workspace files but the workspace is unknown.
            Exception: whatever `handle` raised (infrastructure faults included).
        """
        if self._straggler is not None:
            self._straggler.join(self.drain_s)
            self._straggler = None
        if task.workspace_files:
            workspace = self._workspace(session_id)
            if workspace is None:
                raise UserError("the in-process runner needs workspace_root for this suite")
            write_workspace_files(workspace, task.workspace_files)
        box: dict[str, Any] = {}
        done = threading.Event()
        messages: list[Message] = [{"role": "user", "content": task.prompt}]

        def work() -> None:
            try:
                box["turn"] = self.pipeline.handle(
                    messages, session_id=session_id, task_kind="eval"
                )
            except BaseException as exc:  # handed to the waiting thread
                box["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=work, name=f"eval-{task.id}", daemon=True)
        worker.start()
        if not done.wait(timeout_s):
            self._straggler = worker
            raise TaskTimeout(timeout_s)
        if "error" in box:
            raise box["error"]
        return _turn_to_reply(box["turn"])

    def close(self) -> None:
        """Wait (up to `drain_s`) for a straggling turn."""
        if self._straggler is not None:
            self._straggler.join(self.drain_s)
            self._straggler = None


def chat_url(base_url: str) -> str:
    """`.../v1/chat/completions` for a server root given with or without `/v1`."""
    root = base_url.rstrip("/")
    if root.endswith("/chat/completions"):
        return root
    if not root.endswith("/v1"):
        root += "/v1"
    return root + "/chat/completions"


def _raise_for_refusal_or_outage(response: Any) -> None:
    """Raise for a refused API key (UserError) or a 5xx (ModelUnavailableError); else return."""
    status = int(response.status_code)
    if status in (401, 403):
        raise UserError(f"the nightschool server refused the API key (HTTP {status})")
    if status >= 500:
        raise ModelUnavailableError(
            f"the nightschool server failed (HTTP {status}): {response.text[:300]}",
            status_code=status,
        )


class HttpRunner:
    """Runs tasks against a running `nightschool serve` over loopback HTTP.

    Sends `POST /v1/chat/completions` with the task prompt as the only user
    message, the session id in `X-Nightschool-Session` (a fresh one per task),
    `X-Nightschool-Task-Kind: eval` (so a server that honours it records the
    turn as an eval, not a chat to learn from) and `Authorization: Bearer
    <api_key>`. Tool calls and the trajectory id
    come from the response's `nightschool` extension; without it (a plain
    OpenAI-compatible server) tool calls are marked not visible.

    Args:
        base_url: server root, e.g. `http://127.0.0.1:8000` (with or without `/v1`);
            must be a loopback address (evals are local-only).
        api_key: the server's `NIGHTSCHOOL_API_KEY`, or None.
        model: model name sent in requests (the server may answer with its own).
        timeout_s: default per-request limit, seconds.
        workspace_root: the server's workspace root when it runs on this
            machine and writes are wanted there directly; None (the default)
            places a task's workspace files through the server's admin API
            (`PUT /admin/sessions/{id}/files`).

    Raises:
        UserError: `base_url` is not an http(s) URL on a loopback host.
    """

    name = "http"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        model: str = "nightschool",
        timeout_s: float = 300.0,
        *,
        workspace_root: Path | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UserError(f"--server {base_url!r} is not an http(s) URL")
        if not is_loopback(parts.hostname):
            raise UserError(
                f"--server {base_url!r} is not on loopback; evals are local-only",
                hint="run `nightschool serve` on this machine and use http://127.0.0.1:PORT",
            )
        self.url = chat_url(base_url)
        self.model = model
        self.timeout_s = timeout_s
        self.workspace_root = workspace_root
        self._served_model = ""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, timeout=timeout_s)

    @property
    def model_name(self) -> str:
        """The model the server reported in its last answer, else the configured one."""
        return self._served_model or self.model

    def check(self) -> None:
        """GET `/v1/models`; raises `ModelUnavailableError` if the server is unreachable.

        The model the server's agent really runs on is taken from the `nightschool`
        extension's `model` field when the server sends one (else the completion's
        `model`, which `nightschool serve` reports as `nightschool`).
        """
        self._check()

    def _place_files(self, session_id: str, files: Mapping[str, str], timeout_s: float) -> None:
        """Seed the session's workspace on the server (`PUT /admin/sessions/{id}/files`)."""
        root = self.url.removesuffix("/chat/completions").removesuffix("/v1")
        url = f"{root}/admin/sessions/{quote(session_id, safe='')}/files"
        try:
            response = self._client.put(url, json={"files": dict(files)}, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise ModelUnavailableError(
                f"the nightschool server at {url} is unreachable: {exc}"
            ) from exc
        status = int(response.status_code)
        if status == 404:
            raise UserError(
                "the nightschool server cannot place this suite's workspace files",
                hint="use a nightschool server of this version, or --runner inprocess",
            )
        _raise_for_refusal_or_outage(response)
        if status >= 400:
            raise UserError(f"the server refused the task's files (HTTP {status}): {response.text}")

    def _check(self) -> None:
        url = self.url.removesuffix("/chat/completions") + "/models"
        try:
            response = self._client.get(url, timeout=min(self.timeout_s, 30.0))
        except httpx.HTTPError as exc:
            raise ModelUnavailableError(
                f"the nightschool server at {url} is unreachable: {exc}",
                hint="start it with `nightschool serve`",
            ) from exc
        if response.status_code in (401, 403):
            raise UserError(
                f"the nightschool server refused the API key (HTTP {response.status_code})",
                hint="pass --api-key or set NIGHTSCHOOL_API_KEY",
            )

    def ask(self, task: Task, *, session_id: str, timeout_s: float) -> AgentReply:
        """Post one task as a new session and parse the answer.

        Raises:
            TaskTimeout: the server did not answer within `timeout_s` seconds.
            ModelUnavailableError: the server is unreachable or answered 5xx.
            ModelResponseError: the server answered 4xx (other than auth) or bad JSON.
            UserError: the server refused the API key.
        """
        if task.workspace_files:
            if self.workspace_root is not None:
                from nightschool.agent import session_dir_name  # function-local: start-up time

                write_workspace_files(
                    self.workspace_root / session_dir_name(session_id), task.workspace_files
                )
            else:
                self._place_files(session_id, task.workspace_files, timeout_s)
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": task.prompt}],
            "user": session_id,
        }
        try:
            response = self._client.post(
                self.url,
                json=body,
                headers={"X-Nightschool-Session": session_id, "X-Nightschool-Task-Kind": "eval"},
                timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            )
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                raise ModelUnavailableError(f"cannot connect to {self.url}: {exc}") from exc
            raise TaskTimeout(timeout_s) from exc
        except httpx.HTTPError as exc:
            raise ModelUnavailableError(
                f"the nightschool server at {self.url} is unreachable: {exc}"
            ) from exc
        return self._parse(response)

    def _parse(self, response: Any) -> AgentReply:
        status = int(response.status_code)
        _raise_for_refusal_or_outage(response)
        if status >= 400:
            raise ModelResponseError(
                f"the nightschool server answered HTTP {status}: {response.text[:300]}"
            )
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelResponseError(f"not a chat completion: {response.text[:300]}") from exc
        usage = data.get("usage") or {}
        extension = data.get("nightschool")
        backend = extension.get("model") if isinstance(extension, dict) else None
        self._served_model = str(backend or data.get("model") or self._served_model)
        calls: tuple[ToolCallView, ...] = ()
        trajectory_id = None
        lessons: tuple[str, ...] = ()
        if isinstance(extension, dict):
            calls = tuple(
                ToolCallView(
                    name=str(call.get("name", "")),
                    error=call.get("error"),
                    arguments=call.get("arguments") or {},
                )
                for call in extension.get("tool_calls") or ()
                if isinstance(call, dict)
            )
            trajectory_id = extension.get("trajectory_id")
            lessons = tuple(str(x) for x in extension.get("lessons_shown") or ())
        return AgentReply(
            text=str(text),
            tool_calls=calls,
            tool_calls_visible=isinstance(extension, dict),
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
            trajectory_id=trajectory_id,
            model=self._served_model,
            lessons_shown=lessons,
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()


class StubRunner:
    """Echoes each task's prompt back as the reply: no model, no agent, no tool calls.

    The reply is `AgentReply(text=task.prompt, tool_calls=(), tool_calls_visible=True,
    tokens 0, model "stub")`. Tool calls are visible (and there are none), so a
    scorer judging tool use (`post_learning`) fails the task instead of falling
    back to keywords that the prompt itself might contain. A prompt that holds a
    fenced code block (a starter-tier regression skeleton, a CSV sample) is
    judged as that code; workspace files are not written (nothing reads them).
    The run is recorded with runner `stub` and model `stub`, so a stub baseline
    never pairs with a real model's run (`check_compatible` refuses the model).
    """

    name = "stub"

    @property
    def model_name(self) -> str:
        """Always `stub`."""
        return "stub"

    def check(self) -> None:
        """Nothing to check."""

    def ask(self, task: Task, *, session_id: str, timeout_s: float) -> AgentReply:
        """Return `task.prompt` as the reply text (`session_id` and `timeout_s` unused)."""
        return AgentReply(text=task.prompt, tool_calls_visible=True, model=self.model_name)

    def close(self) -> None:
        """Nothing to release."""
