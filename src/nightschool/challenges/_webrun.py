"""Judging a web challenge: its validator runs in the sandbox, its browser runs on the host.

Why this shape (measured on the dev machine, Debian's Chromium 156): Chromium
cannot start inside the sandbox. It reserves a large address-space cage at
start-up and dies (SIGTRAP, exit 133) under the sandbox's RLIMIT_AS, at 1 GiB as
at 16 GiB, and the sandbox's system Python has no Playwright. So a web
challenge's solution is still a Python program (`solution.py`) that runs in
the sandbox with no network at all, written against Playwright's sync API
(`from playwright.sync_api import sync_playwright`); the `playwright` package
it imports is `_web_shim`, written into the workspace, which sends each call
(goto, click, fill, select, press, wait, read, screenshot) as one JSON line
over a pair of pipes to this module; here nightschool's browser tool
(`nightschool.browser.BrowserSession`: a real headless Chromium, loopback
only) runs it against the challenge's site and answers.

One evaluation:

1. the setup script runs in the sandbox and writes `SITE_FILE` (the pages);
2. the host reads and removes it (the solution cannot read the pages as
   files), serves the site on 127.0.0.1 (`_website.SiteServer`) and leases a
   browser session (`_WarmBrowsers`: Chromium kept started between
   evaluations, a fresh context for each);
3. the validation script runs in the sandbox (`Sandbox.popen_in`) through
   `BOOT`: its source comes over stdin, then stdin and stdout are the bridge;
   it starts the solution with `NS_PAGE_URL` (the site's start page) and the
   bridge's descriptors, waits for it, asks for the site's record (`record`:
   every request in order, posted fields included) and checks it, exiting 0
   on pass, printing its diagnostic to stderr.

Isolation: the solution never leaves the sandbox (no network namespace); the
only thing it can ask for is a browser action, which the browser tool's
loopback rules bound, and `goto` is further held to the site's own origin
(no other loopback service of the host). The whole validator run has the
sandbox's wall-clock limit (`SandboxConfig.timeout_s`), counted after the
browser has started.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import importlib.util
import json
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import IO, Any
from urllib.parse import urljoin, urlsplit

from nightschool.browser import (
    BrowserConfig,
    BrowserResult,
    BrowserSession,
    BrowserUnavailableError,
    Screenshot,
    find_chromium,
    read_call,
)
from nightschool.challenges._model import CLUSTERS
from nightschool.challenges._website import READY_PATH, SITE_FILE, Site, SiteServer, serving
from nightschool.errors import ChallengeFaultError, InfrastructureError, SandboxFaultError
from nightschool.sandbox import (
    SANDBOX_PYTHON,
    ExecResult,
    Sandbox,
    Workspace,
    is_setup_fault,
    kill_process_group,
)

WEB_CLUSTER = "web_automation"
"""The cluster whose challenges are judged here."""

WEB_BROWSER = BrowserConfig(
    action_timeout_s=4.0,
    navigation_timeout_s=8.0,
    sequence_timeout_s=12.0,
    hang_grace_s=5.0,
    max_text_chars=20_000,
    viewport_width=800,
    viewport_height=600,
    max_screenshot_bytes=200_000,
)
"""Browser limits of one evaluation: an action, a page load, one bridged call; reads
return up to 20,000 characters (a table page); the final screenshot is 800x600, at
most 200 kB (the pages here come to 15-40 kB)."""

MAX_MESSAGES = 600
"""Bridge requests one evaluation may make (a starter's 8 cases of ~10 calls each fit
many times over); past it every request is refused."""

MAX_LINE_BYTES = 1 << 20
"""Longest bridge request read, bytes."""

SETTLE_S = 0.4
"""Before answering `record`: how long the site must have been quiet (no request, no
browser call), so that a form the solution's last click posted is in the record."""

SETTLE_MAX_S = 3.0
"""Longest wait for the site to settle before `record` answers anyway."""

BOOT = r"""
import json, os, sys
head = b""
while not head.endswith(b"\n"):
    byte = os.read(0, 1)
    if not byte:
        sys.exit(3)
    head += byte
size, body = int(head), b""
while len(body) < size:
    chunk = os.read(0, size - len(body))
    if not chunk:
        sys.exit(3)
    body += chunk
bridge_in, bridge_out = os.dup(0), os.dup(1)
devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(devnull, 0)
os.close(devnull)
os.dup2(2, 1)
os.environ["NS_BRIDGE_FDS"] = "%d,%d" % (bridge_in, bridge_out)
sys.argv = ["-"]
exec(compile(body.decode("utf-8"), "<validator>", "exec"), {"__name__": "__main__"})
"""
"""The validator's entry point: reads its source (a length line, then UTF-8) from stdin,
keeps stdin and stdout as the bridge (`NS_BRIDGE_FDS`), sends its own prints to stderr."""


