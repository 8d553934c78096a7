from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.privacy import (
    GUARD_ENV,
    TELEMETRY_OPT_OUTS,
    NetworkEgressError,
    bootstrap_dir,
    child_environment,
    disable_telemetry,
    is_loopback,
    no_external_network,
    telemetry_report,
)
from nightschool.sandbox import Sandbox, python_argv


def test_is_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("127.8.9.10") and is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("10.0.0.1") and not is_loopback("8.8.8.8")
    assert not is_loopback("example.com")


def test_guard_blocks_non_loopback_and_restores() -> None:
    original = socket.socket.connect
    with no_external_network():
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            with pytest.raises(NetworkEgressError, match=r"192\.0\.2\.1"):
                sock.connect(("192.0.2.1", 80))
            with pytest.raises(NetworkEgressError):
                sock.connect_ex(("192.0.2.1", 80))
        finally:
            sock.close()
        with pytest.raises(NetworkEgressError, match=r"example\.com"):
            socket.getaddrinfo("example.com", 443)
        with pytest.raises(NetworkEgressError):
            httpx.get("http://192.0.2.1/", timeout=1)
        with no_external_network():  # re-entrant
            pass
        with pytest.raises(NetworkEgressError):
            socket.create_connection(("192.0.2.1", 80), timeout=1)
    assert socket.socket.connect is original


def test_guard_allows_loopback_http() -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with no_external_network():
            port = server.server_address[1]
            assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).text == "ok"
            assert httpx.get(f"http://localhost:{port}/", timeout=5).text == "ok"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_sandboxed_code_has_no_network_at_all() -> None:
    source = (
        "import socket\n"
        "for host in ('1.1.1.1', '8.8.8.8'):\n"
        "    try:\n"
        "        socket.create_connection((host, 53), timeout=2)\n"
        "        print('CONNECTED')\n"
        "    except OSError as exc:\n"
        "        print('blocked', exc.errno)\n"
    )
    result = Sandbox().run(python_argv("-"), stdin=source)
    assert "CONNECTED" not in result.stdout
    assert result.stdout.count("blocked") == 2, result


# -- children -------------------------------------------------------------------------------

CONNECT = """
import socket, sys
try:
    with socket.socket() as sock:
        sock.settimeout(5)
        sock.connect((sys.argv[1], int(sys.argv[2])))
    print("connected")
except OSError as exc:
    print(type(exc).__name__, exc.errno, exc)
"""
"""A child that tries one TCP connection and says how it went."""


def own_address() -> str:
    """This host's non-loopback address (a UDP `connect` only picks the route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            pytest.skip("this host has no non-loopback address to listen on")
        address = str(probe.getsockname()[0])
    if is_loopback(address):
        pytest.skip("this host has no non-loopback address to listen on")
    return address


@contextlib.contextmanager
def listening(host: str) -> Iterator[tuple[int, Callable[[], int]]]:
    """A TCP listener on `host`; yields its port and a function counting arrivals so far."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        sock.listen(16)
        sock.setblocking(False)
        arrived = 0

        def count() -> int:
            nonlocal arrived
            while True:
                try:
                    connection, _ = sock.accept()
                except BlockingIOError:
                    return arrived
                connection.close()
                arrived += 1

        yield sock.getsockname()[1], count


