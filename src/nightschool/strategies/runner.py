"""Run a strategy inside the sandbox; serve its harness calls from the parent.

A small runner process starts under bubblewrap (`Sandbox.popen_in`: same argv
and rlimits as every sandboxed run: no network, read-only system, a private
workspace holding only `strategy.py` and `runner.py`). It imports the strategy
and talks to the parent over stdin/stdout, one JSON object per line:

    parent -> child  {"task": {...}}                       (once)
    child  -> parent {"op": "sample", "args": {...}}       (any number)
    parent -> child  {"result": ...} | {"error": "...", "kind": "budget"|"call"}
    child  -> parent {"op": "done", "code": "..."} | {"op": "fail", "error": "..."}

Model calls happen in the parent (the child has no network); the child only
ever sees what the harness API returns. Whatever the strategy prints goes to
stderr, so it cannot forge protocol lines.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

from nightschool.errors import SandboxFaultError
from nightschool.sandbox import Sandbox, is_setup_fault, kill_process_group, python_argv
from nightschool.strategies.harness import BudgetExhausted, Harness

__all__ = ["RUNNER_SOURCE", "PlayResult", "play_strategy"]

STEP_TIMEOUT_S = 30.0
"""Most wall-clock seconds the strategy may compute between two harness calls."""

MAX_MESSAGES = 500
"""Most protocol messages one play may send (bounds `while True: harness.budget_left`)."""

MAX_LINE_BYTES = 1 << 20
"""Longest protocol line the parent reads from the runner, bytes (1 MiB; a
request within the harness's text limits is a few tens of KiB). Longer lines
end the play as a protocol error instead of growing the parent's memory."""

RUNNER_SOURCE = r'''
import importlib.util, json, sys, traceback
_out = sys.stdout
sys.stdout = sys.stderr

def _send(obj):
    _out.write(json.dumps(obj) + "\n")
    _out.flush()

def _recv():
    line = sys.stdin.readline()
    if not line:
        raise SystemExit(3)
    return json.loads(line)

class BudgetExhausted(Exception):
    """No model calls (or test runs) left."""

class HarnessCallError(Exception):
    """The harness refused a call."""

def _call(op, **args):
    _send({"op": op, "args": args})
    reply = _recv()
    if "error" in reply:
        if reply.get("kind") == "budget":
            raise BudgetExhausted(reply["error"])
        raise HarnessCallError(reply["error"])
    return reply["result"]

class Harness:
    __slots__ = ()
    def sample(self, prompt_extra="", temperature=None, persona=""):
        return _call("sample", prompt_extra=str(prompt_extra), temperature=temperature,
                     persona=str(persona))
    def refine(self, code, feedback, persona=""):
        return _call("refine", code=str(code), feedback=str(feedback), persona=str(persona))
    def critique(self, code, persona=""):
        return _call("critique", code=str(code), persona=str(persona))
    def run_tests(self, code):
        return _call("run_tests", code=str(code))
    @property
    def budget_left(self):
        return _call("budget_left")

def main():
    start = _recv()
    try:
        spec = importlib.util.spec_from_file_location("strategy", "strategy.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        code = module.solve(dict(start["task"]), Harness())
    except BaseException as exc:
        if isinstance(exc, SystemExit) and exc.code == 3:
            raise
        tail = traceback.format_exc()[-1200:]
        _send({"op": "fail", "error": tail, "budget": isinstance(exc, BudgetExhausted)})
        return
    if not isinstance(code, str):
        _send({"op": "fail", "error": "solve returned %s, not str" % type(code).__name__})
        return
    _send({"op": "done", "code": code})

main()
'''
"""The runner process's source (runs with the sandbox's system Python)."""


@dataclass(frozen=True)
class PlayResult:
    """What one strategy produced on one task.

    Attributes:
        code: the final code the strategy returned ("" if none).
        status: `ok` (returned code), `error` (raised or returned a non-str),
            `budget` (died of an uncaught over-budget call), `timeout` (computed
            too long between calls, or too many messages), `crash` (the runner
            process ended without an answer).
        detail: traceback tail or reason ("" when ok).
        duration_s: wall-clock seconds of the play.
    """

    code: str
    status: str
    detail: str
    duration_s: float


def _utf8(value: Any) -> Any:
    """`value` with lone surrogates (valid in JSON, not in UTF-8) replaced by `?`, recursively.

    A strategy can return or pass `chr(0xD800)`; left in, it would make the
    parent's own file writes and model calls raise `UnicodeEncodeError`,
    crashing the run instead of failing that strategy.
    """
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_utf8(item) for item in value]
    if isinstance(value, dict):
        return {_utf8(key): _utf8(item) for key, item in value.items()}
    return value


