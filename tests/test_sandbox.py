from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from nightschool.errors import SandboxUnavailableError
from nightschool.sandbox import Sandbox, SandboxConfig, python_argv

# In CI (scripts/install.sh installs bubblewrap) a missing bwrap fails the tests instead.
pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxConfig(timeout_s=5, cpu_s=5))


def run_py(sandbox: Sandbox, source: str, **kwargs: object):
    return sandbox.run(python_argv("-"), stdin=source, **kwargs)  # type: ignore[arg-type]


def test_success_is_data(sandbox: Sandbox) -> None:
    result = run_py(sandbox, "print('hello')")
    assert result.ok and result.stdout == "hello\n" and not result.timed_out
    assert result.duration_s > 0


def test_failure_is_data_not_exception(sandbox: Sandbox) -> None:
    result = run_py(sandbox, "raise SystemExit(3)")
    assert result.returncode == 3 and not result.ok
    crash = run_py(sandbox, "1/0")
    assert crash.returncode == 1 and "ZeroDivisionError" in crash.stderr


def test_no_network(sandbox: Sandbox) -> None:
    result = run_py(
        sandbox,
        "import socket\n"
        "try:\n socket.create_connection(('1.1.1.1', 53), timeout=2)\n print('connected')\n"
        "except OSError as e:\n print('blocked', e.errno)\n",
    )
    assert "blocked" in result.stdout, result


def test_system_dirs_read_only_and_runs_as_nobody(sandbox: Sandbox) -> None:
    result = run_py(
        sandbox,
        "import os\nprint(os.getuid())\n"
        "try:\n open('/usr/evil', 'w')\nexcept OSError as e:\n print('ro', e.errno)\n"
        "open('mine.txt', 'w').write('ok')\nprint(open('mine.txt').read())\n",
    )
    lines = result.stdout.split()
    assert lines[1:3] == ["ro", "30"] and lines[-1] == "ok"
    if subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() == "0":
        assert lines[0] == "65534"


def test_capabilities_dropped(sandbox: Sandbox) -> None:
    result = run_py(
        sandbox, "print([l for l in open('/proc/self/status') if l.startswith('CapEff')][0])"
    )
    assert "0000000000000000" in result.stdout


def test_fresh_workspace_per_run(sandbox: Sandbox) -> None:
    run_py(sandbox, "open('left.txt', 'w').write('x')")
    result = run_py(sandbox, "import os; print(os.listdir('.'))")
    assert result.stdout.strip() == "[]"


def test_host_home_not_visible(sandbox: Sandbox) -> None:
    result = run_py(sandbox, "import os; print(os.path.exists('/root'), os.path.exists('/home'))")
    assert result.stdout.strip() == "False False"


def test_timeout_kills_whole_group(sandbox: Sandbox, wait_until: Callable[..., Any]) -> None:
    # a duration no other process on a shared machine is sleeping (a plain `sleep 300`
    # in someone's shell matched pgrep once)
    marker = f"sleep 300.{os.getpid()}{time.monotonic_ns() % 100_000}"
    result = sandbox.run(["sh", "-c", f"{marker} & {marker}"], timeout_s=0.5)
    assert result.timed_out and result.returncode == -9

    def none_left() -> bool:
        left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        return left.stdout.strip() == ""

    # SIGKILL is delivered asynchronously: give the kernel a moment to finish the group
    wait_until(none_left, 5.0, f"no '{marker}' left")


def test_output_is_capped() -> None:
    small = Sandbox(SandboxConfig(max_output_bytes=1000))
    result = small.run(python_argv("-"), stdin="print('y' * 100000)")
    assert len(result.stdout) == 1000 and result.truncated


def test_memory_limit() -> None:
    tight = Sandbox(SandboxConfig(memory_mb=256))
    result = tight.run(python_argv("-"), stdin="x = bytearray(1024 ** 3)")
    assert result.returncode != 0 and "MemoryError" in result.stderr


