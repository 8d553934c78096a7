"""Socket helpers for `nightschool serve`: loopback check and binding."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nightschool.errors import UserError


def is_loopback(host: str) -> bool:
    """True when `host` only accepts connections from this machine.

    `localhost` and loopback addresses (127.0.0.0/8, ::1) are loopback; any
    other name is treated as reachable from outside (names can resolve to
    anything), as are the wildcard addresses 0.0.0.0 and ::.
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """Bind a listening TCP socket (so `--port 0` and "port in use" are known up front).

    Returns:
        The bound socket; `getsockname()[1]` is the port actually used.

    Raises:
        UserError: the address cannot be bound (in use, not a local address, bad name).
    """
    host = host.strip().strip("[]")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"cannot resolve --host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UserError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick another --port, or stop the process that uses it",
        ) from None
    sock.set_inheritable(True)
    return sock


@contextmanager
def serve_in_thread(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, startup_timeout_s: float = 30.0
) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a background thread (tests, benchmarks).

    Yields:
        The server's root URL, e.g. `http://127.0.0.1:41234` (append `/v1` for clients).

    Raises:
        UserError: the address cannot be bound.
        RuntimeError: the server did not start within `startup_timeout_s` seconds.
    """
    # function-local: start-up time (uvicorn, ~45 modules, ~45 ms; `nightschool chat` loads
    # this package for its chat backends, only the tests' and benchmarks' servers need it)
    import uvicorn

    sock = bind(host, port)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="nightschool-uvicorn", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        bound_host, bound_port = sock.getsockname()[:2]
        yield f"http://{bound_host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
