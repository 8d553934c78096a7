"""Who may see the dashboard: the API key, presented once, then a signed cookie.

A browser cannot send `Authorization: Bearer`, and a key in a URL ends up in
history, logs and `Referer` headers. So the login page posts the key in a form
body; the answer sets a cookie holding not the key but an HMAC-SHA256 of an
issue time under the key (`session_cookie`), HttpOnly, SameSite=Strict, path
`/dashboard`, valid for `SESSION_MAX_AGE_S`. Changing the key invalidates every
cookie. A bearer header is accepted too (scripts, the benchmark).

Without a key (the loopback default of `nightschool serve`) there is no login,
but two browser attacks remain and are closed here: another web site making
the browser post a retraction (every form carries a token derived from a
per-process secret, and a cross-origin `Origin` is refused) and DNS rebinding
(a hostile name resolving to 127.0.0.1: requests whose `Host` is not a
loopback name are refused).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from starlette.requests import Request

from nightschool.server._net import is_loopback

COOKIE_NAME = "nightschool_dashboard"
"""The session cookie's name."""

SESSION_MAX_AGE_S = 7 * 24 * 3600
"""How long a login lasts, seconds (a week)."""

DASHBOARD_PATH = "/dashboard"
"""Where the dashboard is served (and the cookie's path)."""

_SESSION_CONTEXT = b"nightschool-dashboard-session:"


def _sign(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


class Gate:
    """The dashboard's access checks for one server.

    Args:
        api_key: the server's key; None means no login (loopback only).
        now: clock, epoch seconds (tests pass their own).
    """

    def __init__(self, api_key: str | None, now: Callable[[], float] = time.time) -> None:
        self._key = api_key.encode() if api_key else None
        self._form_secret = secrets.token_bytes(32)
        self._now = now

    @property
    def needs_login(self) -> bool:
        """Whether a key is configured (and so a login is required)."""
        return self._key is not None

    def check_key(self, candidate: str) -> bool:
        """Whether `candidate` is the key (constant time); False when no key is set."""
        if self._key is None:
            return False
        return hmac.compare_digest(candidate.strip().encode(), self._key)

    def session_cookie(self) -> str:
        """A fresh cookie value: `<issued epoch s>.<hex HMAC of it under the key>`.

        Raises:
            RuntimeError: no key is configured.
        """
        if self._key is None:
            raise RuntimeError("no API key: the dashboard has no login")
        issued = str(int(self._now()))
        return f"{issued}.{_sign(self._key, _SESSION_CONTEXT + issued.encode())}"

    def _valid_cookie(self, value: str | None) -> bool:
        if self._key is None or not value:
            return False
        issued, _, signature = value.partition(".")
        if not issued.isdigit() or not signature:
            return False
        expected = _sign(self._key, _SESSION_CONTEXT + issued.encode())
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return False
        age = self._now() - int(issued)
        return -60 <= age <= SESSION_MAX_AGE_S

    def _valid_bearer(self, header: str | None) -> bool:
        if self._key is None or not header:
            return False
        scheme, _, token = header.strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self._key)

    def authorised(self, request: Request) -> bool:
        """Whether `request` may read the dashboard: no key set, a valid cookie or bearer.

        A key in the query string is never accepted.
        """
        if self._key is None:
            return True
        return self._valid_cookie(request.cookies.get(COOKIE_NAME)) or self._valid_bearer(
            request.headers.get("authorization")
        )

    def host_refusal(self, request: Request) -> str | None:
        """Why `request` is refused before anything else, or None.

        Without a key, a `Host` that is not a loopback name is refused (DNS
        rebinding). On a POST, an `Origin` of another host is refused (forged
        cross-site form).
        """
        host = request.headers.get("host", "")
        hostname = urlsplit(f"//{host}").hostname or ""
        if self._key is None and host and not is_loopback(hostname):
            return (
                f"this dashboard runs without an API key and only answers to loopback "
                f"names (got Host {hostname!r})"
            )
        origin = request.headers.get("origin")
        if (
            request.method == "POST"
            and origin
            and origin != "null"
            and urlsplit(origin).netloc.lower() != host.lower()
        ):
            return "a form from another site was refused"
        return None

    def form_token(self, action: str) -> str:
        """The token a form for `action` (`retract:<id>`, `logout`) must send back."""
        return _sign(self._form_secret, action.encode())

    def check_form_token(self, action: str, token: str) -> bool:
        """Whether `token` is the form token of `action` (constant time)."""
        return hmac.compare_digest(token.encode(), self.form_token(action).encode())


def safe_next(target: str | None) -> str:
    """The page to go to after login: a dashboard path, never another site."""
    if (
        target
        and target.startswith(DASHBOARD_PATH)
        and not target.startswith("//")
        and "\\" not in target
        and all(ch.isprintable() for ch in target)
    ):
        return target
    return f"{DASHBOARD_PATH}/"
