"""Streams of a benchmark nobody here wrote: memory vs no memory, side by side, with a replay check.

Reads one or more `nightschool eval stream` run directories (or runs/resumes one
first with --run) and prints, per run: tasks answered, pass@1 of the no-memory
and memory arms on the whole stream and on each half, wins/losses, the promotion
gate's paired verdicts (exact McNemar: every task is a different problem, so the
pairs are independent) of the memory arm against no memory and against the
placebo (as much unrelated memory shown), tokens the memory added per task, model calls and wall
time per arm, an **ablation table** (every arm against no memory, its exact
p-value Holm-adjusted over the arms tried, and against the placebo), a
**second-chance table** (each arm as the second answer where the no-memory
answer failed its public test, against a plain second draw: the `resample`
arm), what the memory arm learned, and the **replay check**: for every
task where skills were shown, each shown skill's code (renamed to the task's
function) run against the task's hidden tests. A win a replayed skill also
achieves is recall of a near-identical problem, not transfer.

Targets (issue "Transfer, measured honestly"): MBPP (>= 200 tasks, fixed order)
and HumanEval-164 on the default model, both arms paired through the gate.

Usage:
    .venv/bin/python bench/bench_stream.py --run --suite mbpp --limit 200 --out bench/results/stream-mbpp-order0-n200
    .venv/bin/python bench/bench_stream.py bench/results/stream-mbpp-order0-n200 [more run dirs]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from nightschool.config import Settings
from nightschool.evals._humaneval import run_program
from nightschool.evals.stream import (
    ALL_ARMS,
    EXTRA_ARMS,
    StreamRun,
    StreamSettings,
    StreamTask,
    ablation,
    compare_arms,
    first_draw,
    hidden_program,
    load_suite,
    report,
    second_chance,
)
from nightschool.gate import Verdict
from nightschool.playbook import SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store

SCRIPT = Path(sys.executable).with_name("nightschool")


def _open(directory: Path) -> StreamRun:
    meta = json.loads((directory / "meta.json").read_text())
    fields = {k: v for k, v in meta.items() if k != "format_version"}
    fields["task_ids"] = tuple(fields["task_ids"])
    return StreamRun(directory, StreamSettings(**fields))


def _renamed(code: str, entry_point: str) -> str:
    """The skill's code with its (last) top-level function renamed to `entry_point`."""
    names = re.findall(r"^def\s+(\w+)\s*\(", code, re.MULTILINE)
    if not names:
        return code
    return re.sub(rf"\b{re.escape(names[-1])}\b", entry_point, code)


def replay_check(run: StreamRun, tasks: dict[str, StreamTask], sandbox: Sandbox) -> dict[str, int]:
    """Shown skills replayed as answers: tasks with a skill shown, replayable ones, replayable wins."""
    counts = {"tasks_shown_skills": 0, "replayable": 0, "wins": 0, "wins_replayable": 0}
    base = {r.task_id: r for r in run.rows if r.arm == "no_memory"}
    with Store.open(run.database) as store:
        memory = SkillMemory(store)
        for row in run.rows:
            if row.arm != "memory":
                continue
            win = row.passed and row.task_id in base and not base[row.task_id].passed
            counts["wins"] += win
            if not row.skills_shown:
                continue
            counts["tasks_shown_skills"] += 1
            task = tasks[row.task_id]
            replayed = False
            for skill_id in row.skills_shown:
                skill = memory.get(skill_id)
                code = skill.code_example if skill else ""
                if (
                    code
                    and run_program(
                        sandbox, hidden_program(task, _renamed(code, task.entry_point))
                    ).passed
                ):
                    replayed = True
                    break
            counts["replayable"] += replayed
            counts["wins_replayable"] += win and replayed
    return counts


def _gate(verdict: Verdict | None) -> str:
    if verdict is None:
        return "-"
    p = "" if verdict.p_value is None else f" p={verdict.p_value:.3g}"
    return f"{'PROMOTE' if verdict.promote else 'no'} ({verdict.test}{p})"


