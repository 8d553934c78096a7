"""Shared fixtures: an isolated NIGHTSCHOOL_HOME and a fresh database per test."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests._postgres import fresh_database, postgres_server, server_bindir

from nightschool.challenges import Challenge
from nightschool.challenges._templates._kit import TemplateBase
from nightschool.store import Store

T = TypeVar("T")

Reply = Callable[[list[dict[str, Any]]], str]

NIGHTSCHOOL = Path(sys.executable).parent / "nightschool"
"""The `nightschool` console script of the running environment."""


def pytest_configure(config: pytest.Config) -> None:
    """Let the CLI subprocesses that tests interrupt see Ctrl-C.

    A shell that starts a job in the background (`cmd &`, `nohup`) without job
    control sets SIGINT to "ignore", and an ignored signal stays ignored across
    exec: Python then installs no KeyboardInterrupt handler and every
    `nightschool` child would shrug off the SIGINT a test sends (seen as a
    60-second "hang" in CI). A handler set here is reset to the default on exec.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the user's real data dir or model server from a test.

    The embedded model is the tiny `smollm2-135m` (98 MB, loaded in place) for
    the whole suite, CLI subprocesses included, so it stays fast; a test of the
    default model (`qwen2.5-coder-1.5b`) asks for it explicitly.
    """
    home = tmp_path / "home"
    monkeypatch.setenv("NIGHTSCHOOL_HOME", str(home))
    for name in ("NIGHTSCHOOL_BASE_URL", "NIGHTSCHOOL_MODEL_PATH", "NIGHTSCHOOL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NIGHTSCHOOL_MODEL", "smollm2-135m")
    return home


def poll_until(
    predicate: Callable[[], T | None],
    timeout_s: float,
    what: str,
    *,
    check: Callable[[], None] | None = None,
    poll_s: float = 0.02,
) -> T:
    """The first truthy value of `predicate()`, polled every `poll_s` s for `timeout_s` s.

    `check()` runs before each poll and may fail the wait early (a server that
    exited). Raises AssertionError naming `what` on timeout.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check is not None:
            check()
        if found := predicate():
            return found
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@pytest.fixture
def wait_until() -> Callable[..., Any]:
    """`wait_until(predicate, timeout_s, what)`: `poll_until`, for tests."""
    return poll_until


class ServeProcess:
    """`nightschool serve --port 0` in a subprocess; its output lines are collected.

    Args:
        home: NIGHTSCHOOL_HOME of the server.
        extra_env: more environment variables (NIGHTSCHOOL_MODEL stays the
            suite's small model; NIGHTSCHOOL_BASE_URL is removed).
        args: more `serve` options (e.g. `--no-idle`).
    """

    def __init__(self, home: Path, extra_env: dict[str, str], args: tuple[str, ...] = ()) -> None:
        env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), **extra_env}
        env.pop("NIGHTSCHOOL_BASE_URL", None)
        self.proc = subprocess.Popen(
            [str(NIGHTSCHOOL), "serve", "--port", "0", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)

    def base_url(self, timeout_s: float = 180.0) -> str:
        """Wait for the "listening on" line; return the announced base URL (.../v1)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            found = re.search(r"listening on (http://\S+/v1)", line)
            if found:
                return found.group(1)
        raise AssertionError("serve did not start:\n" + "".join(self.output))

    def wait_for(self, predicate: Callable[[], T | None], timeout_s: float, what: str) -> T:
        """`poll_until` that fails at once, with the server's last output, if it exits."""

        def alive() -> None:
            assert self.proc.poll() is None, "serve exited"

        try:
            return poll_until(predicate, timeout_s, what, check=alive, poll_s=0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}:\n" + "".join(self.output[-40:])) from None

    def stop(self, timeout_s: float = 90.0) -> int:
        """Ctrl-C the server and return its exit code; kill it and fail after `timeout_s`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("serve ignored Ctrl-C:\n" + "".join(self.output[-40:])) from None


@pytest.fixture
def serve_process() -> type[ServeProcess]:
    """`serve_process(home, extra_env, args=())` starts `nightschool serve --port 0 *args`."""
    return ServeProcess


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the end-to-end tests first (stable order otherwise).

    They are the suite's longest (the model's minutes); started first, the two
    workers of `-n 2` fill in with the short tests around them instead of one
    worker finishing a long test alone at the end (longest first). Not measured
    apart: the suite went from 1,880-2,062 s to 1,752 s with this and the
    lighter tests of the same change, and two model tests now often run side by
    side, each slower. Every worker sorts the same collection the same way.
    """
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)


