"""A bound on a whole run (issue 29): memory and tasks summed over its processes, tmpfs inodes.

Each hostile program runs through the real `Sandbox.run` (real bubblewrap, no
mocks) under each mechanism this machine has: cgroup v2, cgroup v1, and the
fallback (a host-side watch of the run's processes) forced by
`SandboxConfig.limits`. A mechanism the machine lacks is skipped with the
reason. The proofs read the host: the proportional resident memory (`Pss` of
`/proc/<pid>/smaps_rollup`, so pages the forked children share are not counted
twice) and `VmRSS` of every process the run has, sampled every 20 ms; the run
cgroup's own peak; inodes in use on each tmpfs through `/proc/<pid>/root`.
Every program is itself bounded (8 children of 128 MiB, 400,000 files), so a
failed bound costs the machine a bounded amount.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nightschool.errors import SandboxUnavailableError
from nightschool.sandbox import (
    ExecResult,
    Sandbox,
    SandboxConfig,
    kill_process_group,
    python_argv,
)
from nightschool.sandbox._limits import LIMITS_ENV, Hierarchy, RunCgroup

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)

MIB = 1024 * 1024
BOUND_MB = 256
SLACK = 1.10  # the target: never more than 10% over the bound
# The fallback's watch samples the run, so a run can exceed its bound by what it
# allocates between two samples; it stops the run to measure it once it may be
# over. Measured on the 2-core dev machine at load 3-13, as root and not: the
# scaled hog below at most +8.2% (45 runs), the 24 x 512 MiB at most
# +2.2% (15 runs): the same 10% holds for it.
MECHANISMS = ["cgroup2", "cgroup1", "fallback"]

MEMORY_HOG = """
import os, sys, time
children = []
for _ in range(8):  # 8 x 128 MiB = 1 GiB at most, even if the sandbox failed
    try:
        pid = os.fork()
    except OSError:
        print("fork refused"); break
    if pid == 0:
        held = []
        try:
            for _ in range(32):  # 4 MiB at a time, every page touched
                chunk = bytearray(4 * 1024 * 1024)
                for i in range(0, len(chunk), 4096):
                    chunk[i] = 1
                held.append(chunk)
        except MemoryError:
            print("capped at", len(held) * 4, "MiB", flush=True)
        time.sleep(2)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("all children held their memory")
"""

FILE_HOG = """
import os, time
made = {}
for place in ("/workspace", "/tmp", "/dev/shm"):
    made[place] = 0
    try:
        while made[place] < 400_000:  # the issue's 400,000, at most
            open(f"{place}/f{made[place]}", "w").close()
            made[place] += 1
    except OSError:
        pass
os.unlink("/dev/shm/f0")
open("/dev/shm/done", "w").close()
print(made, flush=True)
time.sleep(1.5)
"""


def sandbox_for(mechanism: str, **limits: int) -> Sandbox:
    """A sandbox forced onto `mechanism`; skipped (with the reason) where it cannot work."""
    try:
        return Sandbox(SandboxConfig(limits=mechanism, **limits))  # type: ignore[arg-type]
    except SandboxUnavailableError as exc:
        pytest.skip(f"{mechanism} is not available on this machine: {exc.message}")


def run_descendants(skip: frozenset[int] = frozenset()) -> list[int]:
    """Host pids of every process below this test process (the launcher, bwrap, the run).

    Subtrees rooted at `skip` are left out: children the test process already had
    before the run (in the full suite: the Postgres server, Ray, ...) are not the run.
    """
    parent: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry.name}/stat").read_text()
                parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [os.getpid()]
    while frontier:
        current = frontier.pop()
        children = [pid for pid, ppid in parent.items() if ppid == current and pid not in skip]
        found += [pid for pid in children if not unexeced_fork(pid)]
        frontier += children
    return found


OWN_CMDLINE = Path("/proc/self/cmdline").read_bytes()


def unexeced_fork(pid: int) -> bool:
    """Whether `pid` is this process forked and not yet exec'd (the launcher being started).

    Its pages are the test process's own, shared copy-on-write: in the full suite
    the pytest process holds ~1.8 GB, and a sample caught between fork and exec
    summed half of it as the run's Pss (903 MiB against the cgroup's own 255 MiB
    peak). It is not the run until it execs.
    """
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == OWN_CMDLINE
    except OSError:
        return False


def kib(path: str, field: str) -> int:
    for line in Path(path).read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


class MemorySampler:
    """Every 20 ms: summed Pss and VmRSS of the run's processes, and its cgroup's usage."""

    def __init__(self) -> None:
        self.pss: list[int] = []
        self.rss: list[int] = []
        self.cgroup_peak = 0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._before = frozenset(run_descendants())  # not the run: there before it started

    def _loop(self) -> None:
        while not self._stop.is_set():
            pss = rss = 0
            pids = run_descendants(self._before)
            for pid in pids:
                with contextlib.suppress(OSError):
                    pss += kib(f"/proc/{pid}/smaps_rollup", "Pss")
                    rss += kib(f"/proc/{pid}/status", "VmRSS")
                with contextlib.suppress(OSError):
                    self.cgroup_peak = max(self.cgroup_peak, cgroup_peak(pid))
            self.pss.append(pss)
            self.rss.append(rss)
            self.processes = max(self.processes, len(pids))
            time.sleep(0.02)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def cgroup_peak(pid: int) -> int:
    """The peak usage of the memory cgroup `pid` is in, read from the host (0 at a root)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "nightschool-" not in path:
            continue
        if "memory" in controllers.split(","):
            return int(Path(f"/sys/fs/cgroup/memory{path}/memory.max_usage_in_bytes").read_text())
        if controllers == "":
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                with contextlib.suppress(OSError):
                    return int(Path(f"{root}{path}/memory.peak").read_text())
    return 0


