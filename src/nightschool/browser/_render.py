"""The text a model reads for each browser operation (pure functions, no Playwright)."""

from __future__ import annotations

import base64
import hashlib
import re
import struct
from collections.abc import Sequence
from typing import Any

from nightschool.browser._types import (
    MAX_REFUSED_LISTED,
    SEQUENCE_ABORTED_BANNER,
    Screenshot,
    StepResult,
)

_API_PREFIX = re.compile(r"^[A-Z][A-Za-z]*\.[a-z_A-Z]+: ")
"""`Page.click: ` / `Locator.fill: `: the Playwright method name in front of an error."""


def short_error(exc: BaseException) -> str:
    """The first line of a Playwright error, without its `Page.goto: ` prefix (300 chars)."""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else type(exc).__name__
    return _API_PREFIX.sub("", first)[:300]


def refused_note(refused: Sequence[str]) -> str:
    """A line naming the non-loopback requests refused during an operation ("" when none)."""
    if not refused:
        return ""
    shown = ", ".join(url[:120] for url in refused[:MAX_REFUSED_LISTED])
    left = len(refused) - MAX_REFUSED_LISTED
    more = f" and {left} more" if left > 0 else ""
    return f"refused {len(refused)} non-loopback request(s) of the page: {shown}{more}"


def describe_interact(
    steps: Sequence[StepResult],
    *,
    total: int,
    reason: str | None,
    url: str,
    refused: Sequence[str],
    limit_s: float,
) -> tuple[str, str | None]:
    """(text, error) of an interact: banner, one line per sub-action, the page, refusals.

    Args:
        steps: the sub-actions run, in order.
        total: how many the sequence held.
        reason: why it stopped early (`goto_failed`, `<action>_failed`,
            `time_limit`), None when it ran to its end.
        url: the page's address afterwards.
        refused: non-loopback requests refused meanwhile.
        limit_s: the sequence's time limit, seconds.

    Returns:
        The text shown to the model, and the error (None when every sub-action worked).
    """
    lines: list[str] = []
    not_run = total - len(steps)
    if reason is not None:
        lines.append(
            f"{SEQUENCE_ABORTED_BANNER}: {reason} (aborted_sequence: true; "
            f"{not_run} of {total} action(s) not run)"
        )
    for step in steps:
        outcome = "ok" if step.ok else f"FAILED: {step.error}"
        lines.append(f"{step.index}. {step.action.describe()} -> {outcome}")
    if reason == "time_limit":
        lines.append(
            f"the time limit of {limit_s:g} s for one operation was reached: the browser "
            "context was closed, the next call starts on a blank page"
        )
    lines.append(f"page: {url or '(none)'}")
    note = refused_note(refused)
    if note:
        lines.append(note)
    failed = [step for step in steps if not step.ok]
    if reason is not None:
        where = ""
        if failed:
            last = failed[-1]
            where = f" at action {last.index} ({last.action.describe()}): {last.error}"
        return "\n".join(lines), f"{SEQUENCE_ABORTED_BANNER}: {reason}{where}"
    if failed:
        first = failed[0]
        return "\n".join(lines), (
            f"{len(failed)} of {total} action(s) failed; first: action {first.index} "
            f"({first.action.describe()}): {first.error}"
        )
    return "\n".join(lines), None


def describe_hang(op: str, waited_s: float) -> str:
    """The text of an operation whose Chromium stopped answering and was killed."""
    banner = (
        f"{SEQUENCE_ABORTED_BANNER}: time_limit (aborted_sequence: true)\n"
        if op == "interact"
        else ""
    )
    return (
        f"{banner}the browser did not answer for {waited_s:.0f} s (a page busy in JavaScript?) "
        "and was killed: the page and its state are gone, the next call starts a fresh browser"
    )


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk; (0, 0) when it is not a PNG."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        return 0, 0
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def screenshot_record(shot: Screenshot, number: int) -> dict[str, Any]:
    """A screenshot as stored in a trajectory's `extra["screenshots"]` (JSON-safe).

    Args:
        shot: the image.
        number: its place among the turn's screenshots, from 1.

    Returns:
        `{"number", "url", "width", "height", "bytes", "sha256", "png_base64"}`:
        pixels, the PNG's size in bytes, its SHA-256 (hex) and the PNG itself in
        base64 (at most `BrowserConfig.max_screenshot_bytes` before encoding).
    """
    return {
        "number": number,
        "url": shot.url,
        "width": shot.width,
        "height": shot.height,
        "bytes": len(shot.png),
        "sha256": hashlib.sha256(shot.png).hexdigest(),
        "png_base64": base64.b64encode(shot.png).decode("ascii"),
    }
