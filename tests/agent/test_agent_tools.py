from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.agent.tools import (
    MAX_ARGV_CODE_BYTES,
    NO_STDIN_NOTE,
    PathRefusedError,
    SessionWorkspace,
    cap_text,
    sandbox_can_reach,
    usable_workspace_root,
)
from nightschool.errors import SandboxFaultError
from nightschool.sandbox import ExecResult, Sandbox

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


@pytest.fixture
def root(tmp_path: Path, sandbox: Sandbox) -> Iterator[Path]:
    """A workspace root the sandbox user can reach (pytest's tmp dirs are 0o700)."""
    chosen = usable_workspace_root(tmp_path / "workspaces", sandbox)
    yield chosen
    shutil.rmtree(chosen, ignore_errors=True)


@pytest.fixture
def ws(root: Path, sandbox: Sandbox) -> SessionWorkspace:
    return SessionWorkspace(root / "ws", sandbox, timeout_s=10)


# -- confinement -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../x", "a/../../x", "a/../b", "", "  ", "~/x", "a\0b"]
)
def test_paths_outside_or_malformed_are_refused(ws: SessionWorkspace, path: str) -> None:
    with pytest.raises(PathRefusedError):
        ws.resolve(path)
    call = ws.call("read_file", {"path": path})
    assert call.error and call.result is None


def test_symlink_escape_is_refused(ws: SessionWorkspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, ws.path / "link")
    os.symlink(tmp_path, ws.path / "dirlink")
    for args in ({"path": "link"}, {"path": "dirlink/secret.txt"}):
        call = ws.call("read_file", args)
        assert call.error is not None and "leaves the workspace" in call.error
        assert "top secret" not in (call.result or "")
    write = ws.call("write_file", {"path": "link", "content": "overwritten"})
    assert write.error is not None
    assert secret.read_text() == "top secret"


def test_symlink_inside_the_workspace_is_fine(ws: SessionWorkspace) -> None:
    (ws.path / "real.txt").write_text("hello")
    os.symlink("real.txt", ws.path / "alias.txt")
    assert ws.call("read_file", {"path": "alias.txt"}).result == "hello"


# -- file tools --------------------------------------------------------------------


def test_write_read_list_roundtrip(ws: SessionWorkspace) -> None:
    wrote = ws.call("write_file", {"path": "sub/dir/a.txt", "content": "héllo\n"})
    assert wrote.error is None and "7 bytes" in (wrote.result or "")
    assert ws.call("read_file", {"path": "sub/dir/a.txt"}).result == "héllo\n"
    listing = ws.call("list_files", {}).result or ""
    assert "sub/" in listing and "sub/dir/a.txt (7 bytes)" in listing
    assert ws.call("list_files", {"path": "sub/dir"}).result == "a.txt (7 bytes)"


def test_file_tool_errors_are_data(ws: SessionWorkspace) -> None:
    assert "no such file" in (ws.call("read_file", {"path": "nope.txt"}).error or "")
    assert "no such directory" in (ws.call("list_files", {"path": "nope"}).error or "")
    (ws.path / "d").mkdir()
    assert "not a regular file" in (ws.call("read_file", {"path": "d"}).error or "")
    assert "is a directory" in (ws.call("write_file", {"path": "d", "content": ""}).error or "")
    assert ws.call("list_files", {}).result is not None


def test_read_is_capped(root: Path, sandbox: Sandbox) -> None:
    ws = SessionWorkspace(root / "w", sandbox, max_output_chars=200)
    (ws.path / "big.txt").write_text("x" * 10_000)
    result = ws.call("read_file", {"path": "big.txt"}).result or ""
    assert len(result) < 300 and "characters cut" in result


def test_bad_calls_are_tool_errors(ws: SessionWorkspace) -> None:
    assert "unknown tool" in (ws.call("rm_rf", {}).error or "")
    assert "needs argument" in (ws.call("run_python", {}).error or "")
    assert "unexpected argument" in (ws.call("read_file", {"path": "a", "mode": "r"}).error or "")
    assert "must be strings" in (ws.call("run_shell", {"command": 3}).error or "")


def test_cap_text_keeps_head_and_tail() -> None:
    text = "HEAD" + "x" * 1000 + "TAIL"
    capped = cap_text(text, 100)
    assert capped.startswith("HEAD") and capped.endswith("TAIL") and len(capped) < 150
    assert cap_text("short", 100) == "short"


# -- sandboxed tools (real bubblewrap) ---------------------------------------------


@needs_bwrap
def test_run_python_in_the_workspace(ws: SessionWorkspace) -> None:
    ws.call("write_file", {"path": "data.txt", "content": "1\n2\n3\n"})
    call = ws.call(
        "run_python",
        {"code": "print(sum(int(x) for x in open('data.txt')))\nopen('out.txt','w').write('ok')"},
    )
    assert call.error is None, call.result
    assert "stdout:\n6" in (call.result or "")
    assert ws.call("read_file", {"path": "out.txt"}).result == "ok"
    assert call.duration_s > 0


