"""Shared types of the browser tool: settings, sub-actions, results, errors (no Playwright)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from nightschool.errors import InfrastructureError

BROWSER_TOOL_NAME = "browser"
"""The chat agent's name for the tool (`agent.tools`); the outcome heuristics look for it."""

SEQUENCE_ABORTED_BANNER = "⚠ SEQUENCE ABORTED"
"""Banner of a result whose sequence stopped early (seed 002, "Browser `interact`
abort semantics"); the outcome heuristics fail the turn on it. Rendered as
`⚠ SEQUENCE ABORTED: <reason>` with reason `goto_failed`, `<action>_failed` or
`time_limit`."""

ActionKind = Literal["goto", "click", "fill", "select", "press", "wait_for"]
"""What one `interact` sub-action does (`goto` takes a URL, the others a selector)."""

ACTION_KINDS: tuple[ActionKind, ...] = ("goto", "click", "fill", "select", "press", "wait_for")
"""Every sub-action `interact` accepts, in the order the tool's description lists them."""

WaitState = Literal["visible", "hidden", "attached", "detached"]
"""A state `wait_for` waits for."""

WAIT_STATES: tuple[WaitState, ...] = ("visible", "hidden", "attached", "detached")
"""States `wait_for` accepts as its value (default `visible`)."""


class BrowserConfig(BaseModel):
    """Limits and setup of one browser session (one Chromium, one context)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    executable: Path | None = Field(
        default=None,
        description="Chromium to drive; None: /usr/bin/chromium, else `chromium` on PATH.",
    )
    action_timeout_s: float = Field(
        default=5.0, gt=0, description="Limit of one click, fill, select, press, wait_for or read."
    )
    navigation_timeout_s: float = Field(
        default=10.0, gt=0, description="Limit of one goto, until the page's load event."
    )
    sequence_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Limit of one whole operation (an interact's sub-actions together); "
        "reaching it stops the sequence and closes the context.",
    )
    hang_grace_s: float = Field(
        default=10.0,
        gt=0,
        description="Past an operation's own limit, how long the caller waits before it "
        "kills a Chromium that stopped answering (a page spinning in JavaScript).",
    )
    max_actions: int = Field(default=40, gt=0, description="Sub-actions one interact may hold.")
    max_text_chars: int = Field(
        default=1500, ge=100, description="Characters of page text one read returns (head kept)."
    )
    max_screenshot_bytes: int = Field(
        default=400_000, gt=0, description="Largest PNG a screenshot keeps, bytes."
    )
    viewport_width: int = Field(default=1024, gt=0, description="Page width, CSS pixels.")
    viewport_height: int = Field(default=768, gt=0, description="Page height, CSS pixels.")


@dataclass(frozen=True)
class Action:
    """One `interact` sub-action.

    Attributes:
        kind: what it does (`ACTION_KINDS`).
        selector: the element it acts on (a Playwright selector: CSS, `text=...`);
            for `goto`, the URL.
        value: text to fill, option to select (value or label), key to press
            (`Enter`, `Tab`, `Control+A`), state to wait for (`WAIT_STATES`);
            None where the kind takes none.
    """

    kind: ActionKind
    selector: str
    value: str | None = None

    def describe(self) -> str:
        """One line naming the action, e.g. `fill #name "Ada"`."""
        shown = f" {self.value!r}" if self.value is not None else ""
        return f"{self.kind} {self.selector}{shown}"


@dataclass(frozen=True)
class StepResult:
    """What one sub-action did.

    Attributes:
        index: its place in the sequence, from 1.
        action: the sub-action.
        error: why it failed (first line of Playwright's message), None when it worked.
        duration_s: wall-clock seconds it took.
    """

    index: int
    action: Action
    error: str | None
    duration_s: float

    @property
    def ok(self) -> bool:
        """Whether the sub-action worked."""
        return self.error is None


@dataclass(frozen=True)
class Screenshot:
    """A PNG of the page's viewport.

    Attributes:
        png: the image bytes (at most `BrowserConfig.max_screenshot_bytes`).
        url: the page it shows.
        width, height: pixels, read from the PNG header.
    """

    png: bytes
    url: str
    width: int
    height: int


@dataclass(frozen=True)
class BrowserResult:
    """What one browser operation returned: text for the model and, when it failed, why.

    Attributes:
        op: `goto`, `interact`, `read` or `screenshot`.
        text: what the model is shown (already capped; the banner first when
            `aborted_sequence`).
        error: why the operation failed, None when it worked. An interact whose
            sub-actions failed without stopping it names how many failed.
        aborted_sequence: the sequence stopped before its end (a failed goto,
            a failed sub-action under `stop_on_error`, or the time limit).
        abort_reason: `goto_failed`, `<action>_failed` or `time_limit`; None
            unless `aborted_sequence`.
        steps: the sub-actions run (an interact), in order.
        url: the page's address after the operation ("" before any page).
        screenshot: the image of a `screenshot` operation, else None.
        refused: non-loopback requests the page tried and were refused during
            the operation (URLs, at most `MAX_REFUSED_LISTED`).
        texts: a `read` of a selector: each matched element's text, in page
            order (at most `MAX_READ_MATCHES`, together within the text cap);
            empty otherwise.
    """

    op: str
    text: str
    error: str | None = None
    aborted_sequence: bool = False
    abort_reason: str | None = None
    steps: tuple[StepResult, ...] = ()
    url: str = ""
    screenshot: Screenshot | None = None
    refused: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()


MAX_REFUSED_LISTED = 5
"""Refused request URLs a result lists (the count is always given)."""


class BrowserUnavailableError(InfrastructureError):
    """The browser cannot run: Playwright or Chromium is missing, or Chromium will not start."""
