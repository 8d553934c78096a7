"""Sandbox overhead: the real `Sandbox` against a bare `python3 -c pass`, interleaved.

Target (issue 9, section 2): median overhead at most 15 ms per run. Three
kinds of run, interleaved so all see the same machine load:

- bare: `subprocess.run([python3, "-c", "pass"])`;
- `Sandbox.run`: bubblewrap, the three capped tmpfs, prlimit, pipes;
- `Workspace.run`: the same plus the workspace round trip (three small files
  copied in, the tmpfs copied back out), as the agent tools and challenges run.

Usage: `python bench/bench_sandbox.py [--runs N] [--limits auto|cgroup2|cgroup1|fallback]`.

Measured 2026-11-24 with `nice -n 19 .venv/bin/python bench/bench_sandbox.py
--runs 200` on the 2-core dev machine while a CPU-bound job kept it at load
average ~5 (so every figure is inflated; an idle machine was not available):
bare 15.2 ms; Sandbox.run 38.1 ms (overhead 22.9 ms); Workspace.run 55.5 ms
(overhead 40.3 ms). The previous sandbox under the same load, interleaved:
overhead 25.0 ms (run) and 21.8 ms (workspace run, a bind mount, no bound on
writes); the copy round trip (GNU tar both ways, coreutils `timeout`, bash)
costs ~10-15 ms of it.

Measured again 2026-11-24 on the idle machine (load ~1), `--runs 200`, two
runs: bare 9.8 / 9.3 ms; Sandbox.run overhead 5.8 / 5.5 ms; Workspace.run
overhead 13.5 / 12.7 ms: both within the 15 ms target.

Issue 29 (a bound on the whole run: a cgroup per run, tmpfs mounted with
`nr_inodes` by a launcher: `unshare --mount`, bash, one `mount --all`,
`setpriv`), measured 2026-11-26 as root on the same 2-core machine at load
average ~5 (no idle machine), 100 interleaved runs of each against a copy of
the sandbox from before: overhead over bare `python3 -c pass` for Sandbox.run
27.1 ms before, 57.6 ms under cgroup v1, 49.1 ms under the forced fallback
(inode mounts only); for Workspace.run 54.5 ms before, 76.7 / 76.3 ms. CPU time
per run, less sensitive to the load: Sandbox.run 4.4 ms before, 8.3 ms cgroup
v1, 6.8 ms fallback; Workspace.run 6.3 / 9.7 / 8.9 ms. Most of the wall-clock
difference under load is the launcher's three extra processes waiting for a
CPU; an idle machine was not available to re-measure against the 15 ms target.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable

from nightschool.sandbox import SANDBOX_PYTHON, Sandbox, SandboxConfig

TARGET_MS = 15.0


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * len(values))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--limits",
        default="auto",
        choices=["auto", "cgroup2", "cgroup1", "fallback"],
        help="the run bound mechanism to measure (default: what works here)",
    )
    args = parser.parse_args()
    sandbox = Sandbox(SandboxConfig(limits=args.limits))
    print(f"run bound: {sandbox.bounds.describe()}")
    argv = [SANDBOX_PYTHON, "-c", "pass"]

    def bare() -> None:
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True)

    def boxed() -> None:
        result = sandbox.run(argv)
        assert result.ok, result

    with sandbox.workspace() as ws:
        for name in ("solution.py", "data.csv", "notes.txt"):
            ws.write_file(name, "x = 1\n" * 200)

        def in_workspace() -> None:
            result = ws.run(argv)
            assert result.ok and not result.stderr, result

        kinds: dict[str, Callable[[], None]] = {
            "bare python3 -c pass": bare,
            "Sandbox.run": boxed,
            "Workspace.run (copy in+out)": in_workspace,
        }
        for _ in range(10):  # warm caches
            for fn in kinds.values():
                fn()
        times: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(args.runs):
            for name, fn in kinds.items():
                times[name].append(timed(fn))
    base = statistics.median(times["bare python3 -c pass"])
    print(f"runs {args.runs} of each, interleaved")
    for name, values in times.items():
        median = statistics.median(values)
        extra = "" if median == base else f"   overhead {median - base:6.2f} ms"
        verdict = "" if median == base else (" MET" if median - base <= TARGET_MS else " NOT MET")
        print(f"{name:28s} median {median:7.2f} ms   p95 {p95(values):7.2f} ms{extra}{verdict}")
    print(f"target: median overhead ≤ {TARGET_MS:.0f} ms over bare")


if __name__ == "__main__":
    main()
