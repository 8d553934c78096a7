"""Bounds on a whole sandboxed run: its memory, its tasks and its tmpfs inodes.

Private to `nightschool.sandbox`. Three mechanisms bound a run's memory and
task count, tried in this order unless one is forced (`SandboxConfig.limits`,
else the `NIGHTSCHOOL_SANDBOX_LIMITS` environment variable):

- `cgroup2`: a cgroup per run under `<cgroup2 mount>/nightschool/` with
  `memory.max`, `memory.swap.max` 0, `memory.oom.group` 1 (an OOM kill takes
  the whole run) and `pids.max`. Needs the memory and pids controllers in the
  unified hierarchy and the right to enable them below its root (root, in
  practice).
- `cgroup1`: a cgroup per run in the v1 memory hierarchy (`memory.limit_in_bytes`,
  `memory.memsw.limit_in_bytes` where swap accounting exists) and in the v1 pids
  hierarchy (`pids.max`), each created below nightschool's own cgroup so that
  limits above it still apply. An OOM kill is reported through an eventfd
  (`cgroup.event_control`), on which the host kills the rest of the run.
- `fallback`, where no cgroup can be made (not root, no delegation): a
  host-side watch (`_watch.MemoryWatch`) samples the run's process tree while
  it lives and kills the whole run once its memory summed over its processes
  (proportional resident memory, Pss) exceeds `run_memory_mb`; the tasks are
  capped at `max_processes` (RLIMIT_NPROC, threads included) and each process
  at `min(memory_mb, run_memory_mb)` of address space (RLIMIT_AS), so no single
  process can exceed the budget at once. Best effort: a run can exceed its
  budget by what it allocates between two samples (measured in
  `tests/test_sandbox_bounds.py`); memory that no process maps (unmapped memfd,
  System V shm) and the three tmpfs are outside it.

The run joins its cgroup before anything of it exists (the launcher of
`_launch` writes its own pid into `cgroup.procs`, then execs bubblewrap). A
cgroup's kernel memory (tmpfs pages, inodes, page tables) is charged to it too.

Inodes: `RunBounds.inodes` is the `nr_inodes` of each of the three tmpfs,
which the launcher mounts itself in a private mount namespace (`_launch`): as
root, or in a user namespace of the caller's own where the kernel allows it.
Where neither works no inode bound is set (under a cgroup, inodes are still
memory charged to the run).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nightschool.sandbox import _launch as launch_
from nightschool.sandbox import _watch as watch_

if TYPE_CHECKING:
    from nightschool.sandbox._config import SandboxConfig

LIMITS_ENV = "NIGHTSCHOOL_SANDBOX_LIMITS"
"""Environment variable forcing the mechanism: `cgroup2`, `cgroup1`, `fallback` or `auto`."""

MECHANISMS = ("auto", "cgroup2", "cgroup1", "fallback")
"""Values of `SandboxConfig.limits` and `NIGHTSCHOOL_SANDBOX_LIMITS`."""

TASK_OVERHEAD = 6
"""Tasks a run's cgroup allows beyond `max_processes`: bubblewrap's two processes (the
monitor and the pid namespace's init), the bash wrapper, coreutils `timeout`, GNU tar, one spare."""

FAST_MS, SLOW_MS = round(watch_.FAST_S * 1000), round(watch_.SLOW_S * 1000)

_PREFIX = "nightschool-"
_MIB = 1024 * 1024


class LimitsError(Exception):
    """A forced mechanism is unusable here, or a run's cgroup could not be made."""


@dataclass(frozen=True)
class RunBounds:
    """What bounds each sandboxed run of a `Sandbox`, as `doctor` reports it.

    Attributes:
        mechanism: `cgroup2`, `cgroup1`, `fallback`, or `unsandboxed` (nothing).
        memory_bytes: most memory of the whole run. Under a cgroup: every byte
            charged to it (processes, tmpfs pages, kernel memory); in the
            fallback: the resident memory summed over its processes (Pss), as
            the host-side watch samples it.
        tasks: most tasks (processes and threads) of the run.
        process_memory_bytes: RLIMIT_AS of each process.
        inodes: `nr_inodes` of each of the three tmpfs; None when not bounded.
        note: why this mechanism is the one in force (what the others lacked).
    """

    mechanism: str
    memory_bytes: int
    tasks: int
    process_memory_bytes: int
    inodes: int | None
    note: str = ""

    def describe(self) -> str:
        """One line: the mechanism, the memory and task bounds, the inode bound."""
        if self.mechanism == "unsandboxed":
            return "unsandboxed: no bound on a run"
        memory = self.memory_bytes // _MIB
        if self.mechanism == "fallback":
            head = (
                f"fallback (host-side watch, best effort): {memory} MiB summed over a run's "
                f"processes, sampled every {FAST_MS}-{SLOW_MS} ms, {self.tasks} tasks, "
                f"{self.process_memory_bytes // _MIB} MiB address space per process"
            )
        else:
            head = f"{self.mechanism}: {memory} MiB and {self.tasks} tasks per run"
        inodes = "inodes not bounded (no mount namespace)"
        if self.inodes:
            inodes = f"{self.inodes:,} inodes per tmpfs"
        return f"{head}; {inodes}" + (f" ({self.note})" if self.note else "")


# -- finding a place for run cgroups -----------------------------------------------------


@dataclass(frozen=True)
class Hierarchy:
    """Where run cgroups are made: one base (v2) or a memory and a pids base (v1)."""

    version: int
    bases: tuple[Path, ...]


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of each cgroup mount of this process."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                point = fields[4].replace("\\040", " ")
                found.append((fields[3], point, tail[0], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under "" its cgroup2 path."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _join(root: str, point: str, own: str) -> Path:
    """The directory of cgroup `own` in a hierarchy mounted at `point` showing `root`."""
    relative = own[len(root) :] if own.startswith(root) else own
    return Path(point) / relative.lstrip("/")


def _probe(base: Path, files: Sequence[str]) -> None:
    """Make and remove a cgroup under `base`; raise LimitsError if `files` are not there."""
    probe = base / f"{_PREFIX}probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError as exc:
        raise LimitsError(f"cannot create a cgroup under {base}: {exc.strerror}") from exc
    try:
        missing = [name for name in files if not (probe / name).exists()]
        if missing:
            raise LimitsError(f"a cgroup under {base} lacks {', '.join(missing)}")
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


def _sweep(base: Path) -> None:
    """Remove empty run cgroups left by nightschool processes that no longer exist."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            parts = entry.name.split("-")
            stale = entry.name.startswith(_PREFIX) and parts[1].isdigit()
            if stale and entry.is_dir() and not Path(f"/proc/{parts[1]}").exists():
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)


def _cgroup2() -> Hierarchy:
    mount = next((m for m in _mounts() if m[2] == "cgroup2"), None)
    if mount is None:
        raise LimitsError("no cgroup2 hierarchy is mounted")
    root = Path(mount[1])
    wanted = {"memory", "pids"}
    available = set((root / "cgroup.controllers").read_text().split())
    if not wanted <= available:
        missing = " and ".join(sorted(wanted - available))
        raise LimitsError(f"the cgroup2 hierarchy at {root} lacks the {missing} controller")
    base = root / "nightschool"
    try:
        enabled = set((root / "cgroup.subtree_control").read_text().split())
        if not wanted <= enabled:
            (root / "cgroup.subtree_control").write_text("+memory +pids")
        base.mkdir(exist_ok=True)
        (base / "cgroup.subtree_control").write_text("+memory +pids")
    except OSError as exc:
        raise LimitsError(
            f"cannot enable the memory and pids controllers below {root}: {exc.strerror}"
        ) from exc
    _sweep(base)
    _probe(base, ("memory.max", "pids.max"))
    return Hierarchy(2, (base,))


def _cgroup1() -> Hierarchy:
    own = _own_paths()
    bases = []
    for controller, needed in (("memory", "memory.limit_in_bytes"), ("pids", "pids.max")):
        mount = next((m for m in _mounts() if m[2] == "cgroup" and controller in m[3]), None)
        if mount is None or controller not in own:
            raise LimitsError(f"no cgroup v1 {controller} hierarchy is mounted")
        base = _join(mount[0], mount[1], own[controller])
        _sweep(base)
        _probe(base, (needed,))
        bases.append(base)
    return Hierarchy(1, tuple(bases))


@functools.lru_cache(maxsize=8)
def find_hierarchy(mechanism: str) -> tuple[Hierarchy | None, str]:
    """Where this process can make run cgroups for `mechanism` (cached per process).

    Args:
        mechanism: one of `MECHANISMS`.

    Returns:
        (hierarchy, note): the hierarchy, or None for the fallback, and why
        the mechanisms before it were passed over ("" when none was).

    Raises:
        LimitsError: `mechanism` names a cgroup version that is unusable here.
    """
    if mechanism == "fallback":
        return None, "forced"
    if mechanism in ("cgroup2", "cgroup1"):
        return (_cgroup2() if mechanism == "cgroup2" else _cgroup1()), "forced"
    notes: list[str] = []
    for name, find in (("cgroup2", _cgroup2), ("cgroup1", _cgroup1)):
        try:
            return find(), "; ".join(notes)
        except (LimitsError, OSError) as exc:
            notes.append(f"{name}: {exc}")
    return None, "; ".join(notes)


def plan(
    config: SandboxConfig, launcher: launch_.Launcher | None
) -> tuple[RunBounds, Hierarchy | None]:
    """The bounds every run of a sandbox with `config` gets here, and where its cgroups go.

    Args:
        config: the sandbox's limits; `config.limits` "auto" defers to
            `NIGHTSCHOOL_SANDBOX_LIMITS`, then to the first mechanism that works.
        launcher: the host programs found (None: no shell, so no cgroup).

    Raises:
        LimitsError: the mechanism asked for is unknown or unusable here.
    """
    if config.unsandboxed:
        mib, tasks = config.memory_mb * _MIB, config.max_processes
        return RunBounds("unsandboxed", mib * tasks, tasks, mib, None), None
    requested: str = config.limits
    if requested == "auto":
        requested = os.environ.get(LIMITS_ENV, "").strip() or "auto"
    if requested not in MECHANISMS:
        raise LimitsError(f"{LIMITS_ENV}={requested!r} is not one of {', '.join(MECHANISMS)}")
    hierarchy, note = None, "forced" if requested == "fallback" else ""
    root = os.geteuid() == 0
    usable = launcher is not None and not (root and launcher.setpriv is None)
    if requested != "fallback" and not usable:
        why = "no shell (sh, bash)" if launcher is None else "util-linux setpriv is missing"
        if requested != "auto":
            raise LimitsError(f"{requested} cannot be used: {why}")
        note = f"no cgroup: {why}"
    elif requested != "fallback":
        hierarchy, note = find_hierarchy(requested)
    inodes = config.max_inodes if launcher is not None and launcher.can_mount else None
    if hierarchy is not None:
        mechanism = f"cgroup{hierarchy.version}"
        memory, tasks = config.run_memory_mb * _MIB, config.max_processes + TASK_OVERHEAD
        return RunBounds(mechanism, memory, tasks, config.memory_mb * _MIB, inodes, note), hierarchy
    per_process = min(config.memory_mb, config.run_memory_mb) * _MIB
    memory, tasks = config.run_memory_mb * _MIB, config.max_processes
    bounds = RunBounds("fallback", memory, tasks, per_process, inodes, note)
    return bounds, None


# -- one run's cgroup ----------------------------------------------------------------------


@dataclass
class RunCgroup:
    """The cgroup(s) of one run: made with its limits, joined by the launcher, removed after.

    Attributes:
        dirs: the run's cgroup directories (one for v2; memory and pids for v1).
        alarm_fd: an eventfd readable once the kernel OOM-killed a process of the
            run (v1), for the host to kill the rest; None under v2, where
            `memory.oom.group` makes the kernel kill the whole run itself.
    """

    hierarchy: Hierarchy
    memory_bytes: int
    tasks: int
    dirs: list[Path] = field(default_factory=list)
    alarm_fd: int | None = None
    alarmed: bool = False
    _released: bool = False

    def create(self) -> RunCgroup:
        """Make the cgroup(s) and write the limits.

        Raises:
            LimitsError: a directory or a limit could not be written (nothing is left behind).
        """
        name = f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            for base in self.hierarchy.bases:
                (base / name).mkdir()
                self.dirs.append(base / name)
            if self.hierarchy.version == 2:
                self._limit_v2(self.dirs[0])
            else:
                self._limit_v1(*self.dirs)
        except OSError as exc:
            self.release()
            raise LimitsError(f"cannot set up the run's cgroup: {exc}") from exc
        return self

    def _limit_v2(self, path: Path) -> None:
        (path / "memory.max").write_text(str(self.memory_bytes))
        (path / "pids.max").write_text(str(self.tasks))
        for optional, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
            if (path / optional).exists():
                (path / optional).write_text(value)

    def _limit_v1(self, memory: Path, pids: Path) -> None:
        (memory / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():
            (memory / "memory.memsw.limit_in_bytes").write_text(str(self.memory_bytes))
        (pids / "pids.max").write_text(str(self.tasks))
        with contextlib.suppress(OSError):  # without it the breach is still seen afterwards
            efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            control = os.open(memory / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            try:
                (memory / "cgroup.event_control").write_text(f"{efd} {control}")
                self.alarm_fd = efd
            except OSError:
                os.close(efd)
                raise
            finally:
                os.close(control)

    @property
    def procs(self) -> list[str]:
        """The `cgroup.procs` files the launcher writes its pid into."""
        return [str(path / "cgroup.procs") for path in self.dirs]

    def breached(self) -> bool:
        """True once the kernel OOM-killed a process of the run (or the alarm fired)."""
        if self.alarmed or not self.dirs:
            return self.alarmed
        key = "memory.events" if self.hierarchy.version == 2 else "memory.oom_control"
        try:
            text = (self.dirs[0] / key).read_text()
        except OSError:
            return False
        counts = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        return any(int(counts.get(k, "0")) > 0 for k in ("oom_kill", "oom_group_kill"))

    def on_alarm(self) -> None:
        """The OOM alarm fired: note it and SIGKILL every task of the run."""
        self.alarmed = True
        self.kill()

    def _tasks(self) -> list[int]:
        pids: set[int] = set()
        for procs in self.procs:
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in Path(procs).read_text().split())
        return sorted(pids)

    def kill(self) -> None:
        """SIGKILL every task in the run's cgroup (`cgroup.kill` where the kernel has it)."""
        if self.hierarchy.version == 2 and self.dirs and (self.dirs[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
                return
        for pid in self._tasks():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def release(self, wait_s: float = 2.0) -> None:
        """Kill what is left, remove the cgroup(s), close the alarm. Idempotent."""
        if self._released:
            return
        self._released = True
        deadline = time.monotonic() + wait_s
        for path in reversed(self.dirs):
            while True:
                self.kill()
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # left for `_sweep` of a later process
                    time.sleep(0.01)
        if self.alarm_fd is not None:
            os.close(self.alarm_fd)
            self.alarm_fd = None


@dataclass
class RunResources:
    """What one run holds on the host: its cgroup or memory watch, where its tmpfs are mounted."""

    cgroup: RunCgroup | None = None
    watch: watch_.MemoryWatch | None = None
    """The fallback's host-side watch of the run's memory, once the run is started."""
    mounted: dict[str, str] = field(default_factory=dict)
    """Sandbox path → host mount point of the tmpfs the launcher mounts (shared, kept)."""

    def release(self) -> None:
        """Remove the cgroup, killing what is left in it; stop the watch. Idempotent."""
        if self.cgroup is not None:
            self.cgroup.release()
        if self.watch is not None:
            self.watch.release()

    @property
    def breached(self) -> bool:
        """True once the run was killed over its memory bound (cgroup OOM or the watch)."""
        if self.watch is not None and self.watch.breached:
            return True
        return self.cgroup is not None and self.cgroup.breached()


def hold(hierarchy: Hierarchy | None, bounds: RunBounds, paths: tuple[str, ...]) -> RunResources:
    """Make what one run holds: its cgroup (under `hierarchy`) and its tmpfs mount points.

    Raises:
        LimitsError: the cgroup or the mount points could not be made (nothing is left behind).
    """
    held = RunResources()
    if bounds.inodes is not None:
        try:
            held.mounted = launch_.mount_points(paths)
        except OSError as exc:
            raise LimitsError(f"cannot make the tmpfs mount points: {exc}") from exc
    if hierarchy is not None:
        held.cgroup = RunCgroup(hierarchy, bounds.memory_bytes, bounds.tasks).create()
    return held
