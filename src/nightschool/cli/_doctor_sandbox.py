"""`nightschool doctor`'s report line (`Check`) and its sandbox check: a hostile probe.

Split from `_doctor.py` (the other checks and the command). The probe runs once
through the real `Sandbox.run`: it tries to connect to a listener on the host's
loopback and on the host's own non-loopback address, to write a file into a host
directory outside its workspace, and reads a secret planted in the parent's
environment. The listeners' accept queues and the file system are inspected from
the host, so a probe that lies cannot pass.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nightschool.errors import EXIT_CODES, NightschoolError, SandboxUnavailableError

if TYPE_CHECKING:
    from nightschool.sandbox import Sandbox

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One line of the report.

    Attributes:
        name: `sandbox`, `model`, `llama.cpp`, `browser`, `database`, `telemetry` or `disk`.
        status: `ok`, `warn` (works, but look) or `fail` (something is wrong).
        detail: what was found, one or two sentences.
        fix: what to do about a `warn` or `fail`; None when there is nothing to do.
        exit_code: the code a failure of this check maps to.
    """

    name: str
    status: Status
    detail: str
    fix: str | None = None
    exit_code: int = EXIT_CODES["error"]


# -- sandbox --------------------------------------------------------------------------------

PROBE = r"""
import json, os, resource, socket, sys
loopback_port, outside_host, outside_port, canary, *targets = sys.argv[1:]
report = {"uid": os.getuid(), "write": []}
for label, host, port in (("loopback", "127.0.0.1", loopback_port),
                          ("outside", outside_host, outside_port)):
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        report[label] = "connected"
    except OSError as exc:
        report[label] = os.strerror(exc.errno) if exc.errno else str(exc)
for target in targets:
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as handle:
            handle.write("escaped")
        report["write"].append("written")
    except OSError as exc:
        report["write"].append(os.strerror(exc.errno or 0))
report["canary"] = canary in os.environ
report["nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)[0]
print(json.dumps(report))
"""
"""The hostile program `check_sandbox` runs. argv: the loopback listener's port,
the outside host and port, the name of a planted environment variable, then
host paths outside the workspace to write."""


def _outside_address() -> str:
    """This host's own address on its default route (a UDP `connect` sends nothing).

    Falls back to 192.0.2.1 (TEST-NET-1, unroutable) on a host without a route.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            return "192.0.2.1"
    return address if not address.startswith("127.") else "192.0.2.1"


@contextmanager
def _listener(host: str) -> Iterator[socket.socket | None]:
    """A non-blocking TCP listener on `host` (None when `host` cannot be bound here)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, 0))
            sock.listen(8)
            sock.setblocking(False)
        except OSError:
            yield None
            return
        yield sock


def _port(sock: socket.socket | None) -> str:
    """The port `sock` listens on; 9 (discard, nothing listens) without a listener."""
    return str(sock.getsockname()[1]) if sock is not None else "9"


def _accepted(sock: socket.socket | None) -> bool:
    """Whether anyone connected to `sock` (its accept queue is not empty)."""
    if sock is None:
        return False
    try:
        connection, _ = sock.accept()
    except OSError:
        return False
    connection.close()
    return True


def check_sandbox(sandbox: Sandbox | None = None) -> Check:
    """Run `PROBE` once in `sandbox` (default: `Sandbox()`) and judge it from the host side.

    The probe connects to listeners on the host's loopback and on the host's
    own address, writes into a host temporary directory and under `/usr/lib`,
    and looks for a variable planted in this process's environment.
    """
    # function-local: CLI start-up time (sandbox, 10 modules, ~20 ms)
    from nightschool.sandbox import Sandbox, python_argv

    infra = EXIT_CODES["infrastructure"]
    fix_bwrap = "check that bubblewrap works here: `bwrap --unshare-all --ro-bind / / true`"
    try:
        sandbox = sandbox or Sandbox()
    except SandboxUnavailableError as exc:
        return Check("sandbox", "fail", exc.message, exc.hint, infra)
    canary = f"NIGHTSCHOOL_DOCTOR_CANARY_{uuid.uuid4().hex[:8].upper()}"
    outside_host = _outside_address()
    with ExitStack() as stack:
        loopback = stack.enter_context(_listener("127.0.0.1"))
        outside = stack.enter_context(_listener(outside_host))
        host_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ns-doctor-")))
        targets = [host_dir / "escaped.txt", Path("/usr/lib") / f"{canary.lower()}.txt"]
        argv = python_argv("-c", PROBE, _port(loopback), outside_host, _port(outside), canary)
        os.environ[canary] = "planted-secret"
        try:
            result = sandbox.run([*argv, *map(str, targets)], timeout_s=20)
        except NightschoolError as exc:
            return Check("sandbox", "fail", exc.message, exc.hint or fix_bwrap, infra)
        finally:
            del os.environ[canary]
        escapes = []
        if _accepted(loopback):
            escapes.append("reached a listener on the host's loopback")
        if _accepted(outside):
            escapes.append(f"reached a listener on the host's address {outside_host}")
        for target in targets:
            if target.exists():
                escapes.append(f"wrote {target} on the host")
                target.unlink(missing_ok=True)
    try:
        report = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        detail = f"the probe did not run (exit {result.returncode}): {result.output_tail(300)}"
        return Check("sandbox", "fail", detail, fix_bwrap, infra)
    return _judge_probe(report, escapes, result.duration_s, sandbox.bounds.describe())


def _judge_probe(
    report: dict[str, Any], escapes: list[str], seconds: float, bounds: str = ""
) -> Check:
    """Turn the probe's own report and the host-side findings into the `sandbox` line.

    `bounds` is the sandbox's run bound (`Sandbox.bounds.describe()`): the
    mechanism in force (cgroup2, cgroup1 or the fallback's host-side watch),
    the memory and task bound of a whole run, the tmpfs inode bound.
    """
    for label in ("loopback", "outside"):
        if report.get(label) == "connected":
            escapes.append(f"connected to the {label} address (by its own report)")
    if report.get("canary"):
        escapes.append("saw a variable planted in nightschool's environment")
    if report.get("uid") == 0:
        escapes.append("ran as root")
    if report.get("nproc") == resource.RLIM_INFINITY:
        escapes.append("ran without a process limit")
    if escapes:
        return Check(
            "sandbox",
            "fail",
            "a hostile probe " + "; ".join(escapes),
            "do not run generated code on this machine until this is fixed; reinstall "
            "bubblewrap, and report it: nightschool's sandbox should have prevented it",
            EXIT_CODES["infrastructure"],
        )
    writes = ", ".join(str(reason).lower() for reason in report.get("write", []))
    detail = (
        f"hostile probe contained ({seconds * 1000:.0f} ms). Outside address: "
        f"{str(report.get('outside')).lower()}; host loopback: "
        f"{str(report.get('loopback')).lower()}; writes outside the workspace reached "
        f"nothing on the host ({writes}); no planted secret seen; uid {report.get('uid')}, "
        f"at most {report.get('nproc')} processes"
    )
    return Check("sandbox", "ok", detail + (f"; run bound: {bounds}" if bounds else ""))