def print_ablation(run: StreamRun) -> None:
    """Every arm against no memory (Holm-adjusted over the arms) and against the placebo."""
    lines = ablation(run.rows)
    if not lines:
        return
    print(f"\nablation (each arm vs no memory on their common tasks; Holm over {len(lines)} arms)")
    print(f"{'arm':<10} {'n':>4} {'pass@1':>14} {'lift':>6} {'W/L':>7} {'p':>7} {'Holm p':>7} "
          f"{'promoted':>8} {'vs placebo':>10} {'+tok':>5} {'calls/task':>10}")  # fmt: skip
    for line in lines:
        c = line.versus_none
        mine, base = c.figures[line.arm], c.figures["no_memory"]
        p = "-" if c.verdict.p_value is None else f"{c.verdict.p_value:.3g}"
        holm = "-" if line.holm_p is None else f"{line.holm_p:.3g}"
        vp = line.versus_placebo
        versus = "-" if vp is None else f"{vp.wins}/{vp.losses}"
        print(
            f"{line.arm:<10} {mine.total:>4} {mine.passed:>4} ({mine.pass_at_1:6.1%}) "
            f"{(mine.pass_at_1 - base.pass_at_1) * 100:+6.1f} {c.wins:>3}/{c.losses:<3} {p:>7} "
            f"{holm:>7} {'yes' if line.promoted else 'no':>8} {versus:>10} "
            f"{mine.added_tokens:>5.0f} {mine.model_calls / max(mine.total, 1):>10.2f}"
        )


def print_second_chance(run: StreamRun) -> None:
    """Each arm as the second answer after a failed public test, vs no memory and a plain redraw."""
    lines = second_chance(run.rows)
    if not lines:
        return
    print(
        f"\nsecond chance (answer unaided; where its public test fails, take the arm's answer; "
        f"Holm over {len(lines)}; * = derived from an arm that answered every task)"
    )
    print(f"{'arm':<10} {'n':>4} {'2nd':>4} {'pass@1':>14} {'lift':>6} {'W/L':>7} {'p':>8} "
          f"{'Holm p':>8} {'promoted':>8} {'vs resample':>11} {'calls/task':>10}")  # fmt: skip
    for line in lines:
        c = line.versus_none
        mine, base = c.figures[line.arm], c.figures["no_memory"]
        p = "-" if c.verdict.p_value is None else f"{c.verdict.p_value:.2g}"
        holm = "-" if line.holm_p is None else f"{line.holm_p:.2g}"
        vr = line.versus_resample
        versus = "-" if vr is None else f"{vr.wins}/{vr.losses} (n={vr.figures[line.arm].total})"
        name = line.arm + ("*" if line.derived else "")
        print(
            f"{name:<10} {mine.total:>4} {line.second:>4} {mine.passed:>4} ({mine.pass_at_1:6.1%}) "
            f"{(mine.pass_at_1 - base.pass_at_1) * 100:+6.1f} {c.wins:>3}/{c.losses:<3} {p:>8} "
            f"{holm:>8} {'yes' if line.promoted else 'no':>8} {versus:>11} "
            f"{mine.model_calls / max(mine.total, 1):>10.2f}"
        )


def print_first_draw(run: StreamRun) -> None:
    """Each arm as the first of at most three draws, vs resample2's three plain draws."""
    lines = first_draw(run.rows)
    if not lines:
        return
    print(
        f"\nfirst draw (the arm's answer; where its public test fails, the no-memory answer, "
        f"then the resample draw: at most 3 draws, as resample2; Holm over {len(lines)})"
    )
    print(f"{'arm':<10} {'n':>4} {'redrawn':>7} {'pass@1':>14} {'resample2':>14} {'W/L':>7} "
          f"{'p':>8} {'Holm p':>8} {'promoted':>8} {'calls/task':>10} {'vs':>5}")  # fmt: skip
    for line in lines:
        c = line.versus_resample2
        mine, theirs = c.figures[line.arm], c.figures["resample2"]
        p = "-" if c.verdict.p_value is None else f"{c.verdict.p_value:.2g}"
        holm = "-" if line.holm_p is None else f"{line.holm_p:.2g}"
        print(
            f"{line.arm:<10} {mine.total:>4} {line.redrawn:>7} "
            f"{mine.passed:>4} ({mine.pass_at_1:6.1%}) {theirs.passed:>4} ({theirs.pass_at_1:6.1%}) "
            f"{c.wins:>3}/{c.losses:<3} {p:>8} {holm:>8} {'yes' if line.promoted else 'no':>8} "
            f"{mine.model_calls / max(mine.total, 1):>10.2f} "
            f"{theirs.model_calls / max(theirs.total, 1):>5.2f}"
        )


