"""Loopback only: which URLs a browser session may reach, and the Chromium flags that hold it.

Two layers, each enough on its own for plain HTTP:

1. Every request of the session's context goes through a route handler
   (`BrowserSession`) that lets through only `loopback_problem(url) is None`
   and aborts the rest (`net::ERR_BLOCKED_BY_CLIENT` in the page); WebSockets
   get their own route, and service workers are blocked (their requests would
   bypass the context's routes).
2. `chromium_network_args`: Chromium sends everything through a proxy that is
   a bound but never listening loopback port (connections are refused), with a
   bypass for the loopback names only, so what the route cannot see (the
   target of a redirect, which Playwright does not route again) still cannot
   leave. WebRTC may use only proxied UDP (none), and host names other than
   `localhost` do not resolve.

Loopback means exactly the hosts `127.0.0.1`, `::1` and `localhost`: pages that
nightschool serves for the task. Schemes: http and https (ws and wss for
WebSockets); `file:`, `data:` and the rest are refused for navigation.
"""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
"""Host names a page may reach (compared lower-cased, IPv6 without brackets)."""

PAGE_SCHEMES = frozenset({"http", "https"})
"""Schemes `goto` accepts."""

SOCKET_SCHEMES = frozenset({"ws", "wss"})
"""Schemes a page's WebSocket may use (to a loopback host)."""


def loopback_problem(url: str, *, schemes: frozenset[str] = PAGE_SCHEMES) -> str | None:
    """Why `url` is not a loopback address the browser may load, or None when it is.

    Args:
        url: an absolute URL.
        schemes: accepted schemes (lower-case).

    Returns:
        None for e.g. `http://127.0.0.1:8000/form`; else a sentence such as
        "only 127.0.0.1, ::1 and localhost may be reached, not example.com".
    """
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        _ = parts.port  # a malformed port raises here
    except ValueError as exc:
        return f"not a valid URL ({exc}): {url[:200]!r}"
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        wanted = " or ".join(sorted(schemes))
        return f"only {wanted} URLs may be loaded, not {scheme or 'a relative URL'}: {url[:200]!r}"
    if not host:
        return f"the URL has no host: {url[:200]!r}"
    if host.lower() not in LOOPBACK_HOSTS:
        return f"only 127.0.0.1, ::1 and localhost may be reached, not {host}"
    return None


def chromium_network_args(dead_proxy_port: int) -> list[str]:
    """Chromium command-line flags that keep a browser's traffic on loopback.

    Args:
        dead_proxy_port: a loopback TCP port that refuses connections (bound
            by the caller and never listened on, so no other process can take it).

    Returns:
        The flags, to add to the launch arguments.
    """
    bypass = ";".join(["127.0.0.1", "localhost", "[::1]"])
    return [
        f"--proxy-server=http://127.0.0.1:{dead_proxy_port}",
        f"--proxy-bypass-list={bypass}",
        # IP literals go through these rules too: the loopback ones are excluded
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, "
        "EXCLUDE [::1]",
        "--force-webrtc-ip-handling-policy",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--dns-prefetch-disable",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-domain-reliability",
        "--disable-sync",
        "--no-pings",
        "--no-first-run",
    ]