WARM_BROWSERS = 2
"""Idle browsers kept between evaluations (one per parallel evaluator on 2 cores). Each
evaluation gets a fresh context; keeping Chromium saves its start: `bench/bench_web.py`'s
median evaluation went from 4.1 s to 2.7 s and its run from 281 s to 197 s
(3 templates x 2 seeds x 5 tiers, beside a model job)."""


class _WarmBrowsers:
    """Web-challenge browsers kept started between evaluations, each leased to one at a time.

    A lease hands out an idle session (or a new one); when the evaluation ends
    without an exception the session's context is closed (`BrowserSession.reset`)
    and it goes back, up to `keep`; otherwise, or past `keep`, it is closed.
    The idle ones are closed when the process exits.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._idle: list[BrowserSession] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[BrowserSession]:
        """One session for one evaluation (raises `BrowserUnavailableError` without Chromium)."""
        with self._lock:
            session = self._idle.pop() if self._idle else None
        if session is None:
            session = BrowserSession(WEB_BROWSER, name="web-challenge")
        kept = False
        try:
            yield session
            if session.reset():
                with self._lock:
                    if len(self._idle) < self.keep:
                        self._idle.append(session)
                        kept = True
        finally:
            if not kept:
                session.close()

    def close(self) -> None:
        """Close every idle session (at exit: Chromium is killed when its worker is gone)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for session in idle:
            session.close()


_WARM = _WarmBrowsers(WARM_BROWSERS)
atexit.register(_WARM.close)


@functools.cache
def shim_source() -> str:
    """The text of `_web_shim`, the `playwright.sync_api` a solution imports."""
    return resources.files(__package__).joinpath("_web_shim.py").read_text(encoding="utf-8")


def web_problem() -> str | None:
    """Why web challenges cannot be judged here, or None when they can.

    Looks for Chromium (`browser.find_chromium`) and Playwright's package
    (found, not imported: a few milliseconds).
    """
    try:
        find_chromium()
    except BrowserUnavailableError as exc:
        return str(exc)
    if importlib.util.find_spec("playwright") is None:
        return (
            "web challenges need the playwright package: pip install 'nightschool[browser]' "
            "(it drives the system Chromium)"
        )
    return None


def practice_clusters() -> tuple[str, ...]:
    """`CLUSTERS` that can be practised here: `web_automation` only when `web_problem` is None."""
    if web_problem() is None:
        return CLUSTERS
    return tuple(cluster for cluster in CLUSTERS if not is_web(cluster))


def is_web(cluster: str) -> bool:
    """Whether challenges of `cluster` are judged by `run_web_validation`."""
    return cluster == WEB_CLUSTER


def run_web_validation(
    sandbox: Sandbox, ws: Workspace, validation_script: str
) -> tuple[ExecResult, Screenshot | None]:
    """Serve the site the setup wrote, then run the validator with the browser bridge.

    Args:
        sandbox: runs the validator (`popen_in`); `config.timeout_s` bounds it.
        ws: the workspace after setup, holding the solution and `SITE_FILE`.
        validation_script: the validator's source.

    Returns:
        The validator's run: `returncode` 0 on pass; `stdout` holds what it
        printed (its stderr: the bridge owns its stdout); `timed_out` when the
        limit was reached. And a screenshot of the page the browser showed at
        the end (None when none was loaded or it failed).

    Raises:
        ChallengeFaultError: the setup wrote no readable `SITE_FILE`.
        BrowserUnavailableError: Chromium or Playwright is missing, or will not start.
        InfrastructureError: the browser could not load the site's own page.
        SandboxFaultError: bubblewrap could not start the validator.
    """
    text = ws.read_file(SITE_FILE)
    if text is None:
        raise ChallengeFaultError(f"the web challenge's setup wrote no {SITE_FILE}")
    try:
        site = Site.from_json(text)
    except ValueError as exc:
        raise ChallengeFaultError(f"the web challenge's {SITE_FILE} is unusable: {exc}") from exc
    (ws.path / SITE_FILE).unlink()
    ws.write_file("playwright/__init__.py", '"""Playwright for web challenges (a subset)."""\n')
    ws.write_file("playwright/sync_api.py", shim_source())
    with serving(site) as server, _WARM.lease() as browser:
        ready = browser.goto(server.origin + READY_PATH)
        if ready.error is not None:
            raise InfrastructureError(
                f"the browser could not open the challenge's own page: {ready.error}"
            )
        result = _Bridge(sandbox, server, browser).run(ws, validation_script)
        shot = browser.screenshot().screenshot if browser.is_open else None
        return result, shot


