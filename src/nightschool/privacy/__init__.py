"""Privacy guards: network egress, for this process and the processes it starts; telemetry.

`no_external_network()` makes every connection, datagram and name lookup from
this Python process to a non-loopback peer raise `NetworkEgressError` before
anything is sent, while it is active. The patch covers `socket.socket`'s
`connect`/`connect_ex`/`sendto`/`sendmsg` (so `create_connection`, httpx,
urllib, asyncio) and the `socket` module's lookups (`getaddrinfo`,
`gethostbyname*`, `gethostbyaddr`).

Child processes (PRIOR-ART: a guard that patched Python sockets only let
subprocesses leak): while the guard is active, every child started from here
(`subprocess`, `os.system`, `multiprocessing` spawn or forkserver) inherits
`PYTHONPATH` with the guard's start-up hook first and
`NIGHTSCHOOL_EGRESS_GUARD=1`, and a `subprocess.Popen` given its own `env` gets
both added; a Python child then installs the same guard before its first line
runs (`nightschool.privacy._egress.sitecustomize`: refusals there are
`PermissionError(EACCES)`). `nightschool eval` and `nightschool evolve` run
under the guard, so their workers are covered when they run outside bubblewrap
(`evolve --unsandboxed`); sandboxed runs get an empty network namespace from
bubblewrap, which also covers programs that are not Python. Not covered: a
child started with `python -I`/`-E`/`-S`, a program that is not Python outside
the sandbox, raw system calls (`ctypes`).

`disable_telemetry()` sets the opt-out variables of the libraries nightschool
loads (`TELEMETRY_OPT_OUTS`); the CLI calls it at start-up, and
`telemetry_report()` is the probe that says whether each is in force.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass

from nightschool.errors import NightschoolError
from nightschool.privacy._egress.sitecustomize import (
    GUARD_ENV,
    bootstrap_dir,
    child_environment,
    install,
    is_loopback,
)

__all__ = [
    "GUARD_ENV",
    "LOCAL_ONLY_HINT",
    "TELEMETRY_OPT_OUTS",
    "NetworkEgressError",
    "TelemetryFlag",
    "bootstrap_dir",
    "child_environment",
    "disable_telemetry",
    "is_loopback",
    "no_external_network",
    "telemetry_report",
]


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


# -- telemetry ------------------------------------------------------------------------------

TELEMETRY_OPT_OUTS: Mapping[str, str] = {
    # huggingface_hub (installed with `tokenizers`) sends usage pings; it reads this
    # variable, DISABLE_TELEMETRY and DO_NOT_TRACK once, when it is first imported.
    "HF_HUB_DISABLE_TELEMETRY": "1",
    # nightschool loads every model from installed packages; a hub download is egress.
    "HF_HUB_OFFLINE": "1",
    # The cross-tool convention (https://donottrack.sh), honoured by huggingface_hub and others.
    "DO_NOT_TRACK": "1",
    # OpenTelemetry SDKs; FastAPI adds OTLP exporters from the environment unless this is set.
    "OTEL_SDK_DISABLED": "true",
    # chromadb's product telemetry (a vector store a user may pair with nightschool).
    "ANONYMIZED_TELEMETRY": "False",
}
"""Environment variables that turn telemetry off, with the value that does it."""


@dataclass(frozen=True)
class TelemetryFlag:
    """One telemetry opt-out as found by `telemetry_report`.

    Attributes:
        name: the environment variable.
        wanted: the value that opts out.
        value: its value in the environment, or None when unset.
        ok: True when the opt-out is in force (`value == wanted`, and a library
            that read it at import time saw it).
        detail: why not, when `ok` is False; else "".
    """

    name: str
    wanted: str
    value: str | None
    ok: bool
    detail: str = ""


def disable_telemetry(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set every `TELEMETRY_OPT_OUTS` variable to its opt-out value, overriding others.

    Local-only is a promise, not a preference: a `DO_NOT_TRACK=0` in the
    user's shell does not switch telemetry back on inside nightschool. Call it
    before the libraries it concerns are imported (the CLI does, at start-up).

    Args:
        environ: where to set them; default `os.environ` (children inherit them).

    Returns:
        The variables that changed, with the value each had before ("" if unset).
    """
    target = os.environ if environ is None else environ
    changed: dict[str, str] = {}
    for name, value in TELEMETRY_OPT_OUTS.items():
        if target.get(name) != value:
            changed[name] = target.get(name) or ""
            target[name] = value
    return changed


def _library_view(name: str) -> str:
    """Why a library already imported in this process ignores `name`; "" when none does."""
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is None:
        return ""
    attribute = {
        "HF_HUB_DISABLE_TELEMETRY": "HF_HUB_DISABLE_TELEMETRY",
        "DO_NOT_TRACK": "HF_HUB_DISABLE_TELEMETRY",
        "HF_HUB_OFFLINE": "HF_HUB_OFFLINE",
    }.get(name)
    if attribute is not None and getattr(hub, attribute, True) is not True:
        return f"huggingface_hub was imported before it was set (its {attribute} is off)"
    return ""


def telemetry_report(environ: Mapping[str, str] | None = None) -> list[TelemetryFlag]:
    """Probe every telemetry opt-out: set to the right value, and seen by loaded libraries.

    Args:
        environ: the environment to read; default `os.environ`.

    Returns:
        One `TelemetryFlag` per `TELEMETRY_OPT_OUTS` entry, in its order.
    """
    source = os.environ if environ is None else environ
    flags = []
    for name, wanted in TELEMETRY_OPT_OUTS.items():
        value = source.get(name)
        if value != wanted:
            detail = "not set" if value is None else f"is {value!r}, not {wanted!r}"
        else:
            detail = _library_view(name)
        flags.append(TelemetryFlag(name, wanted, value, ok=not detail, detail=detail))
    return flags
