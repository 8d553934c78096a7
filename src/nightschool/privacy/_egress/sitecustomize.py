"""The network egress guard, standard library only, for this process and its children.

One rule: a socket may connect, send a datagram, or look a name up only when the
peer is loopback (127.0.0.0/8, ::1, `localhost`). `install(error)` patches the
`socket` module (`connect`, `connect_ex`, `sendto`, `sendmsg`, `getaddrinfo`,
`gethostbyname`, `gethostbyname_ex`, `gethostbyaddr`) so that anything else
raises `error(message)` before the kernel is asked, so no packet leaves; it
also makes every `subprocess.Popen` given an explicit `env` pass the guard on.

Children: `nightschool.privacy.no_external_network()` puts this file's directory
first on `PYTHONPATH` and sets `NIGHTSCHOOL_EGRESS_GUARD=1`
(`child_environment`). A Python child imports `sitecustomize` while it starts,
before any of its own code runs; when the flag is set this module installs the
guard there (refusals raise `PermissionError(EACCES)`, an ordinary network
error to the child's code), then runs the `sitecustomize` it shadows (Debian
ships one). Imported under its package name (`nightschool.privacy._egress.sitecustomize`)
it does nothing by itself.

Not covered: a child started with `python -I`, `-E` or `-S` (they ignore
`PYTHONPATH` or skip `site`), code that is not Python, and raw system calls
(`ctypes`). Code nightschool generates runs under bubblewrap, whose empty
network namespace covers all of those.
"""

from __future__ import annotations

import errno
import importlib.machinery
import importlib.util
import ipaddress
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

GUARD_ENV = "NIGHTSCHOOL_EGRESS_GUARD"
"""Set to `1` in a child's environment: the child installs the guard at start-up."""

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""})
"""Host names that are loopback by definition (`""` is INADDR_ANY in a lookup)."""

ErrorFactory = Callable[[str], BaseException]
"""Builds the exception a refused call raises, from a one-line message."""

_POPEN_ENV_INDEX = 10
"""Position of `env` among `Popen`'s positional arguments after `args` (stable since 3.0)."""


def is_loopback(host: str) -> bool:
    """True for loopback addresses (127.0.0.0/8, ::1, with or without a zone) and names."""
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def bootstrap_dir() -> str:
    """The directory that holds this file: what a child needs first on `PYTHONPATH`."""
    return os.path.dirname(os.path.abspath(__file__))


def child_environment(env: Mapping[str, str]) -> dict[str, str]:
    """Return a copy of `env` with which a Python child installs the guard at start-up.

    `bootstrap_dir()` goes first on `PYTHONPATH` (once, the rest kept in order)
    and `NIGHTSCHOOL_EGRESS_GUARD` is `1`.
    """
    out = dict(env)
    here = bootstrap_dir()
    rest = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    out["PYTHONPATH"] = os.pathsep.join([here, *rest])
    out[GUARD_ENV] = "1"
    return out


def _peer(address: Any) -> str | None:
    """The host of an AF_INET/AF_INET6 address tuple; None for AF_UNIX paths and the like."""
    if isinstance(address, tuple) and address:
        return str(address[0])
    return None


def _refuse_unless_loopback(sock: socket.socket, address: Any, error: ErrorFactory) -> None:
    host = _peer(address)
    inet = sock.family in (socket.AF_INET, socket.AF_INET6)
    if host is not None and inet and not is_loopback(host):
        raise error(f"network egress blocked: connection to {host}")


def _name_of(host: Any) -> str:
    return host.decode() if isinstance(host, bytes) else str(host or "")


_METHODS = ("connect", "connect_ex", "sendto", "sendmsg")
"""`socket.socket` methods guarded: the peer address is `connect(address)`'s only
argument, `sendto(data[, flags], address)`'s last and `sendmsg`'s fourth."""

_LOOKUPS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr")
"""`socket` module functions guarded: each takes the host name first."""


def _guarded_method(name: str, original: Any, error: ErrorFactory) -> Any:
    def guarded(self: socket.socket, *args: Any) -> Any:
        if name == "sendmsg":
            address = args[3] if len(args) >= 4 else None
        elif name == "sendto":
            address = args[-1] if len(args) >= 2 else None
        else:
            address = args[0] if args else None
        _refuse_unless_loopback(self, address, error)
        return original(self, *args)

    return guarded


def _guarded_lookup(original: Any, error: ErrorFactory) -> Any:
    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback(_name_of(host)):
            raise error(f"network egress blocked: lookup of {_name_of(host)}")
        return original(host, *args, **kwargs)

    return guarded


def _guarded_popen_init(original: Any) -> Any:
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("env") is not None:
            kwargs["env"] = child_environment(kwargs["env"])
        elif len(args) > _POPEN_ENV_INDEX and args[_POPEN_ENV_INDEX] is not None:
            env = child_environment(args[_POPEN_ENV_INDEX])
            args = (*args[:_POPEN_ENV_INDEX], env, *args[_POPEN_ENV_INDEX + 1 :])
        original(self, *args, **kwargs)

    return init


def install(error: ErrorFactory) -> Callable[[], None]:
    """Patch `socket` (and `subprocess.Popen`) process-wide; return the undo function.

    Not re-entrant by itself: call the undo function once, before installing again
    (`nightschool.privacy.no_external_network` counts nesting).

    Args:
        error: builds the exception raised for a refused connection, datagram or
            lookup (its message names the host).

    Returns:
        A function that restores every patched attribute.
    """
    cls: Any = socket.socket
    methods = {name: getattr(cls, name) for name in _METHODS if hasattr(cls, name)}
    lookups = {name: getattr(socket, name) for name in _LOOKUPS}
    popen_init = subprocess.Popen.__init__
    for name, original in methods.items():
        setattr(cls, name, _guarded_method(name, original, error))
    for name, original in lookups.items():
        setattr(socket, name, _guarded_lookup(original, error))
    subprocess.Popen.__init__ = _guarded_popen_init(popen_init)  # type: ignore[method-assign]

    def undo() -> None:
        for name, original in methods.items():
            setattr(cls, name, original)
        for name, original in lookups.items():
            setattr(socket, name, original)
        subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]

    return undo


def child_error(message: str) -> PermissionError:
    """The exception a guarded child raises: `PermissionError(EACCES, message)`."""
    return PermissionError(errno.EACCES, message)


def _run_shadowed_sitecustomize() -> None:
    """Execute the `sitecustomize` module that this one hides on `sys.path`, if any."""
    here = bootstrap_dir()
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


if __name__ == "sitecustomize":  # a child's start-up, never an import of the package
    if os.environ.get(GUARD_ENV) == "1":
        install(child_error)
    _run_shadowed_sitecustomize()