def connect_from_child(argv: list[str], host: str, port: int, **kwargs: Any) -> str:
    result = subprocess.run(
        [*argv, "-c", CONNECT, host, str(port)],
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_child_processes_are_guarded_before_any_packet_leaves() -> None:
    outside = own_address()
    interpreters = [[sys.executable]]
    if Path("/usr/bin/python3").exists():  # the sandbox's interpreter, with Debian's sitecustomize
        interpreters.append(["/usr/bin/python3"])
    with (
        listening("127.0.0.1") as (loop_port, loop_arrivals),
        listening(outside) as (
            out_port,
            out_arrivals,
        ),
    ):
        # Without the guard the outside listener is reachable: a refusal below is the guard's.
        assert connect_from_child([sys.executable], outside, out_port) == "connected"
        assert out_arrivals() == 1
        with no_external_network():
            for argv in interpreters:
                for env in (None, {"PATH": "/usr/bin:/bin"}):  # inherited, and a fresh env
                    blocked = connect_from_child(argv, outside, out_port, env=env)
                    assert blocked.startswith("PermissionError 13"), (argv, env, blocked)
                    assert f"network egress blocked: connection to {outside}" in blocked
                    local = connect_from_child(argv, "127.0.0.1", loop_port, env=env)
                    assert local == "connected", (argv, env, local)
        assert out_arrivals() == 1, "a guarded child reached the outside listener"
        assert loop_arrivals() == 2 * len(interpreters)
    assert GUARD_ENV not in os.environ
    assert bootstrap_dir() not in os.environ.get("PYTHONPATH", "")


def test_multiprocessing_spawn_children_are_guarded() -> None:
    outside = own_address()
    spawn = multiprocessing.get_context("spawn")
    with listening(outside) as (port, arrivals), listening("127.0.0.1") as (loop_port, loops):
        with no_external_network():
            blocked = spawn.Process(target=socket.create_connection, args=((outside, port),))
            local = spawn.Process(target=socket.create_connection, args=(("127.0.0.1", loop_port),))
            for process in (blocked, local):
                process.start()
                process.join(60)
        assert blocked.exitcode == 1 and arrivals() == 0
        assert local.exitcode == 0 and loops() == 1


def test_guard_covers_datagrams_and_every_lookup_function() -> None:
    outside = own_address()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind((outside, 0))
        receiver.settimeout(0.3)
        with no_external_network(), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            with pytest.raises(NetworkEgressError, match="connection to"):
                sender.sendto(b"leak", receiver.getsockname())
            with pytest.raises(NetworkEgressError):
                sender.sendto(b"leak", 0, receiver.getsockname())
            for lookup in (socket.gethostbyname, socket.gethostbyname_ex, socket.gethostbyaddr):
                with pytest.raises(NetworkEgressError, match=r"lookup of example\.org"):
                    lookup("example.org")
            assert socket.gethostbyname("localhost").startswith("127.")
        with pytest.raises(TimeoutError):
            receiver.recvfrom(16)  # nothing was sent


def test_popen_with_its_own_env_gets_the_hook_and_explicit_env_is_not_mutated() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": "/somewhere"}
    code = "import os; print(os.environ['NIGHTSCHOOL_EGRESS_GUARD'], os.environ['PYTHONPATH'])"
    with no_external_network():
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["1", f"{bootstrap_dir()}{os.pathsep}/somewhere"]
    assert env == {"PATH": "/usr/bin:/bin", "PYTHONPATH": "/somewhere"}
    assert child_environment(child_environment(env)) == child_environment(env)


def test_evolve_refuses_a_model_server_on_another_machine(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "evolve",
            "--base-url",
            "http://192.0.2.1:8080/v1",
            "--model",
            "m",
            "--run-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "network egress blocked" in result.output and "192.0.2.1" in result.output


# -- telemetry ------------------------------------------------------------------------------


def test_disable_telemetry_overrides_and_the_probe_reports() -> None:
    environ = {"DO_NOT_TRACK": "0", "HF_HUB_OFFLINE": "1"}
    report = {flag.name: flag for flag in telemetry_report(environ)}
    assert not report["DO_NOT_TRACK"].ok and "'0'" in report["DO_NOT_TRACK"].detail
    assert report["HF_HUB_DISABLE_TELEMETRY"].detail == "not set"
    assert report["HF_HUB_OFFLINE"].ok
    changed = disable_telemetry(environ)
    assert changed["DO_NOT_TRACK"] == "0" and "HF_HUB_OFFLINE" not in changed
    assert environ == dict(TELEMETRY_OPT_OUTS)
    assert all(flag.ok for flag in telemetry_report(environ))


def test_probe_notices_a_library_that_read_the_flags_too_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    early = types.ModuleType("huggingface_hub.constants")
    early.HF_HUB_DISABLE_TELEMETRY = False  # type: ignore[attr-defined]
    early.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "huggingface_hub.constants", early)
    report = {flag.name: flag for flag in telemetry_report(dict(TELEMETRY_OPT_OUTS))}
    assert not report["HF_HUB_DISABLE_TELEMETRY"].ok
    assert "imported before" in report["HF_HUB_DISABLE_TELEMETRY"].detail
    assert report["HF_HUB_OFFLINE"].ok and report["OTEL_SDK_DISABLED"].ok


def test_the_cli_sets_the_opt_outs_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TELEMETRY_OPT_OUTS:
        monkeypatch.delenv(name, raising=False)  # restored after the test
    monkeypatch.setenv("DO_NOT_TRACK", "0")
    result = CliRunner().invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    assert {name: os.environ.get(name) for name in TELEMETRY_OPT_OUTS} == TELEMETRY_OPT_OUTS
