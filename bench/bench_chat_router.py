"""Chat router: answer directly vs the agent loop vs routed, on held-out HumanEval requests.

Issue 11, part 3 (the router on chat turns). Runs the same HumanEval tasks
through the real agent twice in a fresh home - `nightschool eval run --route
direct` (one model call, no tools) and `--route full` (the agent loop) - at
once, each pinned to its own core when there are two, then `nightschool learn
chat-router --json`, which judges the kNN router on held-out requests (5-fold)
against always-full through the promotion gate, and prints the three arms side
by side with their ratios to the loop.

Usage: `python bench/bench_chat_router.py --model qwen2.5-coder-0.5b --limit 40`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("nightschool")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--limit", type=int, default=40, help="the first N HumanEval tasks")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--timeout", type=float, default=600, help="per task, seconds")
    parser.add_argument("--home", type=Path, help="keep the home here (default: a temp dir)")
    args = parser.parse_args()

    home = args.home or Path(tempfile.mkdtemp(prefix="ns-chat-router-"))
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "NIGHTSCHOOL_HOME": str(home),
        "NIGHTSCHOOL_MODEL": args.model,
        "NIGHTSCHOOL_MAX_TOKENS": str(args.max_tokens),
        "COLUMNS": "160",
    }
    common = ["eval", "run", "--suite", "humaneval", "--limit", str(args.limit)]
    common += ["--timeout", str(args.timeout), "--no-playbook"]
    cpus = sorted(os.sched_getaffinity(0))
    pin = len(cpus) >= 2 and shutil.which("taskset") is not None
    # both assemble the model into the home under its lock: one does, the other waits
    started = time.monotonic()
    procs = []
    for index, route in enumerate(("direct", "full")):
        command = [str(SCRIPT), *common, "--route", route]
        if pin:
            command = ["taskset", "-c", str(cpus[index % len(cpus)]), *command]
        log = (home / f"eval-{route}.log").open("w")
        procs.append((route, subprocess.Popen(command, env=env, stdout=log, stderr=log), log))
    for route, proc, log in procs:
        code = proc.wait()
        log.close()
        print(f"eval run --route {route}: exit {code} ({time.monotonic() - started:.0f} s)")
        if code != 0:
            print((home / f"eval-{route}.log").read_text()[-2000:], file=sys.stderr)
            return 1
    learned = subprocess.run(
        [str(SCRIPT), "learn", "chat-router", "--json", "--min-pairs", "10"],
        env=env,
        capture_output=True,
        text=True,
    )
    if learned.returncode not in (0, 1):
        print(learned.stdout + learned.stderr, file=sys.stderr)
        return 1
    report = json.loads(learned.stdout)
    full_tokens = report["tokens_full"] or 1.0
    print(f"\n{report['requests']} held-out HumanEval requests (5-fold), {args.model}; home {home}")
    print("| arm | pass@1 | tokens / request | tokens vs the loop |")
    print("|---|---|---|---|")
    for arm, name in (("full", "agent loop (full)"), ("direct", "direct"), ("routed", "routed")):
        tokens = report[f"tokens_{arm}"]
        print(
            f"| {name} | {report[f'pass_{arm}']:.3f} | {tokens:.0f} | {tokens / full_tokens:.2f} |"
        )
    print(f"routed decisions: {report['decisions']}; tokens saved {report['savings']:.1%}")
    print(f"gate, routed vs full: {report['verdict']}")
    print(f"gate, direct vs full: {report['direct_verdict']}")
    print(f"chat router {'saved' if report['saved'] else 'not saved'}: {report['reason']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
