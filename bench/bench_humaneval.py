"""HumanEval pass@1 of the agent with and without the skill playbook, as ONE paired comparison.

Usage:
    .venv/bin/python bench/bench_humaneval.py [--limit N] [--lessons seeded|store]
        [--timeout 300] [--temperature 0] [--alpha 0.05]

Both arms run the same tasks through the in-process `ChatPipeline` with the
same model (the embedded default, Qwen2.5-Coder-0.5B; NIGHTSCHOOL_MODEL names
another, NIGHTSCHOOL_BASE_URL a loopback server), temperature 0, no verifier,
no reflection:
    incumbent = without playbook (memory=None),
    candidate = with playbook (SkillMemory over the lessons below, k = 3).
Per-task pass/fail is paired by task id and handed to
`nightschool.strategies.promotion_gate` (superiority, one-sided alpha 0.05:
exact McNemar on the discordant pairs); costs are the turn's tokens.

Playbook ("with" arm):
    --lessons seeded (default): a scratch database holding the five coding
        lessons of `SEEDED_LESSONS` (written with the default MiniLM
        embedder), so the figure does not depend on whatever a user's
        playbook holds.
    --lessons store: a copy (SQLite backup) of the current NIGHTSCHOOL_HOME
        database with its lessons; the user's database is never written.
Both arms' eval runs are stored in that scratch database, then discarded.

Prints both pass@1 with 95% Wilson intervals, the discordant counts, the
gate's verdict, and seconds per task of each arm.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from nightschool.config import Settings
from nightschool.evals import EvalRun, Task, TaskResult, get_suite, inprocess_runner, run_eval
from nightschool.gate import GateConfig, PairedResult, promotion_gate
from nightschool.llm import ChatModel, check_model, make_model
from nightschool.playbook import SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store

SEEDED_LESSONS: tuple[dict[str, str], ...] = (
    {
        "trigger": "completing a Python function from its signature and docstring",
        "anti_pattern": "answering with prose, a different function name, or only an example call",
        "correct_pattern": "reply with the complete function, same name and parameters as the "
        "signature, in one ```python block",
    },
    {
        "trigger": "a function whose docstring shows examples with >>>",
        "anti_pattern": "ignoring the examples and guessing the behaviour",
        "correct_pattern": "check the code against every >>> example in the docstring before "
        "answering, including empty inputs",
    },
    {
        "trigger": "a function over a list or string that may be empty",
        "anti_pattern": "indexing [0] or dividing by len() without checking for empty input",
        "correct_pattern": "handle the empty case first and return the documented value for it",
    },
    {
        "trigger": "a function that must return a value",
        "anti_pattern": "printing the result instead of returning it",
        "correct_pattern": "return the value; never print inside the function",
    },
    {
        "trigger": "writing Python code for a small task",
        "anti_pattern": "importing third-party packages",
        "correct_pattern": "use only the standard library and builtins",
    },
)
"""The seeded playbook: generic HumanEval-style coding lessons (source `manual`)."""


def scratch_store(mode: str, directory: Path) -> Store:
    """A database for the bench: seeded lessons, or a backup copy of the user's database."""
    path = directory / "bench.db"
    if mode == "store":
        source = Settings().database_path()
        if not source.exists():
            raise SystemExit(f"no database at {source}; use --lessons seeded")
        with sqlite3.connect(source) as src, sqlite3.connect(path) as dst:
            src.backup(dst)
        return Store.open(path)
    store = Store.open(path)
    memory = SkillMemory(store)
    try:
        for lesson in SEEDED_LESSONS:
            result = memory.learn(
                trigger=lesson["trigger"],
                anti_pattern=lesson["anti_pattern"],
                correct_pattern=lesson["correct_pattern"],
                domains=["python_general", "algo"],
                source="manual",
                confidence=0.8,
                verified=True,
            )
            assert result.status == "written", result
    finally:
        memory.close()
    return store


