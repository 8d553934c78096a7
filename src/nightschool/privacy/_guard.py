"""The network egress guard (`no_external_network`); see the package docstring."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator

from nightschool.errors import NightschoolError
from nightschool.privacy._egress.sitecustomize import (
    GUARD_ENV,
    child_environment,
    install,
)


class NetworkEgressError(NightschoolError):
    """A connection, datagram or lookup to a non-loopback peer was attempted under the guard.

    Exit code 2: the usual cause is a model server named on another machine.
    """

    exit_code = 2


LOCAL_ONLY_HINT = (
    "nightschool runs local-only here: use a model server on 127.0.0.1 or an embedded model"
)
"""The hint every `NetworkEgressError` of the guard carries."""


def _egress_error(message: str) -> NetworkEgressError:
    return NetworkEgressError(message, hint=LOCAL_ONLY_HINT)


_lock = threading.Lock()
_depth = 0
_undo: list[Callable[[], None]] = []
_saved_environ: dict[str, str | None] = {}


def _export_to_children() -> None:
    """Put the child start-up hook into `os.environ` (inherited by every child)."""
    for key in ("PYTHONPATH", GUARD_ENV):
        _saved_environ[key] = os.environ.get(key)
    wanted = child_environment({k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ})
    os.environ.update(wanted)


def _restore_environ() -> None:
    for key, value in _saved_environ.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    _saved_environ.clear()


@contextlib.contextmanager
def no_external_network() -> Iterator[None]:
    """Block non-loopback connections, datagrams and lookups while active, children included.

    Re-entrant and thread-safe. The patch is process-wide: other threads are
    guarded too while any guard is active, and `os.environ` carries
    `NIGHTSCHOOL_EGRESS_GUARD=1` and the hook's directory on `PYTHONPATH`
    (restored at the end).

    Raises (inside the block):
        NetworkEgressError: on `connect`/`connect_ex`/`sendto`/`sendmsg` to a
            non-loopback address, or a lookup of a non-local name.
    """
    global _depth
    with _lock:
        if _depth == 0:
            _undo.append(install(_egress_error))
            _export_to_children()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _undo.pop()()
                _restore_environ()