def test_cpu_limit() -> None:
    tight = Sandbox(SandboxConfig(cpu_s=1, timeout_s=20))
    result = tight.run(python_argv("-"), stdin="while True: pass")
    # bubblewrap reports a child killed by SIGXCPU as 128 + 24
    assert not result.timed_out and result.returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU)
    assert result.duration_s < 10


def test_file_size_limit() -> None:
    tight = Sandbox(SandboxConfig(file_size_mb=1))
    result = tight.run(python_argv("-"), stdin="open('big', 'wb').write(b'x' * (4 * 1024 * 1024))")
    assert result.returncode != 0


def test_process_limit() -> None:
    tight = Sandbox(SandboxConfig(max_processes=20, timeout_s=10))
    source = (
        "import os, time\nmade = 0\n"
        "for _ in range(200):\n"
        "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        time.sleep(3); os._exit(0)\n    made += 1\n"
        "print(made)\n"
    )
    result = tight.run(python_argv("-"), stdin=source)
    assert int(result.stdout.strip()) < 200


def test_workspace_shared_between_runs_in_one_context(sandbox: Sandbox) -> None:
    with sandbox.workspace() as ws:
        ws.write_file("data.txt", "41\n")
        ws.run(
            python_argv("-"), stdin="open('out.txt','w').write(str(int(open('data.txt').read())+1))"
        )
        assert ws.read_file("out.txt") == "42"
    with pytest.raises(ValueError), sandbox.workspace() as ws:
        ws.write_file("../escape.txt", "x")


def test_missing_bubblewrap_refuses_with_package_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(SandboxUnavailableError) as info:
        Sandbox()
    assert "bubblewrap" in str(info.value) and "apt-get install" in str(info.value)


def test_unsandboxed_needs_flag_and_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.warns(RuntimeWarning, match="WITHOUT a sandbox"):
        bare = Sandbox(SandboxConfig(unsandboxed=True))
    assert not bare.isolated
    assert bare.run(python_argv("-c", "print(1)")).stdout == "1\n"


def test_runs_call_no_python_at_fork_hooks(sandbox: Sandbox) -> None:
    # A Ctrl-C that lands in a Python at-fork callback (run when subprocess forks
    # with a preexec_fn) is reported as "Exception ignored" and lost.
    calls: list[str] = []
    os.register_at_fork(after_in_parent=lambda: calls.append("parent"))
    assert run_py(sandbox, "print('ok')").ok
    with sandbox.workspace() as ws:
        proc = sandbox.popen_in(ws.path, python_argv("-c", "pass"))
        proc.communicate(timeout=30)
    assert calls == []


def test_bubblewrap_older_than_0_8_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from nightschool.sandbox import _io as _sandbox_io

    monkeypatch.setattr(_sandbox_io, "bwrap_version", lambda _path: (0, 6, 1))
    with pytest.raises(SandboxUnavailableError) as info:
        Sandbox()
    assert "0.6.1" in str(info.value) and "--disable-userns" in str(info.value)


def test_installed_bubblewrap_is_recent_enough() -> None:
    from nightschool.sandbox import _io as _sandbox_io

    version = _sandbox_io.bwrap_version(shutil.which("bwrap") or "bwrap")
    assert version is not None and version >= _sandbox_io.BWRAP_MIN_VERSION


def test_missing_prlimit_refuses_with_package_name(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "prlimit" else real(name))
    with pytest.raises(SandboxUnavailableError) as info:
        Sandbox()
    assert "prlimit" in str(info.value) and "util-linux" in str(info.value)


def test_unsandboxed_limits_hold_without_prlimit_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.warns(RuntimeWarning):
        bare = Sandbox(SandboxConfig(unsandboxed=True, memory_mb=256, file_size_mb=1))
    result = bare.run(python_argv("-"), stdin="x = bytearray(1024 ** 3)")
    assert result.returncode != 0 and "MemoryError" in result.stderr
    big = bare.run(python_argv("-"), stdin="open('f', 'wb').write(b'x' * 3 * 1024 * 1024)")
    assert not big.ok