def wait_for(predicate: Callable[[], object], timeout_s: float = 20.0) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError, StopIteration):
            value = predicate()
            if value:
                return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting for the sandboxed program")


def watch_threads() -> list[threading.Thread]:
    """Memory-watch threads of the fallback (`popen_in`) still alive in this process."""
    return [t for t in threading.enumerate() if t.name == "nightschool-memory"]


def leftover_cgroups() -> list[str]:
    """Run cgroups of this process still present in any hierarchy."""
    mine = f"nightschool-{os.getpid()}-"
    found = []
    for root, _, _ in os.walk("/sys/fs/cgroup"):
        if Path(root).name.startswith(mine):
            found.append(root)
    return found


# -- memory and tasks -------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_memory_summed_over_the_run_stays_under_its_bound(mechanism: str) -> None:
    # The escape: 24 children each touching 512 MiB held 12 GiB from one
    # run. Scaled: a 256 MiB bound, 8 children of 128 MiB (1 GiB asked for).
    sandbox = sandbox_for(mechanism, run_memory_mb=BOUND_MB)
    bound = sandbox.bounds.memory_bytes
    assert bound == BOUND_MB * MIB
    with MemorySampler() as sampled:
        result = sandbox.run(python_argv("-"), stdin=MEMORY_HOG, timeout_s=30)
    peak_pss, peak_rss = max(sampled.pss), max(sampled.rss)
    print(
        f"{mechanism}: bound {bound // MIB} MiB; peak Pss {peak_pss / MIB:.1f} MiB, "
        f"VmRSS {peak_rss / MIB:.1f} MiB over up to {sampled.processes} processes; "
        f"cgroup peak {sampled.cgroup_peak / MIB:.1f} MiB; {result.duration_s:.2f} s"
    )
    assert 0 < peak_pss <= bound * SLACK, (peak_pss, bound)
    assert sampled.cgroup_peak <= bound
    assert not result.timed_out and result.duration_s < 20
    assert not result.ok and result.resource_exceeded == "memory", result
    assert "went over its memory bound (256 MiB in all)" in result.stderr
    assert "all children held" not in result.stdout  # the whole run was killed
    assert "fork refused" not in result.stdout and "capped at" not in result.stdout
    if mechanism != "fallback":
        assert sampled.cgroup_peak > bound // 2  # the cgroup, not an rlimit, held it
    assert not leftover_cgroups() and not watch_threads()


