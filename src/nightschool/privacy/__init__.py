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

from nightschool.privacy._egress.sitecustomize import (
    GUARD_ENV,
    bootstrap_dir,
    child_environment,
    is_loopback,
)
from nightschool.privacy._guard import LOCAL_ONLY_HINT, NetworkEgressError, no_external_network
from nightschool.privacy._telemetry import (
    TELEMETRY_OPT_OUTS,
    TelemetryFlag,
    disable_telemetry,
    telemetry_report,
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