# -- the workspace: a tmpfs copy of the host directory, copied back after the run ---------


def test_run_in_copies_changes_back(sandbox: Sandbox) -> None:
    with sandbox.workspace() as ws:
        ws.write_file("keep.txt", "kept\n")
        ws.write_file("gone.txt", "x")
        ws.write_file("bin/tool.sh", "echo tool", executable=True)
        result = ws.run(
            [
                "bash",
                "-c",
                "rm gone.txt; mkdir -p deep/er; echo new > deep/er/new.txt; "
                "echo more >> keep.txt; ln -s deep/er/new.txt link; bin/tool.sh",
            ]
        )
        assert result.ok and result.stdout == "tool\n", result
        files = sorted(str(p.relative_to(ws.path)) for p in ws.path.rglob("*"))
        assert files == [
            "bin",
            "bin/tool.sh",
            "deep",
            "deep/er",
            "deep/er/new.txt",
            "keep.txt",
            "link",
        ]
        assert ws.read_file("keep.txt") == "kept\nmore\n"
        assert ws.read_file("link") == "new\n"
        assert os.access(ws.path / "bin" / "tool.sh", os.X_OK)


def test_files_written_before_a_timeout_are_kept(sandbox: Sandbox) -> None:
    with sandbox.workspace() as ws:
        result = ws.run(["bash", "-c", "echo partial > log.txt; sleep 30"], timeout_s=1)
        assert result.timed_out and result.returncode == -9
        assert result.duration_s < 1 + 10
        assert ws.read_file("log.txt") == "partial\n"


def test_copy_back_skips_links_out_and_special_files(sandbox: Sandbox) -> None:
    with sandbox.workspace() as ws:
        result = ws.run(
            ["bash", "-c", "ln -s /etc/passwd abs; ln -s ../.. up; mkfifo pipe; echo ok > ok.txt"]
        )
        assert result.ok
        assert sorted(os.listdir(ws.path)) == ["ok.txt"]
        assert ws.read_file("abs") is None
        assert "abs" in result.stderr and "nightschool:" in result.stderr


def test_run_files_and_large_stdin_reach_the_program(sandbox: Sandbox) -> None:
    payload = "z" * (3 * 1024 * 1024)
    result = sandbox.run(
        python_argv("-c", "import sys; print(open('in.txt').read(), len(sys.stdin.read()))"),
        files={"in.txt": "from host"},
        stdin=payload,
    )
    assert result.ok and result.stdout == f"from host {len(payload)}\n", result


def test_workspace_over_its_size_is_refused_as_data() -> None:
    small = Sandbox(SandboxConfig(workspace_mb=1))
    with small.workspace() as ws:
        (ws.path / "big.bin").write_bytes(b"x" * (2 * 1024 * 1024))
        result = ws.run(["true"])
    assert result.returncode == 125 and "MiB" in result.stderr


def test_popen_in_sees_the_workspace(sandbox: Sandbox) -> None:
    with sandbox.workspace() as ws:
        ws.write_file("hello.txt", "from host")
        proc = sandbox.popen_in(ws.path, ["cat", "hello.txt"])
        out, _ = proc.communicate(timeout=30)
    assert out == b"from host" and proc.returncode == 0


def test_a_setup_failure_is_told_apart_from_the_programs_own() -> None:
    from nightschool.sandbox import is_setup_fault

    assert is_setup_fault(1, "bwrap: Can't mount tmpfs on /newroot: Operation not permitted")
    assert is_setup_fault(1, "nightschool-setup: cannot mount the workspace tmpfs\n")
    assert not is_setup_fault(1, "Traceback (most recent call last):\n  ...\nbwrap: in a message")
    assert not is_setup_fault(2, "bwrap: usage")  # bubblewrap's own failures exit 1
    assert not is_setup_fault(None, "bwrap: still running")