@pytest.mark.parametrize("mechanism", ["cgroup2", "cgroup1"])
def test_a_run_under_its_bound_is_untouched_and_leaves_no_cgroup(mechanism: str) -> None:
    sandbox = sandbox_for(mechanism, run_memory_mb=BOUND_MB)
    source = "b = bytearray(64 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint(1)"
    result = sandbox.run(python_argv("-"), stdin=source)
    assert result.ok and result.resource_exceeded is None and result.stdout == "1\n", result
    assert not leftover_cgroups()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_tasks_of_a_run_are_bounded(mechanism: str) -> None:
    sandbox = sandbox_for(mechanism, max_processes=20)
    source = (
        "import os, time\nmade = 0\nfor _ in range(200):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(2); os._exit(0)\n"
        "    made += 1\nprint(made)\n"
    )
    most = 0
    before = frozenset(run_descendants())  # the suite's own children are not the run

    def count() -> None:
        nonlocal most
        while thread.is_alive():
            most = max(most, len(run_descendants(before)))
            time.sleep(0.02)

    out: list[ExecResult] = []
    thread = threading.Thread(
        target=lambda: out.append(sandbox.run(python_argv("-"), stdin=source))
    )
    thread.start()
    count()
    thread.join()
    assert int(out[0].stdout) < 20, out[0]
    assert most <= sandbox.bounds.tasks + 4, (most, sandbox.bounds)  # + the launcher and bwrap


@pytest.mark.parametrize("mechanism", ["cgroup2", "cgroup1"])
def test_a_popen_in_run_has_its_cgroup_until_killed(mechanism: str, tmp_path: Path) -> None:
    sandbox = sandbox_for(mechanism)
    proc = sandbox.popen_in(tmp_path, python_argv("-c", "import time; time.sleep(30)"))
    try:

        def in_cgroup() -> bool:
            return any(
                "nightschool-" in Path(f"/proc/{pid}/cgroup").read_text()
                for pid in run_descendants()
            )

        assert wait_for(in_cgroup)
        assert leftover_cgroups()
    finally:
        kill_process_group(proc)
        proc.wait()
    assert not leftover_cgroups()


# -- the fallback's watch ------------------------------------------------------------------

SHARED = """
import os, time
b = bytearray(96 * 1024 * 1024)  # touched once, then shared copy-on-write by 4 children
for i in range(0, len(b), 4096): b[i] = 1
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        total = sum(b[i] for i in range(0, len(b), 4096))  # reads: nothing is copied
        time.sleep(1); os._exit(0 if total == len(b) // 4096 else 1)
    kids.append(pid)
print(sum(os.waitpid(pid, 0)[1] for pid in kids))
"""

COPY_ON_WRITE = """
import os, time
b = bytearray(64 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1
kids = []
for _ in range(7):  # 8 x 64 MiB = 512 MiB once every child has written its copy
    pid = os.fork()
    if pid == 0:
        for i in range(0, len(b), 4096): b[i] = 2  # each write copies the page
        time.sleep(2); os._exit(0)
    kids.append(pid)
for pid in kids: os.waitpid(pid, 0)
print("all children wrote their copy")
"""

THREADS = """
from concurrent.futures import ThreadPoolExecutor
import threading
def work(n):
    block = bytearray(1024 * 1024)
    return n + len(block) // (1024 * 1024) + threading.active_count() * 0
with ThreadPoolExecutor(48) as pool:
    print(sum(pool.map(work, range(480))))
"""


def test_fallback_counts_shared_memory_once() -> None:
    # Resident memory summed over 5 processes is ~5 x 96 MiB, over the 256 MiB
    # bound; their proportional memory (Pss) is ~96 MiB plus five interpreters'
    # private pages (CI has read up to 134 MiB): under the bound, the run is left alone.
    sandbox = sandbox_for("fallback", run_memory_mb=BOUND_MB)
    with MemorySampler() as sampled:
        result = sandbox.run(python_argv("-"), stdin=SHARED, timeout_s=30)
    assert result.ok and result.stdout == "0\n" and result.resource_exceeded is None, result
    assert max(sampled.rss) > BOUND_MB * MIB > max(sampled.pss), (sampled.rss, sampled.pss)


def test_fallback_catches_copy_on_write_growth() -> None:
    # Children writing to memory they share with their parent grow the run's
    # memory without growing its resident sum: the watch counts their faults.
    sandbox = sandbox_for("fallback", run_memory_mb=BOUND_MB)
    with MemorySampler() as sampled:
        result = sandbox.run(python_argv("-"), stdin=COPY_ON_WRITE, timeout_s=30)
    print(f"fallback copy-on-write: peak Pss {max(sampled.pss) / MIB:.1f} MiB")
    assert result.resource_exceeded == "memory" and "all children" not in result.stdout, result
    assert 0 < max(sampled.pss) <= BOUND_MB * MIB * SLACK


def test_fallback_lets_threaded_programs_run() -> None:
    # The defect of the first fallback (16 tasks x 64 MiB): "can't start new thread".
    sandbox = sandbox_for("fallback")
    result = sandbox.run(python_argv("-"), stdin=THREADS, timeout_s=30)
    assert result.ok and result.stdout == f"{sum(range(480)) + 480}\n", result


