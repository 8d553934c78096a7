"""Isolated execution of untrusted code with bubblewrap.

Guarantees of every sandboxed run (each proved from the host side by
`tests/test_sandbox_hostile.py` and `tests/test_sandbox_bounds.py`):

- network: an empty network namespace (`--unshare-all`); nothing on the host,
  its loopback or its abstract Unix sockets is reachable;
- host files: only `/usr`, the `/bin`-style links and four files of `/etc`
  are visible (read-only); the host's homes, `/tmp` and the project are not
  (hence not `--ro-bind / /`, which would show every host file the uid can read);
- a read-only root: `/`, `/dev` and the system binds are read-only; the only
  writable places are the workspace, `/tmp` and `/dev/shm`, three tmpfs capped
  at `workspace_mb`, `tmp_mb` and `shm_mb` and at `max_inodes` (20,000) files
  each (`nr_inodes`, mounted by nightschool in a private mount namespace, in a
  user namespace of its own when not root: `_launch`). The workspace tmpfs bounds all a
  run can leave behind: a `Workspace`'s host directory is copied in before the
  run and the tmpfs is copied back after it (`nightschool.sandbox._io`: capped
  stream, no special files, no setuid bits, no symlink leaving the workspace);
- no secrets: the environment is cleared and rebuilt from a fixed list;
- no privilege: a non-root uid (65534 when nightschool runs as root), all
  capabilities dropped, `no_new_privs` (setuid binaries do not elevate), no
  nested user namespaces (`--disable-userns`; so no `mount()` either);
- processes: a pid namespace; at most `max_processes` tasks, threads included
  (RLIMIT_NPROC set by util-linux `prlimit` inside the sandbox's user
  namespace, so the count is per run, not per host uid); the whole tree dies
  with the run (timeout, `--die-with-parent`, the pid namespace's init
  exiting); nothing outside the pid namespace can be signalled or ptraced;
- the whole run (`_limits`): a cgroup per run bounds its memory summed over
  all its processes, tmpfs pages and kernel memory included, at `run_memory_mb`
  (1 GiB) and its tasks at `max_processes` plus bubblewrap's own (cgroup v2
  where the unified hierarchy has the memory and pids controllers, else cgroup
  v1); an OOM kill in it ends the run as `ExecResult.resource_exceeded ==
  "memory"`, never as an exception. Where no cgroup can be made (not root, no
  delegation) the fallback is a host-side watch (`_watch`): it samples the
  run's process tree every 25 ms (every 2 ms near the bound; a run shorter
  than 25 ms is never sampled), stops the run to measure its proportional
  resident memory (Pss) exactly once it may be over, and kills it over
  `run_memory_mb`, with the same `resource_exceeded == "memory"`. It is best
  effort, not a kernel bound: a run can exceed its bound by what it allocates
  between two samples (measured on the 2-core dev machine at load 3-13, as
  root and not: at most +8.2% for 8 children of 128 MiB under a 256 MiB bound,
  45 runs; +2.2% for 24 children of 512 MiB under 1 GiB, 15 runs), and each
  process also has
  `min(memory_mb, run_memory_mb)` of address space (RLIMIT_AS), so no single
  process can pass the bound at once. `SandboxConfig.limits` or
  `NIGHTSCHOOL_SANDBOX_LIMITS` forces a mechanism; `nightschool doctor` names
  the one in force and its bound;
- rlimits on CPU seconds, address space and file size per process (`prlimit`);
- a wall-clock timeout, and captured output read through pipes with only the
  first `max_output_bytes` of each stream kept (nothing is spooled to disk).

Not bounded: in the fallback, memory that no process maps (an unmapped memfd,
System V shm) and the three tmpfs come on top of the run's budget, and without
a user namespace that may mount the tmpfs have no inode bound (under a cgroup
their inodes are still memory charged to the run). `Sandbox.popen_in`
processes get the same cgroup, released by `kill_process_group`, or in the
fallback a watch thread of their own, joined by it. Unsandboxed runs get only
the rlimits.

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
from nightschool.sandbox._launch import is_setup_fault

__all__ = [
    "COPY_OUT_GRACE_S",
    "NOBODY_UID",
    "SANDBOX_PYTHON",
    "ExecResult",
    "Sandbox",
    "SandboxConfig",
    "Workspace",
    "is_setup_fault",
    "kill_process_group",
    "python_argv",
]
