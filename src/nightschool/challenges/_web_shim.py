"""`playwright.sync_api` for web challenges: a subset of Playwright's sync API, served by the host.

nightschool never imports this module. Its source text is written into a web
challenge's workspace as `playwright/sync_api.py` (`_webrun`), so a solution's
`from playwright.sync_api import sync_playwright` finds it (the sandbox's
system Python has no Playwright, and Chromium cannot start under the sandbox's
address-space limit). Every call becomes one JSON request on the bridge's file
descriptors (`NS_BRIDGE_FDS`, `read,write`); nightschool's browser tool runs
it in a real Chromium on the host, loopback only, and answers. Standard
library only, Python 3.11.

Supported: `sync_playwright()` (a context manager, or `.start()`/`.stop()`),
`p.chromium.launch(...)` (arguments ignored), `browser.new_page()`,
`browser.new_context().new_page()`, `browser.close()`; on a `Page`: `goto`,
`url`, `click`, `dblclick` (one click), `fill`, `type`, `press`,
`select_option`, `check`/`uncheck` (a click when the state differs),
`is_checked`, `wait_for_selector` (returns the element), `query_selector`,
`query_selector_all`, `inner_text`, `text_content`, `locator`,
`get_by_label`, `get_by_text`, `get_by_role`, `get_by_placeholder`,
`screenshot`, `wait_for_timeout`, `wait_for_load_state`, `title`, `close`; a
`Locator` has the element methods plus `count`, `nth`, `first`, `last`, `all`,
`all_inner_texts`, `all_text_contents`, `locator`, `query_selector`,
`query_selector_all`; an element handle (`ElementHandle`) is a `Locator` of
one match.
A failed call raises `Error` (`TimeoutError` for a time-out).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import time
from typing import Any

__all__ = [
    "Browser",
    "BrowserContext",
    "ElementHandle",
    "Error",
    "Locator",
    "Page",
    "Playwright",
    "TimeoutError",
    "sync_playwright",
]


class Error(Exception):
    """A browser call failed (Playwright's `playwright.sync_api.Error`)."""

    @property
    def message(self) -> str:
        """The error text."""
        return str(self)


class TimeoutError(Error):
    """A browser call timed out."""


_ids = itertools.count(1)


class _Bridge:
    def __init__(self) -> None:
        spec = os.environ.get("NS_BRIDGE_FDS", "")
        try:
            read_fd, write_fd = (int(part) for part in spec.split(","))
            self._reader = os.fdopen(read_fd, "rb", buffering=0, closefd=False)
            self._writer = os.fdopen(write_fd, "wb", buffering=0, closefd=False)
        except (ValueError, OSError) as exc:
            raise Error(
                "no browser here: run the program the way the task says (the checker "
                f"starts it with NS_PAGE_URL and the browser bridge) ({exc})"
            ) from None
        self._pending = b""

    def _line(self) -> bytes:
        while b"\n" not in self._pending:
            chunk = self._reader.read(65536)
            if not chunk:
                raise Error("the browser bridge closed")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def call(self, op: str, **args: Any) -> Any:
        ident = f"s{os.getpid()}-{next(_ids)}"
        self._writer.write((json.dumps({"id": ident, "op": op, **args}) + "\n").encode())
        while True:
            reply = json.loads(self._line())
            if reply.get("id") == ident:
                break
        if "error" in reply:
            text = str(reply["error"])
            raise (TimeoutError if "Timeout" in text else Error)(text)
        return reply.get("result")


_BRIDGE: list[_Bridge] = []


def _call(op: str, **args: Any) -> Any:
    if not _BRIDGE:
        _BRIDGE.append(_Bridge())
    return _BRIDGE[0].call(op, **args)


def _quote(text: str, exact: bool) -> str:
    # Playwright quotes these selectors as JSON.stringify does: non-ASCII stays as it is
    return json.dumps(text, ensure_ascii=False) + ("s" if exact else "i")


class Locator:
    """Elements found by a selector, resolved when an action or read runs."""

    def __init__(self, page: Page, selector: str) -> None:
        self.page = page
        self._selector = selector

    def __repr__(self) -> str:
        return f"<Locator selector={self._selector!r}>"

    def _act(self, kind: str, value: str | None = None) -> None:
        self.page._act(kind, self._selector, value)

    def click(self, **_options: Any) -> None:
        """Click the first match."""
        self._act("click")

    def dblclick(self, **_options: Any) -> None:
        """Click the first match (once)."""
        self._act("click")

    def fill(self, value: str, **_options: Any) -> None:
        """Replace the text of the first matching input."""
        self._act("fill", str(value))

    def type(self, text: str, **_options: Any) -> None:
        """Type `text` into the first match (as `fill`)."""
        self._act("fill", str(text))

    def press(self, key: str, **_options: Any) -> None:
        """Press `key` (`Enter`, `Tab`) on the first match."""
        self._act("press", str(key))

    def select_option(
        self, value: str | None = None, *, label: str | None = None, **_options: Any
    ) -> list[str]:
        """Choose the option with this value or label in the first matching `<select>`."""
        chosen = label if value is None else value
        if chosen is None:
            raise Error("select_option needs a value or a label")
        self._act("select", str(chosen))
        return [str(chosen)]

    def is_checked(self, **_options: Any) -> bool:
        """Whether the first matching checkbox or radio button is checked."""
        return bool(self.page._texts(f"{self._selector} >> nth=0 >> :scope:checked", wait=False))

    def check(self, **_options: Any) -> None:
        """Tick the first matching checkbox or radio button (a click when it is not ticked)."""
        if not self.is_checked():
            self._act("click")

    def uncheck(self, **_options: Any) -> None:
        """Untick the first matching checkbox (a click when it is ticked)."""
        if self.is_checked():
            self._act("click")

    def wait_for(self, *, state: str = "visible", **_options: Any) -> None:
        """Wait until the first match is `visible`, `hidden`, `attached` or `detached`."""
        self._act("wait_for", state)

    def inner_text(self, **_options: Any) -> str:
        """The rendered text of the first match."""
        return self.page._texts(f"{self._selector} >> nth=0", wait=True)[0]

    def text_content(self, **_options: Any) -> str:
        """The text of the first match (rendered text, as `inner_text`)."""
        return self.inner_text()

    def all_inner_texts(self) -> list[str]:
        """The rendered text of every match, in page order (at most 50)."""
        return self.page._texts(self._selector, wait=False)

    def all_text_contents(self) -> list[str]:
        """As `all_inner_texts`."""
        return self.all_inner_texts()

    def count(self) -> int:
        """How many elements match now (at most 50 are counted)."""
        return len(self.all_inner_texts())

    def nth(self, index: int) -> Locator:
        """The match at `index` (from 0; -1 is the last)."""
        return Locator(self.page, f"{self._selector} >> nth={int(index)}")

    @property
    def first(self) -> Locator:
        """The first match."""
        return self.nth(0)

    @property
    def last(self) -> Locator:
        """The last match."""
        return self.nth(-1)

    def all(self) -> list[Locator]:
        """One locator per current match."""
        return [self.nth(i) for i in range(self.count())]

    def locator(self, selector: str) -> Locator:
        """Elements matching `selector` inside these."""
        return Locator(self.page, f"{self._selector} >> {selector}")

    def get_by_text(self, text: str, *, exact: bool = False) -> Locator:
        """Elements inside these whose text is `text`."""
        return self.locator(f"internal:text={_quote(text, exact)}")

    def query_selector(self, selector: str) -> Locator | None:
        """The first element matching `selector` inside the first of these, or None."""
        return _handle(self.first.locator(selector))

    def query_selector_all(self, selector: str) -> list[Locator]:
        """Every element matching `selector` inside the first of these (at most 50)."""
        return self.first.locator(selector).all()

    def get_by_role(self, role: str, *, name: str | None = None, exact: bool = False) -> Locator:
        """Elements inside these with ARIA `role` (and accessible `name`)."""
        named = f"[name={_quote(name, exact)}]" if name is not None else ""
        return self.locator(f"internal:role={role}{named}")


def _handle(found: Locator) -> Locator | None:
    """`query_selector`'s answer: the first of `found` (an element handle), or None."""
    return found.first if found.count() else None


class Page:
    """One browser tab on the task's site."""

    def __init__(self) -> None:
        self._url = "about:blank"
        self._closed = False

    def _act(self, kind: str, selector: str, value: str | None = None) -> None:
        self._track(_call("act", kind=kind, selector=selector, value=value))

    def _texts(self, selector: str, *, wait: bool) -> list[str]:
        result = _call("read", selector=selector, wait=wait)
        self._track(result)
        return [str(text) for text in result.get("texts", [])]

    def _track(self, result: Any) -> None:
        if isinstance(result, dict) and result.get("url"):
            self._url = str(result["url"])

    @property
    def url(self) -> str:
        """The address of the page now."""
        return self._url

    def goto(self, url: str, **_options: Any) -> None:
        """Open `url` (the task's site only) and wait for its load event."""
        self._track(_call("goto", url=str(url)))

    def reload(self, **_options: Any) -> None:
        """Open the current address again."""
        self.goto(self._url)

    def title(self) -> str:
        """The page's `<title>` text."""
        texts = self._texts("title", wait=False)
        return texts[0] if texts else ""

    def locator(self, selector: str) -> Locator:
        """Elements matching `selector` (CSS, `text=...`, `xpath=...`)."""
        return Locator(self, selector)

    def get_by_label(self, text: str, *, exact: bool = False) -> Locator:
        """The form control labelled `text`."""
        return Locator(self, f"internal:label={_quote(text, exact)}")

    def get_by_text(self, text: str, *, exact: bool = False) -> Locator:
        """Elements whose text is `text`."""
        return Locator(self, f"internal:text={_quote(text, exact)}")

    def get_by_placeholder(self, text: str, *, exact: bool = False) -> Locator:
        """Inputs whose placeholder is `text`."""
        return Locator(self, f"internal:attr=[placeholder={_quote(text, exact)}]")

    def get_by_role(self, role: str, *, name: str | None = None, exact: bool = False) -> Locator:
        """Elements with ARIA `role` (`button`, `link`, `textbox`) and accessible `name`."""
        named = f"[name={_quote(name, exact)}]" if name is not None else ""
        return Locator(self, f"internal:role={role}{named}")

    def click(self, selector: str, **options: Any) -> None:
        """Click the first element matching `selector`."""
        self.locator(selector).click(**options)

    def dblclick(self, selector: str, **options: Any) -> None:
        """Click the first element matching `selector` (once)."""
        self.locator(selector).click(**options)

    def fill(self, selector: str, value: str, **options: Any) -> None:
        """Replace the text of the first input matching `selector`."""
        self.locator(selector).fill(value, **options)

    def type(self, selector: str, text: str, **options: Any) -> None:
        """Type into the first input matching `selector` (as `fill`)."""
        self.locator(selector).fill(text, **options)

    def press(self, selector: str, key: str, **options: Any) -> None:
        """Press `key` on the first element matching `selector`."""
        self.locator(selector).press(key, **options)

    def select_option(
        self, selector: str, value: str | None = None, *, label: str | None = None, **options: Any
    ) -> list[str]:
        """Choose an option (by value or label) of the first `<select>` matching `selector`."""
        return self.locator(selector).select_option(value, label=label, **options)

    def check(self, selector: str, **options: Any) -> None:
        """Tick the checkbox or radio button matching `selector`."""
        self.locator(selector).check(**options)

    def uncheck(self, selector: str, **options: Any) -> None:
        """Untick the checkbox matching `selector`."""
        self.locator(selector).uncheck(**options)

    def is_checked(self, selector: str, **options: Any) -> bool:
        """Whether the checkbox or radio button matching `selector` is ticked."""
        return self.locator(selector).is_checked(**options)

    def wait_for_selector(
        self, selector: str, *, state: str = "visible", **_options: Any
    ) -> Locator | None:
        """Wait until an element matching `selector` is in `state`; its first match.

        The match is an element handle (a `Locator` of one element here); None for
        `hidden` and `detached`.
        """
        self.locator(selector).wait_for(state=state)
        return None if state in ("hidden", "detached") else self.locator(selector).first

    def query_selector(self, selector: str) -> Locator | None:
        """The first element matching `selector` now (an element handle), or None."""
        return _handle(self.locator(selector))

    def query_selector_all(self, selector: str) -> list[Locator]:
        """Every element matching `selector` now, in page order (at most 50)."""
        return self.locator(selector).all()

    def inner_text(self, selector: str, **options: Any) -> str:
        """The rendered text of the first element matching `selector`."""
        return self.locator(selector).inner_text(**options)

    def text_content(self, selector: str, **options: Any) -> str:
        """The text of the first element matching `selector`."""
        return self.locator(selector).inner_text(**options)

    def screenshot(self, *, path: str | None = None, **_options: Any) -> bytes:
        """A PNG of the viewport; also written to `path` when given."""
        result = _call("screenshot")
        png = base64.b64decode(str(result.get("png_base64", "")))
        if path:
            with open(path, "wb") as handle:
                handle.write(png)
        return png

    def wait_for_timeout(self, timeout: float) -> None:
        """Sleep `timeout` milliseconds."""
        time.sleep(max(0.0, float(timeout)) / 1000)

    def wait_for_load_state(self, *_args: Any, **_options: Any) -> None:
        """Return at once: every `goto` and click already waits for the page."""

    def close(self, **_options: Any) -> None:
        """Close the tab (nothing to do here)."""
        self._closed = True

    def is_closed(self) -> bool:
        """Whether `close` was called."""
        return self._closed


class BrowserContext:
    """A browser context: hands out pages."""

    def new_page(self) -> Page:
        """A new tab."""
        return Page()

    def close(self) -> None:
        """Nothing to close."""


class Browser:
    """The browser the host runs."""

    def new_context(self, **_options: Any) -> BrowserContext:
        """A context."""
        return BrowserContext()

    def new_page(self, **_options: Any) -> Page:
        """A new tab."""
        return Page()

    def close(self) -> None:
        """Nothing to close: the host closes the browser."""


class _BrowserType:
    name = "chromium"

    def launch(self, **_options: Any) -> Browser:
        """The host's Chromium (options are ignored: it is always headless)."""
        return Browser()


class Playwright:
    """What `sync_playwright()` starts."""

    def __init__(self) -> None:
        self.chromium = _BrowserType()
        self.firefox = self.webkit = self.chromium

    def stop(self) -> None:
        """Nothing to stop."""


class _Manager:
    def __enter__(self) -> Playwright:
        return Playwright()

    def __exit__(self, *_exc: object) -> None:
        return None

    def start(self) -> Playwright:
        return Playwright()


def sync_playwright() -> _Manager:
    """Start the bridged Playwright; a context manager giving `Playwright` (`p.chromium`)."""
    return _Manager()


ElementHandle = Locator
"""Element handles (`query_selector`, `wait_for_selector`) are locators of one match here."""
