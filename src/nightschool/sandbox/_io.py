"""The sandbox's mechanics: bubblewrap argv, workspace copy-in/out, capped output.

Private to `nightschool.sandbox`. A run's workspace is a size-capped tmpfs that
exists only inside bubblewrap; the host directory of a `Workspace` is copied
in (a tar archive the host builds, unpacked inside by GNU tar) and copied back
out (a tar archive GNU tar writes to a pipe after the program has ended, which
the host reads with a byte cap and unpacks itself). Everything arriving from
the sandbox is treated as hostile: the stream is capped, only regular files,
directories and symlinks that point down into the workspace (relative, no
`..`) are written, names with `..` or a leading `/` are refused, every path is
created without following symlinks, and setuid/setgid/sticky bits are dropped.
A stream that is incomplete or over a limit is discarded as a whole and the
host directory keeps its state from before the run.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import selectors
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

END_MARK = b"NSEND"
"""Written by the in-sandbox wrapper after GNU tar succeeded: the stream is complete."""

ENTRY_BYTES = 1536
"""Stream bytes allowed per entry on top of file data (header, long-name header, padding)."""

_CHUNK = 1 << 16


class CopyInError(Exception):
    """The host workspace cannot be copied in: over the tmpfs size or entry limit, or unreadable."""


def wrapper_script(*, copy_in_fd: int | None, copy_out_fd: int | None, limit_s: float) -> str:
    """Return the `bash -c` script that runs `"$@"` between copy-in and copy-out.

    bash, not dash: dash cannot name descriptors above 9.

    Args:
        copy_in_fd: descriptor holding the workspace archive to unpack first, or None.
        copy_out_fd: descriptor receiving the workspace archive after the program
            (then the program gets `limit_s` seconds under coreutils `timeout`, so
            that what it wrote before a timeout is still copied out), or None
            (then the script execs the program).
        limit_s: wall-clock seconds for the program when `copy_out_fd` is set.

    Exit status: the program's (128 + N for death by signal N, 137 after the
    in-sandbox timeout); 125 if the workspace could not be unpacked.
    """
    # bash's own messages (a "Killed" job notice) go to /dev/null, the program's to stderr
    lines = ["export -n PWD SHLVL OLDPWD", "exec {err}>&2 2>/dev/null"]
    if copy_in_fd is not None:
        lines += [
            f"tar -C /workspace -xpf - <&{copy_in_fd} || {{ "
            "echo 'nightschool: the workspace could not be copied into the sandbox' >&$err; "
            "exit 125; }",
            f"exec {copy_in_fd}<&-",
        ]
    if copy_out_fd is None:
        lines.append('exec "$@" 2>&$err {err}>&-')
    else:
        out = copy_out_fd
        lines += [
            f'timeout -s KILL {limit_s:.3f} "$@" 2>&$err {{err}}>&- {out}>&-',
            "rc=$?",
            f"tar -C /workspace --hard-dereference -cf - . >&{out}"
            f" && printf {END_MARK.decode()} >&{out}",
            "exit $rc",
        ]
    return "\n".join(lines)


def system_binds() -> list[str]:
    """Bind the host's system directories read-only; mirror /bin-style symlinks."""
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    for etc in ("/etc/alternatives", "/etc/ld.so.cache", "/etc/passwd", "/etc/group"):
        if Path(etc).exists():
            args += ["--ro-bind", etc, etc]
    return args


BWRAP_MIN_VERSION = (0, 8)
"""`--disable-userns` and `--size` first shipped in bubblewrap 0.8.0."""


@functools.lru_cache(maxsize=4)
def bwrap_version(bwrap: str) -> tuple[int, ...] | None:
    """`bwrap --version` as a tuple of ints (None if it cannot be read)."""
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
        return tuple(int(x) for x in out.stdout.split()[-1].split(".")[:3])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def tmpfs_perms(path: str) -> str:
    """Octal mode of a sandbox tmpfs root: sticky and world-writable for /tmp and /dev/shm."""
    return "1777" if path in ("/tmp", "/dev/shm") else "0777"


