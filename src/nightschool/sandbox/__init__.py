"""Isolated execution of untrusted code with bubblewrap.

Guarantees of every sandboxed run (each proved from the host side by
`tests/test_sandbox_hostile.py`):

- network: an empty network namespace (`--unshare-all`); nothing on the host,
  its loopback or its abstract Unix sockets is reachable;
- host files: only `/usr`, the `/bin`-style links and four files of `/etc`
  are visible (read-only); the host's homes, `/tmp` and the project are not
  (hence not `--ro-bind / /`, which would show every host file the uid can read);
- a read-only root: `/`, `/dev` and the system binds are read-only; the only
  writable places are the workspace, `/tmp` and `/dev/shm`, three tmpfs capped
  at `workspace_mb`, `tmp_mb` and `shm_mb`. The workspace tmpfs bounds all a
  run can leave behind: a `Workspace`'s host directory is copied in before the
  run and the tmpfs is copied back after it (`nightschool.sandbox._io`: capped
  stream, no special files, no setuid bits, no symlink leaving the workspace);
- no secrets: the environment is cleared and rebuilt from a fixed list;
- no privilege: a non-root uid (65534 when nightschool runs as root), all
  capabilities dropped, `no_new_privs` (setuid binaries do not elevate), no
  nested user namespaces (`--disable-userns`; so no `mount()` either);
- processes: a pid namespace; at most `max_processes` tasks (RLIMIT_NPROC set
  by util-linux `prlimit` inside the sandbox's user namespace, so the count is
  per run, not per host uid); the whole tree dies with the run (timeout,
  `--die-with-parent`, the pid namespace's init exiting); nothing outside the
  pid namespace can be signalled or ptraced;
- rlimits on CPU seconds, address space and file size per process (`prlimit`);
- a wall-clock timeout, and captured output read through pipes with only the
  first `max_output_bytes` of each stream kept (nothing is spooled to disk).

Not bounded: memory summed over processes beyond `max_processes × memory_mb`
plus the three tmpfs, and memory outside RLIMIT_AS (memfd, System V shm); a
cgroup would be needed for that.

A program that fails, crashes or times out is data (`ExecResult`), never an
exception. Exceptions are reserved for the sandbox itself being unusable
(`SandboxUnavailableError`) or a run failing outside the program
(`SandboxFaultError`).

Overhead over a bare `python3 -c pass`: `bench/bench_sandbox.py` (figures in
its docstring). Needs bubblewrap 0.8+ (`--disable-userns`, `--size`).
"""

from nightschool.sandbox._config import (
    COPY_OUT_GRACE_S,
    NOBODY_UID,
    SANDBOX_PYTHON,
    ExecResult,
    SandboxConfig,
)
from nightschool.sandbox._core import Sandbox, Workspace, kill_process_group, python_argv

__all__ = [
    "COPY_OUT_GRACE_S",
    "NOBODY_UID",
    "SANDBOX_PYTHON",
    "ExecResult",
    "Sandbox",
    "SandboxConfig",
    "Workspace",
    "kill_process_group",
    "python_argv",
]
