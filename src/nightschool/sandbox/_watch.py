"""The fallback's bound on a run's memory: a host-side watch of its process tree.

Private to `nightschool.sandbox`. Where no cgroup can be made (not root, no
delegation), `MemoryWatch` samples the run from the host while it lives and
SIGKILLs all of it once the memory summed over its processes exceeds the run's
budget (`run_memory_mb`); the run then ends as `resource_exceeded == "memory"`
exactly as under a cgroup. One sample:

1. the run's processes: the launched process and its descendants, found
   through `/proc/<pid>/task/<tid>/children` (every thread's, since a thread
   can fork); orphans stay in the tree, reparented to the pid namespace's init;
2. a cheap upper bound: their resident memory summed (`/proc/<pid>/stat`,
   counters the kernel keeps, ~25 µs a process). Under the budget: done.
   Resident memory counts a page shared by several processes (forked
   copy-on-write memory, libraries) once per process, so a run of forked
   workers can be far over its budget by this count and far under it in fact;
3. a tighter upper bound: the Pss found by the last exact measure plus what
   each process added since, by its resident count and its page faults (every
   page a process adds costs it a fault or shows in its resident count, a
   copy-on-write copy included). Under the budget: done;
4. the exact figure: the run is stopped (SIGSTOP, so that it cannot allocate
   while it is measured), its proportional resident memory (`Pss` of
   `smaps_rollup`, which counts a shared page once in all) is summed, and it is
   killed if over the budget, else continued (SIGCONT). The kernel walks the
   page tables for `Pss` (~17 ms per resident GiB, measured), so only then,
   and a run is stopped at most about half of the time.

The first sample is due `SLOW_S` after the start, so a run shorter than that
costs one `pidfd_open`; a sample costs ~0.5 ms of host CPU (the bank's
references at seed 2024: 210 runs, 1,508 samples, no page-table walk). The
next sample is due when the headroom left could be used up at `ASSUMED_RATE`,
between `FAST_S` and `SLOW_S`: far from the budget every 25 ms, near it every
2 ms. A run can still exceed its budget by what it allocates between two
samples (best effort: cgroups are the real bound; `tests/test_sandbox_bounds.py`
measures it).

`Sandbox.run` and `run_in` drive the watch from the loop that pumps the run's
pipes (`MemoryWatch.poll`, no thread); `popen_in` gets a thread of its own
(`MemoryWatch.start`), ended by `release()` or when the process ends.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time

SLOW_S = 0.025
"""Seconds between samples far from the budget, and before the first one."""

FAST_S = 0.002
"""Seconds between samples at the budget's edge."""

ASSUMED_RATE = (2 << 30) * len(os.sched_getaffinity(0))
"""Bytes a second a run is assumed able to allocate: 2 GiB/s per usable CPU (one process
faulting in fresh pages measured ~1.5 GiB/s here); the next sample is due before the
headroom left could be used up at this rate."""

_PAGE = os.sysconf("SC_PAGE_SIZE")


def descendants(root: int) -> list[int]:
    """`root` and every process below it, as the host sees them (gone ones left out)."""
    found, frontier = [root], [root]
    while frontier:
        pid = frontier.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                    children = [int(child) for child in handle.read().split()]
            except (OSError, ValueError):
                continue
            found += children
            frontier += children
    return found


