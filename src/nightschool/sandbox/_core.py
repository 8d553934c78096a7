"""`Sandbox`: runs commands under bubblewrap with the limits of a `SandboxConfig`."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from nightschool.errors import SandboxFaultError, SandboxUnavailableError
from nightschool.sandbox import _io as io_
from nightschool.sandbox import _launch as launch_
from nightschool.sandbox import _limits as limits_
from nightschool.sandbox import _watch as watch_
from nightschool.sandbox._config import (
    COPY_OUT_GRACE_S,
    MIB,
    NOBODY_UID,
    SANDBOX_PYTHON,
    ExecResult,
    SandboxConfig,
)

_WORKDIR = "/workspace"
_MIB = MIB


class Workspace:
    """A host directory that successive sandboxed commands share.

    Create one with `Sandbox.workspace()`; it is deleted when the context ends.
    Each sandboxed run sees a copy of it in a tmpfs of `workspace_mb`; what the
    run leaves there replaces the directory's contents afterwards.
    """

    def __init__(self, sandbox: Sandbox, path: Path) -> None:
        self._sandbox = sandbox
        self.path = path

    def write_file(self, name: str, text: str, *, executable: bool = False) -> Path:
        """Write `text` to `name` inside the workspace (relative path, no `..`).

        Raises:
            ValueError: if `name` would escape the workspace.
        """
        target = (self.path / name).resolve()
        if self.path.resolve() not in target.parents:
            raise ValueError(f"path escapes the workspace: {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o777 if executable else 0o666)
        return target

    def read_file(self, name: str) -> str | None:
        """Return the text of a workspace file, or None if absent or (via symlinks) outside."""
        target = (self.path / name).resolve()
        if self.path.resolve() not in target.parents or not target.is_file():
            return None
        return target.read_text(encoding="utf-8", errors="replace")

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` in this workspace; see `Sandbox.run_in`."""
        return self._sandbox.run_in(self.path, argv, stdin=stdin, timeout_s=timeout_s, env=env)


