"""Hostile programs against the real sandbox, each bound proved from the host side.

Every program here is itself bounded (a fork bomb stops at 300 processes, a
disk fill at 400 MiB, a memory bomb at 1 GiB, every sleep ends), so a sandbox
that failed would cost the machine a bounded amount, and the test would fail.
The proofs read the host: its process table and `/proc/<pid>/status`, the
sandboxed process's mounts and filesystems through `/proc/<pid>/`, host disk
usage, listeners on the host's loopback, host files, CPU time from `getrusage`.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nightschool.sandbox import SANDBOX_PYTHON, ExecResult, Sandbox, SandboxConfig, python_argv
from nightschool.sandbox import _io as _sandbox_io

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)

MIB = 1024 * 1024
AS_ROOT = os.geteuid() == 0


# -- host-side instruments ------------------------------------------------------------------


def marker() -> str:
    return f"nshostile{uuid.uuid4().hex[:12]}"


def sandboxed_pids(mark: str) -> list[int]:
    """Host pids of sandboxed Python processes started as `python3 - <mark>` (and their forks)."""
    prefix = f"{SANDBOX_PYTHON}\0-\0{mark}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{entry.name}/cmdline").read_bytes().startswith(prefix):
                    found.append(int(entry.name))
    return found


def status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


class Sampler:
    """Calls `probe()` every 20 ms on a thread while a run is in flight; keeps every value."""

    def __init__(self, probe: Callable[[], object]) -> None:
        self.probe = probe
        self.values: list[object] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, ValueError):
                self.values.append(self.probe())
            time.sleep(0.02)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def in_background(fn: Callable[[], ExecResult]) -> tuple[threading.Thread, list[ExecResult]]:
    out: list[ExecResult] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def wait_for(predicate: Callable[[], object], timeout_s: float = 15.0) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError, IndexError):
            value = predicate()
            if value:
                return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting for the sandboxed program")


def ready_pid(mark: str) -> int:
    """The pid of the marked program once it has created /tmp/ready inside its sandbox."""

    def find() -> int | None:
        for pid in sandboxed_pids(mark):
            if os.path.exists(f"/proc/{pid}/root/tmp/ready"):
                return pid
        return None

    return int(wait_for(find))  # type: ignore[call-overload]


def used_bytes(path: str) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def tree_bytes(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*"))


@contextlib.contextmanager
def canary() -> Iterator[subprocess.Popen[bytes]]:
    """A host process of the sandbox's own uid (65534 under root) that nothing may touch."""
    ids = {"user": 65534, "group": 65534, "extra_groups": []} if AS_ROOT else {}
    proc = subprocess.Popen(["sleep", "60"], **ids)  # type: ignore[call-overload]
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def run_py(sandbox: Sandbox, source: str, mark: str, **kwargs: object) -> ExecResult:
    return sandbox.run(python_argv("-", mark), stdin=source, **kwargs)  # type: ignore[arg-type]


def assert_no_leftovers(mark: str) -> None:
    wait_for(lambda: not sandboxed_pids(mark), timeout_s=5)


# -- network ----------------------------------------------------------------------------


def _outside_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


def test_network_reaches_no_host_listener(tmp_path: Path) -> None:
    tcp = socket.create_server(("0.0.0.0", 0))  # loopback and every host address
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f"\0{marker()}"
    abstract.bind(abstract_name)
    abstract.listen()
    path_sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path_name = str(tmp_path / "host.sock")
    path_sock.bind(path_name)
    path_sock.listen()
    os.chmod(tmp_path, 0o777)
    os.chmod(path_name, 0o777)
    for sock in (tcp, udp, abstract, path_sock):
        sock.setblocking(False)
    port = tcp.getsockname()[1]
    hosts = ["127.0.0.1", "localhost"] + ([a] if (a := _outside_address()) else [])
    source = f"""
import socket
for host in {hosts!r}:
    try:
        socket.create_connection((host, {port}), timeout=1).close(); print("tcp", host)
    except OSError:
        pass
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(20):
    try: s.sendto(b"leak", ("127.0.0.1", {udp.getsockname()[1]}))
    except OSError: pass
for name in ({abstract_name!r}, {path_name!r}):
    try:
        u = socket.socket(socket.AF_UNIX); u.connect(name); u.send(b"leak"); print("unix", name)
    except OSError:
        pass
"""
    with tcp, udp, abstract, path_sock:
        result = run_py(Sandbox(SandboxConfig(timeout_s=20)), source, marker())
        time.sleep(0.2)
        for listener in (tcp, abstract, path_sock):
            with pytest.raises(BlockingIOError):
                listener.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(64)
    assert result.ok, result


