"""Do the agent's tool names leak into whole programs, and does the agent lose pass@1? (issue
"Transfer, measured honestly", part 3)

Sends `TASKS` (32 small whole-program requests, each with stdin, files and the
exact stdout a correct program prints) to three arms with the same model and
sampling (`Settings()`: what `nightschool serve` uses, unless given here):

    agent      the real `ChatPipeline` as `nightschool serve` builds it on a
               fresh home (tools, self-play tools unless --no-self-play-tools,
               wake-up section, no router, no lessons: a fresh playbook is
               empty), the tool-leak check and repair on (the default);
    no-repair  the same with `AgentConfig(repair_tool_leaks=False)`;
    plain      the model alone: one call, system prompt "You are a helpful
               assistant.", the request as the user message.

Each agent request is the first message of its own session (a fresh
workspace). The program is taken from the reply as the solver takes it
(`solver.extract_code`) and run in the sandbox as `python3 prog.py`
with the task's stdin and files; it passes when its stdout, trailing spaces
and blank edges stripped, equals the expected text. A reply leaks when its
code (or the extracted program) defines, imports or calls one of the agent's
tool names that the request does not mention (`agent._leak.find_tool_leaks`).

Printed: one line per answer (pass `+`/`-`, leaked names, seconds), then per
arm the leaking replies, pass@1 with a 95% Wilson interval, replies repaired
(agent), turns that ran code before answering (`run_python`/`run_shell`),
seconds per request; and each agent arm against the plain model, paired
through the promotion gate both ways (better? worse?). With `--temperature 0`
the agent and no-repair arms differ only by the repair.

Resumable: every answer is a row of `OUT/rows.jsonl` (written as soon as it
is scored, the reply included); the same command asks only what has no row
yet, and `--summary` prints the table of what is there. The agent's turns are
recorded in `OUT/bench.db` (the row's `trajectory_id`: its tool calls and
results, for reading why a reply failed).

    .venv/bin/python bench/bench_tool_leak.py --check-tasks     # reference solutions only
    .venv/bin/python bench/bench_tool_leak.py OUT --model qwen2.5-coder-0.5b --limit 4
    .venv/bin/python bench/bench_tool_leak.py OUT               # the default model, all 32
    .venv/bin/python bench/bench_tool_leak.py OUT --summary
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import nightschool.practice
from _rows import append_row, read_rows
from data.whole_programs import TASKS, LeakTask
from nightschool.agent import (
    AgentConfig,
    ChatPipeline,
    find_tool_leaks,
    leak_sites,
    mentioned_names,
)
from nightschool.agent.self_play import SelfPlayTools
from nightschool.agent.tools import AGENT_TOOL_NAMES
from nightschool.cli._idle import ForegroundService
from nightschool.config import Settings
from nightschool.gate import PairedResult, promotion_gate
from nightschool.llm import ChatModel, Message, check_model, make_model
from nightschool.llm.preempt import Foreground
from nightschool.sandbox import Sandbox
from nightschool.solver.core import extract_code
from nightschool.store import Store

PROGRAM = "prog.py"
PLAIN_SYSTEM = "You are a helpful assistant."
ARMS = ("agent", "no-repair", "plain")
RUN_TIMEOUT_S = 10.0


def normalise(text: str) -> str:
    """Stdout as compared: trailing spaces of each line and blank edges removed."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def passes(sandbox: Sandbox, task: LeakTask, program: str | None) -> bool:
    """Whether `program` prints `task.expected` for `task.stdin` in the sandbox."""
    if not program:
        return False
    files = {**task.files, PROGRAM: program}
    result = sandbox.run(
        ["python3", PROGRAM], files=files, stdin=task.stdin, timeout_s=RUN_TIMEOUT_S
    )
    return result.ok and normalise(result.stdout) == normalise(task.expected)


def leaked(task: LeakTask, reply: str, program: str | None) -> list[str]:
    """Tool names the reply's code or its program uses that the request does not mention."""
    names = set(find_tool_leaks(reply, allowed=task.request))
    wanted = AGENT_TOOL_NAMES - mentioned_names(task.request)
    names |= {site.name for site in leak_sites(program or "", wanted)}
    return sorted(names)


