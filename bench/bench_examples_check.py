"""HumanEval through the agent: the request's own examples checked (a redraw on failure) vs not.

Usage:
    NIGHTSCHOOL_HOME=... .venv/bin/python bench/bench_examples_check.py OUT_DIR
        [--limit N] [--all] [--timeout 600] [--temperature 0] [--route full|direct]

What it measures: the chat's example check (`agent/_examples.py`), the
product form of the one arm the MBPP stream promoted. Each HumanEval prompt is
asked once through the in-process `ChatPipeline` (the real agent, the
embedded model `NIGHTSCHOOL_MODEL` or the default, the real sandbox; no
playbook, no verifier, no reflection, as `eval run`). The check never changes
the request: it runs the first reply against the examples the prompt states
and, only when they fail, asks once more and keeps the redraw when it passes,
recording the reply it replaced (`extra["examples"]["first_reply"]`). So both
arms come from one run: **with the check** is the reply the user got,
**without** is the first reply (the same request, seed and temperature the
agent without the check would have sent). Both are scored by the suite's own
hidden tests (`check(candidate)`) and paired through the promotion gate
(superiority, exact one-sided McNemar).

By default only the prompts stating examples the check reads are asked (76 of
164: `request_examples`); on the others the check cannot act, so both arms
answer the same by construction. `--all` asks those too, for pass@1 over all
164. A turn that runs past `--timeout` fails both arms (counted apart).

Writes `OUT_DIR/rows.jsonl` (one fsynced line per task: run the same command
again to go on after Ctrl-C) and the scratch database `OUT_DIR/bench.db`;
prints one line per task, then the table.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _rows import append_row, read_rows
from nightschool.agent import request_examples
from nightschool.config import Settings
from nightschool.evals import (
    AgentReply,
    Runner,
    Task,
    TaskTimeout,
    get_suite,
    inprocess_runner,
)
from nightschool.evals._humaneval import load_problems
from nightschool.gate import PairedResult, promotion_gate
from nightschool.llm import check_model, make_model
from nightschool.sandbox import Sandbox
from nightschool.store import Store


def summarize(rows: list[dict[str, Any]]) -> str:
    """The table: both arms' pass@1, the discordant pairs, the gate, the redraws' cost."""
    n = len(rows)
    with_ = sum(r["with_check"] for r in rows)
    without = sum(r["without_check"] for r in rows)
    wins = sum(r["with_check"] and not r["without_check"] for r in rows)
    losses = sum(r["without_check"] and not r["with_check"] for r in rows)
    verdict = promotion_gate(
        [
            PairedResult(
                task_id=r["task_id"],
                incumbent_score=float(r["without_check"]),
                candidate_score=float(r["with_check"]),
            )
            for r in rows
        ]
    )
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["redraw"] or "-"] = statuses.get(r["redraw"] or "-", 0) + 1
    failed_examples = sum(r["examples_passed"] is False for r in rows)
    calls = sum(r["model_calls"] for r in rows)
    timeouts = sum(r["timeout"] for r in rows)
    pct = (lambda k: f"{k} ({100 * k / n:.1f}%)") if n else str
    p = "n/a" if verdict.p_value is None else f"{verdict.p_value:.4g}"
    return "\n".join(
        [
            f"tasks {n} · timeouts {timeouts} · model calls {calls} ({calls / max(n, 1):.2f} per task)",
            f"first reply failed the prompt's examples: {failed_examples}; redraw: "
            + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            "",
            "| arm | pass@1 |",
            "|---|---|",
            f"| without the check (first reply) | {pct(without)} |",
            f"| with the check (the reply kept) | {pct(with_)} |",
            "",
            f"with vs without: {wins} wins / {losses} losses, exact one-sided p = {p}, "
            f"gate: {'promote' if verdict.promote else 'keep'} ({verdict.test})",
        ]
    )


def ask_one(
    runner: Runner, store: Store, sandbox: Sandbox, task: Task, timeout_s: float
) -> dict[str, Any]:
    """Ask `task` once; score the kept reply and the first reply it may have replaced."""
    started = time.perf_counter()
    try:
        reply = runner.ask(task, session_id=f"bench-{task.id}", timeout_s=timeout_s)
    except TaskTimeout:
        reply = None
    record: dict[str, Any] = {}
    calls = 0
    if reply is not None and reply.trajectory_id:
        trajectory = store.get_trajectory(reply.trajectory_id)
        if trajectory is not None:
            record = dict(trajectory.extra.get("examples") or {})
            calls = trajectory.n_steps
    with_check = reply is not None and task.scorer(reply, sandbox).passed
    first = record.get("first_reply")
    without_check = (
        task.scorer(AgentReply(text=str(first)), sandbox).passed
        if first is not None
        else with_check
    )
    return {
        "task_id": task.id,
        "with_check": with_check,
        "without_check": without_check,
        "examples": int(record.get("examples", 0)),
        "examples_passed": record.get("passed"),
        "redraw": str(record.get("redraw", "")),
        "model_calls": calls,
        "tokens": 0 if reply is None else reply.tokens_in + reply.tokens_out,
        "timeout": reply is None,
        "duration_s": round(time.perf_counter() - started, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="run directory (rows.jsonl, bench.db)")
    parser.add_argument("--limit", type=int, default=None, help="first N problems asked")
    parser.add_argument("--all", action="store_true", help="also the prompts without examples")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-turn limit, seconds")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--route", choices=("full", "direct"), default="full")
    parser.add_argument("--summary", action="store_true", help="print the table of OUT_DIR only")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    done: dict[str, dict[str, Any]] = read_rows(rows_path, key=lambda row: row["task_id"])
    problems = {p.task_id: p for p in load_problems()}
    tasks = [
        t
        for t in get_suite("humaneval").select()
        if args.all or request_examples(problems[t.id].prompt)
    ][: args.limit]
    if args.summary:
        print(summarize([done[t.id] for t in tasks if t.id in done]))
        return

    settings = Settings()
    model = make_model(settings)
    check_model(model)
    sandbox = Sandbox()
    sandbox.check()
    store = Store.open(args.out / "bench.db")
    forced = None
    if args.route == "direct":
        from nightschool.learn.chat_router import ChatRouter

        forced = ChatRouter(forced="direct")
    todo = [t for t in tasks if t.id not in done]
    print(
        f"model {model.name} · {len(tasks)} HumanEval prompts ({len(done)} done, {len(todo)} "
        f"to ask) · route {args.route} · temperature {args.temperature}",
        flush=True,
    )
    try:
        with inprocess_runner(
            model,
            store,
            sandbox,
            router=forced,
            temperature=args.temperature,
            max_tokens=settings.max_tokens,
        ) as runner:
            for task in todo:
                row = ask_one(runner, store, sandbox, task, args.timeout)
                append_row(rows_path, row)
                done[task.id] = row
                print(
                    f"[{len(done)}/{len(tasks)}] {task.id:<14} "
                    f"with {'pass' if row['with_check'] else 'FAIL'} "
                    f"without {'pass' if row['without_check'] else 'FAIL'} "
                    f"redraw {row['redraw'] or '-':<12} {row['duration_s']:6.1f}s",
                    flush=True,
                )
    except KeyboardInterrupt:
        print("interrupted: the rows written are kept; run the same command to go on")
    finally:
        store.close()
    print()
    print(summarize([done[t.id] for t in tasks if t.id in done]))


if __name__ == "__main__":
    main()
