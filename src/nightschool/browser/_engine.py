"""Finding Chromium, starting it under Playwright, and killing one that stopped answering.

Playwright's sync API belongs to the thread that started it: an `Engine` is made,
used and stopped on one thread (`BrowserSession`'s worker). Each engine runs
its own Chromium process, tagged on its command line with a unique
`--nightschool-browser=<hex>` switch (Chromium ignores unknown switches) so that
`kill_tagged` can find exactly that process from another thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from nightschool.browser._loopback import chromium_network_args
from nightschool.browser._types import BrowserUnavailableError

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

DEFAULT_CHROMIUM = Path("/usr/bin/chromium")
"""Where Debian's `chromium` package (installed by scripts/install.sh) puts the browser."""

INSTALL_HINT = "scripts/install.sh installs it (on Debian: apt-get install chromium)"
"""What to do when Chromium is missing."""

TAG_SWITCH = "--nightschool-browser"
"""Command-line switch that tags an engine's Chromium process (`kill_tagged`)."""


def find_chromium(executable: Path | None = None) -> Path:
    """The Chromium executable to drive.

    Args:
        executable: a chosen path; None looks for `DEFAULT_CHROMIUM`, then
            `chromium` on PATH.

    Returns:
        An existing executable file.

    Raises:
        BrowserUnavailableError: not found (the message names where it looked).
    """
    if executable is not None:
        if executable.is_file() and os.access(executable, os.X_OK):
            return executable
        raise BrowserUnavailableError(
            f"the browser tool needs Chromium, and {executable} is not an executable file",
            hint=INSTALL_HINT,
        )
    if DEFAULT_CHROMIUM.is_file() and os.access(DEFAULT_CHROMIUM, os.X_OK):
        return DEFAULT_CHROMIUM
    found = shutil.which("chromium")
    if found:
        return Path(found)
    raise BrowserUnavailableError(
        f"the browser tool needs Chromium: no executable {DEFAULT_CHROMIUM} and no "
        "`chromium` on PATH",
        hint=INSTALL_HINT,
    )


def check_playwright() -> None:
    """Make sure Playwright's Python package can be imported.

    Raises:
        BrowserUnavailableError: it is not installed (with the install hint).
    """
    try:
        # function-local: start-up time (Playwright loads greenlet and its driver's bindings)
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        raise BrowserUnavailableError(
            f"the browser tool needs the playwright package ({exc})",
            hint="pip install 'nightschool[browser]' (Playwright drives the system Chromium; "
            "no `playwright install` needed)",
        ) from exc


class Engine:
    """Playwright and one tagged, loopback-only Chromium; every method on one thread.

    Args:
        executable: the Chromium to start (`find_chromium`).
    """

    def __init__(self, executable: Path) -> None:
        self.executable = executable
        self.tag = f"{TAG_SWITCH}={uuid.uuid4().hex}"
        """The switch on this engine's Chromium command line."""
        self.browser: Browser | None = None
        self._playwright: Playwright | None = None
        self._dead_proxy: socket.socket | None = None

    def start(self) -> Browser:
        """Start Playwright and Chromium (headless), once; return the browser.

        Raises:
            BrowserUnavailableError: Playwright is missing or Chromium would not start.
        """
        if self.browser is not None and self.browser.is_connected():
            return self.browser
        self.stop()
        check_playwright()
        # function-local: start-up time (see check_playwright)
        from playwright.sync_api import Error, sync_playwright

        dead = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        self._dead_proxy = dead
        try:
            self._playwright = sync_playwright().start()
            self.browser = self._playwright.chromium.launch(
                executable_path=str(self.executable),
                headless=True,
                args=[self.tag, *chromium_network_args(dead.getsockname()[1])],
            )
        except Error as exc:
            self.stop()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BrowserUnavailableError(
                f"Chromium at {self.executable} would not start: {first}", hint=INSTALL_HINT
            ) from exc
        return self.browser

    def stop(self) -> None:
        """Close Chromium and Playwright (errors of an already dead browser are ignored)."""
        browser, self.browser = self.browser, None
        playwright, self._playwright = self._playwright, None
        dead, self._dead_proxy = self._dead_proxy, None
        if browser is not None:
            with contextlib.suppress(Exception):  # a killed browser: nothing left to close
                browser.close()
        if playwright is not None:
            with contextlib.suppress(Exception):
                playwright.stop()
        if dead is not None:
            dead.close()


def kill_tagged(tag: str) -> int:
    """SIGKILL every process whose command line holds `tag`; safe from any thread.

    Killing Chromium's main process makes Playwright's pending calls fail at once
    (`TargetClosedError`) and its child processes exit.

    Args:
        tag: an `Engine.tag`.

    Returns:
        How many processes were signalled.
    """
    wanted = tag.encode()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if wanted in argv:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                continue
    return killed
