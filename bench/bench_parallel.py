"""Eval throughput (episodes/min): the local backend vs Ray with 1, 2, 4 workers.

Usage:
    .venv/bin/python bench/bench_parallel.py [--tasks 24] [--workers 1,2,4]
        [--model-delay 0.0] [--model qwen2.5-coder-0.5b]

What runs: `HumanEval/0 .. tasks-1` through the code paths of `nightschool
eval run`: `run_eval` with the in-process `ChatPipeline` for `local` (the
CLI's default), `run_eval_parallel` on a `RayBackend` for `ray` (what
`--backend ray --workers N` runs: one Ray task per episode, the driver writing
every result to SQLite in order). Each episode is a full agent turn: a real
sandboxed `run_python` tool call, the answer, then scoring in the sandbox.

Models:
    scripted (default): a loopback OpenAI-compatible server in this process
        that answers the canonical solution after one tool call, after
        `--model-delay` seconds per model call (0: the sandbox and the agent
        are all that costs; 2.0 imitates a model server answering in 2 s).
    --model NAME: an embedded catalog model (e.g. qwen2.5-coder-0.5b); each
        Ray worker loads its own copy.

Each Ray configuration starts its own local instance (`num_cpus = workers`,
startup reported, not timed) and runs one warm-up episode per worker first
(imports, model client), untimed; the table times the `--tasks` episodes that
follow. Scaling ratio = episodes/min over the local backend's.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from nightschool.agent import AgentConfig
from nightschool.config import Settings
from nightschool.evals import (
    RemoteAgent,
    get_suite,
    inprocess_runner,
    run_eval,
    run_eval_parallel,
)
from nightschool.evals._humaneval import load_problems
from nightschool.llm import check_model, make_model
from nightschool.parallel import RayBackend, SettingsResources
from nightschool.sandbox import Sandbox
from nightschool.store import Store

CONFIG = AgentConfig(temperature=0.0, verify=False, reflect_on_correction=False)
"""The Ray workers' agent settings: what `inprocess_runner` gives the local path."""


@contextmanager
def scripted_server(delay_s: float) -> Iterator[str]:
    """A loopback chat server: one `run_python` call, then the canonical solution."""
    problems = load_problems()
    tool = "```tool\n" + json.dumps({"name": "run_python", "arguments": {"code": "print(1)"}})
    tool += "\n```"

    def answer(messages: list[dict[str, Any]]) -> str:
        if not any(m["role"] == "assistant" for m in messages):
            return tool
        text = "\n".join(str(m.get("content") or "") for m in messages if m["role"] == "user")
        for problem in problems:
            if problem.prompt in text:
                return f"```python\n{problem.canonical_solution}```"
        return "no idea"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "stub", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            time.sleep(delay_s)
            message = {"role": "assistant", "content": answer(body["messages"])}
            self._send(
                {
                    "id": "stub",
                    "object": "chat.completion",
                    "model": "stub",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20},
                }
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def run_local(settings: Settings, store: Store, tasks: int) -> tuple[float, int]:
    """The CLI's default path: `run_eval` with the in-process pipeline. (seconds, passed)."""
    model = make_model(settings)
    check_model(model)
    sandbox = Sandbox()
    suite = get_suite("humaneval")
    with inprocess_runner(model, store, sandbox, workspace_parent=settings.home_dir()) as runner:
        run_eval(
            suite, runner, store, sandbox, task_ids=["HumanEval/163"], timeout_s=300
        )  # warm-up
        started = time.perf_counter()
        run = run_eval(suite, runner, store, sandbox, limit=tasks, timeout_s=300)
        elapsed = time.perf_counter() - started
    return elapsed, run.passed


def run_ray(settings: Settings, store: Store, tasks: int, workers: int) -> tuple[float, int, float]:
    """`--backend ray --workers N`: (seconds, passed, Ray startup seconds)."""
    started = time.perf_counter()
    backend = RayBackend(workers=workers)
    startup = time.perf_counter() - started
    try:
        agent = RemoteAgent(
            resources=SettingsResources(settings, Sandbox().config),
            config=CONFIG,
            suite="humaneval",
            seed=0,
            timeout_s=300,
            model_name=make_model(settings).name,
        )
        suite = get_suite("humaneval")
        warm = [f"HumanEval/{163 - k}" for k in range(workers)]
        run_eval_parallel(suite, agent, store, backend, task_ids=warm)
        started = time.perf_counter()
        run = run_eval_parallel(suite, agent, store, backend, limit=tasks)
        return time.perf_counter() - started, run.passed, startup
    finally:
        backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--model-delay", type=float, default=0.0)
    parser.add_argument("--model", default=None, help="an embedded catalog model instead")
    args = parser.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-parallel-home-") as scratch:
        home = Path(scratch)  # deleted afterwards: never left where bench loaders glob stores
        home.chmod(0o711)  # the sandbox (uid 65534) walks through it to the workspaces
        os.environ["NIGHTSCHOOL_HOME"] = str(home)
        _bench(args, counts, home)


def _bench(args: argparse.Namespace, counts: list[int], home: Path) -> None:
    rows: list[tuple[str, int, float, int, float | None]] = []
    server = scripted_server(args.model_delay) if args.model is None else None
    with server if server is not None else _nothing() as url:
        if url is not None:
            settings = Settings(base_url=url, model="stub", home=home)
            label = f"scripted (loopback server, {args.model_delay:g} s per model call)"
        else:
            settings = Settings(model=args.model, home=home, base_url=None)
            label = f"embedded {args.model}"
        with Store.open(home / "nightschool.db") as store:
            elapsed, passed = run_local(settings, store, args.tasks)
            rows.append(("local", 1, elapsed, passed, None))
            for workers in counts:
                elapsed, passed, startup = run_ray(settings, store, args.tasks, workers)
                rows.append(("ray", workers, elapsed, passed, startup))
    base = args.tasks / rows[0][2] * 60
    print(f"model: {label}; {args.tasks} HumanEval episodes each; {os.cpu_count()} CPUs")
    print(
        f"{'backend':<8} {'workers':>7} {'wall s':>8} {'passed':>7} {'ep/min':>8} {'ratio':>6}  ray start s"
    )
    for name, workers, elapsed, passed, startup in rows:
        rate = args.tasks / elapsed * 60
        start = "" if startup is None else f"{startup:.1f}"
        print(
            f"{name:<8} {workers:>7} {elapsed:>8.1f} {passed:>4}/{args.tasks:<2} {rate:>8.1f} "
            f"{rate / base:>6.2f}  {start}"
        )


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
