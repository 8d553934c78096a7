"""How many CPU threads the embedded model decodes with, chosen per call from what else runs.

llama.cpp's worker threads spin-wait at every graph node's barrier, so a
thread that shares its core with another busy process stalls all the others:
on a fully busy 2-core machine 2 threads were measured more than tenfold slower
than 1 (51 s vs 8 s for one reply). On an idle 2-core machine 2 threads
generate about 1.5x faster than 1 (issue 27: 22.4-23.8 vs 13.7-16.4 tokens/s,
`bench/bench_models.py --threads N`). The right count therefore depends on the
moment, and a fixed default gave up either the speed or the safety.

`choose_threads` looks just before each call: the kernel's count of runnable
tasks (`/proc/loadavg`, field 4, sampled a few times over ~20 ms; the
calling thread itself is one of them) says how many cores something else is
using now. The model takes the cores nobody else is using, at least 1:
on 2 cores, 2 threads when the other core is idle, 1 otherwise. Inside a
container that shares a bigger host's kernel the count is the host's, which
reads as busy: the choice falls back to 1 thread per busy core, never more
than the old default would have taken. `NIGHTSCHOOL_THREADS` fixes the count.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LOADAVG = Path("/proc/loadavg")
"""Linux's load file; field 4 is `running/total` scheduling entities right now."""

SAMPLES = 5
"""Readings of the runnable count per choice; their median is used (one reading
catches a short-lived process as often as a busy one)."""

SAMPLE_GAP_S = 0.004
"""Seconds between readings (so a choice costs ~20 ms against a call of seconds)."""


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count for one call and why.

    Attributes:
        threads: llama.cpp threads for decoding (prompt and generation), >= 1.
        reason: one line for `doctor` and logs, e.g. "2 of 2 CPUs: nothing else runnable".
    """

    threads: int
    reason: str


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def runnable_others(
    read: Callable[[], str] | None = None, *, samples: int = SAMPLES, gap_s: float = SAMPLE_GAP_S
) -> int | None:
    """Tasks runnable right now besides the caller: the median over `samples` readings.

    Args:
        read: returns the text of `/proc/loadavg` (a test double may pass its own).
        samples: readings to take, >= 1.
        gap_s: seconds between readings.

    Returns:
        The median of (running - 1) over the readings, >= 0; None when the file
        cannot be read or parsed (not Linux).
    """
    reader = read or (lambda: LOADAVG.read_text(encoding="ascii"))
    counts: list[int] = []
    for index in range(samples):
        if index:
            time.sleep(gap_s)
        try:
            running = int(reader().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return None
        counts.append(max(0, running - 1))
    return int(statistics.median_low(counts))


def choose_threads(
    fixed: int | None = None,
    *,
    cpus: int | None = None,
    others: Callable[[], int | None] | None = None,
) -> ThreadChoice:
    """The thread count for the next call: `fixed`, else the cores nobody else is using.

    Args:
        fixed: a count the user set (`NIGHTSCHOOL_THREADS`, `EmbeddedConfig.n_threads`).
        cpus: usable CPUs; None reads the affinity mask.
        others: returns the runnable tasks besides the caller (`runnable_others`).

    Returns:
        `fixed` when given; else `cpus - others` clamped to [1, cpus]; when the
        count cannot be read, the old default `cpus - 1` (at least 1).
    """
    if fixed is not None:
        return ThreadChoice(fixed, f"{fixed}: fixed by the settings (NIGHTSCHOOL_THREADS)")
    total = cpus if cpus is not None else usable_cpus()
    busy = (others or runnable_others)()
    if busy is None:
        threads = max(1, total - 1)
        return ThreadChoice(threads, f"{threads} of {total} CPUs: load unreadable, one kept free")
    threads = max(1, min(total, total - busy))
    if busy == 0:
        return ThreadChoice(threads, f"{threads} of {total} CPUs: nothing else runnable")
    return ThreadChoice(threads, f"{threads} of {total} CPUs: {busy} other task(s) runnable")
