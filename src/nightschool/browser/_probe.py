"""A self-test of the browser: start Chromium, open a page served on loopback, read it back."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path

from nightschool.browser._session import BrowserSession
from nightschool.browser._types import BrowserConfig, BrowserUnavailableError

PROBE_TEXT = "nightschool browser probe"
"""What the probe page shows (and the probe reads back)."""


@dataclass(frozen=True)
class ProbeResult:
    """A browser that works.

    Attributes:
        executable: the Chromium that ran.
        playwright: the Playwright package's version.
        seconds: wall-clock seconds from the first call to the page read back
            (Chromium's start included).
    """

    executable: Path
    playwright: str
    seconds: float


class _Page(BaseHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = f"<!doctype html><title>probe</title><p id='probe'>{PROBE_TEXT}</p>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def probe_browser(config: BrowserConfig | None = None) -> ProbeResult:
    """Start a browser session, open a page served on 127.0.0.1, read its text, close.

    Args:
        config: the session's settings (None: `BrowserConfig()`).

    Returns:
        What ran and how long it took.

    Raises:
        BrowserUnavailableError: Chromium or Playwright is missing, Chromium
            would not start, or it could not open or read the loopback page.
    """
    session = BrowserSession(config, name="probe")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, name="browser-probe", daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        opened = session.goto(url)
        read = session.read("#probe") if opened.error is None else opened
        if read.error is not None or PROBE_TEXT not in read.text:
            raise BrowserUnavailableError(
                f"Chromium at {session.executable} started but could not open a page on "
                f"loopback: {read.error or read.text[:200]}",
                hint="run `nightschool doctor` again; if it persists, reinstall chromium",
            )
        seconds = round(time.monotonic() - started, 2)
    finally:
        session.close()
        server.shutdown()
        server.server_close()
    return ProbeResult(session.executable, metadata.version("playwright"), seconds)
