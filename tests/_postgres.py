"""A throw-away PostgreSQL server for the tests: a fresh cluster in a temp dir on loopback.

Uses the Debian `postgresql` server binaries (`/usr/lib/postgresql/<major>/bin`,
installed by `scripts/install.sh`). `initdb` refuses to run as root, so under
root the cluster is owned by and run as the `postgres` system user that the
Debian package creates. The server listens on 127.0.0.1 on a free port only,
with `trust` authentication for loopback (nothing else can reach it), and is
stopped (`pg_ctl stop -m immediate`) and deleted when the session ends.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg


def server_bindir() -> Path | None:
    """The newest installed PostgreSQL server's `bin` directory, or None."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def postgres_server(*, durable: bool = False) -> Iterator[str]:
    """Start a fresh cluster and yield its admin URL (`postgresql://...@127.0.0.1:port/postgres`).

    Args:
        durable: keep `fsync` on, as a real server runs (benchmarks); the tests
            turn it off (a throw-away cluster need not survive a power cut).

    Raises:
        RuntimeError: no server binaries, or the server did not start (its log is quoted).
    """
    bindir = server_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (Debian package `postgresql`)")
    root = Path(tempfile.mkdtemp(prefix="nightschool-pg-"))
    data, sockets, log = root / "data", root / "sockets", root / "server.log"
    sockets.mkdir()
    as_user: list[str] = []
    user = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() == 0:
        user = "postgres"
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        os.chown(sockets, entry.pw_uid, entry.pw_gid)
        as_user = ["runuser", "-u", user, "--"]
    port = _free_port()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*as_user, *args], capture_output=True, text=True, timeout=120, check=False
        )

    try:
        made = run(
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            user,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()[-2000:]}")
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} "
            f"-c fsync={'on' if durable else 'off'} "
            "-c max_connections=200 -c shared_buffers=128MB"
        )
        started = run(
            str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"
        )
        if started.returncode != 0:
            text = log.read_text(errors="replace") if log.exists() else started.stderr
            raise RuntimeError(f"postgres did not start: {text.strip()[-2000:]}")
        url = f"postgresql://{user}@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(url, connect_timeout=5).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        if (data / "postmaster.pid").exists():
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(admin_url: str, name: str, *, template: str | None = None) -> str:
    """Create database `name` (empty, or a copy of `template`) on the server of `admin_url`.

    Returns:
        Its URL.
    """
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    base = admin_url.rsplit("/", 1)[0]
    return f"{base}/{name}"
