"""A small site served on loopback for the browser tests, and a browser session per test.

The site (`Site`): `/form` (a form that POSTs to `/submit`, which records what
was sent), `/hostile` (tries to reach non-loopback hosts every way a page can),
`/navigate-out` (sends the page itself to example.com), `/redirect-out` (a 302
to a non-loopback address), `/busy` (spins in JavaScript after loading),
`/missing` (404). Every request the server answered is in `Site.paths`, except
Chromium's own `/favicon.ico` fetch, which it makes or skips by timing (a CI run
once saw `['/form', '/favicon.ico']`).

The real Chromium is used; the tests skip only where /usr/bin/chromium is absent
outside CI (scripts/install.sh installs it; in CI a missing browser fails them).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from nightschool.browser import BrowserConfig, BrowserSession

HAS_CHROMIUM = Path("/usr/bin/chromium").exists() or shutil.which("chromium") is not None
needs_chromium = pytest.mark.skipif(
    not HAS_CHROMIUM and not os.environ.get("CI"),
    reason="needs Debian's chromium (installed by scripts/install.sh); required in CI",
)

FORM = (
    """<!doctype html><html><head><title>Sign up</title></head><body>
<h1>Sign up</h1>
<form id="signup" method="post" action="/submit">
  <label>Name <input id="name" name="name"></label>
  <label>Colour <select id="colour" name="colour">
    <option value="r">Red</option><option value="g">Green</option><option value="b">Blue</option>
  </select></label>
  <input id="code" name="code"
    onkeydown="if (event.key === 'Enter') { event.preventDefault(); this.value += '!'; }">
  <button id="send" type="submit">Send</button>
</form>
<button id="hello" type="button"
  onclick="document.getElementById('out').textContent = 'hello ' +
    document.getElementById('name').value">Hello</button>
<div id="out"></div>
<ul><li class="item">one</li><li class="item">two</li><li class="item">three</li></ul>
<p id="terms">"""
    + " ".join(f"term {i}." for i in range(60))
    + """</p>
</body></html>"""
)

HOSTILE = """<!doctype html><html><head><title>hostile</title></head><body>
<p id="status">loading</p>
<img src="http://10.255.255.1/pixel.png">
<img src="http://example.com/logo.png">
<iframe src="http://example.com/frame"></iframe>
<script>
const seen = [];
function note(what) {
  seen.push(what);
  document.getElementById('status').textContent = seen.join(' | ');
}
fetch('http://example.com/data').then(() => note('fetch: reached'), e => note('fetch: ' + e.name));
const xhr = new XMLHttpRequest();
xhr.open('GET', 'http://10.255.255.1/xhr');
xhr.onload = () => note('xhr: reached');
xhr.onerror = () => note('xhr: error');
xhr.send();
try {
  const ws = new WebSocket('ws://example.com/socket');
  ws.onopen = () => note('ws: open');
  ws.onclose = () => note('ws: closed');
} catch (e) { note('ws: ' + e.name); }
</script></body></html>"""

NAVIGATE_OUT = """<!doctype html><html><body><p>leaving</p>
<script>setTimeout(() => { location.href = 'http://example.com/away'; }, 50);</script>
</body></html>"""

BUSY = """<!doctype html><html><body><p id="p">busy soon</p>
<script>setTimeout(() => { while (true) {} }, 200);</script></body></html>"""


@dataclass
class Site:
    """The test site: its root URL, and what it saw."""

    url: str
    paths: list[str] = field(default_factory=list)
    submissions: list[dict[str, str]] = field(default_factory=list)


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path != "/favicon.ico":
                site.paths.append(self.path)
            pages = {
                "/form": FORM,
                "/hostile": HOSTILE,
                "/navigate-out": NAVIGATE_OUT,
                "/busy": BUSY,
            }
            if self.path in pages:
                self._send(200, pages[self.path])
            elif self.path == "/redirect-out":
                self._send(302, "moved", {"Location": "http://10.255.255.1/inside"})
            else:
                self._send(404, "<p>not here</p>")

        def do_POST(self) -> None:
            site.paths.append(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            sent = {key: values[0] for key, values in form.items()}
            site.submissions.append(sent)
            name = sent.get("name", "")
            self._send(200, f'<p id="thanks">Thanks {name} ({sent.get("colour", "")})</p>')

    return Handler


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """The test site on 127.0.0.1 (a free port), for the whole module."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    found = Site(url=f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(found)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fresh_site(site: Site) -> Site:
    """The module's site with its records emptied for this test."""
    site.paths.clear()
    site.submissions.clear()
    return site


@pytest.fixture
def session() -> Iterator[BrowserSession]:
    """A browser session with test-sized limits (generous: the test machine may be busy)."""
    config = BrowserConfig(action_timeout_s=3.0, navigation_timeout_s=15.0, sequence_timeout_s=60.0)
    browser = BrowserSession(config, name="test")
    try:
        yield browser
    finally:
        browser.close()