# -- host files and secrets -------------------------------------------------------------------


def test_host_files_are_invisible_and_untouched(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    secret = tmp_path / "secret.txt"
    secret.write_text(token)
    for path in (tmp_path, *tmp_path.parents):
        if path == Path(tempfile.gettempdir()):
            break
        path.chmod(path.stat().st_mode | 0o005)  # readable by anyone: only the mounts hide it
    secret.chmod(0o666)
    source = f"""
import os
paths = [{str(secret)!r}, "/proc/1/root{secret}", "/root", "/home", "/work", {os.getcwd()!r},
         "/etc/shadow", "/etc/hostname", "/var", "/tmp", "/run"]
for p in paths:
    try: print(p, open(p).read())
    except OSError as e: print(p, "read", e.errno)
    try: print(p, os.listdir(p))
    except OSError as e: print(p, "list", e.errno)
    try: open(p, "a").write("tampered")
    except OSError as e: print(p, "write", e.errno)
"""
    result = run_py(Sandbox(SandboxConfig(timeout_s=20)), source, marker())
    assert result.ok, result
    assert token not in result.stdout + result.stderr
    assert secret.read_text() == token and os.listdir(tmp_path) == ["secret.txt"]


def test_secrets_in_the_environment_do_not_reach_the_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = uuid.uuid4().hex
    monkeypatch.setenv("NIGHTSCHOOL_TEST_API_KEY", token)
    source = """
import glob, os
print(dict(os.environ))
for f in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):
    try: print(f, open(f, "rb").read())
    except OSError: pass
open("dump.txt", "w").write(repr(dict(os.environ)))
"""
    sandbox = Sandbox(SandboxConfig(timeout_s=20))
    with sandbox.workspace() as ws:
        result = ws.run(python_argv("-", marker()), stdin=source)
        assert result.ok, result
        assert ws.read_file("dump.txt") and token not in (ws.read_file("dump.txt") or "")
    assert "NIGHTSCHOOL_TEST_API_KEY" not in result.stdout and token not in result.stdout


# -- processes -------------------------------------------------------------------------------

FORK_BOMB = """
import os, time
made = 0
while made < 300:  # bounded even if the sandbox failed
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(4); os._exit(0)
    made += 1
time.sleep(4)
"""


def test_fork_bomb_is_held_at_max_processes() -> None:
    mark = marker()
    sandbox = Sandbox(SandboxConfig(timeout_s=3))
    assert sandbox.config.max_processes == 64
    with Sampler(lambda: len(sandboxed_pids(mark))) as counts:
        result = run_py(sandbox, FORK_BOMB, mark)
    assert result.timed_out
    assert 32 <= max(counts.values) <= 64, max(counts.values)  # type: ignore[type-var]
    assert_no_leftovers(mark)


def test_process_limit_counts_per_run_not_per_host_uid() -> None:
    # RLIMIT_NPROC is set inside each run's user namespace: two runs of the same
    # uid each get their own 40 processes under a limit of 64 (80 in total).
    hold = (
        "import os, time\nfor _ in range(40):\n    if os.fork() == 0:\n"
        "        time.sleep(3); os._exit(0)\ntime.sleep(3)\n"
    )
    mark = marker()
    sandbox = Sandbox(SandboxConfig(timeout_s=2.5))
    with Sampler(lambda: len(sandboxed_pids(mark))) as counts:
        runs = [in_background(lambda: run_py(sandbox, hold, mark)) for _ in range(2)]
        for thread, _ in runs:
            thread.join()
    assert max(counts.values) >= 2 * 41 - 4, max(counts.values)  # type: ignore[type-var]
    assert_no_leftovers(mark)


def test_endless_sleep_and_orphans_die_with_the_run() -> None:
    source = """
import os, signal, time
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for sig in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            time.sleep(120); os._exit(0)
        os._exit(0)
time.sleep(120)
"""
    sandbox = Sandbox(SandboxConfig(timeout_s=1))
    for how in ("run", "workspace"):
        mark = marker()
        start = time.monotonic()
        if how == "run":
            result = run_py(sandbox, source, mark)
        else:
            with sandbox.workspace() as ws:
                result = ws.run(python_argv("-", mark), stdin=source)
        assert result.timed_out and result.returncode == -9
        assert time.monotonic() - start < 1 + 10
        assert_no_leftovers(mark)


def test_orphans_of_a_program_that_exits_die_too() -> None:
    source = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(120); os._exit(0)
print("parent exits")
"""
    mark = marker()
    result = run_py(Sandbox(SandboxConfig(timeout_s=20)), source, mark)
    assert result.ok and not result.timed_out
    assert_no_leftovers(mark)


def test_killing_everything_in_reach_spares_the_host() -> None:
    with canary() as victim:
        source = f"""
import os, signal
for pid in (os.getppid(), 1, {victim.pid}, {os.getpid()}):
    try: os.kill(pid, signal.SIGKILL)
    except OSError: pass
for pid in range(2, 5000):
    try: os.kill(pid, signal.SIGKILL)
    except OSError: pass
try: os.kill(-1, signal.SIGKILL)
except OSError: pass
"""
        mark = marker()
        result = run_py(Sandbox(SandboxConfig(timeout_s=20)), source, mark)
        assert isinstance(result, ExecResult)
        assert victim.poll() is None, "a host process of the sandbox's uid was killed"
        assert status(victim.pid)["State"].startswith("S")
    assert_no_leftovers(mark)


def test_ptrace_cannot_reach_a_host_process() -> None:
    with canary() as victim:
        source = f"""
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
for pid in ({victim.pid}, {os.getpid()}):
    for request in (PTRACE_ATTACH, PTRACE_SEIZE):
        print(pid, request, libc.ptrace(request, pid, 0, 0), ctypes.get_errno())
open("/tmp/ready", "w").close()
time.sleep(2)
"""
        mark = marker()
        thread, _ = in_background(
            lambda: run_py(Sandbox(SandboxConfig(timeout_s=20)), source, mark)
        )
        ready_pid(mark)
        seen = status(victim.pid)
        thread.join()
        assert seen["TracerPid"] == "0" and seen["State"].startswith("S")
        assert victim.poll() is None


# -- privileges ------------------------------------------------------------------------------


def test_no_capabilities_no_new_privs_no_root_seen_from_host() -> None:
    source = "import time\nopen('/tmp/ready', 'w').close()\ntime.sleep(2)\n"
    mark = marker()
    thread, _ = in_background(lambda: run_py(Sandbox(SandboxConfig(timeout_s=20)), source, mark))
    fields = status(ready_pid(mark))
    thread.join()
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap], 16) == 0, (cap, fields[cap])
    assert fields["NoNewPrivs"] == "1"
    assert "0" not in fields["Uid"].split() and "0" not in fields["Gid"].split()


def test_setuid_binaries_do_not_elevate_and_setuid_bits_are_not_copied_back() -> None:
    # `su` and `passwd` are setuid root; under no_new_privs they run as the caller.
    source = """
import os, shutil, subprocess, time
shutil.copy("/usr/bin/id", "suid-id"); os.chmod("suid-id", 0o6755)
open("/tmp/ready", "w").close()
subprocess.run(["/usr/bin/su", "-c", "true"], input=b"", capture_output=True)
time.sleep(1.5)
"""
    mark = marker()
    sandbox = Sandbox(SandboxConfig(timeout_s=20))
    with sandbox.workspace() as ws:
        thread, _ = in_background(lambda: ws.run(python_argv("-", mark), stdin=source))
        pid = ready_pid(mark)
        assert status(pid)["NoNewPrivs"] == "1"
        thread.join()
        mode = (ws.path / "suid-id").stat().st_mode
    assert not mode & 0o7000, oct(mode)


def test_nested_namespaces_and_mount_are_refused() -> None:
    # A first child stays in the run's namespaces; the parent then tries to
    # leave them. From the host both must still share every namespace and mount.
    source = """
import ctypes, os, subprocess, time
if os.fork() == 0:
    time.sleep(3); os._exit(0)
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
for flags in (CLONE_NEWUSER, CLONE_NEWUSER | CLONE_NEWNS, CLONE_NEWNS, CLONE_NEWNET):
    print(hex(flags), libc.unshare(flags), ctypes.get_errno())
print("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None), ctypes.get_errno())
print(subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode)
print(subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True).returncode)
open("/tmp/ready", "w").close()
time.sleep(2)
"""
    mark = marker()
    thread, out = in_background(lambda: run_py(Sandbox(SandboxConfig(timeout_s=20)), source, mark))
    parent = ready_pid(mark)
    child = next(p for p in sandboxed_pids(mark) if p != parent)
    for ns in ("user", "mnt", "net", "pid", "ipc", "uts"):
        assert os.readlink(f"/proc/{parent}/ns/{ns}") == os.readlink(f"/proc/{child}/ns/{ns}"), ns
    mounts = Path(f"/proc/{parent}/mountinfo").read_text()
    assert mounts == Path(f"/proc/{child}/mountinfo").read_text()
    thread.join()
    assert out[0].ok, out[0]


def test_root_is_read_only_and_only_three_capped_tmpfs_are_writable() -> None:
    name = f"nightschool-hostile-{uuid.uuid4().hex[:8]}"
    targets = [
        f"/{d}/{name}" for d in ("etc", "usr", "usr/lib", "var", "opt", "bin", "root", "dev")
    ]
    targets.append(f"/{name}")
    source = f"""
import os, time
for t in {targets!r}:
    try: open(t, "w").write("x"); print("wrote", t)
    except OSError: pass
open("/tmp/ready", "w").close()
time.sleep(2)
"""
    mark = marker()
    thread, out = in_background(lambda: run_py(Sandbox(SandboxConfig(timeout_s=20)), source, mark))
    pid = ready_pid(mark)
    writable = {}
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        point, options = fields[4], fields[5].split(",")
        fstype = fields[fields.index("-") + 1]
        if "rw" in options and fstype not in ("proc", "devpts", "devtmpfs"):
            writable[point] = line.split(" - ")[1]
    thread.join()
    assert sorted(writable) == ["/dev/shm", "/tmp", "/workspace"], writable
    assert all("size=" in opts for opts in writable.values()), writable
    assert out[0].ok and "wrote" not in out[0].stdout, out[0]
    assert not any(os.path.exists(t) for t in targets)


# -- memory, disk, CPU, output ------------------------------------------------------------


def test_memory_bomb_is_held_under_memory_mb() -> None:
    source = """
import time
chunks = []
try:
    while len(chunks) < 16:  # 1 GiB at most, even if the sandbox failed
        chunks.append(bytearray(64 * 1024 * 1024))
except MemoryError:
    print("stopped at", len(chunks))
time.sleep(1)  # held while the host samples
"""
    mark = marker()

    def peak() -> int:
        return max((int(status(p)["VmHWM"].split()[0]) for p in sandboxed_pids(mark)), default=0)

    with Sampler(peak) as rss:
        result = run_py(Sandbox(SandboxConfig(memory_mb=256, timeout_s=20)), source, mark)
    assert "stopped at" in result.stdout, result
    assert 0 < max(rss.values) * 1024 <= 256 * MIB  # type: ignore[operator]


def test_disk_fill_is_bounded_by_the_workspace_tmpfs() -> None:
    # The escape: 20 files of 64 MiB reached the host disk.
    source = """
import os, time
written = 0
for i in range(50):  # 400 MiB at most, even if the sandbox failed
    try:
        with open(f"fill{i}.bin", "wb") as f:
            for _ in range(8):
                f.write(b"x" * 1024 * 1024); written += 1024 * 1024
    except OSError:
        break
print(written // 1024 // 1024)
open("/tmp/ready", "w").close()
time.sleep(0.5)
"""
    mark = marker()
    sandbox = Sandbox(SandboxConfig(workspace_mb=32, timeout_s=30))
    with sandbox.workspace() as ws:
        host_disk = str(ws.path)
        before = used_bytes(host_disk)
        in_box: list[int] = []

        def probe() -> int:
            for pid in sandboxed_pids(mark):
                in_box.append(used_bytes(f"/proc/{pid}/root/workspace"))
            return used_bytes(host_disk)

        with Sampler(probe) as host:
            result = ws.run(python_argv("-", mark), stdin=source)
        assert result.ok, result
        assert int(result.stdout) <= 32, result.stdout
        assert in_box and max(in_box) <= 32 * MIB
        # what came back to the host: at most the tmpfs (400 MiB if unbounded)
        assert tree_bytes(ws.path) <= 32 * MIB
        grew = max(host.values) - before  # type: ignore[operator]
        assert grew < 32 * MIB + 96 * MIB, grew / MIB


def test_tmp_and_dev_shm_fills_are_capped() -> None:
    source = """
import time
for target in ("/tmp", "/dev/shm"):
    for i in range(25):  # 400 MiB at most per place
        try:
            open(f"{target}/fill{i}", "wb").write(b"x" * 16 * 1024 * 1024)
        except OSError:
            break
open("/tmp/ready", "w").close()
time.sleep(1)
"""
    mark = marker()
    host_shm = used_bytes("/dev/shm")
    thread, _ = in_background(
        lambda: run_py(Sandbox(SandboxConfig(tmp_mb=16, shm_mb=16, timeout_s=30)), source, mark)
    )
    pid = ready_pid(mark)
    tmp, shm = used_bytes(f"/proc/{pid}/root/tmp"), used_bytes(f"/proc/{pid}/root/dev/shm")
    shm_size = os.statvfs(f"/proc/{pid}/root/dev/shm")
    thread.join()
    assert 8 * MIB <= tmp <= 16 * MIB and 8 * MIB <= shm <= 16 * MIB, (tmp, shm)
    assert shm_size.f_blocks * shm_size.f_frsize == 16 * MIB
    assert used_bytes("/dev/shm") - host_shm < 16 * MIB  # not the host's /dev/shm


def test_cpu_spin_stops_at_the_cpu_limit() -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = run_py(
        Sandbox(SandboxConfig(cpu_s=1, timeout_s=30)),
        "import time\nend = time.time() + 25\nwhile time.time() < end: pass\n",
        marker(),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert result.returncode == 128 + signal.SIGXCPU and not result.timed_out, result
    assert cpu < 1 + 1.5, cpu
    assert time.monotonic() - start < 20


def test_a_gigabyte_of_output_costs_the_host_nothing() -> None:
    source = """
import sys
block = b"y" * (1024 * 1024)
for _ in range(1024):  # 1 GiB, then stop
    sys.stdout.buffer.write(block)
"""
    sandbox = Sandbox(SandboxConfig(timeout_s=120, cpu_s=120, max_output_bytes=10_000))
    host_tmp = used_bytes("/tmp")
    tracemalloc.start()
    try:
        result = run_py(sandbox, source, marker())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok and result.truncated and len(result.stdout) == 10_000, result.returncode
    assert peak < 4 * MIB, peak
    assert used_bytes("/tmp") - host_tmp < 256 * MIB  # nothing spooled to disk


# -- copy-out: whatever arrives from the sandbox is hostile -----------------------------------


def test_too_many_entries_are_not_copied_back() -> None:
    sandbox = Sandbox(SandboxConfig(workspace_max_entries=500, timeout_s=30))
    with sandbox.workspace() as ws:
        ws.write_file("before.txt", "kept")
        result = ws.run(
            python_argv("-", marker()),
            stdin="for i in range(2000):\n    open(f'f{i}', 'w').close()\n",
        )
        assert result.ok and "not copied back" in result.stderr, result
        assert os.listdir(ws.path) == ["before.txt"]


def _archive(*members: tuple[str, str, bytes | str]) -> tuple[io.BytesIO, int]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for kind, name, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                assert isinstance(payload, bytes)
                info.size, info.mode = len(payload), 0o6777
                tar.addfile(info, io.BytesIO(payload))
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = str(payload)
                tar.addfile(info)
    buf.write(_sandbox_io.END_MARK)
    return buf, buf.tell()


def test_forged_copy_out_streams_cannot_write_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    archive, size = _archive(
        ("file", "../outside/dotdot.txt", b"x"),
        ("file", f"{outside}/absolute.txt", b"x"),
        ("symlink", "up", ".."),
        ("file", "up/outside/through-link.txt", b"x"),
        ("symlink", "d", str(outside)),
        ("file", "d/through-abs-link.txt", b"x"),
        ("symlink", "chain", "sub/.."),
        ("hardlink", "hard", "/etc/passwd"),
        ("dir", "sub", b""),
        ("file", "sub/ok.txt", b"fine"),
        ("file", "suid", b"#!"),
    )
    notes = _sandbox_io.unpack(archive, size, root, max_entries=100)
    assert os.listdir(outside) == []
    # refused links leave plain directories behind: files "through" them land inside
    assert not any(p.is_symlink() for p in root.rglob("*"))
    assert (root / "up" / "outside" / "through-link.txt").is_file()
    assert (root / "sub" / "ok.txt").read_bytes() == b"fine"
    assert (root / "suid").stat().st_mode & 0o7000 == 0
    skipped = " ".join(notes)
    for name in ("../outside/dotdot.txt", "absolute.txt", "'up'", "'d'", "'chain'", "'hard'"):
        assert name in skipped, (name, notes)
    assert len(notes) == 6, notes


def test_incomplete_copy_out_leaves_the_workspace_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("kept")
    archive, size = _archive(("file", "new.txt", b"x"))
    truncated = io.BytesIO(archive.getvalue()[: size - len(_sandbox_io.END_MARK)])
    notes = _sandbox_io.unpack(truncated, size - len(_sandbox_io.END_MARK), tmp_path, 100)
    assert notes and os.listdir(tmp_path) == ["keep.txt"]