def bwrap_argv(
    bwrap: str,
    binds: list[str],
    sizes_mb: Mapping[str, int],
    env: Mapping[str, str],
    mounted: Mapping[str, str] | None = None,
    ids: tuple[int, int] | None = None,
) -> list[str]:
    """Return bubblewrap's argv up to (not including) `--`.

    New namespaces of every kind (network, pid, ipc, uts, cgroup, and a user
    namespace in which no further one can be made: `--disable-userns`, bwrap
    >= 0.8), no capabilities, the read-only `binds`, `/proc`, a minimal
    `/dev`, one tmpfs of `sizes_mb[path]` MiB per path (the workspace last, as
    the working directory), then `/dev` and `/` remounted read-only, and
    `env` as the whole environment. A path in `mounted` (sandbox path → host
    directory) is not a new tmpfs but a bind of that host directory: a tmpfs
    the launcher mounted there with `nr_inodes` (`_launch.Launcher`). `ids`:
    the uid and gid to show inside (the caller's, when the launcher runs
    bubblewrap as root of a user namespace of its own).
    """
    cmd = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    if ids is not None:
        cmd += ["--uid", str(ids[0]), "--gid", str(ids[1])]
    cmd += ["--new-session", "--cap-drop", "ALL", *binds, "--proc", "/proc", "--dev", "/dev"]
    workdir = "/"
    for path, size_mb in sizes_mb.items():
        if mounted and path in mounted:
            cmd += ["--bind", mounted[path], path]
        else:
            size = str(size_mb * 1024 * 1024)
            cmd += ["--perms", tmpfs_perms(path), "--size", size, "--tmpfs", path]
        workdir = path
    cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", workdir, "--clearenv"]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    return cmd


# -- copy-in -------------------------------------------------------------------------------


def _to_memfd(build: Mapping[str, bytes] | Path, cap: int, max_entries: int) -> int:
    """Write a tar of `build` (name → bytes, or a directory) into a memfd; return its fd."""
    fd = os.memfd_create("nightschool-workspace", os.MFD_CLOEXEC)
    try:
        with open(fd, "w+b", closefd=False) as raw, tarfile.open(fileobj=raw, mode="w") as tar:
            budget = _Budget(cap, max_entries)
            if isinstance(build, Path):
                tar.add(build, arcname=".", filter=budget.admit)
            else:
                for name, data in build.items():
                    info = tarfile.TarInfo(name)
                    info.size, info.mode, info.mtime = len(data), 0o666, int(time.time())
                    if budget.admit(info) is not None:
                        tar.addfile(info, io.BytesIO(data))
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


