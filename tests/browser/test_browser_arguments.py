"""The browser tool without a browser: URLs it may reach, arguments, selectors, rendering."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nightschool.browser import (
    BROWSER_TOOL_SCHEMA,
    SEQUENCE_ABORTED_BANNER,
    Action,
    BrowserCall,
    chromium_network_args,
    loopback_problem,
    read_call,
    selectors_in,
)
from nightschool.browser._render import describe_interact, png_size, short_error
from nightschool.browser._types import StepResult


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/form",
        "https://127.0.0.1/",
        "http://localhost:5000/a?b=c",
        "http://LOCALHOST/",
        "http://[::1]:8080/",
    ],
)
def test_loopback_urls_pass(url: str) -> None:
    assert loopback_problem(url) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/", "not example.com"),
        ("http://10.255.255.1/", "not 10.255.255.1"),
        ("http://127.0.0.2/", "not 127.0.0.2"),
        ("http://127.0.0.1@example.com/", "not example.com"),
        ("http://localhost.example.com/", "not localhost.example.com"),
        ("http://0.0.0.0:8000/", "not 0.0.0.0"),
        ("file:///etc/passwd", "not file"),
        ("data:text/html,<p>x</p>", "not data"),
        ("javascript:alert(1)", "not javascript"),
        ("/relative", "not a relative URL"),
        ("http://127.0.0.1:99999/", "not a valid URL"),
        ("http:///path", "has no host"),
    ],
)
def test_other_urls_are_refused(url: str, why: str) -> None:
    problem = loopback_problem(url)
    assert problem is not None and why in problem


def test_sockets_to_loopback_only() -> None:
    schemes = frozenset({"ws", "wss"})
    assert loopback_problem("ws://127.0.0.1:9000/s", schemes=schemes) is None
    assert "not example.com" in str(loopback_problem("wss://example.com/s", schemes=schemes))


def test_chromium_flags_send_everything_else_to_the_dead_proxy() -> None:
    args = chromium_network_args(4242)
    assert "--proxy-server=http://127.0.0.1:4242" in args
    assert "--proxy-bypass-list=127.0.0.1;localhost;[::1]" in args
    assert "--webrtc-ip-handling-policy=disable_non_proxied_udp" in args


# -- reading a model's arguments ------------------------------------------------------


def test_read_call_reads_each_op() -> None:
    assert read_call({"op": "goto", "url": " http://127.0.0.1/ "}, max_actions=5) == BrowserCall(
        "goto", url="http://127.0.0.1/"
    )
    assert read_call({"op": "read"}, max_actions=5) == BrowserCall("read")
    assert read_call({"op": "read", "selector": "#a"}, max_actions=5) == BrowserCall(
        "read", selector="#a"
    )
    assert read_call({"op": "screenshot"}, max_actions=5) == BrowserCall("screenshot")
    call = read_call(
        {
            "op": "interact",
            "actions": [
                {"action": "goto", "url": "http://127.0.0.1/"},
                {"action": "fill", "selector": "#n", "value": 42},
                {"action": "click", "selector": "#b", "value": "ignored"},
                {"action": "wait_for", "selector": "#w"},
                {"action": "press", "selector": "#n", "value": "Enter"},
                {"action": "select", "selector": "#s", "value": "Blue"},
            ],
            "stop_on_error": True,
        },
        max_actions=10,
    )
    assert call == BrowserCall(
        "interact",
        actions=(
            Action("goto", "http://127.0.0.1/"),
            Action("fill", "#n", "42"),
            Action("click", "#b"),
            Action("wait_for", "#w"),
            Action("press", "#n", "Enter"),
            Action("select", "#s", "Blue"),
        ),
        stop_on_error=True,
    )


def test_read_call_takes_json_strings_and_string_flags() -> None:
    actions = json.dumps([{"action": "click", "selector": "#b"}])
    call = read_call(
        {"op": "interact", "actions": actions, "stop_on_error": "false"}, max_actions=3
    )
    assert call == BrowserCall("interact", actions=(Action("click", "#b"),), stop_on_error=False)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "op must be one of goto, interact, read, screenshot, got None"),
        ({"op": "hover"}, "op must be one of"),
        ({"op": "goto"}, 'goto needs "url"'),
        ({"op": "goto", "url": "x", "selector": "#a"}, "goto takes no argument(s) selector"),
        ({"op": "read", "selector": ""}, "read's selector must be a non-empty string"),
        ({"op": "interact"}, "interact needs a non-empty list of actions"),
        ({"op": "interact", "actions": "[oops"}, "actions must be a JSON list of objects"),
        ({"op": "interact", "actions": ["click"]}, "action 1: each action must be an object"),
        ({"op": "interact", "actions": [{"selector": "#a"}]}, 'action 1: "action" must be'),
        ({"op": "interact", "actions": [{"action": "click"}]}, 'click needs "selector"'),
        ({"op": "interact", "actions": [{"action": "fill", "selector": "#a"}]}, 'needs "value"'),
        (
            {"op": "interact", "actions": [{"action": "wait_for", "selector": "#a", "value": "x"}]},
            "wait_for's value must be one of visible, hidden, attached, detached",
        ),
        (
            {"op": "interact", "actions": [{"action": "click", "selector": "#a"}] * 4},
            "at most 3 actions per interact, got 4",
        ),
        (
            {
                "op": "interact",
                "actions": [{"action": "click", "selector": "#a"}],
                "stop_on_error": 3,
            },
            "stop_on_error must be true or false",
        ),
    ],
)
def test_read_call_says_what_is_wrong(arguments: dict[str, object], problem: str) -> None:
    found = read_call(arguments, max_actions=3)
    assert isinstance(found, str) and problem in found, found


def test_selectors_in_counts_every_attempt() -> None:
    assert selectors_in({"op": "read", "selector": " #out "}) == ["#out"]
    assert selectors_in(
        {
            "op": "interact",
            "actions": [
                {"action": "goto", "url": "http://127.0.0.1/", "selector": "http://127.0.0.1/"},
                {"action": "click", "selector": "#send"},
                {"action": "click", "selector": "#send"},
                {"action": "fill", "selector": "#name", "value": "x"},
            ],
        }
    ) == ["#send", "#send", "#name"]
    as_text = json.dumps([{"action": "click", "selector": "#send"}])
    assert selectors_in({"op": "interact", "actions": as_text}) == ["#send"]
    assert selectors_in({"op": "interact", "actions": "[broken"}) == []
    assert selectors_in("not a mapping") == []
    assert selectors_in({"op": "goto", "url": "http://127.0.0.1/"}) == []


def test_the_schema_offers_every_op_and_action() -> None:
    parameters = BROWSER_TOOL_SCHEMA["function"]["parameters"]
    assert parameters["required"] == ["op"]
    assert parameters["properties"]["op"]["enum"] == ["goto", "interact", "read", "screenshot"]
    item = parameters["properties"]["actions"]["items"]
    assert item["properties"]["action"]["enum"] == [
        "goto",
        "click",
        "fill",
        "select",
        "press",
        "wait_for",
    ]


# -- what the model reads --------------------------------------------------------------


def _step(index: int, action: Action, error: str | None = None) -> StepResult:
    return StepResult(index, action, error, 0.01)


def test_an_aborted_sequence_leads_with_the_banner() -> None:
    steps = [_step(1, Action("goto", "http://127.0.0.1:1/"), "net::ERR_CONNECTION_REFUSED")]
    text, error = describe_interact(
        steps, total=10, reason="goto_failed", url="about:blank", refused=[], limit_s=30
    )
    assert text.splitlines()[0] == (
        f"{SEQUENCE_ABORTED_BANNER}: goto_failed (aborted_sequence: true; 9 of 10 action(s) "
        "not run)"
    )
    assert error == (
        f"{SEQUENCE_ABORTED_BANNER}: goto_failed at action 1 (goto http://127.0.0.1:1/): "
        "net::ERR_CONNECTION_REFUSED"
    )


def test_a_clean_sequence_has_no_error_and_lists_refusals() -> None:
    steps = [_step(1, Action("click", "#a")), _step(2, Action("fill", "#b", "x"))]
    urls = [f"http://example.com/{i}" for i in range(7)]
    text, error = describe_interact(
        steps, total=2, reason=None, url="http://127.0.0.1/", refused=urls, limit_s=30
    )
    assert error is None
    assert text.splitlines() == [
        "1. click #a -> ok",
        "2. fill #b 'x' -> ok",
        "page: http://127.0.0.1/",
        "refused 7 non-loopback request(s) of the page: http://example.com/0, "
        "http://example.com/1, http://example.com/2, http://example.com/3, "
        "http://example.com/4 and 2 more",
    ]


def test_short_error_keeps_the_first_line_without_the_method() -> None:
    exc = RuntimeError("Page.goto: net::ERR_BLOCKED_BY_CLIENT at http://x/\nCall log:\n  - ...")
    assert short_error(exc) == "net::ERR_BLOCKED_BY_CLIENT at http://x/"
    assert short_error(RuntimeError("")) == "RuntimeError"


def test_png_size_reads_the_header() -> None:
    header = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + (640).to_bytes(4, "big")
    assert png_size(header + (480).to_bytes(4, "big") + b"\x08\x06") == (640, 480)
    assert png_size(b"GIF89a") == (0, 0)


def test_importing_the_package_does_not_import_playwright() -> None:
    code = "import sys, nightschool.browser; print('playwright' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
