"""How a sandboxed run is started on the host: the launcher and the per-process rlimits.

Private to `nightschool.sandbox`. When a run has a cgroup, or tmpfs that
nightschool mounts itself (to set `nr_inodes`, which bubblewrap 0.8's `--tmpfs`
cannot), bubblewrap is started through a launcher on the host: a POSIX shell
script (`/bin/sh`, dash on Debian and Ubuntu: the launcher took 11.5 ms wall
and 5.0 ms CPU instead of bash's 15.4 / 6.5 ms, measured at load ~5), run as
one process that execs its way to bubblewrap. The
launcher first writes its own pid into each of the run's `cgroup.procs`, so
every process of the run is born in the cgroup; as root it runs in a private
mount namespace (util-linux `unshare --mount`; the host never sees the mounts,
which die with the namespace), mounts the three tmpfs with `size=` and
`nr_inodes=` on empty host directories, drops to uid 65534 (util-linux
`setpriv`) and execs bubblewrap, which binds them in. Not root, the same runs
in a user namespace of its own (`unshare --user --map-root-user`, where the
kernel allows it), and bubblewrap maps the caller's uid back (`--uid`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import resource
import shlex
import shutil
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nightschool.sandbox._io import tmpfs_perms

if TYPE_CHECKING:
    from nightschool.sandbox._config import SandboxConfig

SETUP_PREFIX = "nightschool-setup:"
"""How the launcher's own failures start on stderr (exit status 1): an infrastructure fault."""


def is_setup_fault(returncode: int | None, stderr: str) -> bool:
    """Whether a sandboxed run's exit is the sandbox failing to start, not the program.

    bubblewrap (`bwrap: ...`) and the launcher (`SETUP_PREFIX`) exit with
    status 1 and say so at the start of stderr; a program's own failure is data.
    """
    return returncode == 1 and stderr.lstrip().startswith(("bwrap:", SETUP_PREFIX))


_MIB = 1024 * 1024


def rlimit_argv(prlimit: str, config: SandboxConfig, as_bytes: int, nproc: int) -> list[str]:
    """util-linux `prlimit` setting CPU, file size and core limits of `config`, then `--`.

    Args:
        prlimit: path of `prlimit`.
        config: the sandbox's limits.
        as_bytes: RLIMIT_AS of each process.
        nproc: RLIMIT_NPROC (tasks of the sandbox uid; per run inside its user namespace).
    """
    return [
        prlimit,
        f"--cpu={config.cpu_s}:{config.cpu_s + 1}",
        f"--as={as_bytes}",
        f"--fsize={config.file_size_mb * _MIB}",
        f"--nproc={nproc}",
        "--core=0",
        "--",
    ]