def _reader(stream: IO[bytes], lines: queue.Queue[bytes | None], limit: int) -> None:
    # Reads at most `limit + 1` bytes per line; an over-long line is passed on
    # (the consumer refuses it) and reading stops, so memory stays bounded.
    while line := stream.readline(limit + 1):
        lines.put(line)
        if len(line) > limit:
            break
    lines.put(None)


def play_strategy(
    sandbox: Sandbox,
    source: str,
    harness: Harness,
    task: dict[str, str],
    *,
    step_timeout_s: float = STEP_TIMEOUT_S,
) -> PlayResult:
    """Run `source`'s `solve(task, harness)` in the sandbox, serving `harness` calls.

    Args:
        sandbox: where the runner process runs.
        source: the strategy module (should pass `lint_strategy` first).
        harness: meters and serves the calls; its `calls` record the spend.
        task: the task dict given to `solve` (see `task_view`).
        step_timeout_s: most seconds of strategy compute between two calls.

    Returns:
        `PlayResult`; a strategy that crashes, loops or overspends is a result.

    Raises:
        InfrastructureError: a model call or the sandbox failed (not the strategy's
            fault; the caller must not score this play).
        SandboxFaultError: the runner could not start in the sandbox.
    """
    start = time.perf_counter()
    with sandbox.workspace() as ws, tempfile.TemporaryFile() as err:
        ws.write_file("strategy.py", source)
        ws.write_file("runner.py", RUNNER_SOURCE)
        proc = sandbox.popen_in(ws.path, python_argv("runner.py"), stderr=err)
        assert proc.stdin is not None and proc.stdout is not None
        lines: queue.Queue[bytes | None] = queue.Queue()
        thread = threading.Thread(
            target=_reader, args=(proc.stdout, lines, MAX_LINE_BYTES), daemon=True
        )
        thread.start()

        def send(obj: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(obj) + "\n").encode("utf-8"))
            proc.stdin.flush()

        def finish(code: str, status: str, detail: str) -> PlayResult:
            return PlayResult(code, status, detail, round(time.perf_counter() - start, 4))

        try:
            with contextlib.suppress(BrokenPipeError):
                send({"task": task})
            for _ in range(MAX_MESSAGES):
                try:
                    raw = lines.get(timeout=step_timeout_s)
                except queue.Empty:
                    return finish("", "timeout", f"no harness call for {step_timeout_s:g} s")
                if raw is None:
                    try:
                        proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        return finish("", "crash", "the runner closed its output but kept running")
                    err.seek(0)
                    tail = err.read()[-1500:].decode("utf-8", errors="replace")
                    if is_setup_fault(proc.returncode, tail):
                        raise SandboxFaultError(f"bubblewrap failed: {tail[:500]}")
                    return finish("", "crash", f"exit {proc.returncode}: {tail}".strip())
                if len(raw) > MAX_LINE_BYTES:
                    return finish("", "error", f"protocol line over {MAX_LINE_BYTES} bytes")
                try:
                    message = _utf8(json.loads(raw))
                    op = str(message["op"])
                except (ValueError, KeyError, TypeError):
                    return finish("", "error", f"bad protocol line: {raw[:200]!r}")
                if op == "done":
                    return finish(str(message.get("code", "")), "ok", "")
                if op == "fail":
                    status = "budget" if message.get("budget") else "error"
                    return finish("", status, str(message.get("error", ""))[-1200:])
                try:
                    reply: dict[str, Any] = {
                        "result": harness.dispatch(op, message.get("args", {}))
                    }
                except BudgetExhausted as exc:
                    reply = {"error": str(exc), "kind": "budget"}
                except (ValueError, TypeError, AttributeError) as exc:
                    reply = {"error": str(exc), "kind": "call"}
                try:
                    send(reply)
                except BrokenPipeError:
                    continue
            return finish("", "timeout", f"more than {MAX_MESSAGES} harness messages")
        finally:
            kill_process_group(proc)
            proc.wait()
            thread.join(timeout=5)
