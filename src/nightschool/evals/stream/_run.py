"""Run a stream: every task in order, a no-memory, a placebo and a memory arm, resumable.

The protocol (DESIGN "stream"): tasks come in a fixed order; each arm answers
each task once (pass@1, one model call, one program run against the public
test). The **memory arm** is first shown what it learned from earlier tasks
(`learning.skills.recall`: lessons under `### SKILL PLAYBOOK`, skills under
`### WORKED EXAMPLES`, behind the playbook's relevance floor, without the
same-template rule: every stream task is its own template), then learns from
what a user would have seen: an answer that passed the public test becomes a
skill; one that failed it is turned into a candidate lesson
(`LessonExtractor.propose`, one more model call) that enters the playbook when
the generalization guard lets it. The **no-memory arm** is shown nothing and
learns nothing. The **placebo arm** (`_placebo`) is shown as many entries as
the memory arm, none of them related to the task, and learns nothing. The
**retry arm** (equal compute, on request) is shown nothing and spends the model
call the memory arm's learning costs on a second attempt instead. Every
arm is scored on the hidden tests, which reach only the scoring sandbox and
the row written here.

A run lives in one directory (`_rundir.StreamRun`: settings, rows, the
memory arm's database). `--resume` skips every (task, arm) that has a row; an
answer interrupted mid-way is not recorded and is asked again.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from nightschool.errors import UserError
from nightschool.evals._humaneval import run_program
from nightschool.evals.stream._abstain import abstaining_recall
from nightschool.evals.stream._combined import combined_recall
from nightschool.evals.stream._curated import curated_recall
from nightschool.evals.stream._facts import facts_recall
from nightschool.evals.stream._fixed import fixed_recall
from nightschool.evals.stream._placebo import placebo_recall
from nightschool.evals.stream._rundir import (
    StreamRow,
    StreamRun,
    StreamSettings,
    start_memory_from,
    written_since,
)
from nightschool.evals.stream._static import static_recall
from nightschool.evals.stream._strategy import distill_strategy, strategy_recall
from nightschool.evals.stream._tasks import StreamTask, challenge_for, hidden_program
from nightschool.lessons.extraction import LessonExtractor
from nightschool.lessons.skills import Recall, learn_skill, recall, recall_request
from nightschool.playbook import SkillMemory, approx_tokens, format_playbook
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver, SolveResult
from nightschool.store import Store
from nightschool.trajectory import Trajectory

Arm = Literal[
    "no_memory", "placebo", "memory", "curated", "fixed", "retry", "static", "resample",
    "resample2", "facts", "abstain", "strategy", "combined",
]  # fmt: skip
ARMS: tuple[Arm, ...] = ("no_memory", "placebo", "memory")
"""The default arms, in the order each task is answered (the placebo before the memory
arm, which then learns from the task: both see the memory as it was)."""

EXTRA_ARMS: tuple[Arm, ...] = (
    "curated", "fixed", "retry", "static", "resample", "resample2", "facts", "abstain",
    "strategy", "combined",
)  # fmt: skip
"""Arms run on request (`--arms`), after the default ones (or in a later session,
over a finished run):

- `curated` (`_curated`): generic worked examples chosen by measured utility;
  `fixed` (`_fixed`): the first ones learned, the same for every task; both read
  the memory arm's rows.
- `retry`: equal compute; no memory, a failed public test buys one more attempt.
- `static` (`_static`): two of the bank's reference solutions for every task,
  nothing learned.
- `resample`: no memory, a failed public test buys one fresh draw of the very
  same request (the bar for "show something after a failure", `second_chance`);
  `resample2`: a third draw where that one failed too (after `resample`).
- `facts` (`_facts`): environment facts admitted from the no-memory arm's
  recurring failure classes, shown to every later task.
- `abstain` (`_abstain`): the memory arm's retrieval, each entry kept only where
  its paired exposures helped more often than they hurt (after `memory`).
- `strategy` (`_strategy`): strategy items distilled from its own passes and
  failures, the nearest one shown; it learns, in its own database.
- `combined` (`_combined`): what `facts`, `abstain` and `strategy` would show, in
  one prompt (after `memory` and `strategy`).
