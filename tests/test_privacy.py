from __future__ import annotations

import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest

from nightschool.privacy import NetworkEgressError, is_loopback, no_external_network
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
