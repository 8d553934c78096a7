"""A synthetic but realistic nightschool history, for the dashboard's tests and benchmark.

`populate(store, memory, trajectories=N)` writes, through the real library
calls wherever one exists:

- N trajectories (`Store.append_trajectories`, batches of 1,000) spread over
  `days` days ending now: self-play 70 % (every cluster x tier of the template
  bank, pass rate rising over time and falling with the tier, with
  `write_file`/`run_solution` tool calls and the validator's output), chat 15 %,
  eval 10 %, reflection 5 %; a few infrastructure errors;
- a `frontier_runs` row per self-play trajectory (`FrontierTracker.record_run`);
- corrections of some chat turns (`Store.add_correction`, human and machine);
- lessons learned from failed trajectories, each with its reflection trajectory
  and `reflection_claims` row, shown to later trajectories
  (`record_exposure`, `record_outcome`); some verified, one retracted; skills;
- two eval runs of one suite (`evals._storage`), a learning curve's eval
  trajectories, phase runs (`PhaseLog`), diary rows, strategy-champion
  promotions, and an evolve run directory with `report.json`.

Deterministic for a given seed (ids are random; which records are which is not).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nightschool.challenges import CLUSTERS, TIERS, templates
from nightschool.playbook import SkillMemory
from nightschool.store import Store
from nightschool.trajectory import Correction, Outcome, ToolCall, Trajectory

BATCH = 1000
"""Trajectories per `append_trajectories` call."""

KIND_WEIGHTS = {"selfplay": 0.70, "chat": 0.15, "eval": 0.10, "reflection": 0.05}
TIER_PASS = {"starter": 0.80, "basic": 0.62, "intermediate": 0.45, "advanced": 0.30, "expert": 0.15}
CLUSTER_SHIFT = {c: (i - len(CLUSTERS) / 2) * 0.03 for i, c in enumerate(CLUSTERS)}
CHAT_REQUESTS = (
    "parse the nginx access log in logs/ and count requests per status code",
    "why does my pandas groupby drop the NaN keys?",
    "write a bash one-liner that finds the 10 largest files under src/",
    "fix the deadlock in worker.py: two threads take the locks in opposite orders",
    "turn this SQL into a window query that ranks customers by spend per month",
)
# fmt: off
LESSON_TEXTS = (
    ('When sorting records by several fields', 'Sorting by the first field only',
     'Sort once with a tuple key: sorted(rows, key=lambda r: (r[1], r[0]))', 'algo'),
    ('When a regex must match a whole log line', 'Using re.search without anchors',
     'Use re.fullmatch, or anchor the pattern with ^ and $', 'regex_parse'),
    ('When grouping a DataFrame whose keys contain NaN', 'Calling groupby with defaults',
     'Pass dropna=False to groupby so missing keys keep their own group', 'data_analysis'),
    ('When two threads take two locks', 'Acquiring them in different orders',
     'Always acquire locks in one global order, or use a single lock', 'concurrency'),
    ('When ranking rows per group in SQL', 'Using a correlated subquery with LIMIT',
     'Use RANK() OVER (PARTITION BY grp ORDER BY score DESC)', 'sql'),
    ('When a shell pipeline reads file names with spaces', 'Piping ls output into xargs',
     'Use find -print0 | xargs -0, or a while read -r loop', 'bash'),
    ('When parsing CSV that may contain quoted commas', "Splitting each line on ','",
     'Use the csv module: csv.reader handles quotes and escapes', 'python_general'),
    ('When merging overlapping intervals', 'Comparing only neighbours in input order',
     'Sort intervals by start, then extend the last merged interval', 'algo'),
    ('When dates in a log carry a timezone offset', 'Parsing them as naive datetimes',
     'Parse with datetime.fromisoformat and convert to UTC before comparing', 'data_analysis'),
    ('When counting words across a large file', 'Reading the whole file into memory',
     'Stream it line by line and update a collections.Counter', 'python_general'),
    ('When a SQL query joins a table with NULL foreign keys', 'Using an inner JOIN',
     'Use LEFT JOIN and COALESCE the missing side', 'sql'),
    ('When a bash script must stop at the first error', 'Running commands without checks',
     'Start it with set -euo pipefail', 'bash'),
    ('When a worker pool must finish before the program exits', 'Forgetting to join',
     'Use concurrent.futures with a with-block, which waits for every task', 'concurrency'),
    ('When a regex extracts repeated key=value pairs', 'Writing one greedy group',
     'Use re.finditer with a non-greedy pattern per pair', 'regex_parse'),
)
# fmt: on
"""Distinct lessons (trigger, anti-pattern, correct pattern, domain)."""
STRATEGY_SOURCE = (
    "def solve(task, harness):\n    first = harness.sample(temperature=0.2)\n    return first\n"
)


@dataclass
class History:
    """What `populate` wrote, for tests that look for specific records."""

    trajectory_ids: list[str] = field(default_factory=list)
    lesson_ids: list[str] = field(default_factory=list)
    skill_ids: list[str] = field(default_factory=list)
    retracted_lesson_id: str = ""
    source_of: dict[str, str] = field(default_factory=dict)
    """lesson id -> its source trajectory id."""
    reflection_of: dict[str, str] = field(default_factory=dict)
    """lesson id -> its reflection trajectory id."""
    exposed: dict[str, list[str]] = field(default_factory=dict)
    """lesson id -> trajectories it was shown to."""
    corrected: list[str] = field(default_factory=list)
    eval_run_ids: list[str] = field(default_factory=list)
    evolve_run: Path | None = None


def _tool_calls(rng: random.Random, passed: bool, template: str) -> list[ToolCall]:
    code = (
        "import sys\n\ndef main():\n    rows = [line.split(',') for line in sys.stdin]\n"
        f"    # {template}\n    print(sorted(rows))\n\nmain()\n"
    )
    calls = [
        ToolCall(
            name="write_file",
            arguments={"path": "solution.py", "content": code},
            result="wrote 118 bytes",
            duration_s=0.002,
        )
    ]
    attempts = 1 if passed and rng.random() < 0.7 else rng.randint(1, 3)
    for attempt in range(1, attempts + 1):
        last = attempt == attempts
        ok = passed and last
        calls.append(
            ToolCall(
                name="run_solution",
                arguments={"attempt": attempt},
                result="validator: all 6 hidden cases passed" if ok else None,
                error=None
                if ok
                else f"validator: case 3 failed: expected '42\\n', got '41\\n' (attempt {attempt})",
                duration_s=round(rng.uniform(0.05, 0.4), 3),
            )
        )
    return calls


def _trajectory(
    rng: random.Random, kind: str, moment: float, progress: float, bank: list[Any]
) -> Trajectory:
    template = rng.choice(bank)
    cluster, tier = template.cluster, rng.choice(TIERS)
    base = TIER_PASS[tier] + CLUSTER_SHIFT[cluster] + 0.2 * progress
    common: dict[str, Any] = {
        "timestamp": moment,
        "model": "qwen2.5-coder-1.5b",
        "temperature": 0.2,
        "tokens_in": rng.randint(300, 2400),
        "tokens_out": rng.randint(60, 700),
        "duration_s": round(rng.uniform(1.0, 40.0), 2),
    }
    if kind in ("selfplay", "eval"):
        passed = rng.random() < base
        infra = rng.random() < 0.005
        calls = _tool_calls(rng, passed, template.name)
        seed = rng.randint(0, 999_999)
        return Trajectory(
            session_id=f"{kind}-{int(moment) // 3600}",
            task_kind=kind,
            cluster=cluster,
            tier=tier,
            system_prompt="You solve programming challenges in a sandbox. Use the tools.",
            user_request=f"[{template.name} · {tier}] Read input.csv and print the rows "
            f"sorted by the second column, then by name. (seed {seed})",
            planning_output="1. read the file\n2. sort by (score, name)\n3. print",
            tool_calls=calls,
            n_steps=len(calls),
            outcome=Outcome.UNKNOWN if infra else (Outcome.PASSED if passed else Outcome.FAILED),
            failure_reason=None
            if passed or infra
            else f"validator rejected all {len(calls) - 1} attempts; last: case 3 failed",
            validator_signal=None if infra else ("pass" if passed else "fail"),
            extra={
                "template": template.name,
                "seed": seed,
                "challenge_hash": f"{rng.getrandbits(64):016x}",
                "attempts": len(calls) - 1,
                **({"infrastructure_error": "SandboxFaultError: bwrap exited 1"} if infra else {}),
            },
            final_response="```python\nprint(sorted(rows))\n```",
            **common,
        )
    if kind == "chat":
        roll = rng.random()
        outcome = Outcome.PASSED if roll < base else (Outcome.FAILED if roll < 0.9 else None)
        return Trajectory(
            session_id=f"chat-{rng.randint(1, 400)}",
            task_kind="chat",
            cluster=cluster,
            user_request=rng.choice(CHAT_REQUESTS),
            tool_calls=[
                ToolCall(name="list_files", result="logs/\nsrc/\nworker.py", duration_s=0.01),
                ToolCall(
                    name="run_python",
                    arguments={"code": "print(open('worker.py').read()[:200])"},
                    result="import threading\n...",
                    duration_s=0.08,
                ),
            ],
            n_steps=3,
            outcome=outcome or Outcome.UNKNOWN,
            failure_reason="the user said the answer was wrong" if outcome == "failed" else None,
            final_response="Here is the fix: take lock_a before lock_b in both threads.",
            **common,
        )
    return Trajectory(
        session_id=f"reflect-{int(moment) // 3600}",
        task_kind="reflection",
        cluster=cluster,
        tier=tier,
        user_request="Reflect on this failed attempt and say what to do differently.",
        planning_output="1. check the sort key\n2. compare with the expected output",
        n_steps=1,
        extra={"diagnosis": "the sort key ignored the name column"},
        final_response="DIAGNOSIS: the sort key ignored the name column",
        **common,
    )


def _append_trajectories(
    store: Store, rng: random.Random, count: int, days: float, now: float
) -> list[Trajectory]:
    bank = templates()
    kinds = list(KIND_WEIGHTS)
    weights = list(KIND_WEIGHTS.values())
    start = now - days * 86400
    moments = sorted(rng.uniform(start, now) for _ in range(count))
    stored: list[Trajectory] = []
    for offset in range(0, count, BATCH):
        batch = [
            _trajectory(
                rng,
                rng.choices(kinds, weights)[0],
                moment,
                (moment - start) / max(1.0, now - start),
                bank,
            )
            for moment in moments[offset : offset + BATCH]
        ]
        stored.extend(store.append_trajectories(batch))
    return stored


def _frontier(store: Store, selfplay: list[Trajectory]) -> None:
    from nightschool.dream.frontier import FrontierTracker

    tracker = FrontierTracker(store)
    for t in selfplay:
        if t.infrastructure_error or t.cluster is None or t.tier is None:
            continue
        tracker.record_run(
            cluster=t.cluster,
            template=str(t.extra["template"]),
            tier=t.tier,
            seed=int(t.extra["seed"]),
            challenge_hash=str(t.extra["challenge_hash"]),
            passed=t.outcome == Outcome.PASSED,
            attempts=max(1, min(3, int(t.extra["attempts"]))),
            trajectory_id=t.id,
        )


def _lessons(
    store: Store,
    memory: SkillMemory,
    rng: random.Random,
    stored: list[Trajectory],
    history: History,
    n_lessons: int,
) -> None:
    failed = [t for t in stored if t.task_kind == "selfplay" and t.outcome == Outcome.FAILED]
    passed = [t for t in stored if t.task_kind == "selfplay" and t.outcome == Outcome.PASSED]
    later_pool = [t for t in stored if t.task_kind in ("selfplay", "chat")]
    for i, source in enumerate(rng.sample(failed, min(n_lessons, len(failed)))):
        reflection = store.append_trajectory(
            Trajectory(
                session_id=source.session_id,
                task_kind="reflection",
                cluster=source.cluster,
                tier=source.tier,
                model=source.model,
                user_request=f"Reflect on trajectory {source.id}: {source.failure_reason}",
                planning_output=f"1. sort by a tuple key (lesson {i})\n2. re-run the validator",
                n_steps=1,
                extra={
                    "reflected_from": source.id,
                    "diagnosis": f"rows were sorted by one key only (case {i})",
                    "revised_plan": ["sort by a tuple key", "re-run the validator"],
                },
                final_response="DIAGNOSIS: rows were sorted by one key only",
            )
        )
        with store.transaction() as conn:
            conn.execute(
                "INSERT INTO reflection_claims(trajectory_id, status, claimed_at, finished_at, "
                "reflection_trajectory_id, detail) VALUES (?, 'done', ?, ?, ?, '')",
                (source.id, time.time(), time.time(), reflection.id),
            )
        trigger, anti, correct, domain = LESSON_TEXTS[i % len(LESSON_TEXTS)]
        if i >= len(LESSON_TEXTS):
            trigger += f" (variant {i // len(LESSON_TEXTS)} in {source.extra['template']})"
        result = memory.learn(
            trigger=trigger,
            anti_pattern=anti,
            correct_pattern=correct,
            domains=[domain],
            source="reflection",
            confidence=0.5,
            source_trajectory_id=source.id,
            challenge_hash=str(source.extra.get("challenge_hash", "")),
            extra={"reflection_trajectory_id": reflection.id},
        )
        if result.lesson_id is None or result.status != "written":
            continue
        lesson_id = result.lesson_id
        history.lesson_ids.append(lesson_id)
        history.source_of[lesson_id] = source.id
        history.reflection_of[lesson_id] = reflection.id
        shown_to = [t for t in rng.sample(later_pool, min(8, len(later_pool))) if t.id != source.id]
        history.exposed[lesson_id] = [t.id for t in shown_to]
        for t in shown_to:
            memory.record_exposure([lesson_id], t.id, [round(rng.uniform(0.3, 0.9), 3)])
            if t.outcome != Outcome.UNKNOWN:
                memory.record_outcome(t.id, t.outcome == Outcome.PASSED)
        if i % 3 == 0:
            memory.set_verified(
                lesson_id, True, {"with": 0.62, "without": 0.41, "n": 24, "p_value": 0.03}
            )
    if len(history.lesson_ids) > 2:
        victim = history.lesson_ids[-1]
        memory.retract(victim, reason="user correction of the source trajectory")
        history.retracted_lesson_id = victim
    for t in rng.sample(passed, min(max(1, n_lessons // 3), len(passed))):
        skill = memory.learn_skill(
            summary=f"Sort the rows of a CSV file by score then name ({t.extra['template']})",
            code=f"import csv, sys\n\nTEMPLATE = {t.extra['template']!r}\n"
            "rows = list(csv.reader(sys.stdin))\nprint(sorted(rows, key=lambda r: (r[1], r[0])))\n",
            domains=["algo"],
            source_trajectory_id=t.id,
            challenge_hash=str(t.extra["challenge_hash"]),
            template=str(t.extra["template"]),
            tier=t.tier or "",
        )
        if skill.lesson_id and skill.status == "written":
            history.skill_ids.append(skill.lesson_id)


def _corrections(
    store: Store, rng: random.Random, stored: list[Trajectory], history: History
) -> None:
    chats = [t for t in stored if t.task_kind == "chat"]
    for t in rng.sample(chats, max(1, len(chats) // 50)) if chats else []:
        human = rng.random() < 0.7
        store.add_correction(
            Correction(
                trajectory_id=t.id,
                outcome=Outcome.FAILED if human else Outcome.PASSED,
                failure_reason="the user said: no, I meant the other file" if human else None,
                source="user_correction" if human else "verifier",
                authority="human" if human else "machine",
                note="next turn contradicted the reply" if human else "re-checked",
            )
        )
        history.corrected.append(t.id)


def _evals(store: Store, rng: random.Random, history: History) -> None:
    from nightschool.evals._model import TaskResult
    from nightschool.evals._storage import add_result, create_run, finish_run

    for run in range(2):
        run_id = create_run(
            store,
            suite="regression",
            runner="in-process",
            model="qwen2.5-coder-1.5b",
            seed=0,
            version="0.1.0",
            config={"timeout_s": 120},
        )
        for task in range(35):
            passed = rng.random() < (0.4 + 0.25 * run)
            add_result(
                store,
                run_id,
                TaskResult(
                    task_id=f"regression:{CLUSTERS[task % len(CLUSTERS)]}:{task}",
                    passed=passed,
                    score=1.0 if passed else 0.0,
                    tokens_in=900,
                    tokens_out=200,
                    duration_s=3.2,
                    error=None if passed else "case 2 failed",
                ),
            )
        finish_run(store, run_id, "completed")
        history.eval_run_ids.append(run_id)
    # a learning curve's eval trajectories: start (checkpoint 0, arm none), then
    # checkpoint 1 arm both, where items whose recall showed nothing are not stored
    items = [(s, CLUSTERS[i % len(CLUSTERS)], i) for s in ("a", "b") for i in range(12)]
    records = []
    for checkpoint, arm in ((0, "none"), (1, "both"), (2, "both")):
        for set_name, cluster, i in items:
            if checkpoint and i % 4 == 0:
                continue  # reused from the start
            passed = rng.random() < 0.3 + 0.15 * checkpoint
            records.append(
                Trajectory(
                    session_id="curve",
                    task_kind="eval",
                    cluster=cluster,
                    tier="basic",
                    user_request=f"held-out item {set_name}:{cluster}:{i}",
                    outcome=Outcome.PASSED if passed else Outcome.FAILED,
                    failure_reason=None if passed else "validator rejected all 1 attempts",
                    extra={
                        "template": f"{cluster}.item{i}",
                        "seed": 1_000_000_000 + i,
                        "learning_curve": {"checkpoint": checkpoint, "arm": arm, "set": set_name},
                    },
                )
            )
    store.append_trajectories(records)


def _idle(store: Store, rng: random.Random) -> None:
    from nightschool.selfhood import Diary
    from nightschool.watchdog import PhaseLog

    log = PhaseLog(store)
    for phase in ("journal", "dream", "reflection", "skills", "retrain", "diary", "selfplay"):
        run_id = log.start(phase)
        status = "failed" if phase == "retrain" else ("skipped" if phase == "skills" else "ok")
        log.finish(phase, run_id, status, f"{phase}: {rng.randint(1, 9)} item(s)", {"n": 3})
    diary = Diary(store)
    from nightschool.selfhood._diary import append_row

    for i in range(5):
        append_row(
            store,
            "entry",
            "dream",
            f"I practised {4 + i} challenges (algo x2, sql x2) and passed {2 + i}.",
            {"facts": {}},
        )
    append_row(
        store,
        "narrative",
        "narrative",
        "I started out failing most sorting tasks; now I pass most of them at basic tier.",
        {"author": "fallback"},
    )
    assert diary.latest_narrative() is not None


def _strategies(store: Store, evolve_dir: Path | None, history: History) -> None:
    from nightschool.strategies import champions

    verdict = {
        "promote": True,
        "reason": "candidate better on the holdout (p = 0.012)",
        "n": 40,
        "test": "mcnemar_exact",
        "lift": 0.15,
        "ci_low": 0.03,
        "ci_high": 0.27,
        "p_value": 0.012,
        "cost_savings": -120.0,
        "cost_ci_low": -200.0,
        "cost_ci_high": -40.0,
        "summary": "PROMOTE: lift +0.150 [+0.030, +0.270], p = 0.012",
    }
    run_dir = None
    if evolve_dir is not None:
        run_dir = evolve_dir / "20250101-000000"
        run_dir.mkdir(parents=True, exist_ok=True)
        report = {
            "status": "finished",
            "error": None,
            "config": {"generations": 2, "population": 3, "budget": 4},
            "train": ["algo.merge_intervals/basic/1", "sql.rank_customers/basic/2"],
            "generations": [
                {
                    "generation": g,
                    "champion": f"g{g}c1",
                    "rows": [
                        {
                            "name": f"g{g}c{c}",
                            "parent": None if g == 0 else "g0c1",
                            "score": 0.4 + 0.1 * g + 0.02 * c,
                            "cost": 800.0 - 50 * c,
                            "gzip_bytes": 400 + c,
                            "status": "measured",
                            "detail": "",
                            "generation": g,
                        }
                        for c in range(1, 4)
                    ],
                }
                for g in range(2)
            ],
            "lineage": [
                {
                    "name": f"g{g}c{c}",
                    "parent": None if g == 0 else "g0c1",
                    "generation": g,
                    "status": "measured",
                    "score": 0.4 + 0.1 * g,
                    "cost": 700.0,
                    "gzip_bytes": 400,
                }
                for g in range(2)
                for c in range(1, 4)
            ],
            "incumbent": "g0c1",
            "holdout": {"tasks": list(range(40)), "champion": "g1c1", "baseline": "sample"},
            "verdict": verdict,
            "verdict_text": ["decision: PROMOTE — candidate better on the holdout (p = 0.012)"],
        }
        (run_dir / "report.json").write_text(json.dumps(report), encoding="utf-8")
        history.evolve_run = run_dir
    champions.register(
        store,
        name="g1c1",
        source=STRATEGY_SOURCE,
        verdict=verdict,
        lineage=[{"name": "g0c1", "generation": 0, "run_id": str(run_dir)}],
        run_id=str(run_dir) if run_dir else None,
        record={"budget": 4, "tier": "basic"},
        proven_against=None,
    )


def populate(
    store: Store,
    memory: SkillMemory,
    *,
    trajectories: int = 600,
    days: float = 30.0,
    seed: int = 0,
    lessons: int = 12,
    evolve_dir: Path | None = None,
    frontier: bool = True,
) -> History:
    """Fill `store` (and `memory`, over the same store) with a history; see the module doc.

    Args:
        store: an open, empty store.
        memory: a playbook over `store` (tests use `HashingEmbedder`).
        trajectories: how many trajectories to append (about; lessons add
            reflection trajectories and the learning curve adds 60 eval ones).
        days: the span of their timestamps, ending now.
        seed: the random seed.
        lessons: how many lessons to learn (from failed self-play trajectories).
        evolve_dir: where to write an evolve run's `report.json` (None: no run dir).
        frontier: also record a frontier run per self-play trajectory.
    """
    rng = random.Random(seed)
    history = History()
    stored = _append_trajectories(store, rng, trajectories, days, time.time())
    history.trajectory_ids = [t.id for t in stored]
    if frontier:
        _frontier(store, [t for t in stored if t.task_kind == "selfplay"])
    _corrections(store, rng, stored, history)
    _lessons(store, memory, rng, stored, history, lessons)
    _evals(store, rng, history)
    _idle(store, rng)
    _strategies(store, evolve_dir, history)
    return history