def set_rlimits(config: SandboxConfig) -> None:
    """Apply the rlimits of `config` to this process (a `preexec_fn`, unsandboxed only)."""
    for limit, value in (
        (resource.RLIMIT_CPU, (config.cpu_s, config.cpu_s + 1)),
        (resource.RLIMIT_AS, (config.memory_mb * _MIB,) * 2),
        (resource.RLIMIT_FSIZE, (config.file_size_mb * _MIB,) * 2),
        (resource.RLIMIT_NPROC, (config.max_processes,) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(limit, value)


@functools.lru_cache(maxsize=1)
def mount_home() -> Path:
    """The host directory of the launcher's mount points and fstab files, made once.

    `/run/nightschool-sandbox` (root-only, a tmpfs on most systems), else a
    directory of this uid in the temporary directory, else a fresh one; never
    one that another uid could write. Kept between runs: its mount points are
    only ever mounted on inside the runs' private mount namespaces, so
    concurrent runs share them, and it costs nothing per run (making and
    removing directories per run cost ~15 ms on an ext4 disk, measured).
    """
    for home in (
        Path("/run/nightschool-sandbox"),
        Path(tempfile.gettempdir()) / f"nightschool-mounts-{os.geteuid()}",
    ):
        with contextlib.suppress(OSError):
            home.mkdir(mode=0o755, exist_ok=True)
            info = os.lstat(home)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and " " not in str(home):
                home.chmod(0o755)  # not writable by others; bwrap (the sandbox uid) resolves it
                return home
    home = Path(tempfile.mkdtemp(prefix="nightschool-mounts-"))
    home.chmod(0o755)  # bubblewrap, running as the sandbox uid, resolves the binds
    return home


@functools.lru_cache(maxsize=8)
def mount_points(paths: tuple[str, ...]) -> dict[str, str]:
    """Sandbox path → an empty host directory under `mount_home()` to mount its tmpfs on."""
    points = {}
    for path in paths:
        point = mount_home() / (path.strip("/").replace("/", "-") or "root")
        point.mkdir(mode=0o755, exist_ok=True)
        points[path] = str(point)
    return points


@functools.lru_cache(maxsize=32)
def fstab(entries: tuple[tuple[str, str], ...]) -> str:
    """The path of an fstab file mounting a tmpfs with `options` on each `point` (written once).

    One `mount --all --fstab` mounts all three tmpfs in one process: each
    `mount` process costs 1-4 ms (measured), three of them per run were most
    of the launcher's cost.
    """
    text = "".join(f"tmpfs {point} tmpfs {options} 0 0\n" for point, options in entries)
    path = mount_home() / f"fstab-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if not path.exists():
        scratch = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        scratch.write_text(text, encoding="utf-8")
        os.replace(scratch, path)
    return str(path)


@functools.lru_cache(maxsize=2)
def _userns_can_mount(unshare: str, mount: str) -> bool:
    """Whether this uid can mount a tmpfs in a user and mount namespace of its own (once)."""
    probe = [unshare, "--user", "--map-root-user", "--mount", "--propagation", "private", "--"]
    try:
        point = mount_points(("/tmp",))["/tmp"]
        probe += [mount, "-t", "tmpfs", "-o", "size=4096,nr_inodes=8", "tmpfs", point]
        return subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@dataclass(frozen=True)
class Launcher:
    """The host-side programs the launcher needs (absolute paths), resolved once."""

    shell: str
    unshare: str | None
    mount: str | None
    setpriv: str | None

    @classmethod
    def find(cls) -> Launcher | None:
        """Resolve them on PATH (the shell: `sh`, else `bash`); None without either."""
        shell = shutil.which("sh") or shutil.which("bash")
        if shell is None:
            return None
        return cls(shell, shutil.which("unshare"), shutil.which("mount"), shutil.which("setpriv"))

    @property
    def can_mount(self) -> bool:
        """True when the launcher can mount tmpfs with `nr_inodes` for a run.

        As root: util-linux `unshare`, `mount` and `setpriv` are present. Not
        root: `unshare` and `mount` are, and a user namespace of this uid may
        mount a tmpfs (probed once; refused, e.g., where AppArmor restricts
        unprivileged user namespaces).
        """
        if self.unshare is None or self.mount is None:
            return False
        if os.geteuid() == 0:
            return self.setpriv is not None
        return _userns_can_mount(self.unshare, self.mount)

    def _namespace(self) -> list[str]:
        """`unshare` making the launcher's mount namespace (in a user namespace if not root)."""
        assert self.unshare is not None
        user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
        return [self.unshare, *user, "--mount", "--propagation", "private", "--"]

    def argv(
        self,
        cmd: Sequence[str],
        *,
        procs: Sequence[str],
        fstab: str | None,
        uid: int | None,
    ) -> list[str]:
        """Wrap bubblewrap's `cmd`: join `procs`, mount `fstab`, drop to `uid`, exec `cmd`.

        Args:
            cmd: the bubblewrap argv.
            procs: `cgroup.procs` files to write the launcher's pid into first.
            fstab: an fstab file of tmpfs to mount in a private mount namespace
                (needs `can_mount`), or None.
            uid: uid and gid to become before exec (`setpriv`), or None to stay.
        """
        lines = [f'fail() {{ echo "{SETUP_PREFIX} $1" >&2; exit 1; }}']
        for path in procs:
            lines.append(
                f"{{ echo $$ > {shlex.quote(path)}; }} 2>/dev/null "
                f"|| fail {shlex.quote(f'cannot join the cgroup {path}')}"
            )
        if fstab is not None:
            assert self.mount is not None
            mount = f"{self.mount} --all --fstab {shlex.quote(fstab)}"
            lines.append(f'out=$({mount} 2>&1) || fail "cannot mount the tmpfs: $out"')
        if uid is not None:
            assert self.setpriv is not None
            drop = f"--reuid={uid} --regid={uid} --clear-groups --inh-caps=-all"
            lines.append(f'exec {self.setpriv} {drop} -- "$@"')
        else:
            lines.append('exec "$@"')
        argv = [self.shell, "-c", "\n".join(lines), "nightschool-launcher", *cmd]
        return [*self._namespace(), *argv] if fstab is not None else argv


def wrap(
    launcher: Launcher | None,
    cmd: list[str],
    *,
    procs: Sequence[str],
    mounted: Mapping[str, str],
    sizes_mb: Mapping[str, int],
    inodes: int,
    uid: int | None,
) -> tuple[list[str], bool]:
    """Wrap bubblewrap's `cmd` in the launcher when the run has a cgroup or tmpfs to mount.

    Args:
        launcher: the host programs (None: `cmd` is returned as it is).
        cmd: the bubblewrap argv.
        procs: the run's `cgroup.procs` files.
        mounted: sandbox path → host mount point, for the tmpfs to mount.
        sizes_mb: sandbox path → tmpfs size in MiB.
        inodes: `nr_inodes` of each mounted tmpfs.
        uid: the uid to run bubblewrap as when started as root, else None.

    Returns:
        The argv, and whether `Popen` must still drop to `uid` itself (the
        launcher drops root with `setpriv` after its root-only steps).
    """
    if launcher is None or not (procs or mounted):
        return cmd, uid is not None
    table = None
    if mounted:
        owner = f",uid={uid},gid={uid}" if uid is not None else ""
        table = fstab(
            tuple(
                (
                    mounted[path],
                    f"size={size_mb * _MIB},nr_inodes={inodes},mode={tmpfs_perms(path)},"
                    f"nosuid,nodev{owner}",
                )
                for path, size_mb in sizes_mb.items()
                if path in mounted
            )
        )
    return launcher.argv(cmd, procs=procs, fstab=table, uid=uid), False