def show(directory: Path, sandbox: Sandbox) -> None:
    run = _open(directory)
    settings = run.settings
    tasks = {
        t.task_id: t
        for t in load_suite(settings.suite, data=None, cache_dir=Settings().home_dir() / "datasets")
    }
    both = len({r.task_id for r in run.rows if r.arm == "memory"})
    print(f"\n== {directory}: {settings.suite}, order seed {settings.order_seed}, {settings.model}, "
          f"{both}/{len(settings.task_ids)} tasks answered by the memory arm")  # fmt: skip
    print(f"{'slice':<12} {'n':>4} {'no-memory':>14} {'placebo':>14} {'memory':>14} {'lift':>6} "
          f"{'W/L':>7} {'+tok':>5}  gate vs none | vs placebo (W/L)")  # fmt: skip
    for part in report(run.rows):
        b, m = part.arms["no_memory"], part.arms["memory"]
        pl = part.arms.get("placebo")
        placebo = f"{pl.passed:>4} ({pl.pass_at_1:6.1%})" if pl else f"{'-':>14}"
        print(
            f"{part.name:<12} {b.total:>4} {b.passed:>4} ({b.pass_at_1:6.1%}) {placebo} "
            f"{m.passed:>4} ({m.pass_at_1:6.1%}) {(m.pass_at_1 - b.pass_at_1) * 100:+6.1f} "
            f"{part.wins:>3}/{part.losses:<3} {m.added_tokens:>5.0f}  {_gate(part.verdict)} | "
            f"{_gate(part.placebo_verdict)} ({part.placebo_wins}/{part.placebo_losses})"
        )
    arms = [arm for arm in ALL_ARMS if any(r.arm == arm for r in run.rows)]
    for other in EXTRA_ARMS:  # each extra arm against each default arm, on their common tasks
        if other not in arms:
            continue
        for base in ("no_memory", "placebo", "memory"):
            c = compare_arms(run.rows, other, base)
            if c is None:
                continue
            fb, fc = c.figures[base], c.figures[other]
            print(
                f"{other:<7} vs {base:<9} n={fc.total:>3}: {fc.passed} ({fc.pass_at_1:.1%}) vs "
                f"{fb.passed} ({fb.pass_at_1:.1%}), W/L {c.wins}/{c.losses}, "
                f"+tok {fc.added_tokens:.0f}, {_gate(c.verdict)}"
            )
    print_ablation(run)
    print_second_chance(run)
    print_first_draw(run)
    for arm in arms:
        mine = [r for r in run.rows if r.arm == arm]
        calls = sum(r.model_calls for r in mine)
        wall = sum(r.duration_s for r in mine)
        extra = ""
        shown = sum(bool(r.lessons_shown or r.skills_shown) for r in mine)
        if shown:
            extra = f"; shown something on {shown}; reused {sum(r.reused for r in mine)}"
        learned: dict[str, int] = {}
        for r in mine:
            if r.learned:
                learned[r.learned] = learned.get(r.learned, 0) + 1
        extra += f"; learned {learned}" if learned else ""
        print(f"{arm:<10} model calls {calls}, wall {wall / 60:.1f} min{extra}")
    print("replay check:", replay_check(run, tasks, sandbox))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="stream run directories")
    parser.add_argument("--run", action="store_true", help="run (or resume) one stream first")
    parser.add_argument("--suite", default="mbpp")
    parser.add_argument("--order-seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    runs = list(args.runs)
    if args.run:
        out = args.out or Path(f"stream-{args.suite}-order{args.order_seed}")
        command = [
            str(SCRIPT),
            "eval",
            "stream",
            "--suite",
            args.suite,
            "--order-seed",
            str(args.order_seed),
            "--out",
            str(out),
        ]
        command += ["--limit", str(args.limit)] if args.limit else []
        command += ["--model", args.model] if args.model else []
        command += ["--resume"] if (out / "meta.json").exists() else []
        print("$", " ".join(command), flush=True)
        done = subprocess.run(command, check=False)
        if done.returncode not in (0, 130):
            return done.returncode
        runs.append(out)
    if not runs:
        parser.error("give run directories, or --run")
    sandbox = Sandbox()
    for directory in runs:
        show(directory, sandbox)
    return 0


if __name__ == "__main__":
    sys.exit(main())