"""

SECOND_CHANCE_ARMS: tuple[Arm, ...] = ("retry", "resample", "resample2")
"""Arms that answer a task again only when the no-memory answer failed its public
test, and otherwise keep that answer."""

RETRY_ATTEMPTS = 2
"""Attempts of the equal-compute arm: the memory arm spends one more model call on
a task whose public test failed (lesson extraction) and none on a pass; the
`retry` arm spends that same call on a second attempt instead, which sees its
failing program and the public test's output (`Solver`'s fresh retry, no
resamples). It is the cheap baseline memory has to beat: the start model given
the compute the learning spent (issue "Transfer, measured honestly")."""


ALL_ARMS: tuple[Arm, ...] = (*ARMS, *EXTRA_ARMS)
"""Every arm: the default ones, then the extra ones."""

HIDDEN_TIMEOUT_S = 10.0
"""Wall-clock limit of one hidden-test program, seconds (as `humaneval`'s)."""


@dataclass
class StreamContext:
    """The collaborators of a stream run.

    Attributes:
        solver: answers one attempt (`Solver.single_attempt()`: no playbook of its own).
        sandbox: runs the hidden tests.
        store: the run's own database (trajectories of both arms).
        memory: the memory arm's playbook over `store`.
        extractor: turns a failed public test into a candidate lesson and writes it
            to its playbook (the same `memory`); None: no lessons.
        retry_solver: the `retry` arm's solver (`retry_solver`); None: the arm
            cannot run.
        resample_solver: the `resample` arm's solver (`resample_solver`); None:
            the arm cannot run.
        resample2_solver: the `resample2` arm's solver (`resample_solver(...,
            draw=2)`); None: the arm cannot run.
        strategies: the strategy arm's own playbook (`RUN/strategy.db`); None:
            the arm cannot run.
    """

    solver: Solver
    sandbox: Sandbox
    store: Store
    memory: SkillMemory
    extractor: LessonExtractor | None = None
    retry_solver: Solver | None = None
    resample_solver: Solver | None = None
    resample2_solver: Solver | None = None
    strategies: SkillMemory | None = None


def retry_solver(solver: Solver) -> Solver:
    """`solver` with `RETRY_ATTEMPTS` attempts and no resamples (the `retry` arm).

    Its first attempt is the one-attempt `solver`'s very request (same prompt,
    seed and temperature), so on a task whose public test that answer passed,
    the no-memory arm's answer is the retry arm's too (`answer` reuses it).
    """
    config = solver.config.model_copy(
        update={"max_attempts": RETRY_ATTEMPTS, "max_resamples": 0, "retry_mode": "fresh"}
    )
    return Solver(solver.model, solver.sandbox, config)


def resample_solver(solver: Solver, draw: int = 1) -> Solver:
    """`solver`'s `draw`-th fresh draw of the same request (the `resample` arms).

    One attempt at the temperature and with the seed the solver's own attempt
    `draw + 1` would use (`temperature + draw * temperature_step`, capped at
    `max_temperature`, never below the base; seed salt + `draw`), the prompt
    unchanged: no failing program, no checker output, nothing shown. It is
    what another model call buys without any memory or feedback: `draw` 1 is
    the `resample` arm (0.55 with the defaults), 2 the `resample2` arm (0.9).

    Raises:
        ValueError: `draw` < 1.
    """
    if draw < 1:
        raise ValueError("a redraw is draw 1 or later")
    cfg = solver.config
    hotter = max(
        cfg.temperature, min(cfg.temperature + draw * cfg.temperature_step, cfg.max_temperature)
    )
    config = cfg.model_copy(
        update={"max_attempts": 1, "temperature": hotter, "seed": cfg.seed + draw}
    )
    return Solver(solver.model, solver.sandbox, config)


def _answer_code(trajectory: Trajectory) -> str | None:
    for call in reversed(trajectory.tool_calls):
        code = call.arguments.get("code")
        if call.name == "run_solution" and code:
            return str(code)
    return None


def _counts(
    ctx: StreamContext, settings: StreamSettings, task: StreamTask, rows: Sequence[StreamRow]
) -> tuple[int, int]:
    """(lessons, skills) the memory arm is (or was, in an earlier session) shown for `task`."""
    for row in rows:
        if row.task_id == task.task_id and row.arm == "memory":
            return len(row.lessons_shown), len(row.skills_shown)
    shown = _shown(ctx, settings, task)
    return len(shown.lessons), len(shown.skills)


def as_chat(settings: StreamSettings) -> bool:
    """Whether the memory arm is shown what a user's chat turn would be shown.

    Dream, then stream (`memory_from` set, `learn` off): the memory is what
    the dreams kept, and a chat turn sees only its verified entries
    (`Lesson.shown_to("chat")`); so does this arm, and the placebo draws from
    the same verified pool. A stream that learns shows its own unverified
    items, as practice does (nothing on the stream verifies them).
    """
    return bool(settings.memory_from) and not settings.learn


def _shown(ctx: StreamContext, settings: StreamSettings, task: StreamTask) -> Recall:
    challenge = challenge_for(task)
    if as_chat(settings):
        return recall_request(
            ctx.memory,
            challenge.prompt,
            lessons_k=settings.lessons_k,
            skills_k=settings.skills_k,
            cluster=challenge.cluster,
            audience="chat",
        )
    found = recall(
        ctx.memory,
        challenge,
        lessons_k=settings.lessons_k,
        skills_k=settings.skills_k,
        same_template=False,
    )
    # never an item learned from this very task (a resumed run may hold one)
    lessons = [x for x in found.lessons if x.lesson.challenge_hash != challenge.challenge_hash]
    return Recall(lessons, found.skills, found.skill_sections)


def _arm_recall(
    ctx: StreamContext,
    settings: StreamSettings,
    task: StreamTask,
    position: int,
    arm: Arm,
    rows: Sequence[StreamRow],
) -> Recall:
    """What `arm` is shown for `task` (an arm that shows nothing: an empty `Recall`)."""
    if arm == "memory":
        return _shown(ctx, settings, task)
    if arm == "placebo":
        counts = _counts(ctx, settings, task, rows)
        later = written_since(rows, "memory", position)
        return placebo_recall(ctx.memory, task, counts, later, verified_only=as_chat(settings))
    if arm == "curated":
        return curated_recall(ctx.memory, task, position, rows, k=settings.skills_k)
    if arm == "static":
        return static_recall(settings.skills_k)
    if arm == "fixed":
        # from a home's playbook (dream, then stream): the verified ones, as dream shows them
        return fixed_recall(
            ctx.memory,
            task,
            position,
            rows,
            k=settings.skills_k,
            verified_only=bool(settings.memory_from),
        )
    if arm == "facts":
        return facts_recall(ctx.store, settings.task_ids[:position])
    if arm == "abstain":
        return abstaining_recall(ctx.memory, task.task_id, position, rows)
    if arm == "strategy":
        return strategy_recall(_strategies(ctx), task)
    if arm == "combined":
        earlier = settings.task_ids[:position]
        strategies = _strategies(ctx)
        return combined_recall(ctx.store, ctx.memory, strategies, task, position, rows, earlier)
    return Recall()


def _strategies(ctx: StreamContext) -> SkillMemory:
    if ctx.strategies is None:
        raise ValueError("the strategy arm needs StreamContext.strategies")
    return ctx.strategies


@dataclass(frozen=True)
class Answer:
    """One scored answer (what the memory arm may reuse when it is shown nothing).

    Attributes:
        result: the solver's result (public test).
        trajectory_id: the stored trajectory.
        code: the answer's program, if the reply held one.
        passed: every hidden test passed.
        error: the hidden run's last error line.
    """

    result: SolveResult
    trajectory_id: str
    code: str | None
    passed: bool
    error: str


def _solve(ctx: StreamContext, task: StreamTask, arm: Arm, shown: Recall) -> Answer:
    challenge = challenge_for(task)
    own: dict[str, Solver | None] = {
        "retry": ctx.retry_solver,
        "resample": ctx.resample_solver,
        "resample2": ctx.resample2_solver,
    }
    solver = own.get(arm, ctx.solver)
    if solver is None:
        raise ValueError(f"the {arm} arm needs StreamContext.{arm}_solver")
    result = solver.solve(
        challenge,
        session_id=f"stream-{arm}",
        lessons=shown.lessons,
        skills=shown.skill_sections,
        skill_ids=shown.skill_ids,
    )
    if result.infrastructure_error is not None:
        raise result.infrastructure_error
    trajectory = result.trajectory.model_copy(
        update={"task_kind": "eval", "extra": {**result.trajectory.extra, "stream_arm": arm}}
    )
    stored = ctx.store.append_trajectory(trajectory)
    code = _answer_code(trajectory)
    if code is None:
        return Answer(result, stored.id, None, False, "no code in reply")
    score = run_program(ctx.sandbox, hidden_program(task, code), HIDDEN_TIMEOUT_S)
    return Answer(result, stored.id, code, score.passed, score.error or "")


def answer(
    ctx: StreamContext,
    settings: StreamSettings,
    task: StreamTask,
    position: int,
    arm: Arm,
    *,
    unaided: Answer | None = None,
    rows: Sequence[StreamRow] = (),
) -> tuple[StreamRow, Answer | None]:
    """One arm's answer to one task: solve, score on the hidden tests, learn (memory arm).

    Args:
        ctx: the collaborators.
        settings: the run's settings.
        task: the task.
        position: its place in the stream.
        arm: which arm answers.
        unaided: the no-memory arm's answer to this task in this process. When
            the memory arm is shown nothing its request is byte-identical to
            the no-memory arm's (same prompt, seed and temperature), so that
            answer is reused (`reused`) instead of asked again, as the
            learning curve reuses the start's result; it still learns from it.
            The same holds for the placebo arm, and for the `retry` arm when
            that answer passed its public test (its first attempt is the same
            request, and a pass ends it), and for the `resample` arm when it
            passed (no second chance is taken).
        rows: the run's rows so far (the placebo arm reads the memory arm's).

    Returns:
        (the row, the scored answer; None when an arm shown nothing that
        learns nothing took an earlier session's no-memory row).

    Raises:
        InfrastructureError: the model or the sandbox failed (nothing is recorded).
        UserError: the resample arm asked before the no-memory arm answered the task.
    """
    started = time.perf_counter()
    if arm == "resample2":
        return _third_draw(ctx, task, rows, started)
    # the no-memory answer of an earlier session (this process's is `unaided`)
    first = next((r for r in rows if r.task_id == task.task_id and r.arm == "no_memory"), None)
    if arm == "resample" and unaided is None and first is None:
        raise UserError(
            "the resample arm is a second draw after the no-memory answer, which "
            f"{task.task_id} does not have yet",
            hint="run the no_memory arm first (--arms no_memory,resample)",
        )
    shown = _arm_recall(ctx, settings, task, position, arm, rows)
    nothing_shown = not shown.lessons and not shown.skills
    if (
        first is not None
        and unaided is None
        and nothing_shown
        and arm != "strategy"  # it learns from the answer, so it needs the answer itself
        and (arm in ("placebo", *EXTRA_ARMS) or (arm == "memory" and not settings.learn))
        and (arm not in SECOND_CHANCE_ARMS or first.public_passed)
    ):
        # an earlier session's no-memory answer: the same request, the same answer (a
        # second-chance arm whose public test failed answers again: that is its point;
        # a memory arm that learns needs the answer itself, to learn from it)
        return dataclasses.replace(first, arm=arm, reused=True, duration_s=0.0), None
    reused = arm != "no_memory" and nothing_shown and unaided is not None
    if arm in SECOND_CHANCE_ARMS and unaided is not None and not unaided.result.passed:
        reused = False  # its public test failed: the second attempt is the arm's point
    done = unaided if reused and unaided is not None else _solve(ctx, task, arm, shown)
    result = done.result
    first_calls, first_tokens = 0, 0
    if arm == "resample" and not reused:
        # the draw follows the no-memory answer, whose call and tokens it also spent
        if unaided is not None:
            traj = unaided.result.trajectory
            first_calls, first_tokens = unaided.result.model_calls, traj.tokens_in + traj.tokens_out
        elif first is not None:
            first_calls, first_tokens = first.model_calls, first.tokens
    added = approx_tokens(format_playbook(shown.lessons)) if shown.lessons else 0
    added += sum(approx_tokens(section) for section in shown.skill_sections)
    learned, learned_id, note, calls = "", "", "", result.model_calls + first_calls
    if arm == "memory" and settings.learn:
        learned, learned_id, note, extra = _learn(
            ctx, settings, task, result, done.code, done.trajectory_id
        )
        calls += extra
    elif arm == "strategy":
        model = ctx.solver.model
        code, trajectory_id = done.code, done.trajectory_id
        learned, learned_id, note = distill_strategy(
            model, _strategies(ctx), task, result, code, trajectory_id
        )
        calls += 1
    row = StreamRow(
        position=position,
        task_id=task.task_id,
        arm=arm,
        passed=done.passed,
        public_passed=result.passed,
        hidden_error=done.error[:300],
        tokens=result.trajectory.tokens_in + result.trajectory.tokens_out + first_tokens,
        added_tokens=added,
        lessons_shown=[x.lesson.id for x in shown.lessons],
        skills_shown=shown.skill_ids,
        learned=learned,
        learned_id=learned_id,
        learned_note=note[:200],
        model_calls=calls,
        reused=reused,
        duration_s=round(time.perf_counter() - started, 2),
    )
    return row, done


def _third_draw(
    ctx: StreamContext, task: StreamTask, rows: Sequence[StreamRow], started: float
) -> tuple[StreamRow, Answer | None]:
    """The `resample2` arm: the resample arm's answer, or a third draw where it failed too.

    Its model calls and tokens include the resample row's (which include the
    no-memory answer's): the policy answers, checks, redraws, checks, redraws.

    Raises:
        UserError: the resample arm has not answered `task` yet.
    """
    prior = next((r for r in rows if r.task_id == task.task_id and r.arm == "resample"), None)
    if prior is None:
        raise UserError(
            f"the resample2 arm is a third draw after the resample arm, which {task.task_id} "
            "does not have yet",
            hint="run the resample arm first (--arms no_memory,resample,resample2)",
        )
    if prior.public_passed:
        return dataclasses.replace(prior, arm="resample2", reused=True, duration_s=0.0), None
    done = _solve(ctx, task, "resample2", Recall())
    result = done.result
    row = StreamRow(
        position=prior.position,
        task_id=task.task_id,
        arm="resample2",
        passed=done.passed,
        public_passed=result.passed,
        hidden_error=done.error[:300],
        tokens=result.trajectory.tokens_in + result.trajectory.tokens_out + prior.tokens,
        added_tokens=0,
        lessons_shown=[],
        skills_shown=[],
        learned="",
        learned_id="",
        learned_note="",
        model_calls=result.model_calls + prior.model_calls,
        reused=False,
        duration_s=round(time.perf_counter() - started, 2),
    )
    return row, done


def _learn(
    ctx: StreamContext,
    settings: StreamSettings,
    task: StreamTask,
    result: SolveResult,
    code: str | None,
    trajectory_id: str,
) -> tuple[str, str, str, int]:
    """Learn from the public test only: (what, item id, reason, extra model calls)."""
    challenge = challenge_for(task)
    if result.passed and code is not None:
        skill = learn_skill(ctx.memory, challenge, code, source_trajectory_id=trajectory_id)
        return f"skill:{skill.status}", skill.lesson_id or "", skill.reason, 0
    if ctx.extractor is None or not settings.learn_lessons:
        return "", "", "", 0
    proposed = ctx.extractor.propose(challenge, result)
    candidate = proposed.candidate
    if proposed.status != "proposed" or candidate is None:
        return f"lesson:{proposed.status}", "", proposed.reason, 1
    lesson = ctx.extractor.write(
        candidate,
        source="stream",
        source_trajectory_id=trajectory_id,
        challenge_hash=challenge.challenge_hash,
        verified=False,
    )
    return f"lesson:{lesson.status}", lesson.lesson_id or "", lesson.reason, 1


def run_stream(
    tasks: Sequence[StreamTask],
    run: StreamRun,
    ctx: StreamContext,
    *,
    arms: Sequence[Arm] = ARMS,
    on_row: Callable[[StreamRow], None] | None = None,
    on_start: Callable[[int, StreamTask, Arm], None] | None = None,
) -> list[StreamRow]:
    """Answer every task of `tasks` (stream order) with every arm, skipping rows already done.

    Args:
        tasks: the stream, in order; their ids must be `run.settings.task_ids`.
        run: the run directory (rows appended as they finish).
        ctx: solver, sandbox, the run's store, memory and extractor.
        arms: which arms to run, in this order per task (`ARMS` by default; the
            curated arm after the memory arm, whose rows it reads).
        on_row: called after each row is written.
        on_start: called before each answer (position, task, arm).

    Returns:
        Every row of the run, the ones of earlier sessions included.

    Raises:
        ValueError: `tasks` are not the run's tasks.
        InfrastructureError: the model or sandbox failed; rows so far are kept.
        KeyboardInterrupt: passed on; rows so far are kept.
    """
    if tuple(task.task_id for task in tasks) != run.settings.task_ids:
        raise ValueError("the tasks are not the run's tasks in the run's order")
    done = run.done()
    for position, task in enumerate(tasks):
        unaided: Answer | None = None
        for arm in arms:
            if (task.task_id, arm) in done:
                continue
            if on_start is not None:
                on_start(position, task, arm)
            row, scored = answer(
                ctx, run.settings, task, position, arm, unaided=unaided, rows=run.rows
            )
            unaided = scored if arm == "no_memory" else unaided
            run.append(row)
            if on_row is not None:
                on_row(row)
    return list(run.rows)


__all__ = [
    "ALL_ARMS",
    "ARMS",
    "EXTRA_ARMS",
    "RETRY_ATTEMPTS",
    "SECOND_CHANCE_ARMS",
    "Answer",
    "Arm",
    "StreamContext",
    "StreamRow",
    "StreamRun",
    "StreamSettings",
    "answer",
    "resample_solver",
    "retry_solver",
    "run_stream",
    "start_memory_from",
]
