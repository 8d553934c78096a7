"""Privacy guards: a network egress guard for in-process code.

`no_external_network()` makes every socket connection from this Python process
to a non-loopback address raise `NetworkEgressError` while it is active. It
covers `socket.socket.connect`/`connect_ex` (and so `create_connection`, httpx,
urllib) and DNS lookups of non-local names. It does not reach subprocesses
(PRIOR-ART: an egress guard that patched Python sockets only let subprocesses
leak): generated code runs in the bubblewrap sandbox, whose empty network
namespace has no route anywhere.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Iterator
from typing import Any

from nightschool.errors import NightschoolError

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", ""})


class NetworkEgressError(NightschoolError):
    """A connection to a non-loopback address was attempted under the guard."""


def is_loopback(host: str) -> bool:
    """True for loopback addresses (127.0.0.0/8, ::1) and `localhost` names."""
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _address_host(address: Any) -> str | None:
    if isinstance(address, tuple) and address:
        return str(address[0])
    return None  # AF_UNIX paths and the like are local by nature


_lock = threading.Lock()
_depth = 0
_originals: dict[str, Any] = {}


def _guarded_connect(original: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        host = _address_host(address)
        inet = self.family in (socket.AF_INET, socket.AF_INET6)
        if host is not None and inet and not is_loopback(host):
            raise NetworkEgressError(f"network egress blocked: connection to {host}")
        return original(self, address)

    return connect


def _guarded_getaddrinfo(original: Any) -> Any:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host or "")
        if not is_loopback(name):
            raise NetworkEgressError(f"network egress blocked: lookup of {name}")
        return original(host, *args, **kwargs)

    return getaddrinfo


@contextlib.contextmanager
def no_external_network() -> Iterator[None]:
    """Block non-loopback connections and lookups from this process while active.

    Re-entrant and thread-safe (the patch is process-wide: other threads are
    guarded too while any guard is active).

    Raises (inside the block):
        NetworkEgressError: on `connect`/`connect_ex` to a non-loopback IP, or on
            a DNS lookup of a non-local name.
    """
    global _depth
    with _lock:
        if _depth == 0:
            _originals["connect"] = socket.socket.connect
            _originals["connect_ex"] = socket.socket.connect_ex
            _originals["getaddrinfo"] = socket.getaddrinfo
            socket.socket.connect = _guarded_connect(_originals["connect"])  # type: ignore[method-assign]
            socket.socket.connect_ex = _guarded_connect(_originals["connect_ex"])  # type: ignore[method-assign]
            socket.getaddrinfo = _guarded_getaddrinfo(_originals["getaddrinfo"])
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                socket.socket.connect = _originals["connect"]  # type: ignore[method-assign]
                socket.socket.connect_ex = _originals["connect_ex"]  # type: ignore[method-assign]
                socket.getaddrinfo = _originals["getaddrinfo"]