@dataclass
class _Budget:
    """Counts bytes and entries added to a copy-in archive; keeps only portable types."""

    cap: int
    max_entries: int
    used: int = 0
    entries: int = 0

    def admit(self, info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        """`tarfile` filter: skip special files, raise once over a limit."""
        if not (info.isreg() or info.isdir() or info.issym()):
            return None
        self.used += info.size if info.isreg() else 0
        self.entries += 1
        if self.used > self.cap or self.entries > self.max_entries:
            raise CopyInError(
                f"the workspace holds more than {self.cap // (1024 * 1024)} MiB or "
                f"{self.max_entries} entries, its limits in the sandbox"
            )
        info.mode &= 0o777
        return info


def pack(source: Mapping[str, str] | Path, cap: int, max_entries: int) -> int | None:
    """Return a memfd holding `source` as a tar archive, or None when there is nothing.

    Args:
        source: a host directory (its regular files, directories and symlinks;
            special files are skipped), or relative name → text.
        cap: most bytes of file data allowed (the workspace tmpfs size).
        max_entries: most entries allowed.

    Raises:
        CopyInError: `source` is over `cap` or `max_entries`, or unreadable.
    """
    if isinstance(source, Path):
        if not any(os.scandir(source)):
            return None
        try:
            return _to_memfd(source, cap, max_entries)
        except OSError as exc:
            raise CopyInError(f"the workspace could not be read: {exc}") from exc
    if not source:
        return None
    return _to_memfd({k: v.encode("utf-8") for k, v in source.items()}, cap, max_entries)


# -- output and copy-out -------------------------------------------------------------------


@dataclass
class Pumped:
    """What `pump` collected from one run.

    Attributes:
        stdout, stderr: the first `cap` bytes of each stream.
        stdout_total, stderr_total: bytes the program wrote to each (read and dropped past `cap`).
        archive: the copy-out stream (spooled; over its cap it is cut and `archive_cut` set).
        timed_out: the host deadline passed; the process group was killed.
    """

    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    stdout_total: int = 0
    stderr_total: int = 0
    archive: IO[bytes] | None = None
    archive_size: int = 0
    archive_cut: bool = False
    archive_closed: bool = False
    timed_out: bool = False


def pump(
    proc: subprocess.Popen[bytes],
    stdin: bytes | None,
    *,
    timeout_s: float,
    cap: int,
    archive_fd: int | None,
    archive_cap: int,
    alarm_fd: int | None = None,
    on_alarm: Callable[[], None] | None = None,
    poll: Callable[[], float] | None = None,
) -> Pumped:
    """Feed stdin, read stdout/stderr (first `cap` bytes kept) and the copy-out pipe.

    Nothing the program writes reaches the host disk except the copy-out stream,
    which is spooled (memory up to 4 MiB, then a temporary file) and cut at
    `archive_cap` bytes: the pipe is closed, so GNU tar stops. Closes `archive_fd`. On `timeout_s`
    the whole process group is killed. Returns once the process has been reaped.
    On any exception (KeyboardInterrupt included) the group is killed first.
    When `alarm_fd` (an eventfd, left open) becomes readable, `on_alarm()` is
    called once (it kills the run) and the pumping goes on until the end.
    `poll()` (the fallback's memory watch) is called on every turn of the loop
    until the process is reaped; it returns the seconds until it next wants to be
    called, and kills the run itself if it must.
    """
    got = Pumped()
    deadline = time.monotonic() + timeout_s
    pending = memoryview(stdin or b"")
    sel = _selector(proc, got, pending, archive_fd, alarm_fd)
    try:
        while any(key.data != "alarm" for key in sel.get_map().values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                got.timed_out = True
                break
            for key, _ in sel.select(remaining if poll is None else min(remaining, poll())):
                if key.data == "stdin":
                    pending = _feed(sel, proc, pending)
                elif key.data == "alarm":
                    sel.unregister(key.fd)
                    if on_alarm is not None:
                        on_alarm()
                else:
                    _drain(sel, key.fd, str(key.data), got, cap, archive_cap)
        if not got.timed_out:
            got.timed_out = _reap(proc, deadline, poll)
        if got.timed_out:
            kill_group(proc)
            proc.wait()
    except BaseException:
        kill_group(proc)
        proc.wait()
        raise
    finally:
        sel.close()
        if archive_fd is not None and not got.archive_closed:
            os.close(archive_fd)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    return got


def _reap(proc: subprocess.Popen[bytes], deadline: float, poll: Callable[[], float] | None) -> bool:
    """Wait for `proc` until `deadline`, calling `poll` when it asks; True on timeout."""
    while True:
        remaining = deadline - time.monotonic()
        wait = remaining if poll is None else min(remaining, poll())
        try:
            proc.wait(timeout=max(wait, 0.001))
            return False
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                return True


def _selector(
    proc: subprocess.Popen[bytes],
    got: Pumped,
    pending: memoryview,
    archive_fd: int | None,
    alarm_fd: int | None,
) -> selectors.BaseSelector:
    """Register the run's pipes and the alarm; close stdin at once if there is nothing to feed."""
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "stderr")
    if archive_fd is not None:
        got.archive = tempfile.SpooledTemporaryFile(max_size=4 << 20)  # noqa: SIM115 (caller closes)
        sel.register(archive_fd, selectors.EVENT_READ, "archive")
    if alarm_fd is not None:
        sel.register(alarm_fd, selectors.EVENT_READ, "alarm")
    if proc.stdin is not None:
        if pending:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        else:
            proc.stdin.close()
    return sel


def _feed(
    sel: selectors.BaseSelector, proc: subprocess.Popen[bytes], data: memoryview
) -> memoryview:
    assert proc.stdin is not None
    try:
        written = os.write(proc.stdin.fileno(), data[:_CHUNK])
    except BlockingIOError:
        return data
    except OSError:  # the program closed its stdin (EPIPE): the rest is dropped
        written = len(data)
    data = data[written:]
    if not data:
        sel.unregister(proc.stdin.fileno())
        with contextlib.suppress(OSError):
            proc.stdin.close()
    return data


def _drain(
    sel: selectors.BaseSelector, fd: int, name: str, got: Pumped, cap: int, archive_cap: int
) -> None:
    try:
        chunk = os.read(fd, _CHUNK)
    except OSError:
        chunk = b""
    if not chunk:
        sel.unregister(fd)
        return
    if name == "archive":
        assert got.archive is not None
        got.archive_size += len(chunk)
        if got.archive_size > archive_cap:
            got.archive_cut = True
            sel.unregister(fd)
            os.close(fd)  # GNU tar gets EPIPE and stops; the stream is discarded
            got.archive_closed = True
        else:
            got.archive.write(chunk)
        return
    kept = got.stdout if name == "stdout" else got.stderr
    if len(kept) < cap:
        kept += chunk[: cap - len(kept)]
    if name == "stdout":
        got.stdout_total += len(chunk)
    else:
        got.stderr_total += len(chunk)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group led by `proc` (no error if it is gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# -- unpacking the copy-out stream on the host ---------------------------------------------


def unpack(archive: IO[bytes], size: int, root: Path, max_entries: int) -> list[str]:
    """Replace the contents of host directory `root` with the copy-out `archive`.

    Args:
        archive: the stream as read from the sandbox (tar data, then `END_MARK`).
        size: its length in bytes.
        root: the host workspace directory (kept; its contents are replaced).
        max_entries: most entries accepted.

    Returns:
        Notes for the run's stderr: entries skipped, or why nothing was copied
        back (then `root` is untouched).
    """
    archive.seek(max(size - len(END_MARK), 0))
    if size < len(END_MARK) or archive.read() != END_MARK:
        return [
            "the workspace copy-out did not complete; the workspace keeps its state "
            "from before the run"
        ]
    archive.seek(0)
    try:
        with tarfile.open(fileobj=archive, mode="r:") as tar:
            members = tar.getmembers()
            if len(members) > max_entries:
                return [
                    f"the workspace has {len(members)} entries (limit {max_entries}); "
                    "its changes were not copied back"
                ]
            _clear(root)
            return _write_members(tar, members, root)
    except (tarfile.TarError, EOFError) as exc:
        return [f"the workspace copy-out was unreadable ({exc}); changes not copied back"]


def _clear(root: Path) -> None:
    for entry in os.scandir(root):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def _write_members(tar: tarfile.TarFile, members: list[tarfile.TarInfo], root: Path) -> list[str]:
    notes: list[str] = []
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for member in members:
            parts = _safe_parts(member.name)
            if parts is None:
                notes.append(f"skipped {member.name!r}: not a plain relative path")
            elif parts:
                reason = _write_one(tar, member, parts, root_fd)
                if reason:
                    notes.append(f"skipped {'/'.join(parts)!r}: {reason}")
    finally:
        os.close(root_fd)
    if len(notes) > 20:
        notes = [*notes[:20], f"... and {len(notes) - 20} more skipped entries"]
    return notes


def _safe_parts(name: str) -> tuple[str, ...] | None:
    """Path components of a member name, or None if absolute or containing `..`."""
    if "\0" in name or name.startswith("/"):
        return None
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    return None if ".." in parts else parts


def _write_one(
    tar: tarfile.TarFile, member: tarfile.TarInfo, parts: tuple[str, ...], root_fd: int
) -> str | None:
    """Create one member under `root_fd` without following symlinks; return why not, or None."""
    with _parent_dir(root_fd, parts[:-1]) as parent:
        if parent is None:
            return "its parent directory is not a real directory"
        name = parts[-1]
        try:
            if member.isdir():
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=parent)
                os.chmod(name, (member.mode & 0o777) | 0o700, dir_fd=parent, follow_symlinks=False)
            elif member.issym():
                target = member.linkname
                if target.startswith("/") or ".." in PurePosixPath(target).parts:
                    return f"symlink to {target!r} leaves the workspace"
                os.symlink(target, name, dir_fd=parent)
            elif member.isreg():
                _write_file(tar, member, name, parent)
            else:
                return "not a regular file, directory or symlink"
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _write_file(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str, parent: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=parent)
    with open(fd, "wb") as out:
        source = tar.extractfile(member)
        assert source is not None
        shutil.copyfileobj(source, out, _CHUNK)
        os.fchmod(fd, member.mode & 0o777)
        os.utime(fd, (member.mtime, member.mtime))


@contextlib.contextmanager
def _parent_dir(root_fd: int, parts: tuple[str, ...]) -> Iterator[int | None]:
    """Open the directory `parts` under `root_fd` (creating it), never through a symlink."""
    fds: list[int] = []
    current = root_fd
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=current)
            try:
                current = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=current
                )
            except OSError:
                yield None
                return
            fds.append(current)
        yield current
    finally:
        for fd in fds:
            os.close(fd)