STORE_BACKENDS = ("sqlite", "postgres")
"""Every test that takes the `store` fixture runs once per backend."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each test that takes `store` on SQLite and on a real Postgres server.

    A test marked `store_backends(name, ...)` runs on those only: the long
    integration tests whose time goes to the model or the sandbox, not to the
    store (what they store is the store tests' subject, on both backends);
    they are spread over the two so that each backend still sees each path.
    """
    if "store" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("store_backends")
        backends = marker.args if marker is not None else STORE_BACKENDS
        unknown = set(backends) - set(STORE_BACKENDS)
        if unknown or not backends:
            raise pytest.UsageError(f"store_backends takes some of {STORE_BACKENDS}: {backends}")
        metafunc.parametrize("store", backends, indirect=True)


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[tuple[str, str]]:
    """A throw-away Postgres server for the session and a migrated template database.

    Yields (admin URL, template database name). Skips when the server binaries
    are absent, unless NIGHTSCHOOL_REQUIRE_POSTGRES=1 (set by `.ci/run`, which
    installs them), where their absence fails instead.
    """
    if server_bindir() is None:
        reason = "PostgreSQL server binaries absent (Debian package `postgresql`)"
        if os.environ.get("NIGHTSCHOOL_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason + "; NIGHTSCHOOL_REQUIRE_POSTGRES=1 forbids skipping")
        pytest.skip(reason)
    with postgres_server() as admin_url:
        template = fresh_database(admin_url, "nightschool_template")
        Store.open_url(template).close()
        yield admin_url, "nightschool_template"


_databases = iter(range(1, 1_000_000))


@pytest.fixture
def postgres_url(postgres_template: tuple[str, str]) -> str:
    """A fresh, migrated Postgres database (a copy of the session's template)."""
    admin_url, template = postgres_template
    return fresh_database(admin_url, f"test_{next(_databases)}", template=template)


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store: SQLite in `tmp_path`, or a fresh database on the test Postgres server."""
    backend = getattr(request, "param", "sqlite")
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        with Store.open_url(url, home=tmp_path) as opened:
            yield opened
        return
    with Store.open(tmp_path / "test.db") as opened:
        yield opened


@contextmanager
def _serve(reply: Reply, *, delay_s: float = 0.0) -> Iterator[str]:
    """Run a real OpenAI-compatible HTTP server on loopback; yield its base URL (.../v1).

    Answers `/v1/models` and `/v1/chat/completions` with `reply(messages)`, after
    `delay_s`. The real httpx client talks to it over a real socket.
    """
    requests: list[dict[str, Any]] = []

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
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            requests.append(body)
            if delay_s:
                time.sleep(delay_s)
            text = reply(body["messages"])
            self._send(
                200,
                {
                    "id": "cmpl-stub",
                    "object": "chat.completion",
                    "model": body.get("model", "stub"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                },
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def openai_stub() -> Callable[..., AbstractContextManager[str]]:
    """`with openai_stub(reply, delay_s=0) as base_url:` runs a loopback chat server."""
    return _serve


def _signal_state(pid: int) -> str:
    """Signal masks of every thread of `pid`: pending, shared pending, blocked, ignored, caught."""
    lines = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task")):
        with open(f"/proc/{pid}/task/{tid}/status", encoding="utf-8") as status:
            keep = ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
            fields = [line.split()[1] for line in status if line.startswith(keep)]
        lines.append(f"thread {tid}: {' '.join(fields)}")
    return "; ".join(lines)


def _interrupt(proc: subprocess.Popen[str], timeout_s: float = 40.0) -> str:
    """Ctrl-C a CLI subprocess once; return its stderr once it has exited.

    One SIGINT must be enough. A command still running after `timeout_s` fails
    the test with every thread's signal masks and Python stacks (SIGABRT with
    PYTHONFAULTHANDLER=1 in the child's environment). History: a Ctrl-C that
    landed in a Python at-fork callback (subprocess with a `preexec_fn`) was
    swallowed as "Exception ignored"; the sandbox no longer forks that way.
    """
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=timeout_s)[1]
    except subprocess.TimeoutExpired:
        state = _signal_state(proc.pid)
        proc.send_signal(signal.SIGABRT)
        stderr = proc.communicate(timeout=30)[1]
        pytest.fail(f"the command ignored SIGINT ({state}):\n{stderr[-6000:]}")


@pytest.fixture
def interrupt() -> Callable[..., str]:
    """`stderr = interrupt(proc)`: SIGINT a CLI subprocess and wait for it to exit."""
    return _interrupt


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> dict[str, Challenge]:
    """Every challenge rendered in the test, by prompt (what the scripted model sees)."""
    seen: dict[str, Challenge] = {}
    original = TemplateBase.render

    def spy(self: TemplateBase, tier: str, seed: int) -> Challenge:
        challenge = original(self, tier, seed)
        seen[challenge.prompt] = challenge
        return challenge

    monkeypatch.setattr(TemplateBase, "render", spy)
    return seen
