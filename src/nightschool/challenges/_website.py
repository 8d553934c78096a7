"""The pages of a web challenge, served on loopback while its solution runs, and what they saw.

A web challenge's setup script writes `SITE_FILE` (JSON, `Site.from_json`):
its pages by address, the forms that post somewhere (with where the browser
goes next), an optional login (a form whose fields must match, which sets a
session cookie) and the pages that need that login. `SiteServer` serves it on
`127.0.0.1` (a free port) with the standard library's HTTP server and records
every request in order (`Hit`): method, path, query, the posted fields (order
kept, repeats kept) and whether the login cookie came with it. The validator
reads that record: what was submitted, in what order.

The server never echoes a posted value into a page (no page can be made to
run a solver's script), answers only the site's own addresses, and caps what
it reads (`MAX_BODY_BYTES`) and keeps (`MAX_HITS`).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

SITE_FILE = "site.json"
"""What a web challenge's setup script writes: the site (`Site.from_json`)."""

MAX_BODY_BYTES = 65536
"""Largest request body read, bytes (a form post is a few hundred)."""

MAX_HITS = 2000
"""Requests recorded at most; later ones are still answered."""

SESSION_COOKIE = "ns_session"
"""Name of the cookie a successful login sets."""

READY_PATH = "/__nightschool_ready"
"""An empty page, not recorded: what the host loads to start the browser before the run."""

IGNORED_PATHS = frozenset({"/favicon.ico", READY_PATH})
"""Requests made by the browser or the host, not the solution: not recorded."""


@dataclass(frozen=True)
class Login:
    """A login form: posting `fields` with these values sets the session cookie.

    Attributes:
        fields: field name -> the value that must be posted.
        ok: where the browser goes after a good login.
        bad: where it goes after a bad one.
    """

    fields: dict[str, str]
    ok: str
    bad: str


@dataclass(frozen=True)
class Site:
    """What the server serves.

    Attributes:
        pages: address (`/path` or `/path?query`) -> HTML. A request with a
            query falls back to the page of its bare path.
        start: the address a solution is sent to first (`NS_PAGE_URL`).
        posts: form action path -> where the browser goes after posting (303).
        logins: form action path -> `Login`.
        guarded: paths that need the login cookie; without it a request is
            sent to `start` (303).
    """

    pages: dict[str, str]
    start: str = "/"
    posts: dict[str, str] = field(default_factory=dict)
    logins: dict[str, Login] = field(default_factory=dict)
    guarded: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, text: str) -> Site:
        """Read a site from `SITE_FILE`'s text.

        Raises:
            ValueError: not a JSON object with `pages`, or a malformed entry.
        """
        raw = json.loads(text)
        if not isinstance(raw, dict) or not isinstance(raw.get("pages"), dict):
            raise ValueError(f"{SITE_FILE} must be a JSON object with 'pages'")
        try:
            logins = {
                str(path): Login(
                    {str(k): str(v) for k, v in spec["fields"].items()},
                    str(spec["ok"]),
                    str(spec["bad"]),
                )
                for path, spec in dict(raw.get("logins", {})).items()
            }
            return cls(
                pages={str(k): str(v) for k, v in raw["pages"].items()},
                start=str(raw.get("start", "/")),
                posts={str(k): str(v) for k, v in dict(raw.get("posts", {})).items()},
                logins=logins,
                guarded=tuple(str(p) for p in raw.get("guarded", ())),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed {SITE_FILE}: {exc!r}") from exc

    def to_json(self) -> str:
        """The site as `SITE_FILE` holds it (`from_json` reads it back)."""
        return json.dumps(asdict(self), separators=(",", ":"))


@dataclass(frozen=True)
class Hit:
    """One request the site answered.

    Attributes:
        method: `GET` or `POST`.
        path: the path, without the query.
        query: the query string ("" when none).
        form: posted fields as (name, value) pairs, in the order sent.
        authed: the request carried this site's login cookie.
        status: the HTTP status answered.
    """

    method: str
    path: str
    query: str
    form: tuple[tuple[str, str], ...]
    authed: bool
    status: int

    def as_json(self) -> dict[str, Any]:
        """The hit as the validator reads it (`form` as a list of pairs)."""
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "form": [list(pair) for pair in self.form],
            "authed": self.authed,
            "status": self.status,
        }


