"""The browser session on the real Chromium: operations, abort semantics, loopback only, limits."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from tests.browser.conftest import Site, needs_chromium

from nightschool.browser import (
    SEQUENCE_ABORTED_BANNER,
    Action,
    BrowserConfig,
    BrowserSession,
    BrowserSessions,
    BrowserUnavailableError,
    probe_browser,
)
from nightschool.browser._engine import TAG_SWITCH

pytestmark = needs_chromium


def _tagged_processes(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if tag.encode() in argv:
                found.append(int(entry))
    return found


def _closed_port() -> tuple[socket.socket, int]:
    """A loopback port that refuses connections (bound, never listening)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock, sock.getsockname()[1]


# -- the operations ---------------------------------------------------------------


def test_goto_interact_read_submits_the_form(session: BrowserSession, fresh_site: Site) -> None:
    opened = session.goto(f"{fresh_site.url}/form")
    assert opened.error is None, opened
    assert "HTTP 200" in opened.text and opened.url == f"{fresh_site.url}/form"

    done = session.interact(
        [
            Action("fill", "#name", "Ada"),
            Action("select", "#colour", "Blue"),  # by label
            Action("click", "#hello"),
            Action("wait_for", "#out"),
        ]
    )
    assert done.error is None and not done.aborted_sequence, done.text
    assert [step.ok for step in done.steps] == [True] * 4
    assert done.text.splitlines()[0] == "1. fill #name 'Ada' -> ok"
    assert session.read("#out").text == "hello Ada"
    assert session.read(".item").text == "one\ntwo\nthree"

    sent = session.interact(
        [Action("press", "#code", "Enter"), Action("click", "#send"), Action("wait_for", "#thanks")]
    )
    assert sent.error is None, sent.text
    assert fresh_site.submissions == [{"name": "Ada", "colour": "b", "code": "!"}]
    page = session.read()
    assert page.text == "Thanks Ada (b)" and page.url == f"{fresh_site.url}/submit"


def test_read_is_capped_and_says_so(fresh_site: Site) -> None:
    config = BrowserConfig(max_text_chars=100, navigation_timeout_s=15.0)
    browser = BrowserSession(config, name="cap")
    try:
        assert browser.goto(f"{fresh_site.url}/form").error is None
        whole = browser.read()
        assert whole.text.startswith("Sign up\n")
        head, note = whole.text.split("\n[text cut: ")
        assert len(head) == 100
        assert note.startswith("the first 100 of ") and "read a narrower selector" in note
    finally:
        browser.close()


def test_read_gives_each_matched_elements_text(session: BrowserSession, fresh_site: Site) -> None:
    assert session.goto(f"{fresh_site.url}/form").error is None
    items = session.read(".item")
    assert items.texts == ("one", "two", "three") and items.text == "one\ntwo\nthree"
    assert session.read().texts == (), "a whole-page read has no per-element texts"
    started = time.monotonic()
    none = session.read("#absent", wait=False)
    assert (none.error, none.texts, none.text) == (None, (), "(no text)")
    assert time.monotonic() - started < 2.5, "wait=False does not wait for a match"
    assert session.read("#absent").error is not None, "by default a read waits, then fails"


def test_read_texts_stay_within_the_cap(fresh_site: Site) -> None:
    browser = BrowserSession(BrowserConfig(max_text_chars=100), name="cap-texts")
    try:
        assert browser.goto(f"{fresh_site.url}/form").error is None
        terms = browser.read("#terms, .item")
        assert sum(len(t) for t in terms.texts) <= 100 and terms.texts[0] == "one"
    finally:
        browser.close()


def test_the_probe_opens_a_loopback_page() -> None:
    probe = probe_browser(BrowserConfig(navigation_timeout_s=15.0))
    assert probe.executable.name.startswith("chromium") and probe.seconds > 0
    assert probe.playwright.count(".") >= 1


def test_read_and_screenshot_need_a_page_first(session: BrowserSession) -> None:
    assert session.read().error == "no page loaded: goto a URL first"
    assert session.screenshot().error == "no page loaded: goto a URL first"


def test_screenshot_is_a_png_of_the_viewport(session: BrowserSession, fresh_site: Site) -> None:
    session.goto(f"{fresh_site.url}/form")
    shot = session.screenshot()
    assert shot.error is None and shot.screenshot is not None
    png = shot.screenshot.png
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (shot.screenshot.width, shot.screenshot.height) == (1024, 768)
    assert shot.text == f"screenshot of {fresh_site.url}/form: 1024x768 PNG, {len(png)} bytes"


def test_a_screenshot_over_the_cap_is_refused(fresh_site: Site) -> None:
    browser = BrowserSession(BrowserConfig(max_screenshot_bytes=100), name="shot-cap")
    try:
        browser.goto(f"{fresh_site.url}/form")
        shot = browser.screenshot()
        assert shot.screenshot is None
        assert shot.error is not None and "over the cap of 100" in shot.error
    finally:
        browser.close()