class Sandbox:
    """Runs commands under bubblewrap with the limits of a `SandboxConfig`.

    Attributes:
        config: the limits.
        bounds: what bounds each whole run here (`_limits.RunBounds`): the
            mechanism in force (cgroup2, cgroup1 or the rlimit fallback), the
            memory and task bounds, the tmpfs inode bound.

    Raises at construction:
        SandboxUnavailableError: bubblewrap (0.8 or newer) or util-linux
            `prlimit` is not installed (and `unsandboxed` was not requested),
            with the package to install in the hint; or the bound mechanism
            forced by `config.limits` / `NIGHTSCHOOL_SANDBOX_LIMITS` is unusable.
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self._bwrap = shutil.which("bwrap")
        self._prlimit = shutil.which("prlimit")
        self._as_root = os.geteuid() == 0
        if self.config.unsandboxed:
            warnings.warn(
                "running code WITHOUT a sandbox: it can read and write your files and "
                "reach the network",
                RuntimeWarning,
                stacklevel=2,
            )
        elif self._bwrap is None or self._prlimit is None:
            missing = "bubblewrap (bwrap)" if self._bwrap is None else "util-linux prlimit"
            package = "bubblewrap" if self._bwrap is None else "util-linux"
            raise SandboxUnavailableError(
                f"{missing} is not installed, so generated code cannot be run safely",
                hint=f"install it with `sudo apt-get install -y {package}`, or pass "
                "--unsandboxed to run without isolation",
            )
        if self.isolated:
            self._check_version()
        self._system_binds = io_.system_binds()
        self._launcher = launch_.Launcher.find() if self.isolated else None
        try:
            self.bounds, self._hierarchy = limits_.plan(self.config, self._launcher)
        except limits_.LimitsError as exc:
            raise SandboxUnavailableError(
                f"the sandbox's run bounds are unusable: {exc}",
                hint=f"unset {limits_.LIMITS_ENV} (or set it to auto) to use what works here",
            ) from exc

    def _check_version(self) -> None:
        assert self._bwrap is not None
        version = io_.bwrap_version(self._bwrap)
        if version is None or version < io_.BWRAP_MIN_VERSION:
            found = ".".join(map(str, version)) if version else "an unreadable version"
            raise SandboxUnavailableError(
                f"bubblewrap {found} lacks --disable-userns and --size (0.8 or newer needed)",
                hint="install bubblewrap 0.8+ (Debian 12, Ubuntu 24.04), or pass --unsandboxed",
            )

    @property
    def isolated(self) -> bool:
        """True when runs go through bubblewrap."""
        return not self.config.unsandboxed

    def check(self) -> None:
        """Run `python3 -c pass` in the sandbox once.

        Raises:
            SandboxUnavailableError: if the sandbox cannot start a process.
        """
        result = self.run([SANDBOX_PYTHON, "-c", "pass"], timeout_s=30)
        if not result.ok:
            raise SandboxUnavailableError(
                f"the sandbox could not run a trivial program: {result.output_tail(500)}",
                hint="check that bubblewrap works here: `bwrap --unshare-all --ro-bind / / true`",
            )

    @contextlib.contextmanager
    def workspace(self) -> Iterator[Workspace]:
        """Yield a fresh, empty workspace, removed afterwards."""
        path = Path(tempfile.mkdtemp(prefix="nightschool-ws-"))
        try:
            path.chmod(0o777)  # unsandboxed, or read by the host between runs
            yield Workspace(self, path)
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def run(
        self,
        argv: Sequence[str],
        *,
        files: Mapping[str, str] | None = None,
        stdin: str | None = None,
        timeout_s: float | None = None,
    ) -> ExecResult:
        """Run `argv` once in a fresh workspace holding `files`.

        Sandboxed, nothing touches the host disk: `files` go straight into the
        run's workspace tmpfs, which is discarded afterwards.

        Args:
            argv: command and arguments, resolved inside the sandbox's PATH.
            files: relative name → text written into the workspace first.
            stdin: text fed to the command's standard input.
            timeout_s: wall-clock limit; defaults to `config.timeout_s`.

        Returns:
            The `ExecResult`; a failing or hanging program is a result, not an error.

        Raises:
            SandboxFaultError: bubblewrap itself failed to set up the run.
        """
        if self.config.unsandboxed:
            with self.workspace() as ws:
                for name, text in (files or {}).items():
                    ws.write_file(name, text)
                return ws.run(argv, stdin=stdin, timeout_s=timeout_s)
        return self._execute(None, files or {}, argv, stdin=stdin, timeout_s=timeout_s, env=None)

    def run_in(
        self,
        workdir: Path,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` in a copy of `workdir`, then copy the result back into `workdir`.

        Sandboxed, `workdir`'s regular files, directories and symlinks are copied
        into the run's workspace tmpfs (`config.workspace_mb`); after the program
        ends, also by the timeout, the tmpfs replaces `workdir`'s contents (see
        `nightschool.sandbox._io`: entries that are not regular files,
        directories or symlinks pointing inside are skipped with a note in
        `stderr`). If the copy-out did not complete, `workdir` is left as it was.

        Args:
            workdir: host directory, mounted (as a copy) at `/workspace`, the
                working directory.
            argv: command and arguments.
            stdin: text for standard input (None: empty).
            timeout_s: wall-clock limit in seconds; default `config.timeout_s`.
            env: extra environment variables; the environment is otherwise cleared.

        Returns:
            `ExecResult`. On timeout the program's process group is killed with
            SIGKILL, `timed_out` is True and `returncode` -9. A `workdir` over
            the workspace limits gives `returncode` 125 without running.

        Raises:
            SandboxFaultError: bubblewrap reported a set-up failure.
        """
        return self._execute(workdir, workdir, argv, stdin=stdin, timeout_s=timeout_s, env=env)

    def popen_in(
        self,
        workdir: Path,
        argv: Sequence[str],
        *,
        stderr: IO[bytes] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `argv` interactively: same bubblewrap argv, limits and uid as `run_in`.

        For a long-lived process talking over pipes (the strategy runner of
        `nightschool.strategies`). `workdir` is copied in, nothing is copied back.
        stdin and stdout are pipes; stderr goes to `stderr` (default: discarded).
        The caller must end it with `kill_process_group(proc)` and `proc.wait()`;
        no wall-clock limit is applied here (the CPU rlimit still is).

        Args:
            workdir: host directory copied to `/workspace` (the working directory).
            argv: command and arguments.
            stderr: binary file receiving the process's standard error, or None.
            env: extra environment variables; the environment is otherwise cleared.

        Returns:
            The running `subprocess.Popen` (its own process group).

        Raises:
            SandboxFaultError: the process could not be started.
        """
        copy_in = None
        if not self.config.unsandboxed:
            try:
                copy_in = self._pack(workdir)
            except io_.CopyInError as exc:
                raise SandboxFaultError(str(exc)) from exc
        try:
            proc, held = self._spawn(
                workdir,
                argv,
                env,
                copy_in=copy_in,
                copy_out=None,
                limit_s=0,
                stdout=subprocess.PIPE,
                stderr=stderr if stderr is not None else subprocess.DEVNULL,
            )
        finally:
            if copy_in is not None:
                os.close(copy_in)
        if held.watch is not None:
            held.watch.start()  # no pump loop to drive it: a thread, joined by release()
        proc.held = held  # released by kill_process_group, else when proc is collected
        weakref.finalize(proc, held.release)
        return proc

    # -- internals -------------------------------------------------------------------------

    def _pack(self, source: Mapping[str, str] | Path) -> int | None:
        cfg = self.config
        return io_.pack(source, cfg.workspace_mb * _MIB, cfg.workspace_max_entries)

    def _execute(
        self,
        workdir: Path | None,
        source: Mapping[str, str] | Path,
        argv: Sequence[str],
        *,
        stdin: str | None,
        timeout_s: float | None,
        env: Mapping[str, str] | None,
    ) -> ExecResult:
        """Run once; copy `source` in, and the workspace back to `workdir` if given."""
        cfg = self.config
        limit = cfg.timeout_s if timeout_s is None else timeout_s
        start = time.perf_counter()
        copy_in: int | None = None
        if not cfg.unsandboxed:
            try:
                copy_in = self._pack(source)
            except io_.CopyInError as exc:
                return ExecResult(125, "", f"nightschool: {exc}\n", False, 0.0)
        copy_out = workdir is not None and not cfg.unsandboxed
        read_end, write_end = os.pipe() if copy_out else (None, None)
        try:
            proc, held = self._spawn(
                workdir,
                argv,
                env,
                copy_in=copy_in,
                copy_out=write_end,
                limit_s=limit,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin_pipe=stdin is not None,
            )
        except BaseException:
            if read_end is not None:
                os.close(read_end)
            raise
        finally:
            for fd in (copy_in, write_end):
                if fd is not None:
                    os.close(fd)
        cgroup, watch = held.cgroup, held.watch
        try:
            pumped = io_.pump(
                proc,
                stdin.encode("utf-8") if stdin is not None else None,
                timeout_s=limit + (COPY_OUT_GRACE_S if copy_out else 0.0),
                cap=cfg.max_output_bytes,
                archive_fd=read_end,
                archive_cap=cfg.workspace_mb * _MIB + cfg.workspace_max_entries * io_.ENTRY_BYTES,
                alarm_fd=cgroup.alarm_fd if cgroup is not None else None,
                on_alarm=cgroup.on_alarm if cgroup is not None else None,
                poll=watch.poll if watch is not None else None,
            )
            breached = held.breached
        finally:
            held.release()
        return self._result(proc, pumped, workdir if copy_out else None, limit, start, breached)

    def _result(
        self,
        proc: subprocess.Popen[bytes],
        pumped: io_.Pumped,
        copy_back: Path | None,
        limit: float,
        start: float,
        breached: bool = False,
    ) -> ExecResult:
        duration = time.perf_counter() - start
        cap = self.config.max_output_bytes
        stdout = pumped.stdout.decode("utf-8", errors="replace")
        stderr = pumped.stderr.decode("utf-8", errors="replace")
        code = proc.returncode
        if not breached:  # a run killed over its memory bound is the program's failure
            self._raise_on_fault(code, stderr)
        # the in-sandbox `timeout -s KILL` (copy-out runs) exits 128 + 9
        timed_out = pumped.timed_out or (
            copy_back is not None and code == 137 and duration >= limit
        )
        notes: list[str] = []
        if breached:
            notes.append(
                f"the run went over its memory bound ({self.config.run_memory_mb} MiB "
                "in all) and was killed"
            )
        if copy_back is not None and pumped.archive is not None:
            if pumped.archive_cut:
                notes.append("the workspace copy-out was over its limit; changes not copied back")
            else:
                notes += io_.unpack(
                    pumped.archive,
                    pumped.archive_size,
                    copy_back,
                    self.config.workspace_max_entries,
                )
            pumped.archive.close()
        if notes:
            stderr += "".join(f"\nnightschool: {note}" for note in notes) + "\n"
        return ExecResult(
            returncode=-9 if timed_out else code,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=duration,
            truncated=pumped.stdout_total > cap or pumped.stderr_total > cap,
            resource_exceeded="memory" if breached else None,
        )

    def _raise_on_fault(self, code: int, stderr: str) -> None:
        """Raise SandboxFaultError when prlimit, bubblewrap or the launcher failed to set up."""
        if code == 1 and stderr.startswith("prlimit:"):
            raise SandboxFaultError(f"prlimit failed: {stderr.strip()[:500]}")
        if self.isolated and launch_.is_setup_fault(code, stderr):
            raise SandboxFaultError(f"bubblewrap failed: {stderr.strip()[:500]}")

    def _command(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        copy_in: int | None,
        copy_out: int | None,
        limit_s: float,
        mounted: Mapping[str, str] | None = None,
    ) -> list[str]:
        """The bubblewrap argv: namespaces, read-only root, three capped tmpfs, prlimit inside."""
        if self.config.unsandboxed:
            return list(argv)
        assert self._bwrap is not None and self._prlimit is not None
        ids = None if self._as_root or not mounted else (os.getuid(), os.getgid())
        binds, sizes = self._system_binds, self._tmpfs_sizes()
        cmd = io_.bwrap_argv(self._bwrap, binds, sizes, env, mounted, ids)
        cmd += ["--", *self._rlimit_argv(self._prlimit)]
        if copy_in is None and copy_out is None:
            return [*cmd, *argv]
        script = io_.wrapper_script(copy_in_fd=copy_in, copy_out_fd=copy_out, limit_s=limit_s)
        return [*cmd, "/bin/bash", "-c", script, "bash", *argv]

    def _tmpfs_sizes(self) -> dict[str, int]:
        cfg = self.config
        return {"/dev/shm": cfg.shm_mb, "/tmp": cfg.tmp_mb, _WORKDIR: cfg.workspace_mb}

    def _rlimit_argv(self, prlimit: str) -> list[str]:
        """util-linux `prlimit` setting the rlimits of `config` and `bounds`, then `--`."""
        memory = self.bounds.process_memory_bytes
        return launch_.rlimit_argv(prlimit, self.config, memory, self.config.max_processes)

    def _environment(self, workdir: Path | None, extra: Mapping[str, str] | None) -> dict[str, str]:
        home = str(workdir) if self.config.unsandboxed and workdir else _WORKDIR
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONIOENCODING": "utf-8",
            # glibc reserves 64 MiB of address space per thread arena; under the
            # RLIMIT_AS cap that allowed only ~14 threads (measured), 2 arenas ~117.
            "MALLOC_ARENA_MAX": "2",
        }
        env.update(extra or {})
        return env

    def _unsandboxed_limits(self, cmd: list[str]) -> tuple[list[str], Callable[[], None] | None]:
        """Unsandboxed: `cmd` under util-linux `prlimit`, or a `preexec_fn` if it is absent.

        Not always `preexec_fn`: CPython then runs at-fork callbacks, where a
        Ctrl-C is reported as "Exception ignored" and lost (1 in 30, measured).
        """
        if self._prlimit is not None:
            return [*self._rlimit_argv(self._prlimit), *cmd], None
        return cmd, functools.partial(launch_.set_rlimits, self.config)

    def _spawn(
        self,
        workdir: Path | None,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        *,
        copy_in: int | None,
        copy_out: int | None,
        limit_s: float,
        stdout: int | IO[bytes],
        stderr: int | IO[bytes],
        stdin_pipe: bool = True,
    ) -> tuple[_SandboxPopen, limits_.RunResources]:
        """Start `argv` under bubblewrap and the rlimits in a session of its own.

        Runs as uid 65534 when nightschool runs as root; its own session lets a
        timeout kill the whole process group. `copy_in` / `copy_out` are
        descriptors passed to the in-sandbox wrapper (`_io.wrapper_script`).
        Under a cgroup, or with the tmpfs mounted by nightschool, the launcher
        (`_launch.Launcher`) puts the run into its cgroup and mounts before
        bubblewrap starts; in the fallback, `held.watch` is the run's memory
        watch (`_watch.MemoryWatch`), which the caller drives or starts.

        Returns:
            The process, and what the run holds on the host: release it once
            the process is reaped.

        Raises:
            SandboxFaultError: the process, or its cgroup, could not be started.
        """
        environment = self._environment(workdir, env)
        held = self._hold()
        try:
            cmd = self._command(
                argv,
                environment,
                copy_in=copy_in,
                copy_out=copy_out,
                limit_s=limit_s,
                mounted=held.mounted,
            )
            cmd, drop_privileges = launch_.wrap(
                self._launcher,
                cmd,
                procs=held.cgroup.procs if held.cgroup is not None else [],
                mounted=held.mounted,
                sizes_mb=self._tmpfs_sizes(),
                inodes=self.config.max_inodes,
                uid=NOBODY_UID if self._as_root and self.isolated else None,
            )
            proc = self._popen(
                cmd,
                workdir,
                environment,
                pass_fds=tuple(fd for fd in (copy_in, copy_out) if fd is not None),
                drop_privileges=drop_privileges,
                stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
            )
            if self.bounds.mechanism == "fallback":
                held.watch = watch_.MemoryWatch(proc.pid, self.bounds.memory_bytes)
            return proc, held
        except BaseException:
            held.release()
            raise

    def _hold(self) -> limits_.RunResources:
        """Make the run's cgroup and its tmpfs mount points, as `bounds` asks."""
        if not self.isolated:
            return limits_.RunResources()
        try:
            return limits_.hold(self._hierarchy, self.bounds, tuple(self._tmpfs_sizes()))
        except limits_.LimitsError as exc:
            raise SandboxFaultError(str(exc)) from exc

    def _popen(
        self,
        cmd: list[str],
        workdir: Path | None,
        environment: dict[str, str],
        *,
        pass_fds: tuple[int, ...],
        drop_privileges: bool,
        stdin: int,
        stdout: int | IO[bytes],
        stderr: int | IO[bytes],
    ) -> _SandboxPopen:
        preexec = None
        if not self.isolated:
            cmd, preexec = self._unsandboxed_limits(cmd)
        try:
            return _SandboxPopen(
                cmd,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=workdir if not self.isolated else "/",
                env=environment if not self.isolated else {},
                start_new_session=True,
                preexec_fn=preexec,
                pass_fds=pass_fds,
                user=NOBODY_UID if drop_privileges else None,
                group=NOBODY_UID if drop_privileges else None,
                extra_groups=[] if drop_privileges else None,
            )
        except OSError as exc:
            raise SandboxFaultError(f"could not start the sandbox: {exc}") from exc


class _SandboxPopen(subprocess.Popen[bytes]):
    """A sandboxed process; `held` is what its run holds on the host (`popen_in` only)."""

    held: limits_.RunResources | None = None


def kill_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process started by `Sandbox.popen_in` and its whole run (if still alive).

    Its process group is killed, then every task left in the run's cgroup, and
    the cgroup and mount points are removed; the caller still reaps `proc`.
    """
    io_.kill_group(proc)
    held = getattr(proc, "held", None)
    if held is not None:
        held.release()


def python_argv(script: str, *args: str) -> list[str]:
    """Return argv running `script` (workspace file, or `-` for stdin) with the system Python."""
    return [SANDBOX_PYTHON if Path(SANDBOX_PYTHON).exists() else "python3", script, *args]