class SiteServer:
    """Serves a `Site` on 127.0.0.1 from a thread; records the requests (`hits`).

    Args:
        site: the pages and forms.
    """

    def __init__(self, site: Site) -> None:
        self.site = site
        self.token = secrets.token_hex(16)
        """The value of this site's login cookie (a new one per server)."""
        self._hits: list[Hit] = []
        self.last_hit = time.monotonic()
        """When the last request came (`time.monotonic()`; the start time before any)."""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>` (the server must be started)."""
        if self._server is None:
            raise RuntimeError("the site server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def start_url(self) -> str:
        """The address the solution opens first."""
        return self.origin + self.site.start

    def hits(self) -> list[Hit]:
        """A copy of the requests recorded so far, in order."""
        with self._lock:
            return list(self._hits)

    def start(self) -> None:
        """Bind a free loopback port and serve from a daemon thread."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="nightschool-site", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _record(self, hit: Hit) -> None:
        with self._lock:
            if len(self._hits) < MAX_HITS:
                self._hits.append(hit)

    def answer(
        self, method: str, target: str, body: bytes, cookie: str
    ) -> tuple[int, str, dict[str, str]]:
        """(status, HTML, headers) for one request, recorded on the way.

        Args:
            method: `GET` or `POST`.
            target: the request target (`/path?query`).
            body: the request body (a posted form, URL-encoded).
            cookie: the `Cookie` header ("" when none).
        """
        self.last_hit = time.monotonic()
        parts = urlsplit(target)
        path, query = parts.path or "/", parts.query
        if path == READY_PATH:
            return 200, "<!doctype html><title>ready</title>", {}
        authed = f"{SESSION_COOKIE}={self.token}" in [c.strip() for c in cookie.split(";")]
        form: tuple[tuple[str, str], ...] = ()
        if method == "POST":
            pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
            form = tuple((str(k), str(v)) for k, v in pairs)
        status, html, headers = self._route(method, path, query, form, authed)
        if path not in IGNORED_PATHS:
            self._record(Hit(method, path, query, form, authed, status))
        return status, html, headers

    def _route(
        self,
        method: str,
        path: str,
        query: str,
        form: tuple[tuple[str, str], ...],
        authed: bool,
    ) -> tuple[int, str, dict[str, str]]:
        site = self.site
        if method == "POST":
            login = site.logins.get(path)
            if login is not None:
                sent = dict(form)
                if all(sent.get(k) == v for k, v in login.fields.items()):
                    cookie = f"{SESSION_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    return 303, "", {"Location": login.ok, "Set-Cookie": cookie}
                return 303, "", {"Location": login.bad}
            if path in site.posts:
                if path in site.guarded and not authed:
                    return 303, "", {"Location": site.start}
                return 303, "", {"Location": site.posts[path]}
            return 404, _NOT_FOUND, {}
        if path in site.guarded and not authed:
            return 303, "", {"Location": site.start}
        html = site.pages.get(f"{path}?{query}" if query else path) or site.pages.get(path)
        if html is None:
            return 404, _NOT_FOUND, {}
        return 200, html, {}


_NOT_FOUND = "<!doctype html><title>Not found</title><p>No page here.</p>"


def _handler(owner: SiteServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "nightschool-site"

        def log_message(self, *_args: object) -> None:
            pass

        def _answer(self, method: str) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES)
            body = self.rfile.read(length) if length > 0 else b""
            status, html, headers = owner.answer(
                method, self.path, body, self.headers.get("Cookie", "")
            )
            data = html.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

    return Handler


@contextmanager
def serving(site: Site) -> Iterator[SiteServer]:
    """Serve `site` for the duration of the block."""
    server = SiteServer(site)
    server.start()
    try:
        yield server
    finally:
        server.stop()