def test_model_arguments_run_through_call(session: BrowserSession, fresh_site: Site) -> None:
    result = session.call({"op": "goto", "url": f"{fresh_site.url}/form"})
    assert result.error is None
    result = session.call(
        {
            "op": "interact",
            "actions": '[{"action": "fill", "selector": "#name", "value": "Bo"},'
            ' {"action": "click", "selector": "#hello"}]',
            "stop_on_error": "true",
        }
    )
    assert result.error is None, result.text
    assert session.call({"op": "read", "selector": "#out"}).text == "hello Bo"
    bad = session.call({"op": "interact", "actions": [{"action": "hover", "selector": "#x"}]})
    assert bad.error is not None and '"action" must be one of' in bad.error


# -- abort semantics (seed 002) ------------------------------------------------------


def test_a_failed_goto_aborts_the_sequence(session: BrowserSession, fresh_site: Site) -> None:
    sock, port = _closed_port()
    try:
        result = session.interact(
            [
                Action("goto", f"http://127.0.0.1:{port}/nothing"),
                Action("goto", f"{fresh_site.url}/form"),
                Action("click", "#hello"),
            ]
        )
    finally:
        sock.close()
    assert result.aborted_sequence and result.abort_reason == "goto_failed"
    assert len(result.steps) == 1 and "ERR_CONNECTION_REFUSED" in (result.steps[0].error or "")
    first = result.text.splitlines()[0]
    assert first.startswith(f"{SEQUENCE_ABORTED_BANNER}: goto_failed")
    assert "aborted_sequence: true" in first and "2 of 3 action(s) not run" in first
    assert result.error is not None and result.error.startswith(SEQUENCE_ABORTED_BANNER)
    assert fresh_site.paths == []  # the second goto never ran


def test_a_404_goto_aborts_even_without_stop_on_error(
    session: BrowserSession, fresh_site: Site
) -> None:
    result = session.interact(
        [Action("goto", f"{fresh_site.url}/missing"), Action("goto", f"{fresh_site.url}/form")],
        stop_on_error=False,
    )
    assert result.aborted_sequence and result.abort_reason == "goto_failed"
    assert "HTTP 404" in (result.steps[0].error or "")
    assert fresh_site.paths == ["/missing"]


def test_a_failed_action_aborts_only_with_stop_on_error(
    session: BrowserSession, fresh_site: Site
) -> None:
    session.goto(f"{fresh_site.url}/form")
    actions = [
        Action("fill", "#name", "Cy"),
        Action("click", "#no-such-button"),
        Action("click", "#send"),
    ]
    stopped = session.interact(actions, stop_on_error=True)
    assert stopped.aborted_sequence and stopped.abort_reason == "click_failed"
    assert [step.ok for step in stopped.steps] == [True, False]
    assert stopped.text.startswith(f"{SEQUENCE_ABORTED_BANNER}: click_failed")
    assert fresh_site.submissions == []

    went_on = session.interact(actions, stop_on_error=False)
    assert not went_on.aborted_sequence and went_on.abort_reason is None
    assert SEQUENCE_ABORTED_BANNER not in went_on.text
    assert [step.ok for step in went_on.steps] == [True, False, True]
    assert went_on.error is not None and went_on.error.startswith("1 of 3 action(s) failed")
    assert "2. click #no-such-button -> FAILED: Timeout 3000ms exceeded." in went_on.text
    assert fresh_site.submissions == [{"name": "Cy", "colour": "r"}]


# -- loopback only -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["http://example.com/", "http://10.255.255.1/", "file:///etc/passwd", "http://127.0.0.2/"],
)
def test_goto_refuses_non_loopback_before_navigating(session: BrowserSession, url: str) -> None:
    result = session.goto(url)
    assert result.error is not None and result.error.startswith("refused: ")
    assert result.refused == ()  # refused before any request was made
    assert session.read().error == "no page loaded: goto a URL first"


def test_a_hostile_page_reaches_nothing_outside_loopback(
    session: BrowserSession, fresh_site: Site
) -> None:
    opened = session.goto(f"{fresh_site.url}/hostile")
    assert opened.error is None
    # the route handler saw each attempt and aborted it
    refused = set(opened.refused)
    deadline = time.monotonic() + 10
    status = ""
    while time.monotonic() < deadline:
        read = session.read("#status")
        refused |= set(read.refused)
        status = read.text
        if status.count("|") >= 2:
            break
        time.sleep(0.1)
    # the page saw a network error for each
    assert "fetch: TypeError" in status and "xhr: error" in status and "ws: closed" in status
    assert "reached" not in status and "ws: open" not in status
    refused |= set(session.read().refused)
    assert refused >= {
        "http://10.255.255.1/pixel.png",
        "http://example.com/logo.png",
        "http://example.com/frame",
        "http://example.com/data",
        "http://10.255.255.1/xhr",
        "ws://example.com/socket",
    }, refused
    assert "non-loopback request(s) of the page" in opened.text
    assert fresh_site.paths == ["/hostile"]


def test_a_page_cannot_navigate_itself_out(session: BrowserSession, fresh_site: Site) -> None:
    opened = session.goto(f"{fresh_site.url}/navigate-out")
    waited = session.interact([Action("wait_for", "#never-there")])
    assert "http://example.com/away" in opened.refused + waited.refused
    assert not session.read().url.startswith("http://example.com")