def ask_agent(chat: Any, arm: str, index: int, task: LeakTask) -> tuple[str, Any, bool]:
    """The agent's reply, its trajectory, and whether it ran code before answering.

    Each request opens its own session (a fresh workspace, no earlier turn): the
    id is new on every run, so a request asked again after an interruption does
    not continue the interrupted one.
    """
    session = f"{arm}-{index}-{uuid.uuid4().hex[:8]}"
    result = chat.handle([Message(role="user", content=task.request)], session_id=session)
    ran = any(call.name in ("run_python", "run_shell") for call in result.tool_calls)
    return result.reply, result.trajectory, ran


def ask_plain(model: ChatModel, task: LeakTask, temperature: float, max_tokens: int) -> str:
    """The model's reply with no agent around it."""
    messages = [
        Message(role="system", content=PLAIN_SYSTEM),
        Message(role="user", content=task.request),
    ]
    return model.complete(messages, temperature=temperature, max_tokens=max_tokens).text


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of k successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def check_tasks(sandbox: Sandbox) -> None:
    """Run every reference solution through its checker; print failures."""
    bad = [i for i, task in enumerate(TASKS) if not passes(sandbox, task, task.reference)]
    print(f"{len(TASKS) - len(bad)}/{len(TASKS)} reference solutions pass their checkers")
    for index in bad:
        print(f"  task {index} FAILS: {TASKS[index].request[:80]}")
    assert not bad, "a checker or reference solution is wrong"


def summarise(arms: list[str], rows: dict[tuple[str, int], dict[str, Any]], n_tasks: int) -> None:
    """Print the per-arm figures and the agent/plain pairs through the promotion gate."""
    print(
        f"\n{'arm':<10} {'answered':>9} {'leaking':>8} {'pass@1':>7} {'95% CI':>13} "
        f"{'repaired':>9} {'ran code':>9} {'s/req':>7}"
    )
    for arm in arms:
        got = [rows[arm, i] for i in range(n_tasks) if (arm, i) in rows]
        n = len(got)
        k = sum(r["passed"] for r in got)
        low, high = wilson(k, n)
        leaks = sum(bool(r["leaks"]) for r in got)
        repaired = f"{sum(r['repaired'] for r in got)}" if arm == "agent" else "-"
        ran = f"{sum(r['ran_code'] for r in got)}" if arm != "plain" else "-"
        seconds = sum(r["seconds"] for r in got) / max(n, 1)
        print(
            f"{arm:<10} {n:>9} {leaks:>8} {k:>7} {low:>6.2f}-{high:<6.2f} "
            f"{repaired:>9} {ran:>9} {seconds:>7.1f}"
        )
    for arm in [a for a in arms if a != "plain"]:
        both = [i for i in range(n_tasks) if (arm, i) in rows and ("plain", i) in rows]
        if not both:
            continue
        pairs = [
            PairedResult(
                task_id=str(i),
                incumbent_score=float(rows["plain", i]["passed"]),
                candidate_score=float(rows[arm, i]["passed"]),
            )
            for i in both
        ]
        wins = sum(p.candidate_score > p.incumbent_score for p in pairs)
        losses = sum(p.candidate_score < p.incumbent_score for p in pairs)
        better = promotion_gate(pairs)
        worse = promotion_gate(
            [
                replace(p, incumbent_score=p.candidate_score, candidate_score=p.incumbent_score)
                for p in pairs
            ]
        )
        print(
            f"{arm} vs plain on {len(both)} requests: {wins} pass only with the {arm}, "
            f"{losses} only plain\n  {arm} better? {better.summary()}\n"
            f"  {arm} worse?  {worse.summary()}"
        )


