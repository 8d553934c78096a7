"""llama.cpp built for this CPU's instruction sets against ggml's default build, side by side.

`scripts/install.sh` builds llama-cpp-python with the instruction sets the CPU
reports (`nightschool.llm._cpu`: AVX-512 and VNNI where present) instead of
ggml's defaults (AVX2). This bench runs the same measurements with the
installed build and with a *baseline* build given by `--baseline DIR`, each
in its own process (the baseline's folder first on `PYTHONPATH`):

- **ceiling**: `bench_throughput.py --parts ceiling` (llama.cpp's low-level
  prompt and generation tokens/s at 1 and 2 threads).
- **dream**: `--cycles` self-play cycles through the real dream loop
  (`bench_throughput.run_arm`: new settings, threads chosen per call, prefix
  reuse, the same `--seed`): cycles per hour, passes, verification's share of
  the time, and how many cycles made the same attempts with both builds (their
  floating-point kernels differ, so sampled replies may too).

Make the baseline once (about 10 minutes on 2 cores):

    CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir --no-deps \\
        --target /tmp/llama-default llama-cpp-python==$(pip show llama-cpp-python | sed -n 's/^Version: //p')

Usage: `python bench/bench_build.py --baseline /tmp/llama-default [--model qwen2.5-coder-1.5b]
[--cycles 6] [--seed 7] [--cluster ''] [--parts ceiling,dream] [--out F]`.
Measure on an idle machine (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_throughput as throughput  # a sibling script, not a package

ROOT = throughput.ROOT


def ceiling(model: str, first: Path | None) -> dict[str, Any]:
    """`bench_throughput.py --parts ceiling` in a child process, `first` on the import path."""
    with tempfile.TemporaryDirectory(prefix="ns-build-") as tmp:
        out = Path(tmp) / "ceiling.json"
        env = {**os.environ, "PYTHONPATH": throughput.import_path(ROOT / "src", first)}
        command = [sys.executable, throughput.__file__, "--model", model, "--parts", "ceiling",
                   "--out", str(out)]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"ceiling with {first or 'the installed build'} failed:\n"
                             f"{done.stderr[-3000:]}")  # fmt: skip
        return dict(json.loads(out.read_text())["ceiling"])


def _sets(system_info: str) -> str:
    """The instruction sets a build reports (`AVX2`, `AVX512_VNNI`, ...), space-separated."""
    from nightschool.llm._cpu import built_labels

    return " ".join(sorted(built_labels(system_info) - {"LLAMAFILE", "OPENMP", "REPACK"}))


def show(report: dict[str, Any]) -> None:
    """Print the builds side by side, with ratios installed / baseline."""
    print(f"load average {os.getloadavg()[0]:.2f} at the end; model {report['model']}")
    if "ceiling" in report:
        base, ours = report["ceiling"]["baseline"], report["ceiling"]["installed"]
        print(f"\nbaseline build:  {_sets(base['system_info'])}")
        print(f"installed build: {_sets(ours['system_info'])}")
        print(f"\n{'threads':>8} {'prompt t/s base':>16} {'installed':>10} {'ratio':>6} "
              f"{'gen t/s base':>13} {'installed':>10} {'ratio':>6}")  # fmt: skip
        for threads, b in base["threads"].items():
            o = ours["threads"][threads]
            print(f"{threads:>8} {b['prompt_tps']:>16.1f} {o['prompt_tps']:>10.1f} "
                  f"{o['prompt_tps'] / b['prompt_tps']:>5.2f}x {b['gen_tps']:>13.2f} "
                  f"{o['gen_tps']:>10.2f} {o['gen_tps'] / b['gen_tps']:>5.2f}x")  # fmt: skip
    if "dream" in report:
        d = report["dream"]
        n = len(d["baseline"]["cycles"])
        print(f"\ndream, {n} cycles per build, same seed, new settings")
        print(f"{'build':>10} {'cycles/h':>9} {'passed':>7} {'verify %':>9} {'gen tokens':>11}")
        for name in ("baseline", "installed"):
            a = d[name]
            print(f"{name:>10} {3600 * n / a['elapsed_s']:>9.1f} "
                  f"{sum(c['passed'] for c in a['cycles']):>7} "
                  f"{a['verification_s'] / a['elapsed_s']:>9.0%} {a['tokens_out']:>11}")  # fmt: skip
        speed = d["baseline"]["elapsed_s"] / d["installed"]["elapsed_s"]
        print(f"installed / baseline: {speed:.2f}x cycles per hour; same attempts in "
              f"{d['same_attempts']} of {n} cycles")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True,
                        help="a folder holding llama-cpp-python built with ggml's defaults")  # fmt: skip
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cluster", default="", help="'' (default) lets the frontier choose")
    parser.add_argument("--verify-k", type=int, default=6, help="dream's default: 6")
    parser.add_argument("--parts", default="ceiling,dream")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not (args.baseline / "llama_cpp").is_dir():
        raise SystemExit(f"{args.baseline} holds no llama_cpp package (see --help)")
    parts = set(args.parts.split(","))
    report: dict[str, Any] = {"model": args.model, "load_start": os.getloadavg()[0]}
    if "ceiling" in parts:
        report["ceiling"] = {
            "baseline": ceiling(args.model, args.baseline.resolve()),
            "installed": ceiling(args.model, None),
        }
    if "dream" in parts:
        src = ROOT / "src"
        base = throughput.run_arm(src, args, {}, first=args.baseline.resolve())
        ours = throughput.run_arm(src, args, {})
        same = sum(
            a["codes"] == b["codes"] for a, b in zip(base["cycles"], ours["cycles"], strict=True)
        )
        report["dream"] = {"baseline": base, "installed": ours, "same_attempts": same}
    show(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
