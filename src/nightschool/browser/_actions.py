"""The browser tool's arguments: reading what a model sent, and the selectors it names.

A call is one JSON object (`BROWSER_USAGE`):

- `{"op": "goto", "url": "http://127.0.0.1:8000/"}`
- `{"op": "interact", "actions": [{"action": "fill", "selector": "#name",
  "value": "Ada"}, {"action": "click", "selector": "#send"}], "stop_on_error": true}`
- `{"op": "read"}` (the page's text) or `{"op": "read", "selector": "#out"}`
- `{"op": "screenshot"}`

Small models send lists as JSON strings and booleans as "true": both are read.
Nothing here starts a browser.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from nightschool.browser._types import (
    ACTION_KINDS,
    BROWSER_TOOL_NAME,
    WAIT_STATES,
    Action,
    ActionKind,
)

Op = Literal["goto", "interact", "read", "screenshot"]
"""The tool's operations."""

OPS: tuple[Op, ...] = ("goto", "interact", "read", "screenshot")
"""Every operation, in the order the tool's description lists them."""

BROWSER_USAGE = (
    '{"op": "goto", "url": "http://127.0.0.1:<port>/..."} | {"op": "interact", "actions": '
    '[{"action": "click|fill|select|press|wait_for|goto", "selector": "<css>", "value": '
    '"<text, option, key or state>"}], "stop_on_error": false} | {"op": "read", "selector": '
    '"<optional css>"} | {"op": "screenshot"}'
)
"""The argument shapes, as the tool's usage line shows them."""

BROWSER_TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": BROWSER_TOOL_NAME,
        "description": "A headless browser for pages served on 127.0.0.1 (no other "
        "address is reachable): goto a URL, interact (sub-actions in order), read the "
        "page's or an element's text, or take a screenshot.",
        "parameters": {
            "type": "object",
            "properties": {
                "op": {"type": "string", "enum": list(OPS), "description": "the operation"},
                "url": {"type": "string", "description": "goto: http://127.0.0.1:<port>/..."},
                "actions": {
                    "type": "array",
                    "description": "interact: the sub-actions, run in order on the page",
                    "items": {
                        "type": "object",
                        "properties": {
                            "action": {
                                "type": "string",
                                "enum": list(ACTION_KINDS),
                            },
                            "selector": {"type": "string", "description": "CSS selector"},
                            "value": {
                                "type": "string",
                                "description": "fill: text; select: option; press: key "
                                "(Enter); wait_for: state (visible); goto: the URL",
                            },
                        },
                        "required": ["action"],
                    },
                },
                "stop_on_error": {
                    "type": "boolean",
                    "description": "interact: stop at the first failed sub-action (a "
                    "failed goto always stops)",
                },
                "selector": {
                    "type": "string",
                    "description": "read: CSS selector (optional; default the whole page)",
                },
            },
            "required": ["op"],
        },
    },
}
"""The browser tool as an OpenAI function tool (`agent.tools`; its arguments are not all
strings: `actions` is a list of objects, `stop_on_error` a boolean)."""

_NEEDS_VALUE = frozenset({"fill", "select", "press"})
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no", ""})


@dataclass(frozen=True)
class BrowserCall:
    """A browser tool call, read and checked.

    Attributes:
        op: the operation.
        url: the address of a `goto` ("" otherwise).
        selector: the element a `read` reads (None: the whole page).
        actions: the sub-actions of an `interact` (empty otherwise).
        stop_on_error: an `interact` stops at its first failed sub-action
            (a failed `goto` always stops it).
    """

    op: Op
    url: str = ""
    selector: str | None = None
    actions: tuple[Action, ...] = ()
    stop_on_error: bool = False