def counters(pid: int) -> tuple[int, int, int] | None:
    """(start time, resident bytes, page faults) of `pid` from `/proc/<pid>/stat` (cheap).

    The kernel keeps these as counters (no page-table walk: ~25 µs a process).
    Faults are minor plus major ones, summed over the process's threads. None
    when `pid` is gone.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
        return int(fields[19]), int(fields[21]) * _PAGE, int(fields[7]) + int(fields[9])
    except (OSError, ValueError, IndexError):
        return None


def resident(pid: int) -> int:
    """Resident bytes of `pid` (0 when it is gone)."""
    found = counters(pid)
    return found[1] if found is not None else 0


def proportional(pid: int) -> int:
    """Proportional resident bytes of `pid` (`Pss` of `smaps_rollup`; walks its page tables).

    Falls back to `resident(pid)` (an upper bound) where `smaps_rollup` cannot be read.
    """
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resident(pid)


class MemoryWatch:
    """Kills a run whose memory, summed over its processes, goes over `budget` bytes.

    Attributes:
        breached: True once the run was killed over its budget.
        peak: the largest figure a sample went by (bytes; an upper bound of the
            run's Pss at that moment, or its exact Pss where measured).
        samples: samples taken.
    """

    def __init__(self, pid: int, budget: int) -> None:
        self.pid = pid
        self.budget = budget
        self.breached = False
        self.peak = 0
        self.samples = 0
        self._due = time.monotonic() + SLOW_S
        self._base: tuple[int, dict[tuple[int, int], tuple[int, int]]] | None = None
        self._pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._pidfd = os.pidfd_open(pid)
        self._closed = False
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def poll(self) -> float:
        """Sample if one is due; the seconds until the next is due (inf once breached or closed)."""
        if self.breached or self._closed:
            return float("inf")
        now = time.monotonic()
        if now >= self._due:  # counted from the sample's start: near the budget, a slow
            self._due = now + self.sample()  # sample is followed at once by the next
        return max(self._due - time.monotonic(), 0.0)

    def sample(self) -> float:
        """Measure the run once, killing it if over budget; seconds until the next sample."""
        self.samples += 1
        pids = descendants(self.pid)
        now = {(pid, *found[:1]): found[1:] for pid in pids if (found := counters(pid))}
        total = sum(rss for rss, _ in now.values())
        rest = 0.0
        if total > self.budget:  # resident counts shared pages once per process: too high
            total = self._estimate(now)
        if total > self.budget:  # perhaps over: stop the run, measure it exactly
            start = time.monotonic()
            pids = self._signal_all(signal.SIGSTOP, pids)
            try:
                total = sum(proportional(pid) for pid in pids)
                if total > self.budget and self._alive():
                    self.breached = True
                    self.peak = max(self.peak, total)
                    self._signal_all(signal.SIGKILL, pids)
                    return float("inf")
            finally:
                if not self.breached:
                    self._signal_all(signal.SIGCONT, pids, again=False)
            rest = time.monotonic() - start  # stopped at most half of the time
            self._base = (total, now)
        self.peak = max(self.peak, total)
        headroom = self.budget - total
        return max(rest, min(SLOW_S, max(FAST_S, headroom / ASSUMED_RATE)))

    def _estimate(self, now: dict[tuple[int, int], tuple[int, int]]) -> int:
        """An upper bound of the run's Pss from the last walk and the counters since.

        Every page a process adds costs it a fault, or shows in its resident
        count (a fault may map many: huge pages, fault-around), so the Pss at
        the last walk plus each process's growth in both since then bounds the
        Pss now, copy-on-write breaks included. Without a walk yet: infinite.
        """
        if self._base is None:
            return 1 << 62
        total, then = self._base
        for key, (rss, faults) in now.items():
            old_rss, old_faults = then.get(key, (0, 0))
            total += max(rss - old_rss, 0) + (faults - old_faults) * _PAGE
        return total

    def _alive(self) -> bool:
        """False once the launched process has ended (its pid may then be reused)."""
        if self._pidfd is None:
            return os.path.exists(f"/proc/{self.pid}")
        return not select.select([self._pidfd], [], [], 0)[0]

    def _signal_all(self, sig: int, pids: list[int], *, again: bool = True) -> list[int]:
        """Send `sig` to every process of the run; with `again`, also to any born meanwhile.

        Returns the processes signalled. The launched process is signalled
        through its pidfd (its pid may be reused once it is reaped); the others
        are its live descendants, found a moment before.
        """
        done: set[int] = set()
        while pids:
            for pid in pids:
                if pid == self.pid and self._pidfd is not None:
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(self._pidfd, sig)
                else:
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
            done.update(pids)
            pids = [pid for pid in descendants(self.pid) if pid not in done] if again else []
        return sorted(done)

    def start(self) -> MemoryWatch:
        """Watch from a thread of its own (`popen_in`), until `release()` or the process ends."""
        self._thread = threading.Thread(target=self._loop, name="nightschool-memory", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        wait = SLOW_S
        while wait != float("inf") and not self._stop.is_set():
            if self._pidfd is not None:
                if select.select([self._pidfd], [], [], wait)[0]:
                    return  # the process ended
            elif self._stop.wait(wait):
                return
            if not self._stop.is_set():
                wait = self.poll()

    def release(self) -> None:
        """Stop the thread (joined) and close the pidfd. Idempotent."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        if not self._closed:
            self._closed = True
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