@dataclass
class _Bridge:
    """Runs the validator and answers its (and its solution's) browser requests."""

    sandbox: Sandbox
    server: SiteServer
    browser: BrowserSession

    def __post_init__(self) -> None:
        self.messages = 0
        self.last_call = time.monotonic()

    def run(self, ws: Workspace, validation_script: str) -> ExecResult:
        limit_s = self.sandbox.config.timeout_s
        cap = self.sandbox.config.max_output_bytes
        started = time.monotonic()
        with tempfile.TemporaryFile() as err:
            proc = self.sandbox.popen_in(
                ws.path,
                [SANDBOX_PYTHON, "-c", BOOT],
                stderr=err,
                env={"NS_PAGE_URL": self.server.start_url},
            )
            try:
                timed_out = self._pump(proc, validation_script, started + limit_s)
            finally:
                kill_process_group(proc)
                proc.wait()
            err.seek(0)
            raw = err.read(cap + 1)
        output = raw[:cap].decode("utf-8", errors="replace")
        if not timed_out and is_setup_fault(proc.returncode, output):
            raise SandboxFaultError(f"bubblewrap failed: {output[:500]}")
        return ExecResult(
            returncode=-9 if timed_out else proc.returncode,
            stdout=output,
            stderr="",
            timed_out=timed_out,
            duration_s=round(time.monotonic() - started, 4),
            truncated=len(raw) > cap,
        )

    def _pump(self, proc: subprocess.Popen[bytes], source: str, deadline: float) -> bool:
        """Serve requests until the validator exits; True when the deadline came first."""
        assert proc.stdin is not None and proc.stdout is not None
        lines: queue.Queue[bytes | None] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
        reader.start()
        body = source.encode("utf-8")
        if not _send(proc.stdin, f"{len(body)}\n".encode() + body):
            return False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            try:
                raw = lines.get(timeout=left)
            except queue.Empty:
                return True
            if raw is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.1, min(5.0, deadline - time.monotonic())))
                return proc.poll() is None
            reply = self._answer(raw)
            if reply is not None:
                _send(proc.stdin, (json.dumps(reply) + "\n").encode("utf-8"))

    def _answer(self, raw: bytes) -> dict[str, Any] | None:
        """The reply to one request line; None for a line that is not a request."""
        if len(raw) > MAX_LINE_BYTES:
            return None
        try:
            message = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(message, dict):
            return None
        ident = message.get("id")
        self.messages += 1
        if self.messages > MAX_MESSAGES:
            return {"id": ident, "error": f"more than {MAX_MESSAGES} browser calls"}
        try:
            result = self._call(str(message.get("op")), message)
        except _Refused as exc:
            return {"id": ident, "error": str(exc)}
        finally:
            self.last_call = time.monotonic()
        return {"id": ident, "result": result}

    def _call(self, op: str, message: dict[str, Any]) -> Any:
        if op == "goto":
            url = urljoin(self.server.start_url, str(message.get("url", "")))
            if _origin(url) != self.server.origin:
                raise _Refused(f"only the task's site ({self.server.origin}) may be opened: {url}")
            return _outcome(self.browser.goto(url))
        if op == "act":
            step = {"action": message.get("kind"), "selector": message.get("selector")}
            if message.get("value") is not None:
                step["value"] = message.get("value")
            call = read_call({"op": "interact", "actions": [step]}, max_actions=1)
            if isinstance(call, str):
                raise _Refused(call)
            if call.actions[0].kind == "goto":
                raise _Refused("goto is a call of its own (page.goto)")
            result = self.browser.interact(call.actions, stop_on_error=True)
            failed = [s.error for s in result.steps if s.error]
            if failed or result.error:
                raise _Refused(failed[0] if failed else str(result.error))
            return {"url": result.url}
        if op == "read":
            selector = message.get("selector")
            if not isinstance(selector, str) or not selector.strip():
                raise _Refused("read needs a selector")
            found = self.browser.read(selector, wait=bool(message.get("wait", True)))
            outcome = _outcome(found)
            return {**outcome, "texts": list(found.texts)}
        if op == "screenshot":
            shot = self.browser.screenshot()
            outcome = _outcome(shot)
            png = shot.screenshot.png if shot.screenshot is not None else b""
            return {**outcome, "png_base64": base64.b64encode(png).decode("ascii")}
        if op == "record":
            self._settle()
            return [hit.as_json() for hit in self.server.hits()]
        raise _Refused(f"unknown browser call {op!r}")

    def _settle(self) -> None:
        """Wait until neither the site nor the browser has been busy for `SETTLE_S`."""
        stop = time.monotonic() + SETTLE_MAX_S
        while time.monotonic() < stop:
            quiet = time.monotonic() - max(self.last_call, self.server.last_hit)
            if quiet >= SETTLE_S:
                return
            time.sleep(min(SETTLE_S - quiet, 0.1) + 0.01)


class _Refused(Exception):
    """A bridged call that failed; its text goes back to the caller as the error."""


def _outcome(result: BrowserResult) -> dict[str, Any]:
    if result.error is not None:
        raise _Refused(result.error)
    return {"url": result.url}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _send(stream: IO[bytes], data: bytes) -> bool:
    try:
        stream.write(data)
        stream.flush()
    except (BrokenPipeError, ValueError):
        return False
    return True


def _read_lines(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    while line := stream.readline(MAX_LINE_BYTES + 1):
        lines.put(line)
        if len(line) > MAX_LINE_BYTES:
            break
    lines.put(None)