def test_a_redirect_out_is_stopped_by_the_dead_proxy(
    session: BrowserSession, fresh_site: Site
) -> None:
    result = session.goto(f"{fresh_site.url}/redirect-out")
    # Playwright does not route a redirect's target: Chromium's proxy refuses it
    assert result.error is not None and "ERR_PROXY_CONNECTION_FAILED" in result.error
    assert fresh_site.paths == ["/redirect-out"]


def test_localhost_is_reachable(session: BrowserSession, site: Site) -> None:
    port = site.url.rsplit(":", 1)[1]
    assert session.goto(f"http://localhost:{port}/form").error is None
    assert session.read("h1").text == "Sign up"


# -- limits ----------------------------------------------------------------------------


def test_the_sequence_time_limit_stops_it_and_closes_the_context(fresh_site: Site) -> None:
    config = BrowserConfig(action_timeout_s=1.0, sequence_timeout_s=2.5, navigation_timeout_s=15.0)
    browser = BrowserSession(config, name="limit")
    try:
        browser.goto(f"{fresh_site.url}/form")
        assert browser.is_open
        started = time.monotonic()
        result = browser.interact([Action("wait_for", f"#never-{i}") for i in range(6)])
        took = time.monotonic() - started
        assert took < 2.5 + 2.0, took
        assert result.aborted_sequence and result.abort_reason == "time_limit"
        assert result.text.startswith(f"{SEQUENCE_ABORTED_BANNER}: time_limit")
        assert "the time limit of 2.5 s for one operation was reached" in result.text
        assert "context was closed" in result.text
        assert not browser.is_open
        assert browser.read().error == "no page loaded: goto a URL first"
        assert browser.goto(f"{fresh_site.url}/form").error is None
    finally:
        browser.close()


def test_reset_closes_the_context_and_keeps_chromium(
    session: BrowserSession, fresh_site: Site
) -> None:
    assert session.goto(f"{fresh_site.url}/form").error is None
    processes = _tagged_processes(session._tag)
    assert processes and session.reset()
    assert not session.is_open
    assert session.read().error == "no page loaded: goto a URL first"
    assert session.goto(f"{fresh_site.url}/form").error is None
    assert _tagged_processes(session._tag) == processes  # no new Chromium
    session.close()
    assert not session.reset()


def test_a_browser_that_stops_answering_is_killed(fresh_site: Site) -> None:
    config = BrowserConfig(action_timeout_s=1.0, hang_grace_s=2.0, navigation_timeout_s=15.0)
    browser = BrowserSession(config, name="hang")
    try:
        assert browser.goto(f"{fresh_site.url}/busy").error is None
        tag = browser._tag
        assert tag.startswith(TAG_SWITCH) and _tagged_processes(tag)

        def spin() -> object:  # page.evaluate has no timeout of its own
            assert browser._page is not None
            return browser._page.evaluate("() => { while (true) {} }")

        started = time.monotonic()
        result = browser._submit("read", spin, 1.0)  # type: ignore[arg-type]
        assert time.monotonic() - started < 1.0 + 2.0 + 5.0
        assert result.error == "the browser stopped answering for 3 s and was killed"
        assert "the next call starts a fresh browser" in result.text
        assert _tagged_processes(tag) == []
        assert browser.goto(f"{fresh_site.url}/form").error is None
        assert browser.read("h1").text == "Sign up"
    finally:
        browser.close()


def test_close_stops_chromium_and_later_calls_say_so(fresh_site: Site) -> None:
    browser = BrowserSession(name="close")
    browser.goto(f"{fresh_site.url}/form")
    tag = browser._tag
    assert _tagged_processes(tag)
    browser.close()
    deadline = time.monotonic() + 10
    while _tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _tagged_processes(tag) == []
    assert browser.goto(f"{fresh_site.url}/form").error == "the browser session is closed"


def test_a_missing_chromium_is_named() -> None:
    with pytest.raises(BrowserUnavailableError) as raised:
        BrowserSession(BrowserConfig(executable=Path("/nonexistent/chromium")))
    assert "/nonexistent/chromium is not an executable file" in raised.value.message
    assert raised.value.hint is not None and "scripts/install.sh" in raised.value.hint


# -- one context per session -------------------------------------------------------------


def test_sessions_are_kept_per_id_and_the_oldest_is_closed(fresh_site: Site) -> None:
    sessions = BrowserSessions(max_sessions=2)
    try:
        first = sessions.session("a")
        assert sessions.session("a") is first
        first.goto(f"{fresh_site.url}/form")
        first.interact([Action("fill", "#name", "only in a")])
        second = sessions.session("b")
        second.goto(f"{fresh_site.url}/form")
        assert second.call({"op": "read", "selector": "#out"}).text == "(no text)"
        sessions.session("c")  # evicts "a", the least recently used
        assert first.goto(f"{fresh_site.url}/form").error == "the browser session is closed"
        assert sessions.session("a") is not first
    finally:
        sessions.close()