def run_arms(args: argparse.Namespace, arms: list[str], rows_path: Path) -> None:
    """Ask every (task, arm) without a row yet; append each row as it is scored."""
    done = read_rows(rows_path, key=lambda row: (row["arm"], row["index"]))
    tasks = TASKS[: args.limit]
    todo = [(i, arm) for i in range(len(tasks)) for arm in arms if (arm, i) not in done]
    settings = Settings(model=args.model) if args.model else Settings()
    temperature = settings.temperature if args.temperature is None else args.temperature
    max_tokens = settings.max_tokens if args.max_tokens is None else args.max_tokens
    print(
        f"{len(tasks)} whole-program requests x {len(arms)} arms: {len(todo)} answers to go "
        f"({len(tasks) * len(arms) - len(todo)} in {rows_path})",
        flush=True,
    )
    if not todo:
        return
    model = make_model(settings)
    check_model(model)
    sandbox = Sandbox()
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store.open(rows_path.parent / "bench.db") as store,
    ):
        Path(tmp).chmod(0o711)  # the sandbox user must reach the workspaces under it
        foreground = Foreground()
        practice = None
        if not args.no_self_play_tools:
            practice = SelfPlayTools(
                store,
                model,
                sandbox,
                foreground=foreground,
                temperature=temperature,
                max_tokens=max_tokens,
                home=Path(tmp),
                practice_root=nightschool.practice,
            )
        chats = {
            arm: ForegroundService(
                ChatPipeline(
                    model=model,
                    store=store,
                    sandbox=sandbox,
                    memory=None,
                    reflector=None,
                    workspace_root=Path(tmp) / "workspaces",
                    config=AgentConfig(
                        max_tokens=max_tokens,
                        temperature=temperature,
                        repair_tool_leaks=arm == "agent",
                    ),
                    practice=practice,
                ),
                foreground,
            )
            for arm in arms
            if arm != "plain"
        }
        print(
            f"model {model.name}; temperature {temperature}, max_tokens {max_tokens}; "
            f"self-play tools {'off' if practice is None else 'on'}\n",
            flush=True,
        )
        try:
            for index, arm in todo:
                task = tasks[index]
                started = time.perf_counter()
                extra: dict[str, Any] = {}
                trajectory_id = ""
                ran = False
                if arm == "plain":
                    reply = ask_plain(model, task, temperature, max_tokens)
                else:
                    reply, trajectory, ran = ask_agent(chats[arm], arm, index, task)
                    extra, trajectory_id = dict(trajectory.extra), trajectory.id
                program = extract_code(reply, PROGRAM)
                leaks = leaked(task, reply, program)
                row: dict[str, Any] = {
                    "index": index,
                    "arm": arm,
                    "passed": passes(sandbox, task, program),
                    "leaks": leaks,
                    "seconds": round(time.perf_counter() - started, 2),
                    "repaired": bool((extra.get("tool_leak") or {}).get("repaired")),
                    "ran_code": ran,
                    "reply": reply,
                    "trajectory_id": trajectory_id,
                }
                append_row(rows_path, row)
                request = task.request.removeprefix("Write a complete Python program that ")
                print(
                    f"{index:>2} {arm:<10} {'+' if row['passed'] else '-'} "
                    f"{','.join(leaks) or '.':<16} {row['seconds']:6.1f}s {request[:50]}",
                    flush=True,
                )
        except KeyboardInterrupt:
            print("interrupted: the rows written are kept; run the same command to go on")
        finally:
            for chat in chats.values():
                chat.close()
            if practice is not None:
                practice.stop("bench over")


def main() -> None:
    """Run the arms on the tasks (resumably) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", help="run directory (rows.jsonl)")
    parser.add_argument("--model", default=None, help="catalog model (default: the default)")
    parser.add_argument("--limit", type=int, default=len(TASKS), help="first N tasks")
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma list of {ARMS}")
    parser.add_argument("--temperature", type=float, default=None, help="default: Settings")
    parser.add_argument("--max-tokens", type=int, default=None, help="default: Settings")
    parser.add_argument("--no-self-play-tools", action="store_true", help="as `serve` with it")
    parser.add_argument("--check-tasks", action="store_true", help="only check the checkers")
    parser.add_argument("--summary", action="store_true", help="print the table of OUT only")
    args = parser.parse_args()
    if args.check_tasks:
        check_tasks(Sandbox())
        return
    if args.out is None:
        parser.error("give a run directory OUT (rows.jsonl is kept there; resumable)")
    arms = [arm.strip() for arm in args.arms.split(",") if arm.strip()]
    unknown = set(arms) - set(ARMS)
    if unknown:
        parser.error(f"unknown arm(s): {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    if not args.summary:
        run_arms(args, arms, rows_path)
    rows = read_rows(rows_path, key=lambda row: (row["arm"], row["index"]))
    summarise(arms, rows, min(args.limit, len(TASKS)))


if __name__ == "__main__":
    main()