def test_fallback_watches_a_popen_in_run_from_a_thread_it_ends(tmp_path: Path) -> None:
    sandbox = sandbox_for("fallback", run_memory_mb=BOUND_MB)
    calm = sandbox.popen_in(tmp_path, python_argv("-c", "import time; time.sleep(30)"))
    try:
        assert len(watch_threads()) == 1
    finally:
        kill_process_group(calm)
        calm.wait()
    assert not watch_threads()  # joined by kill_process_group
    hog = sandbox.popen_in(tmp_path, python_argv("-c", MEMORY_HOG))
    try:
        assert hog.wait(timeout=20) != 0  # killed by the watch, not by the timeout
        assert hog.held is not None and hog.held.breached  # type: ignore[attr-defined]
    finally:
        kill_process_group(hog)
        hog.wait()
    assert not watch_threads()


def test_a_fallback_run_leaves_no_thread_behind() -> None:
    sandbox = sandbox_for("fallback")
    before = threading.active_count()
    result = sandbox.run(python_argv("-"), stdin="print(1)")
    assert result.ok and threading.active_count() == before and not watch_threads()


# -- inodes -------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_files_are_capped_at_max_inodes_per_tmpfs(mechanism: str) -> None:
    # The escape: 400,000 empty files in the workspace and /tmp.
    sandbox = sandbox_for(mechanism)
    if sandbox.bounds.inodes is None:
        pytest.skip("the tmpfs inode bound needs root (nightschool mounts the tmpfs itself)")
    out: list[ExecResult] = []
    thread = threading.Thread(
        target=lambda: out.append(sandbox.run(python_argv("-"), stdin=FILE_HOG, timeout_s=60))
    )
    thread.start()

    def done() -> int:
        return next(p for p in run_descendants() if Path(f"/proc/{p}/root/dev/shm/done").exists())

    pid = int(wait_for(done))  # type: ignore[call-overload]
    used = {}
    for place in ("workspace", "tmp", "dev/shm"):
        st = os.statvfs(f"/proc/{pid}/root/{place}")
        entries = sum(1 for _ in os.scandir(f"/proc/{pid}/root/{place}"))
        used[place] = (st.f_files - st.f_ffree, entries, st.f_files)
    thread.join()
    print(f"{mechanism}: inodes in use (statvfs, entries, nr_inodes) {used}")
    for place, (in_use, entries, total) in used.items():
        assert total == 20_000 and in_use <= 20_000 and entries < 20_000, (place, used)
        assert entries >= 19_000, (place, used)  # the program really pressed the bound
    assert out[0].ok and "400000" not in out[0].stdout, out[0]


# -- choosing the mechanism ----------------------------------------------------------------


def test_the_environment_forces_the_mechanism(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LIMITS_ENV, "fallback")
    fallback = Sandbox(SandboxConfig(run_memory_mb=1024))
    assert fallback.bounds.mechanism == "fallback"
    assert fallback.bounds.memory_bytes == 1024 * MIB and fallback.bounds.tasks == 64
    assert (
        "fallback (host-side watch, best effort): 1024 MiB summed over a run's processes"
        in fallback.bounds.describe()
    )
    source = "import resource\nprint(resource.getrlimit(6), resource.getrlimit(9))"
    result = fallback.run(python_argv("-"), stdin=source)
    assert result.stdout.strip() == f"(64, 64) ({1024 * MIB}, {1024 * MIB})", result  # NPROC, AS
    monkeypatch.setenv(LIMITS_ENV, "cgroup3")
    with pytest.raises(SandboxUnavailableError, match="cgroup3"):
        Sandbox()


def test_a_cgroup2_run_cgroup_gets_its_files_written(tmp_path: Path) -> None:
    # Not a kernel: a plain directory standing in for the cgroup2 tree, to check
    # which files a run cgroup writes on machines without cgroup2 controllers.
    cgroup = RunCgroup(Hierarchy(2, (tmp_path,)), 256 * MIB, 70).create()
    made = cgroup.dirs[0]
    assert (made / "memory.max").read_text() == str(256 * MIB)
    assert (made / "pids.max").read_text() == "70"
    assert cgroup.procs == [str(made / "cgroup.procs")] and cgroup.alarm_fd is None
    assert not cgroup.breached()
    (made / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert cgroup.breached()
