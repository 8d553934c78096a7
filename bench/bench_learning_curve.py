"""Learning that shows: held-out pass@1 before and after dreaming, with the ablation.

Runs the real `nightschool eval learning-curve` (a fresh home, the embedded default
model unless --model says otherwise, the real sandbox and database), then prints,
side by side: pass@1 of held-out set (a) new seeds of practised templates and (b)
templates never practised, at the start and at every checkpoint; the lift in
points against the start with the promotion gate's verdict; and the ablation at
the last checkpoint (nothing / lessons only / skills only / both / placebo / equal
compute). Set (a) is "same family" (new tasks of practised templates' families,
never the headline); set (b) is the held-out figure (templates never practised),
and each verdict pairs templates, not items.

Last, the **replay check**: every skill the dream learned (its passing code) is
run as the answer to every held-out item through the challenge's own validator
(real sandbox). An item a learned skill passes as it stands is not held out from
what was learned: a win there is recall, whatever its set.

Targets (issue "Learning that shows"): after at most 2 hours of dreaming, (a) up
at least +10 points and promoted by the gate; (b) not significantly lower.

A run with `--out DIR` keeps its home in `DIR/home` and can be resumed after
Ctrl-C, a crash or the end of a session: the same command plus `--resume`
(`eval learning-curve --resume`: measured items and dreamt cycles are kept).

Usage:
    .venv/bin/python bench/bench_learning_curve.py --minutes 20 --checkpoints 3
    .venv/bin/python bench/bench_learning_curve.py --cycles 4 --checkpoints 1 --model smollm2-135m
    .venv/bin/python bench/bench_learning_curve.py --minutes 45 --out RUN            # resumable
    .venv/bin/python bench/bench_learning_curve.py --minutes 45 --out RUN --resume   # go on
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("nightschool")


def replay_check(out: Path, home: Path) -> dict[str, dict[str, list[str]]]:
    """Learned skills replayed as answers to the held-out items of the curve in `out`.

    Args:
        out: the curve's `--out` (its `meta.json` names tiers, per-cell and seed).
        home: the curve's `NIGHTSCHOOL_HOME` (its database holds the skills).

    Returns:
        Per set (`a`, `b`): `items`, the task ids; `replayable`, those some
        skill's code passes as it stands (with the skill's id after a space).
    """
    from nightschool.challenges import evaluate
    from nightschool.evals.curve import build_heldout
    from nightschool.playbook import SkillMemory
    from nightschool.sandbox import Sandbox
    from nightschool.store import Store

    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    heldout = build_heldout(meta["tiers"], meta["per_cell"], meta["seed"])
    with Store.open(home / "nightschool.db") as store:
        skills = [s for s in SkillMemory(store).list(kind="skill") if s.code_example]
    sandbox = Sandbox()
    found: dict[str, dict[str, list[str]]] = {
        name: {"items": [], "replayable": []} for name in ("a", "b")
    }
    for item in heldout.items:
        found[item.set_name]["items"].append(item.task_id)
        for skill in skills:
            if evaluate(sandbox, item.challenge, skill.code_example).passed:
                found[item.set_name]["replayable"].append(f"{item.task_id} {skill.id}")
                break
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, help="dream minutes per checkpoint")
    parser.add_argument("--cycles", type=int, help="dream cycles per checkpoint")
    parser.add_argument("--checkpoints", type=int, default=3)
    parser.add_argument("--tiers", default="starter,basic")
    parser.add_argument("--per-cell", type=int, default=2)
    parser.add_argument("--verify-k", type=int, default=6)
    parser.add_argument("--ablation", choices=("final", "all", "none"), default="final")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None, help="catalog name (default: the default model)")
    parser.add_argument(
        "--max-tokens", type=int, default=512, help="completion cap (512: the product default)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the run's files (and its home) here"
    )
    parser.add_argument("--resume", action="store_true", help="go on with the run in --out")
    args = parser.parse_args()
    if (args.minutes is None) == (args.cycles is None):
        parser.error("give exactly one of --minutes or --cycles")
    if args.resume and args.out is None:
        parser.error("--resume needs the --out of the run to go on with")
    home = args.out / "home" if args.out else Path(tempfile.mkdtemp(prefix="ns-curve-home-"))
    out = args.out or Path(tempfile.mkdtemp(prefix="ns-curve-out-"))
    command = [
        str(SCRIPT), "eval", "learning-curve", "--out", str(out),
        "--checkpoints", str(args.checkpoints), "--tiers", args.tiers,
        "--per-cell", str(args.per_cell), "--verify-k", str(args.verify_k),
        "--seed", str(args.seed), "--ablation", args.ablation,
    ]  # fmt: skip
    command += ["--minutes", str(args.minutes)] if args.minutes else ["--cycles", str(args.cycles)]
    if args.model:
        command += ["--model", args.model]
    if args.resume:
        command += ["--resume"]
    env = {
        **os.environ,
        "NIGHTSCHOOL_HOME": str(home),
        "NIGHTSCHOOL_MAX_TOKENS": str(args.max_tokens),
    }
    print("running:", " ".join(command), f"(home {home})", flush=True)
    started = time.perf_counter()
    result = subprocess.run(command, env=env, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        print(f"learning-curve exited {result.returncode}", file=sys.stderr)
        return result.returncode
    rows = list(csv.DictReader((out / "curve.csv").open(encoding="utf-8")))
    verdicts = json.loads((out / "verdicts.json").read_text(encoding="utf-8"))
    start = {r["set"]: float(r["pass_at_1"]) for r in rows if r["checkpoint"] == "0"}
    print(f"\nwall time {wall / 60:.1f} min; files in {out}")
    print(f"{'ckpt':>4} {'dream min':>9} {'cycles':>6} {'arm':>8} {'set':>3} "
          f"{'pass@1':>14} {'lift pts':>8}  gate")  # fmt: skip
    for row in rows:
        verdict = next(
            (v for v in verdicts
             if str(v["checkpoint"]) == row["checkpoint"] and v["arm"] == row["arm"]
             and v["set"] == row["set"]),
            None,
        )  # fmt: skip
        lift = (float(row["pass_at_1"]) - start[row["set"]]) * 100
        gate = "start" if verdict is None else (
            f"{'PROMOTE' if verdict['promote'] else 'keep'} ({verdict['test']}, "
            f"p={verdict['p_value'] if verdict['p_value'] is None else round(verdict['p_value'], 4)})"
        )  # fmt: skip
        print(
            f"{row['checkpoint']:>4} {float(row['dream_minutes']):>9.1f} {row['cycles']:>6} "
            f"{row['arm']:>8} {row['set']:>3} "
            f"{float(row['pass_at_1']):>6.3f} ({row['passed']:>2}/{row['n']:>2}) {lift:>+8.1f}  {gate}"
        )
    last = max(int(r["checkpoint"]) for r in rows)
    final = {
        (r["arm"], r["set"]): float(r["pass_at_1"]) for r in rows if int(r["checkpoint"]) == last
    }
    print("\nablation at the last checkpoint (pass@1; lift in points over nothing learned):")
    for set_name in ("a", "b"):
        cells = [f"nothing {start[set_name]:.3f}"]
        for arm in ("lessons", "skills", "both", "placebo", "equal_compute"):
            if (arm, set_name) in final:
                value = final[(arm, set_name)]
                cells.append(f"{arm} {value:.3f} ({(value - start[set_name]) * 100:+.1f})")
        print(f"  set ({set_name}): " + " · ".join(cells))
    replay = replay_check(out, home)
    print("\nreplay check (each learned skill's code run as the answer to each held-out item):")
    for set_name, found in replay.items():
        print(f"  set ({set_name}): {len(found['replayable'])} of {len(found['items'])} items "
              f"passed by a learned skill as it stands: {found['replayable'] or 'none'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
