"""Store append throughput: 4 KB trajectories, one durable transaction per append.

Target (issue 2): ≥ 2,000 appends/s with durability on (WAL, synchronous=FULL).
Redaction runs on every append, as in production. Prints FULL and NORMAL side
by side. Usage: `python bench/bench_store.py [--records N]`.
"""

from __future__ import annotations

import argparse
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


def measure(path: Path, synchronous: str, records: list[Trajectory]) -> float:
    with Store.open(path, synchronous=synchronous) as store:
        start = time.perf_counter()
        for traj in records:
            store.append_trajectory(traj)
        elapsed = time.perf_counter() - start
    return len(records) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=3000)
    args = parser.parse_args()
    sample = record(0).model_dump_json()
    print(f"record size              {len(sample.encode()) / 1024:.1f} KiB (JSON)")
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for sync in ("FULL", "NORMAL"):
            records = [record(i) for i in range(args.records)]
            results[sync] = measure(Path(tmp) / f"{sync}.db", sync, records)
            print(
                f"synchronous={sync:<7}      {results[sync]:8.0f} appends/s ({args.records} appends, one commit each)"
            )
    full = results["FULL"]
    print(f"FULL / NORMAL ratio      {full / results['NORMAL']:.2f}")
    print(
        f"target ≥ {TARGET_PER_S}/s durable   → {'MET' if full >= TARGET_PER_S else 'NOT MET'} ({full / TARGET_PER_S:.2f}x target)"
    )


if __name__ == "__main__":
    main()
