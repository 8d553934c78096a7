"""`BrowserSession`: one agent session's browser (one Chromium context), and `BrowserSessions`.

Every Playwright call runs on the session's own worker thread (Playwright's sync
API belongs to the thread that started it), so any thread may call the
operations; calls on one session run one at a time.

Limits (`BrowserConfig`): each sub-action, read and screenshot waits at most
`action_timeout_s`, each goto `navigation_timeout_s`, and one operation as a
whole `sequence_timeout_s`: an interact that reaches it stops, says so, and its
context is closed (the next call starts on a blank page). A Chromium that stops
answering altogether (a page spinning in JavaScript blocks even calls that have
no timeout of their own) is killed `hang_grace_s` after the operation's limit,
and the call returns that as its error. Failures of the page or of the agent's
actions are data (`BrowserResult.error`); only a browser that cannot start
raises (`BrowserUnavailableError`).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, cast

from nightschool.browser._actions import BrowserCall, read_call
from nightschool.browser._engine import Engine, check_playwright, find_chromium, kill_tagged
from nightschool.browser._loopback import SOCKET_SCHEMES, loopback_problem
from nightschool.browser._render import (
    describe_hang,
    describe_interact,
    png_size,
    refused_note,
    short_error,
)
from nightschool.browser._types import (
    Action,
    BrowserConfig,
    BrowserResult,
    BrowserUnavailableError,
    Screenshot,
    StepResult,
    WaitState,
)

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Route, WebSocketRoute

logger = logging.getLogger("nightschool.browser")

MAX_READ_MATCHES = 50
"""Elements a `read` of a selector reads at most (their texts joined by newlines)."""

_EVERY_URL = re.compile(r".*")


class BrowserSession:
    """One browser context and page, driven from a worker thread of its own.

    Chromium starts on the first operation, not before.

    Args:
        config: limits and the executable; None means `BrowserConfig()`.
        name: names the worker thread and log lines (e.g. the chat session).

    Raises:
        BrowserUnavailableError: Chromium is not installed (checked here, at once).
    """

    def __init__(self, config: BrowserConfig | None = None, *, name: str = "browser") -> None:
        self.config = config or BrowserConfig()
        self.name = name
        self.executable = find_chromium(self.config.executable)
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        self._tag = ""
        # worker-thread state
        self._engine: Engine | None = None
        self._context: BrowserContext | None = None
        self._page: Page | None = None
        self._refused: list[str] = []

    # -- operations (any thread) -------------------------------------------------

    def call(self, arguments: Mapping[str, Any]) -> BrowserResult:
        """Run the browser tool call a model sent (`browser._actions.BROWSER_USAGE`).

        Returns:
            The operation's result; unreadable arguments come back as its `error`.

        Raises:
            BrowserUnavailableError: Chromium or Playwright is missing or will not start.
        """
        call = read_call(arguments, max_actions=self.config.max_actions)
        if isinstance(call, str):
            op = arguments.get("op")
            return BrowserResult(op=op if isinstance(op, str) else "?", text="", error=call)
        return self.run(call)

    def run(self, call: BrowserCall) -> BrowserResult:
        """Run one checked call (`BrowserCall`); see `goto`, `interact`, `read`, `screenshot`."""
        if call.op == "goto":
            return self.goto(call.url)
        if call.op == "interact":
            return self.interact(call.actions, stop_on_error=call.stop_on_error)
        if call.op == "read":
            return self.read(call.selector)
        return self.screenshot()

    def goto(self, url: str) -> BrowserResult:
        """Load `url` (loopback only; refused before any request otherwise).

        Returns:
            `text`: the HTTP status and the address reached. `error` when the URL
            is refused, the load fails (network error, time limit) or the server
            answers 400 or above.
        """
        limit = self.config.navigation_timeout_s
        return self._submit("goto", lambda: self._goto_work(url), limit)

    def interact(self, actions: Sequence[Action], *, stop_on_error: bool = False) -> BrowserResult:
        """Run sub-actions in order on the current page.

        A failed `goto` always stops the sequence; another failed sub-action
        stops it when `stop_on_error`, else the sequence goes on. A stopped
        sequence has `aborted_sequence` and `SEQUENCE_ABORTED_BANNER` first in
        its text; so does one that reaches `sequence_timeout_s`, and then the
        context is closed.

        Args:
            actions: the sub-actions (at most `config.max_actions`).
            stop_on_error: stop at the first failed sub-action.

        Returns:
            One line per sub-action run (`ok` or `FAILED: <why>`), the page's
            address, the requests refused; `steps` holds the same as data.
        """
        work = lambda: self._interact_work(tuple(actions), stop_on_error)  # noqa: E731
        return self._submit("interact", work, self.config.sequence_timeout_s)

    def read(self, selector: str | None = None, *, wait: bool = True) -> BrowserResult:
        """The page's text (`selector` None), or the text of the elements `selector` matches.

        Args:
            selector: the elements to read; None reads the whole page.
            wait: wait up to `action_timeout_s` for a first match (else an
                `error`); False reads what matches now, possibly nothing (no
                error: `texts` is empty), as Playwright's `count()` does.

        Returns:
            `text`: at most `config.max_text_chars` characters (head kept; a cut
            says how much was left out); `texts`: one entry per matched element.
        """
        limit = self.config.action_timeout_s
        return self._submit("read", lambda: self._read_work(selector, wait), limit)

    def screenshot(self) -> BrowserResult:
        """A PNG of the viewport (`result.screenshot`); `text` describes it.

        Returns:
            An `error` instead when no page is loaded yet or the PNG is larger
            than `config.max_screenshot_bytes`.
        """
        limit = self.config.action_timeout_s
        return self._submit("screenshot", self._screenshot_work, limit)

    @property
    def is_open(self) -> bool:
        """Whether a browser context is open (a page loaded since the last close)."""
        return self._context is not None

    def close(self) -> None:
        """Close the context and Chromium and stop the worker; later calls return an error."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
            if executor is None:
                return
            try:
                future = executor.submit(self._stop_work)
            except RuntimeError:  # interpreter shutdown: the worker takes no more work
                kill_tagged(self._tag)
                return
            try:
                future.result(timeout=self.config.hang_grace_s)
            except FutureTimeout:
                kill_tagged(self._tag)
            except Exception:
                logger.debug("closing browser session %s failed", self.name, exc_info=True)
            executor.shutdown(wait=False, cancel_futures=True)

    def reset(self) -> bool:
        """Close the context and page but keep Chromium: the next operation starts blank.

        What one web-challenge evaluation leaves (cookies, storage, cache, the
        page) is gone with its context; Chromium's start (2-5 s) is not paid again.

        Returns:
            True when the session can be used again; False when it is closed or
            its worker did not answer within `config.hang_grace_s` (close it).
        """
        with self._lock:
            if self._closed:
                return False
            if self._executor is None:
                return True
            try:
                self._executor.submit(self._close_context).result(timeout=self.config.hang_grace_s)
            except Exception:
                logger.debug("browser session %s: reset failed", self.name, exc_info=True)
                return False
            return True

    # -- the worker and its watchdog -----------------------------------------------

    def _submit(self, op: str, work: Callable[[], BrowserResult], limit_s: float) -> BrowserResult:
        with self._lock:
            if self._closed:
                return BrowserResult(op=op, text="", error="the browser session is closed")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"nightschool-{self.name}"
                )
            future = self._executor.submit(work)
            try:
                return future.result(timeout=limit_s + self.config.hang_grace_s)
            except FutureTimeout:
                return self._recover(op, future, limit_s + self.config.hang_grace_s)
            except BrowserUnavailableError:
                raise
            except Exception as exc:  # Playwright failing outside an action (a crashed page)
                logger.warning("browser session %s: %s failed", self.name, op, exc_info=True)
                self._executor.submit(self._close_context)
                return BrowserResult(
                    op=op,
                    text="",
                    error=f"the browser failed ({short_error(exc)}); its context was closed, "
                    "the next call starts on a blank page",
                )

    def _recover(self, op: str, future: Future[BrowserResult], waited_s: float) -> BrowserResult:
        """Kill a Chromium that stopped answering; the next operation starts a fresh one."""
        killed = kill_tagged(self._tag)
        logger.warning(
            "browser session %s: %s did not return in %.0f s; killed %d process(es)",
            self.name,
            op,
            waited_s,
            killed,
        )
        with contextlib.suppress(Exception):  # TargetClosedError once the browser is gone
            future.result(timeout=self.config.hang_grace_s)
        executor = self._executor
        if executor is not None and future.done():
            try:
                executor.submit(self._stop_work).result(timeout=self.config.hang_grace_s)
            except Exception:
                logger.debug("browser session %s: stop after a kill failed", self.name)
        else:  # the worker is stuck for good: leave it and start another next time
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
            self._engine = self._context = self._page = None
        return BrowserResult(
            op=op,
            text=describe_hang(op, waited_s),
            error=f"the browser stopped answering for {waited_s:.0f} s and was killed",
            aborted_sequence=op == "interact",
            abort_reason="time_limit" if op == "interact" else None,
        )

    # -- worker-thread side --------------------------------------------------------

    def _ensure_page(self) -> Page:
        if self._engine is None:
            self._engine = Engine(self.executable)
        browser = self._engine.start()
        self._tag = self._engine.tag
        if self._context is None:
            context = browser.new_context(
                viewport={
                    "width": self.config.viewport_width,
                    "height": self.config.viewport_height,
                },
                service_workers="block",
                accept_downloads=False,
            )
            context.route("**/*", self._route)
            context.route_web_socket(_EVERY_URL, self._route_socket)
            context.set_default_timeout(self.config.action_timeout_s * 1000)
            context.set_default_navigation_timeout(self.config.navigation_timeout_s * 1000)
            self._context, self._page = context, None
        if self._page is None or self._page.is_closed():
            self._page = self._context.new_page()
        return self._page

    def _route(self, route: Route) -> None:
        url = route.request.url
        if loopback_problem(url) is None:
            route.continue_()
        else:
            self._refused.append(url)
            route.abort("blockedbyclient")

    def _route_socket(self, socket: WebSocketRoute) -> None:
        if loopback_problem(socket.url, schemes=SOCKET_SCHEMES) is None:
            socket.connect_to_server()
        else:
            self._refused.append(socket.url)
            socket.close(code=1008, reason="nightschool browser: loopback only")

    def _close_context(self) -> None:
        context, self._context, self._page = self._context, None, None
        if context is not None:
            try:
                context.close()
            except Exception:
                logger.debug("browser session %s: context close failed", self.name)

    def _stop_work(self) -> None:
        self._close_context()
        if self._engine is not None:
            self._engine.stop()

    def _page_url(self) -> str:
        return self._page.url if self._page is not None else ""

    def _goto_work(self, url: str) -> BrowserResult:
        self._refused = []
        error, detail = self._navigate(url, self.config.navigation_timeout_s)
        text = f"goto {url}: {detail}"
        note = refused_note(self._refused)
        return BrowserResult(
            op="goto",
            text=f"{text}\n{note}" if note else text,
            error=error,
            url=self._page_url(),
            refused=tuple(self._refused),
        )

    def _navigate(self, url: str, timeout_s: float) -> tuple[str | None, str]:
        """(error or None, what happened) of one navigation."""
        problem = loopback_problem(url)
        if problem is not None:
            return f"refused: {problem}", f"refused before loading: {problem}"
        # function-local: start-up time (Playwright loads only with the browser)
        from playwright.sync_api import Error

        page = self._ensure_page()
        try:
            response = page.goto(url, timeout=timeout_s * 1000, wait_until="load")
        except Error as exc:
            why = short_error(exc)
            return why, f"FAILED: {why}"
        if response is None:
            return None, f"ok (same document), now at {page.url}"
        if response.status >= 400:
            why = f"HTTP {response.status} {response.status_text}".strip()
            return why, f"FAILED: {why} at {page.url}"
        return None, f"HTTP {response.status}, now at {page.url}"

    def _interact_work(self, actions: tuple[Action, ...], stop_on_error: bool) -> BrowserResult:
        self._refused = []
        started = time.monotonic()
        deadline = started + self.config.sequence_timeout_s
        steps: list[StepResult] = []
        reason: str | None = None
        for index, action in enumerate(actions, start=1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reason = "time_limit"
                break
            own = (
                self.config.navigation_timeout_s
                if action.kind == "goto"
                else self.config.action_timeout_s
            )
            tick = time.monotonic()
            error = self._step(action, min(own, remaining))
            steps.append(StepResult(index, action, error, round(time.monotonic() - tick, 4)))
            if error is None:
                continue
            if own > remaining and time.monotonic() >= deadline - 0.05:
                reason = "time_limit"
            elif action.kind == "goto":
                reason = "goto_failed"
            elif stop_on_error:
                reason = f"{action.kind}_failed"
            if reason is not None:
                break
        if reason is None and len(steps) < len(actions):
            reason = "time_limit"
        url = self._page_url()
        if reason == "time_limit":
            self._close_context()
        text, error = describe_interact(
            steps,
            total=len(actions),
            reason=reason,
            url=url,
            refused=self._refused,
            limit_s=self.config.sequence_timeout_s,
        )
        return BrowserResult(
            op="interact",
            text=text,
            error=error,
            aborted_sequence=reason is not None,
            abort_reason=reason,
            steps=tuple(steps),
            url=url,
            refused=tuple(self._refused),
        )

    def _step(self, action: Action, timeout_s: float) -> str | None:
        """Run one sub-action; its error (one line), or None."""
        if action.kind == "goto":
            return self._navigate(action.selector, timeout_s)[0]
        # function-local: start-up time (Playwright loads only with the browser)
        from playwright.sync_api import Error

        page = self._ensure_page()
        target = page.locator(action.selector).first
        ms = timeout_s * 1000
        try:
            if action.kind == "click":
                target.click(timeout=ms)
            elif action.kind == "fill":
                target.fill(action.value or "", timeout=ms)
            elif action.kind == "select":
                target.select_option(action.value, timeout=ms)
            elif action.kind == "press":
                target.press(action.value or "", timeout=ms)
            else:
                state = cast(WaitState, action.value or "visible")
                target.wait_for(state=state, timeout=ms)
        except Error as exc:
            return short_error(exc)
        return None

    def _read_work(self, selector: str | None, wait: bool = True) -> BrowserResult:
        # function-local: start-up time (Playwright loads only with the browser)
        from playwright.sync_api import Error

        self._refused = []
        page = self._ensure_page()
        if page.url == "about:blank":
            return BrowserResult(op="read", text="", error="no page loaded: goto a URL first")
        ms = self.config.action_timeout_s * 1000
        texts: list[str] = []
        try:
            if selector is None:
                text = page.locator("body").inner_text(timeout=ms)
            else:
                matches = page.locator(selector)
                if wait:
                    matches.first.wait_for(state="attached", timeout=ms)
                count = min(matches.count(), MAX_READ_MATCHES)
                texts = [matches.nth(i).inner_text(timeout=ms) for i in range(count)]
                text = "\n".join(texts)
        except Error as exc:
            return BrowserResult(op="read", text="", error=short_error(exc), url=page.url)
        limit = self.config.max_text_chars
        kept = _within(texts, limit)
        if len(text) > limit:
            text = (
                f"{text[:limit]}\n[text cut: the first {limit} of {len(text)} characters "
                "shown; read a narrower selector for the rest]"
            )
        return BrowserResult(op="read", text=text or "(no text)", url=page.url, texts=kept)

    def _screenshot_work(self) -> BrowserResult:
        # function-local: start-up time (Playwright loads only with the browser)
        from playwright.sync_api import Error

        page = self._ensure_page()
        if page.url == "about:blank":
            return BrowserResult(op="screenshot", text="", error="no page loaded: goto a URL first")
        try:
            png = page.screenshot(type="png", timeout=self.config.action_timeout_s * 1000)
        except Error as exc:
            return BrowserResult(op="screenshot", text="", error=short_error(exc), url=page.url)
        cap = self.config.max_screenshot_bytes
        if len(png) > cap:
            return BrowserResult(
                op="screenshot",
                text="",
                error=f"the screenshot has {len(png)} bytes, over the cap of {cap}; not kept",
                url=page.url,
            )
        width, height = png_size(png)
        shot = Screenshot(png=png, url=page.url, width=width, height=height)
        text = f"screenshot of {page.url}: {width}x{height} PNG, {len(png)} bytes"
        return BrowserResult(op="screenshot", text=text, url=page.url, screenshot=shot)


def _within(texts: Sequence[str], limit: int) -> tuple[str, ...]:
    """The first of `texts` whose lengths add up to at most `limit` (the last one cut)."""
    kept: list[str] = []
    left = limit
    for text in texts:
        if left <= 0:
            break
        kept.append(text[:left])
        left -= len(text)
    return tuple(kept)


class BrowserSessions:
    """The browser sessions of a chat server, one per chat session id, made on first use.

    At most `max_sessions` stay open: opening one more closes the one used
    longest ago (its page state is lost; it starts afresh when used again).

    Args:
        config: settings of every session; None means `BrowserConfig()`.
        max_sessions: open sessions at most (each is one Chromium, about 150 MB).

    Raises:
        BrowserUnavailableError: Chromium or Playwright is missing (checked here).
    """

    def __init__(self, config: BrowserConfig | None = None, *, max_sessions: int = 4) -> None:
        self.config = config or BrowserConfig()
        self.executable = find_chromium(self.config.executable)
        check_playwright()
        self.max_sessions = max(1, max_sessions)
        self._sessions: collections.OrderedDict[str, BrowserSession] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def session(self, session_id: str) -> BrowserSession:
        """The browser session of `session_id`, made (not started) when new."""
        evicted: list[BrowserSession] = []
        with self._lock:
            found = self._sessions.get(session_id)
            if found is None:
                found = BrowserSession(self.config, name=f"browser-{next(self._numbers)}")
                self._sessions[session_id] = found
            self._sessions.move_to_end(session_id)
            while len(self._sessions) > self.max_sessions:
                evicted.append(self._sessions.popitem(last=False)[1])
        for old in evicted:
            old.close()
        return found

    def close(self) -> None:
        """Close every session (Chromium processes and worker threads)."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.close()