@needs_bwrap
def test_run_shell_and_program_errors_are_data(ws: SessionWorkspace) -> None:
    ok = ws.call("run_shell", {"command": "echo hi > f.txt && wc -l < f.txt"})
    assert ok.error is None and "stdout:\n1" in (ok.result or "")
    bad = ws.call("run_python", {"code": "raise ValueError('nope')"})
    assert bad.error is not None and bad.error.startswith("exit code 1: ValueError: nope")
    assert "Traceback" in (bad.result or "")
    assert NO_STDIN_NOTE not in (bad.result or "")


READS_INPUT = "print(sum(map(int, input().split())))"


@needs_bwrap
def test_run_python_reads_the_stdin_it_is_given(ws: SessionWorkspace) -> None:
    given = ws.call("run_python", {"code": READS_INPUT, "stdin": "3 4 5\n"})
    assert given.error is None and "stdout:\n12" in (given.result or ""), given.result
    whole = ws.call(
        "run_python", {"code": "import sys\nprint(sys.stdin.read()[::-1])", "stdin": "ab"}
    )
    assert "stdout:\nba" in (whole.result or "")
    assert "unexpected argument" in (ws.call("run_python", {"code": "1", "input": "x"}).error or "")


@needs_bwrap
def test_indented_code_is_dedented_before_it_runs(ws: SessionWorkspace) -> None:
    """Measured (Qwen2.5-Coder-1.5B): the whole block indented, `unexpected indent`."""
    call = ws.call("run_python", {"code": "\n    x = 2\n    if x:\n        print(x * 3)\n    "})
    assert call.error is None and "stdout:\n6" in (call.result or "")


@needs_bwrap
def test_code_reading_missing_stdin_is_told_why(ws: SessionWorkspace) -> None:
    """Without `stdin` the program's input is empty; code that reads it is told so."""
    missing = ws.call("run_python", {"code": READS_INPUT})
    assert missing.error is not None and "EOFError" in missing.error
    assert NO_STDIN_NOTE in (missing.result or "")
    quiet = ws.call("run_python", {"code": "import sys\nprint(len(sys.stdin.read().split()))"})
    assert quiet.error is None and "stdout:\n0" in (quiet.result or "")  # no error, still empty
    assert NO_STDIN_NOTE in (quiet.result or "")
    given_empty = ws.call("run_python", {"code": READS_INPUT, "stdin": ""})  # measured: 1.5B
    assert "EOFError" in (given_empty.error or "")
    assert NO_STDIN_NOTE in (given_empty.result or "")
    given = ws.call("run_python", {"code": READS_INPUT, "stdin": "1 2"})
    assert NO_STDIN_NOTE not in (given.result or "")  # it had input; nothing to explain
    broken = ws.call(
        "run_python", {"code": "import sys\nfor line in reversed(sys.stdin): print(line)"}
    )
    assert "TypeError" in (broken.error or "")  # measured: another error is the news, no note
    assert NO_STDIN_NOTE not in (broken.result or "")
    arithmetic = ws.call("run_python", {"code": "print(2 + 2)"})
    assert NO_STDIN_NOTE not in (arithmetic.result or "")


def test_code_too_long_for_an_argument_is_refused_with_stdin(ws: SessionWorkspace) -> None:
    code = "x = 1\n" * (MAX_ARGV_CODE_BYTES // 6 + 1)
    refused = ws.call("run_python", {"code": code, "stdin": "1"})
    assert refused.error is not None and "too long" in refused.error
    nul = ws.call("run_python", {"code": "print(1)\0", "stdin": "1"})  # argv cannot hold it
    assert nul.error is not None and "NUL byte" in nul.error


@needs_bwrap
def test_sandbox_has_no_network_and_cannot_see_the_host(ws: SessionWorkspace) -> None:
    call = ws.call("run_shell", {"command": "ls /root /home 2>&1; cat /etc/shadow 2>&1; true"})
    assert "No such file" in (call.result or "")
    net = ws.call(
        "run_python",
        {"code": "import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)"},
    )
    assert net.error is not None and "OSError" in (net.result or "") + net.error


@needs_bwrap
def test_timeout_is_an_error_not_an_exception(root: Path, sandbox: Sandbox) -> None:
    ws = SessionWorkspace(root / "w", sandbox, timeout_s=0.5)
    call = ws.call("run_python", {"code": "import time; time.sleep(30)"})
    assert call.error is not None and call.error.startswith("timed out")


def test_sandbox_fault_propagates(ws: SessionWorkspace, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> ExecResult:
        raise SandboxFaultError("bubblewrap failed: setting up uid map")

    monkeypatch.setattr(ws.sandbox, "run_in", broken)
    with pytest.raises(SandboxFaultError):
        ws.call("run_python", {"code": "print(1)"})


@needs_bwrap
def test_unreachable_root_falls_back_to_a_reachable_one(tmp_path: Path, sandbox: Sandbox) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    chosen = usable_workspace_root(private / "ws", sandbox)
    assert sandbox_can_reach(chosen, sandbox)
    if os.geteuid() == 0:
        assert chosen != private / "ws"
        assert not sandbox_can_reach(private / "ws", sandbox)
    try:
        ws = SessionWorkspace(chosen / "s", sandbox)
        assert ws.call("run_shell", {"command": "echo ok"}).error is None
    finally:
        shutil.rmtree(chosen, ignore_errors=True)
