"""Frontier-weighting ablation: held-out lift per hour of dreaming, PRM picker vs brittle.

Issue 11, part 4: `pick_frontier_seed` (PRM uncertainty x rarity) is on by
default only if it makes the agent learn faster than the brittle picker
(`pick_seed`). This runs the deciding experiment with the real code: two
`nightschool eval learning-curve` runs from the same empty start, the same
seed, model, held-out sets and dream budget, differing only in `--frontier`
(`brittle` vs `prm`). The PRM arm's home gets a PRM checkpoint trained on the
given stores (`learners.train_prm`, written whether or not it passed its own
save rule, since today none does: the ablation needs one to engage).

The two arms run at once, each pinned to its own core (`taskset`) when the
machine has two or more, so machine load hits both alike; the embedded model
uses one thread per process on a 2-core machine anyway.

It prints, per arm: pass@1 per checkpoint and held-out set, the lift over the
start per hour of dreaming, how many dream cycles the PRM picker actually
chose, and then the gate's paired verdict of the PRM arm against the brittle
arm on the final checkpoint's items (both sets, pooled; superiority mode).

Usage: `python bench/bench_frontier_ablation.py --train-glob '/tmp/*/nightschool.db'
--model qwen2.5-coder-0.5b --cycles 5 --checkpoints 2`.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _stores import load_trajectories, store_paths
from nightschool.gate import PairedResult, promotion_gate
from nightschool.learn import PrmConfig, prm_path, save_checkpoint, train_prm
from nightschool.learn.frontier import FRONTIER_PREFIX
from nightschool.store import Store

ARMS = ("brittle", "prm")


def _stream(name: str, proc: subprocess.Popen[str], log: Path) -> None:
    assert proc.stdout is not None
    with log.open("w") as sink:
        for line in proc.stdout:
            sink.write(line)
            sink.flush()
            print(f"[{name}] {line}", end="", flush=True)


def _curve_command(args: argparse.Namespace, arm: str, out: Path) -> list[str]:
    command = [
        str(Path(sys.executable).with_name("nightschool")),
        "eval",
        "learning-curve",
        "--frontier",
        arm,
        "--model",
        args.model,
        "--cycles",
        str(args.cycles),
        "--checkpoints",
        str(args.checkpoints),
        "--tiers",
        args.tiers,
        "--per-cell",
        str(args.per_cell),
        "--seed",
        str(args.seed),
        "--verify-k",
        str(args.verify_k),
        "--ablation",
        "none",
        "--out",
        str(out),
    ]
    return command


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _prm_picks(home: Path) -> tuple[int, int]:
    """(cycles whose pick was the PRM picker's, all dream cycles) in `home`'s store."""
    with Store.open(home / "nightschool.db") as store:
        picks = [
            str(t.extra.get("pick_reason", ""))
            for t in store.iter_trajectories()
            if t.task_kind == "selfplay"
        ]
    return sum(p.startswith(FRONTIER_PREFIX) for p in picks), len(picks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-glob", required=True, help="stores the PRM is trained on")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--cycles", type=int, default=5, help="dream cycles per checkpoint")
    parser.add_argument("--checkpoints", type=int, default=2)
    parser.add_argument("--tiers", default="starter")
    parser.add_argument("--per-cell", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verify-k", type=int, default=6)
    parser.add_argument("--out", type=Path, help="keep both arms' homes and curves here")
    args = parser.parse_args()

    trajectories = load_trajectories(store_paths(args.train_glob))
    params, report = train_prm(trajectories, PrmConfig())
    print(
        f"PRM trained on {report.trajectories} trajectories: prefix AUC {report.auc_prefix}, "
        f"open-state AUC {report.auc_open} vs request-only {report.baseline_auc_open}; "
        f"passes its own save rule: {report.beats_baseline()} (used either way)"
    )

    root = args.out or Path(tempfile.mkdtemp(prefix="ns-frontier-ablation-"))
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o711)
    cpus = sorted(os.sched_getaffinity(0))
    pin = len(cpus) >= 2 and shutil.which("taskset") is not None
    procs: dict[str, subprocess.Popen[str]] = {}
    threads: list[threading.Thread] = []
    started = time.monotonic()
    for index, arm in enumerate(ARMS):
        home = root / arm / "home"
        if home.exists():
            shutil.rmtree(home)
        home.mkdir(parents=True)
        if arm == "prm":
            prm_path(home).parent.mkdir(parents=True, exist_ok=True)
            save_checkpoint(prm_path(home), params)
        command = _curve_command(args, arm, root / arm / "curve")
        if pin:
            command = ["taskset", "-c", str(cpus[index % len(cpus)]), *command]
        env = {
            **os.environ,
            "NIGHTSCHOOL_HOME": str(home),
            "NIGHTSCHOOL_MAX_TOKENS": str(args.max_tokens),
        }
        procs[arm] = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        thread = threading.Thread(
            target=_stream, args=(arm, procs[arm], root / arm / "curve.log"), daemon=True
        )
        thread.start()
        threads.append(thread)
    try:
        codes = {arm: proc.wait() for arm, proc in procs.items()}
    except KeyboardInterrupt:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait()
        print("interrupted: both arms stopped", file=sys.stderr)
        return 130
    for thread in threads:
        thread.join(timeout=5)
    wall = time.monotonic() - started
    failed = {arm: code for arm, code in codes.items() if code != 0}
    if failed:
        print(f"an arm failed: {failed}; logs under {root}", file=sys.stderr)
        return 1

    print(f"\nboth arms done in {wall / 60:.1f} min; files under {root}\n")
    curves = {arm: _rows(root / arm / "curve" / "curve.csv") for arm in ARMS}
    items = {arm: _rows(root / arm / "curve" / "items.csv") for arm in ARMS}
    last = str(args.checkpoints)
    print("| arm | checkpoint | dream min | cycles | (a) new seeds | (b) unseen templates |")
    print("|---|---|---|---|---|---|")
    lifts: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        by = {(r["checkpoint"], r["set"]): r for r in curves[arm] if r["arm"] in ("none", "both")}
        for checkpoint in range(args.checkpoints + 1):
            a, b = by[(str(checkpoint), "a")], by[(str(checkpoint), "b")]
            print(
                f"| {arm} | {checkpoint} | {float(a['dream_minutes']):.1f} | {a['cycles']} "
                f"| {a['passed']}/{a['n']} | {b['passed']}/{b['n']} |"
            )
        hours = float(by[(last, "a")]["dream_minutes"]) / 60
        lifts[arm] = {
            s: (float(by[(last, s)]["pass_at_1"]) - float(by[("0", s)]["pass_at_1"]))
            / max(hours, 1e-9)
            for s in ("a", "b")
        }
    print()
    for arm in ARMS:
        engaged, cycles = _prm_picks(root / arm / "home")
        print(
            f"{arm:8s} lift per hour of dreaming: (a) {lifts[arm]['a'] * 100:+.1f} pts/h, "
            f"(b) {lifts[arm]['b'] * 100:+.1f} pts/h; PRM-weighted picks {engaged} of {cycles} "
            "cycles"
        )

    final = {
        arm: {r["task_id"]: r for r in items[arm] if r["checkpoint"] == last and r["arm"] == "both"}
        for arm in ARMS
    }
    shared = sorted(set(final["brittle"]) & set(final["prm"]))
    pairs = [
        PairedResult(
            task_id=task,
            incumbent_score=float(final["brittle"][task]["passed"]),
            candidate_score=float(final["prm"][task]["passed"]),
            incumbent_cost=float(final["brittle"][task]["tokens"]),
            candidate_cost=float(final["prm"][task]["tokens"]),
        )
        for task in shared
    ]
    verdict = promotion_gate(pairs)
    wins = sum(p.candidate_score > p.incumbent_score for p in pairs)
    losses = sum(p.candidate_score < p.incumbent_score for p in pairs)
    print(
        f"\nfinal checkpoint, PRM arm vs brittle arm on the same {len(pairs)} held-out items: "
        f"{wins} wins, {losses} losses; gate: {verdict.summary()}"
    )
    print(
        "decision: "
        + (
            "turn the PRM picker on by default"
            if verdict.promote
            else "the brittle picker stays the default"
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
