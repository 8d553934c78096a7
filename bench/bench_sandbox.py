"""Sandbox overhead: one sandboxed `python3 -c pass` against a bare one, side by side.

Target (issue 2): median overhead ≤ 15 ms. Runs the two interleaved so both
see the same machine load. Usage: `python bench/bench_sandbox.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from nightschool.sandbox import SANDBOX_PYTHON, Sandbox, SandboxConfig

TARGET_MS = 15.0


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    sandbox = Sandbox(SandboxConfig())
    bare_argv = [SANDBOX_PYTHON, "-c", "pass"]

    def bare() -> None:
        subprocess.run(bare_argv, check=True, stdin=subprocess.DEVNULL, capture_output=True)

    def boxed() -> None:
        result = sandbox.run([SANDBOX_PYTHON, "-c", "pass"])
        assert result.ok, result

    for _ in range(10):  # warm caches
        bare()
        boxed()
    bare_ms, boxed_ms = [], []
    for _ in range(args.runs):
        bare_ms.append(timed(bare))
        boxed_ms.append(timed(boxed))
    b, s = statistics.median(bare_ms), statistics.median(boxed_ms)
    overhead = s - b
    print(f"runs                     {args.runs} (interleaved)")
    print(
        f"bare python3 -c pass     median {b:7.2f} ms   p95 {sorted(bare_ms)[int(0.95 * len(bare_ms))]:7.2f} ms"
    )
    print(
        f"sandboxed (bwrap+limits) median {s:7.2f} ms   p95 {sorted(boxed_ms)[int(0.95 * len(boxed_ms))]:7.2f} ms"
    )
    print(f"overhead                 median {overhead:7.2f} ms   ratio sandboxed/bare {s / b:.2f}x")
    print(
        f"target                   ≤ {TARGET_MS:.0f} ms → {'MET' if overhead <= TARGET_MS else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
