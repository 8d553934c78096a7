"""Store append throughput: 4 KB trajectories, one durable transaction per append.

Target (issue 2): ≥ 2,000 appends/s with durability on (WAL, synchronous=FULL).
Redaction runs on every append, as in production. Prints, side by side: one
commit per append under FULL (fsync-bound) and NORMAL, a batch of 10 appends
per FULL commit (`Store.append_trajectories`), and the disk's own fsync floor.
The database lives under the current directory (the project's disk, not /tmp).
Usage: `python bench/bench_store.py [--records N]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from nightschool.store import Store
from nightschool.trajectory import Outcome, ToolCall, Trajectory

TARGET_PER_S = 2000


def record(i: int) -> Trajectory:
    code = "def solve(rows):\n    return sorted(rows, key=lambda r: (r[1], r[0]))\n" * 34
    return Trajectory(
        session_id="bench",
        task_kind="selfplay",
        cluster="algo",
        tier="basic",
        model="bench-model",
        temperature=0.2,
        system_prompt="You are a careful programmer." * 4,
        user_request=f"Task {i}: sort the rows of input.csv by score then name." * 6,
        tool_calls=[
            ToolCall(
                name="run_solution",
                arguments={"attempt": 1, "code": code},
                result="failed",
                error="line 3: expected '42', got '41'",
                duration_s=0.05,
            )
        ],
        n_steps=1,
        tokens_in=400,
        tokens_out=200,
        outcome=Outcome.FAILED,
        failure_reason="validator rejected all 1 attempts",
        validator_signal="fail",
        final_response=code[:600],
    )


def measure(path: Path, synchronous: str, records: list[Trajectory], batch: int = 1) -> float:
    with Store.open(path, synchronous=synchronous) as store:
        start = time.perf_counter()
        for i in range(0, len(records), batch):
            store.append_trajectories(records[i : i + batch])
        elapsed = time.perf_counter() - start
    return len(records) / elapsed


def fsync_floor_ms(directory: Path, rounds: int = 300) -> float:
    """Median cost of write + fsync of 4 KB on this disk: the ceiling of one durable commit."""
    times = []
    with (directory / "fsync.bin").open("wb") as handle:
        for _ in range(rounds):
            start = time.perf_counter()
            handle.write(b"x" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=3000)
    args = parser.parse_args()
    sample = record(0).model_dump_json()
    print(
        f"record size                     {len(sample.encode()) / 1024:.1f} KiB (JSON), redacted on every append"
    )
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        floor = fsync_floor_ms(Path(tmp))
        print(
            f"disk write+fsync (4 KB)         median {floor:.3f} ms → at most {1000 / floor:,.0f} durable commits/s"
        )
        results = {}
        for label, sync, batch in (
            ("FULL, 1 append per commit", "FULL", 1),
            ("NORMAL, 1 append per commit", "NORMAL", 1),
            ("FULL, 32 appends per commit", "FULL", 32),
        ):
            records = [record(i) for i in range(args.records)]
            results[label] = measure(Path(tmp) / f"{sync}{batch}.db", sync, records, batch)
            print(f"{label:<31} {results[label]:8,.0f} appends/s")
    single = results["FULL, 1 append per commit"]
    batched = results["FULL, 32 appends per commit"]
    print(f"ratio FULL/NORMAL (1 per commit) {single / results['NORMAL, 1 append per commit']:.2f}")
    print(
        f"target ≥ {TARGET_PER_S:,}/s with synchronous=FULL: 1 per commit {'MET' if single >= TARGET_PER_S else 'NOT MET'} "
        f"({single / TARGET_PER_S:.2f}x), batched {'MET' if batched >= TARGET_PER_S else 'NOT MET'} ({batched / TARGET_PER_S:.2f}x)"
    )


if __name__ == "__main__":
    main()
