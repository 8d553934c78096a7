"""Limits of a sandboxed run (`SandboxConfig`) and its outcome (`ExecResult`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

NOBODY_UID = 65534
"""uid/gid the sandboxed process runs as when nightschool runs as root."""

SANDBOX_PYTHON = "/usr/bin/python3"
"""Interpreter used inside the sandbox: the system Python, not the virtualenv."""

COPY_OUT_GRACE_S = 10.0
"""Seconds the host waits past the program's timeout for the workspace copy-out."""

MIB = 1024 * 1024


class SandboxConfig(BaseModel):
    """Limits for one sandboxed run."""

    timeout_s: float = Field(default=20.0, gt=0, description="Wall-clock limit, seconds.")
    cpu_s: int = Field(default=20, gt=0, description="RLIMIT_CPU, CPU seconds per process.")
    memory_mb: int = Field(
        default=1024, gt=0, description="RLIMIT_AS, MiB of address space per process."
    )
    file_size_mb: int = Field(default=64, gt=0, description="RLIMIT_FSIZE, MiB per file.")
    max_processes: int = Field(
        default=64, gt=0, description="RLIMIT_NPROC: tasks (threads count) of one run."
    )
    workspace_mb: int = Field(
        default=256,
        gt=0,
        description="Size of the workspace tmpfs, MiB: the most a run can leave in its workspace.",
    )
    workspace_max_entries: int = Field(
        default=20000, gt=0, description="Most files, directories and links copied in or out."
    )
    run_memory_mb: int = Field(
        default=1024,
        gt=0,
        description="Memory of the whole run, MiB: its cgroup's limit (processes, tmpfs, "
        "kernel memory), or in the fallback the resident memory summed over its processes, "
        "as a host-side watch samples it (best effort).",
    )
    max_inodes: int = Field(
        default=20000,
        gt=0,
        description="nr_inodes of the workspace, /tmp and /dev/shm tmpfs (each), when root.",
    )
    limits: Literal["auto", "cgroup2", "cgroup1", "fallback"] = Field(
        default="auto",
        description="How a run's memory and tasks are bounded; auto: the "
        "NIGHTSCHOOL_SANDBOX_LIMITS environment variable if set, else the first that works.",
    )
    tmp_mb: int = Field(default=64, gt=0, description="Size of the private /tmp tmpfs, MiB.")
    shm_mb: int = Field(default=64, gt=0, description="Size of the private /dev/shm tmpfs, MiB.")
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
            a timeout kill; 125 when the workspace could not be copied in;
            unsandboxed, death by signal N is -N.
        stdout: captured standard output, decoded UTF-8 with replacement, at most
            `max_output_bytes` bytes before decoding.
        stderr: same for standard error, followed by `nightschool:` notes when
            workspace entries were not copied back.
        timed_out: True if the wall-clock timeout killed the program.
        duration_s: wall-clock seconds from start to reap.
        truncated: True if stdout or stderr was cut.
        resource_exceeded: "memory" when the run went over its memory bound
            (`run_memory_mb`: the kernel OOM-killed a process in the run's
            cgroup, or in the fallback the host-side watch found the run's
            summed memory over it) and was killed: a failure of the program,
            not of the sandbox. None otherwise (a process over its own
            RLIMIT_AS sees its allocations fail instead).
    """

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    truncated: bool = False
    resource_exceeded: str | None = None

    @property
    def ok(self) -> bool:
        """True when the command exited 0, without timing out or exceeding a bound."""
        return self.returncode == 0 and not self.timed_out and self.resource_exceeded is None

    def output_tail(self, limit: int = 2000) -> str:
        """Return the last `limit` characters of stdout followed by stderr."""
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        return text[-limit:]
