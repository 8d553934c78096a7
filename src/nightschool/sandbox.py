"""Isolated execution of untrusted code with bubblewrap.

Every run gets: an empty network namespace (`--unshare-all`), read-only system
directories, a writable workspace and nothing else writable but a private
`/tmp`, all capabilities dropped, a non-root uid (65534 when started as root,
so `RLIMIT_NPROC` is enforced), rlimits on CPU seconds, address space, file
size and process count (set by util-linux `prlimit` before bubblewrap starts),
a wall-clock timeout that kills the whole process group, and captured output
capped at `max_output_bytes`.

A program that fails, crashes or times out is data (`ExecResult`), never an
exception. Exceptions are reserved for the sandbox itself being unusable
(`SandboxUnavailableError`) or a run failing outside the program
(`SandboxFaultError`).

Measured on the 2-core CI machine: bubblewrap and prlimit add about 8 ms over
a bare `python3 -c pass` (see `bench/bench_sandbox.py`).
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import BaseModel, Field

from nightschool.errors import SandboxFaultError, SandboxUnavailableError

NOBODY_UID = 65534
"""uid/gid the sandboxed process runs as when nightschool runs as root."""

SANDBOX_PYTHON = "/usr/bin/python3"
"""Interpreter used inside the sandbox: the system Python, not the virtualenv."""

_WORKDIR = "/workspace"


class SandboxConfig(BaseModel):
    """Limits for one sandboxed run."""

    timeout_s: float = Field(default=20.0, gt=0, description="Wall-clock limit, seconds.")
    cpu_s: int = Field(default=20, gt=0, description="RLIMIT_CPU, CPU seconds.")
    memory_mb: int = Field(default=1024, gt=0, description="RLIMIT_AS, MiB of address space.")
    file_size_mb: int = Field(default=64, gt=0, description="RLIMIT_FSIZE, MiB per file.")
    max_processes: int = Field(
        default=256, gt=0, description="RLIMIT_NPROC for the sandbox uid (counts threads too)."
    )
    max_output_bytes: int = Field(
        default=65536, gt=0, description="Captured stdout and stderr are each cut to this."
    )
    unsandboxed: bool = Field(
        default=False,
        description="Run without bubblewrap (no isolation). Only by explicit request; warns.",
    )


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one sandboxed command.

    Attributes:
        returncode: exit status. Under bubblewrap a program killed by signal N
            reports 128 + N (e.g. 152 for SIGXCPU from the CPU limit); -9 after
            a timeout kill; unsandboxed, death by signal N is -N.
        stdout: captured standard output, decoded UTF-8 with replacement, at most
            `max_output_bytes` bytes before decoding.
        stderr: same for standard error.
        timed_out: True if the wall-clock timeout killed the process group.
        duration_s: wall-clock seconds from start to reap.
        truncated: True if stdout or stderr was cut.
    """

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the command exited 0 without timing out."""
        return self.returncode == 0 and not self.timed_out

    def output_tail(self, limit: int = 2000) -> str:
        """Return the last `limit` characters of stdout followed by stderr."""
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        return text[-limit:]


def _system_binds() -> list[str]:
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


class Workspace:
    """A fresh writable directory that successive sandboxed commands share.

    Create one with `Sandbox.workspace()`; it is deleted when the context ends.
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
        """Return the text of a workspace file, or None if it does not exist."""
        target = self.path / name
        return target.read_text(encoding="utf-8", errors="replace") if target.is_file() else None

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` in this workspace; see `Sandbox.run`."""
        return self._sandbox.run_in(self.path, argv, stdin=stdin, timeout_s=timeout_s, env=env)


class Sandbox:
    """Runs commands under bubblewrap with the limits of a `SandboxConfig`.

    Raises at construction:
        SandboxUnavailableError: bubblewrap is not installed (and `unsandboxed`
            was not requested), with the package to install in the hint.
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
        elif self._bwrap is None:
            raise SandboxUnavailableError(
                "bubblewrap (bwrap) is not installed, so generated code cannot be run safely",
                hint="install it with `sudo apt-get install -y bubblewrap`, or pass "
                "--unsandboxed to run without isolation",
            )
        self._system_binds = _system_binds()

    @property
    def isolated(self) -> bool:
        """True when runs go through bubblewrap."""
        return not self.config.unsandboxed

    def check(self) -> None:
        """Run `true` in the sandbox once.

        Raises:
            SandboxUnavailableError: if the sandbox cannot start a process.
        """
        with self.workspace() as ws:
            result = ws.run([SANDBOX_PYTHON, "-c", "pass"], timeout_s=30)
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
            path.chmod(0o777)  # the sandbox uid must be able to write here
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
        with self.workspace() as ws:
            for name, text in (files or {}).items():
                ws.write_file(name, text)
            return ws.run(argv, stdin=stdin, timeout_s=timeout_s)

    def _command(self, workdir: Path, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
        if self.config.unsandboxed:
            return list(argv)
        assert self._bwrap is not None
        cmd = [
            self._bwrap,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            *self._system_binds,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--bind",
            str(workdir),
            _WORKDIR,
            "--chdir",
            _WORKDIR,
            "--clearenv",
        ]
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        return [*cmd, "--", *argv]

    def _environment(self, workdir: Path, extra: Mapping[str, str] | None) -> dict[str, str]:
        home = str(workdir) if self.config.unsandboxed else _WORKDIR
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

    def _limited(self, cmd: list[str]) -> tuple[list[str], Callable[[], None] | None]:
        """`cmd` under the rlimits: prefixed with util-linux `prlimit` (a `preexec_fn` if absent).

        Why not always `preexec_fn`: with one, CPython forks through
        `PyOS_AfterFork_Parent`, whose at-fork callbacks (logging's lock release)
        run Python code; a Ctrl-C that lands there raises KeyboardInterrupt
        inside the callback, which is reported as "Exception ignored" and
        dropped, so the user's Ctrl-C was lost (about 1 in 30 interrupts of a
        dream, measured). `prlimit` sets the same limits on itself, then execs.

        Returns:
            (argv, preexec_fn or None).
        """
        if self._prlimit is None:
            return cmd, self._limits
        cfg = self.config
        mib = 1024 * 1024
        return [
            self._prlimit,
            f"--cpu={cfg.cpu_s}:{cfg.cpu_s + 1}",
            f"--as={cfg.memory_mb * mib}",
            f"--fsize={cfg.file_size_mb * mib}",
            f"--nproc={cfg.max_processes}",
            "--core=0",
            "--",
            *cmd,
        ], None

    def _limits(self) -> None:
        """Apply rlimits in the child before exec (runs in the forked process)."""
        cfg = self.config
        mib = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (cfg.cpu_s, cfg.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (cfg.memory_mb * mib, cfg.memory_mb * mib))
        resource.setrlimit(resource.RLIMIT_FSIZE, (cfg.file_size_mb * mib, cfg.file_size_mb * mib))
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg.max_processes, cfg.max_processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def run_in(
        self,
        workdir: Path,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` with `workdir` mounted as the writable workspace.

        Args:
            workdir: host directory bound at `/workspace` (the working directory).
            argv: command and arguments.
            stdin: text for standard input (None: empty).
            timeout_s: wall-clock limit in seconds; default `config.timeout_s`.
            env: extra environment variables; the environment is otherwise cleared.

        Returns:
            `ExecResult`. On timeout the whole process group is killed with SIGKILL
            and `timed_out` is True.

        Raises:
            SandboxFaultError: bubblewrap reported a set-up failure.
        """
        limit = self.config.timeout_s if timeout_s is None else timeout_s
        cap = self.config.max_output_bytes
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = self._spawn(
                workdir,
                argv,
                env,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
            timed_out = False
            try:
                proc.communicate(
                    input=stdin.encode("utf-8") if stdin is not None else None, timeout=limit
                )
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                proc.wait()
            except BaseException:
                _kill_group(proc)
                proc.wait()
                raise
            duration = time.perf_counter() - start
            stdout, cut_out = _read_capped(out, cap)
            stderr, cut_err = _read_capped(err, cap)
        if proc.returncode == 1 and stderr.startswith("prlimit:"):
            raise SandboxFaultError(f"prlimit failed: {stderr.strip()[:500]}")
        if not self.config.unsandboxed and proc.returncode == 1 and stderr.startswith("bwrap:"):
            raise SandboxFaultError(f"bubblewrap failed: {stderr.strip()[:500]}")
        return ExecResult(
            returncode=proc.returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=duration,
            truncated=cut_out or cut_err,
        )

    def popen_in(
        self,
        workdir: Path,
        argv: Sequence[str],
        *,
        stderr: IO[bytes] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `argv` interactively: same bubblewrap argv, rlimits and uid as `run_in`.

        For a long-lived sandboxed process that talks over pipes (the strategy
        runner of `nightschool.evolution`). stdin and stdout are pipes; stderr
        goes to `stderr` (default: discarded). The caller owns the process:
        it must end it with `kill_process_group(proc)` and `proc.wait()`; no
        wall-clock limit is applied here (the CPU rlimit still is).

        Args:
            workdir: host directory bound at `/workspace` (the working directory).
            argv: command and arguments.
            stderr: binary file receiving the process's standard error, or None.
            env: extra environment variables; the environment is otherwise cleared.

        Returns:
            The running `subprocess.Popen` (its own process group).

        Raises:
            SandboxFaultError: the process could not be started.
        """
        return self._spawn(
            workdir,
            argv,
            env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
        )

    def _spawn(
        self,
        workdir: Path,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        *,
        stdin: int,
        stdout: int | IO[bytes],
        stderr: int | IO[bytes],
    ) -> subprocess.Popen[bytes]:
        """Start `argv` under bubblewrap and the rlimits in a session of its own.

        Runs as uid 65534 when nightschool runs as root; its own session lets a
        timeout kill the whole process group.

        Raises:
            SandboxFaultError: the process could not be started.
        """
        drop_privileges = self._as_root and not self.config.unsandboxed
        environment = self._environment(workdir, env)
        cmd, preexec = self._limited(self._command(workdir, argv, environment))
        try:
            return subprocess.Popen(
                cmd,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=workdir,
                env=environment if self.config.unsandboxed else {},
                start_new_session=True,
                preexec_fn=preexec,
                user=NOBODY_UID if drop_privileges else None,
                group=NOBODY_UID if drop_privileges else None,
                extra_groups=[] if drop_privileges else None,
            )
        except OSError as exc:
            raise SandboxFaultError(f"could not start the sandbox: {exc}") from exc


def kill_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of a process started by `Sandbox.popen_in` (if still alive)."""
    _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _read_capped(handle: IO[bytes], cap: int) -> tuple[str, bool]:
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    return handle.read(cap).decode("utf-8", errors="replace"), size > cap


def python_argv(script: str, *args: str) -> list[str]:
    """Return argv running `script` (workspace file, or `-` for stdin) with the system Python."""
    return [SANDBOX_PYTHON if Path(SANDBOX_PYTHON).exists() else "python3", script, *args]