def run_arm(
    *,
    label: str,
    model: ChatModel,
    store: Store,
    sandbox: Sandbox,
    playbook: bool,
    task_ids: list[str],
    timeout_s: float,
    temperature: float,
    max_tokens: int,
    workdir: Path,
) -> EvalRun:
    """One arm: a fresh eval pipeline (with or without the playbook) over `task_ids`."""

    def show(index: int, task: Task, r: TaskResult) -> None:
        lessons = len(r.detail.get("lessons_shown", []))
        print(
            f"  [{label}] {r.task_id:<14} {'pass' if r.passed else 'FAIL'} {r.duration_s:6.1f}s "
            f"{r.tokens_in + r.tokens_out:6d} tok lessons {lessons} {(r.error or '')[:60]}",
            flush=True,
        )

    memory = SkillMemory(store) if playbook else None
    try:
        with inprocess_runner(
            model,
            store,
            sandbox,
            memory=memory,
            temperature=temperature,
            max_tokens=max_tokens,
            workspace_parent=workdir,
        ) as runner:
            return run_eval(
                get_suite("humaneval"),
                runner,
                store,
                sandbox,
                task_ids=task_ids,
                timeout_s=timeout_s,
                config={"playbook": playbook, "bench": "bench_humaneval"},
                on_result=show,
            )
    finally:
        if memory is not None:
            memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N problems (default 164)")
    parser.add_argument("--lessons", choices=("seeded", "store"), default="seeded")
    parser.add_argument("--timeout", type=float, default=300.0, help="per-task limit, seconds")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()

    settings = Settings()
    model = make_model(settings)
    check_model(model)
    sandbox = Sandbox()
    sandbox.check()
    suite = get_suite("humaneval")
    task_ids = [task.id for task in suite.select(limit=args.limit)]
    workdir = Path(tempfile.mkdtemp(prefix="bench-humaneval-"))
    workdir.chmod(0o711)
    try:
        store = scratch_store(args.lessons, workdir)
        print(
            f"model {model.name} · {len(task_ids)} HumanEval task(s) · playbook {args.lessons} "
            f"({store.query('SELECT COUNT(*) FROM lessons')[0][0]} lessons) · temperature {args.temperature}"
        )
        arms: dict[str, EvalRun] = {}
        seconds: dict[str, float] = {}
        for label, playbook in (("without", False), ("with", True)):
            started = time.perf_counter()
            arms[label] = run_arm(
                label=label,
                model=model,
                store=store,
                sandbox=sandbox,
                playbook=playbook,
                task_ids=task_ids,
                timeout_s=args.timeout,
                temperature=args.temperature,
                max_tokens=args.max_tokens,
                workdir=workdir,
            )
            seconds[label] = time.perf_counter() - started
        store.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    without = {r.task_id: r for r in arms["without"].results}
    with_ = {r.task_id: r for r in arms["with"].results}
    pairs = [
        PairedResult(
            task_id=task_id,
            incumbent_score=float(without[task_id].passed),
            candidate_score=float(with_[task_id].passed),
            incumbent_cost=float(without[task_id].tokens_in + without[task_id].tokens_out),
            candidate_cost=float(with_[task_id].tokens_in + with_[task_id].tokens_out),
        )
        for task_id in task_ids
    ]
    verdict = promotion_gate(pairs, GateConfig(alpha=args.alpha))
    only_with = sum(1 for p in pairs if p.candidate_score > p.incumbent_score)
    only_without = sum(1 for p in pairs if p.candidate_score < p.incumbent_score)
    print()
    for label in ("without", "with"):
        run = arms[label]
        n = max(1, run.n)
        print(
            f"{label:>7} playbook: {run.pass_rate.summary()} · "
            f"{seconds[label] / n:.1f} s/task · "
            f"{sum(r.tokens_in + r.tokens_out for r in run.results) / n:.0f} tokens/task"
        )
    print(
        f"discordant pairs: {only_with} pass only with the playbook, "
        f"{only_without} pass only without ({len(pairs) - only_with - only_without} ties)"
    )
    print(f"gate (incumbent = without, candidate = with): {verdict.summary()}")


if __name__ == "__main__":
    main()