def read_call(arguments: Mapping[str, Any], *, max_actions: int) -> BrowserCall | str:
    """Read a model's browser arguments into a `BrowserCall`, or say what is wrong.

    Args:
        arguments: the JSON object the model sent.
        max_actions: most sub-actions an `interact` may hold.

    Returns:
        The call, or one sentence naming the problem and the expected shape.
    """
    op = arguments.get("op")
    if op not in OPS:
        return f"op must be one of {', '.join(OPS)}, got {op!r}; usage: {BROWSER_USAGE}"
    allowed = {"goto": {"url"}, "interact": {"actions", "stop_on_error"}, "read": {"selector"}}
    extra = sorted(set(arguments) - {"op"} - allowed.get(op, set()))
    if extra:
        return f"{op} takes no argument(s) {', '.join(extra)}; usage: {BROWSER_USAGE}"
    if op == "goto":
        url = arguments.get("url")
        if not isinstance(url, str) or not url.strip():
            return f'goto needs "url" (a string); usage: {BROWSER_USAGE}'
        return BrowserCall("goto", url=url.strip())
    if op == "read":
        selector = arguments.get("selector")
        if selector is not None and (not isinstance(selector, str) or not selector.strip()):
            return "read's selector must be a non-empty string (or left out for the whole page)"
        return BrowserCall("read", selector=selector.strip() if selector else None)
    if op == "screenshot":
        return BrowserCall("screenshot")
    stop = _flag(arguments.get("stop_on_error", False))
    if stop is None:
        return f"stop_on_error must be true or false, got {arguments.get('stop_on_error')!r}"
    actions = _actions(arguments.get("actions"), max_actions)
    if isinstance(actions, str):
        return actions
    return BrowserCall("interact", actions=actions, stop_on_error=stop)


def _flag(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def _actions(raw: object, max_actions: int) -> tuple[Action, ...] | str:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return f"actions must be a JSON list of objects; usage: {BROWSER_USAGE}"
    if not isinstance(raw, list) or not raw:
        return f"interact needs a non-empty list of actions; usage: {BROWSER_USAGE}"
    if len(raw) > max_actions:
        return f"at most {max_actions} actions per interact, got {len(raw)}"
    actions = []
    for index, item in enumerate(raw, start=1):
        action = _action(item)
        if isinstance(action, str):
            return f"action {index}: {action}; usage: {BROWSER_USAGE}"
        actions.append(action)
    return tuple(actions)


def _action(item: object) -> Action | str:
    if not isinstance(item, Mapping):
        return f"each action must be an object, got {type(item).__name__}"
    kind = item.get("action")
    if kind not in ACTION_KINDS:
        return f'"action" must be one of {", ".join(ACTION_KINDS)}, got {kind!r}'
    if kind == "goto":
        url = item.get("url", item.get("value", item.get("selector")))
        if not isinstance(url, str) or not url.strip():
            return 'goto needs "url"'
        return Action("goto", url.strip())
    selector = item.get("selector")
    if not isinstance(selector, str) or not selector.strip():
        return f'{kind} needs "selector" (a non-empty string)'
    value = item.get("value")
    if value is not None and not isinstance(value, str | int | float):
        return f"{kind}'s value must be a string"
    text = None if value is None else str(value)
    if kind in _NEEDS_VALUE and text is None:
        return f'{kind} needs "value"'
    if kind == "wait_for" and text is not None and text not in WAIT_STATES:
        return f"wait_for's value must be one of {', '.join(WAIT_STATES)}, got {text!r}"
    if kind == "click" and text is not None:
        text = None  # a click takes no value; a model adding one is harmless
    return Action(cast(ActionKind, kind), selector.strip(), text)


def selectors_in(arguments: object) -> list[str]:
    """The element selectors a browser call names, one entry per attempt, in order.

    Counts a top-level `selector` and every sub-action's (a `goto`'s URL is not
    a selector). Never raises: unreadable arguments name none.

    Args:
        arguments: the call's arguments as recorded (`ToolCall.arguments`).

    Returns:
        The selectors, stripped, e.g. `["#send", "#send", "#out"]`.
    """
    if not isinstance(arguments, Mapping):
        return []
    found: list[str] = []
    top = arguments.get("selector")
    if isinstance(top, str) and top.strip():
        found.append(top.strip())
    raw = arguments.get("actions")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return found
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, Mapping) and item.get("action") != "goto":
                selector = item.get("selector")
                if isinstance(selector, str) and selector.strip():
                    found.append(selector.strip())
    return found
