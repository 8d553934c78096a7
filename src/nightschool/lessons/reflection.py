"""The Reflector: one critique call per failed trajectory → diagnosis + revised plan.

Two entry points share one dedup record, the `reflection_claims` table:
`Reflector.reflect_one` (real-time path, after a user correction) and
`Reflector.run` (backlog path, idle time). A source is claimed `in_progress`
before the model call; a timeout or infrastructure fault deletes the claim so a
later pass retries, and is never recorded as anyone's failure (PRIOR-ART). An
unparseable reply marks the claim `unparseable` (not retried). A parsed reply is
stored as its own trajectory (`task_kind="reflection"`, `extra["reflected_from"]`)
in the same transaction that marks the claim `done`; then the sink runs.
Reply format (from the seed): `DIAGNOSIS: <one sentence>`, then `REVISED PLAN:`
with 1–5 numbered steps, parsed leniently since small models drift from it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from nightschool.errors import InfrastructureError
from nightschool.lessons._reflection_parse import parse_reflection, squash
from nightschool.llm import ChatModel, Completion, Message
from nightschool.store import Store
from nightschool.trajectory import Outcome, ToolCall, Trajectory

logger = logging.getLogger(__name__)

REFLECTION_TASK_KIND = "reflection"
"""`task_kind` of the trajectories the Reflector writes; they are never reflected on."""

EVAL_TASK_KIND = "eval"
"""`task_kind` of eval-suite turns; never reflected on, so test items never become lessons
(a lesson learned from a benchmark task would contaminate the next run of that benchmark)."""

REFLECTION_SYSTEM_PROMPT = (
    "You review a failed attempt by an AI assistant. Say briefly what went wrong "
    "and give a better plan. Follow the requested format exactly."
)
"""System message of every critique call."""

REFLECTION_PROMPT = """An AI assistant tried the task below and FAILED.

TASK:
{task}

WHAT THE ASSISTANT DID:
{actions}

END OF ITS FINAL RESPONSE:
{final_response}

WHY IT FAILED:
{failure}

Reply in exactly this format and nothing else:
DIAGNOSIS: <one sentence: the main mistake>
REVISED PLAN:
1. <first step>
2. <next step>
Use 1 to 5 numbered steps."""
"""The critique prompt (`str.format` fields: task, actions, final_response, failure).

Placeholders, not a worked example: SmolLM2-135M copied a concrete example verbatim
(measured), which would become a false lesson. `build_prompt` keeps the filled prompt
under ~6,000 characters (~1,600 tokens): it fits a 4k context with a 400-token reply."""

# Prompt budgets in characters, and how many tool calls are shown (first, last).
_TASK, _RESPONSE, _FAILURE, _SIGNAL = 1500, 800, 400, 600
_ARGS, _ARG_VALUE, _OUTPUT = 120, 40, 160
_HEAD_CALLS, _TAIL_CALLS = 2, 8

ClaimStatus = Literal["in_progress", "done", "unparseable"]


REFLECTION_GRAMMAR = r"""
root ::= "DIAGNOSIS: " line "\nREVISED PLAN:\n" step step? step? step? step?
line ::= [A-Za-z] [^\n]{10,240}
step ::= [1-5] ". " [A-Za-z] [^\n]{5,200} "\n"
"""
"""GBNF for the critique reply: a diagnosis line, then 1–5 numbered steps."""


class ReflectorConfig(BaseModel):
    """Settings of the Reflector."""

    per_call_timeout_s: float = Field(default=120.0, gt=0)
    """Seconds to wait for one critique call (the seed saw silent timeouts at 45 s
    when the real-time path shared a busy model server; 120 s fixed them)."""
    max_failures_per_run: int = Field(default=3, ge=1)
    """`run` stops after this many errors (timeouts, infrastructure faults)."""
    temperature: float = Field(default=0.3, ge=0)
    """Sampling temperature of the critique call (the seed's value)."""
    max_tokens: int = Field(default=400, gt=0)
    """Completion cap of the critique call, tokens."""
    stale_claim_s: float = Field(default=3600, gt=0)
    """An `in_progress` claim older than this (seconds) is abandoned and may be reclaimed."""
    seed: int | None = None
    """Sampling seed passed to the model; None lets the backend choose."""
    grammar: str | None = Field(default_factory=lambda: REFLECTION_GRAMMAR)
    """GBNF grammar the reply is constrained to where the backend enforces one (the
    embedded model). Without it SmolLM2-135M ignored the format in every trial."""


@dataclass(frozen=True)
class Reflection:
    """A parsed, stored reflection on one failed trajectory.

    Attributes:
        source_trajectory_id: id of the failed trajectory reflected on.
        diagnosis: one sentence saying what went wrong (as stored, redacted).
        revised_plan: 1–5 steps, each stripped (as stored, redacted).
        reflection_trajectory_id: id of the stored `reflection` trajectory.
    """

    source_trajectory_id: str
    diagnosis: str
    revised_plan: list[str]
    reflection_trajectory_id: str


@dataclass(frozen=True)
class ReflectOutcome:
    """What one reflection attempt did.

    Attributes:
        status: `reflected` (stored); `skipped` (not failed, a reflection, not
            stored, or claimed already); `unparseable` (no diagnosis or plan in
            the reply; not retried); `error` (timeout or infrastructure fault;
            the claim was released so a later pass retries).
        source_trajectory_id: the trajectory considered.
        reflection: the stored reflection when `reflected`, else None.
        detail: why, in words.
        sink_result: what the sink returned, when it ran without raising.
    """

    status: Literal["reflected", "skipped", "unparseable", "error"]
    source_trajectory_id: str
    reflection: Reflection | None
    detail: str
    sink_result: object | None = None


@dataclass(frozen=True)
class ReflectRunReport:
    """Summary of one `Reflector.run`; counts add up to `considered == len(outcomes)`.

    Attributes:
        considered: trajectories attempted.
        reflected: reflections stored.
        skipped: skipped (claimed meanwhile by the other path, ...).
        unparseable: replies that could not be parsed.
        errors: timeouts and infrastructure faults.
        outcomes: one per trajectory considered, newest source first.
        stopped_early: the run stopped after `max_failures_per_run` errors.
    """

    considered: int
    reflected: int
    skipped: int
    unparseable: int
    errors: int
    outcomes: list[ReflectOutcome]
    stopped_early: bool


ReflectionSink = Callable[[Reflection, Trajectory], object]
"""Gets each stored reflection and its corrected source trajectory (e.g. writes a
lesson); its return value is kept in `ReflectOutcome.sink_result`."""


# -- prompt ---------------------------------------------------------------------------


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[3 - limit :].lstrip()


def _compact_call(index: int, call: ToolCall) -> str:
    shown = (f"{k}={_head(squash(repr(v)), _ARG_VALUE)}" for k, v in call.arguments.items())
    args = ", ".join(shown)
    line = f"{index}. {call.name}({_head(args, _ARGS)})"
    if call.error:
        return f"{line} -> ERROR: {_tail(squash(call.error), _OUTPUT)}"
    return f"{line} -> {_tail(squash(call.result), _OUTPUT)}" if call.result else line


def build_prompt(trajectory: Trajectory) -> str:
    """Fill `REFLECTION_PROMPT` for one failed trajectory.

    Shows the task (first 1,500 chars), the tool calls one line each (name,
    short arguments, error or result tail; only the first 2 and last 8 when
    there are more), the final response's last 800 chars, the failure reason
    (400) and the validator signal's tail (600).
    """
    calls = [_compact_call(i, c) for i, c in enumerate(trajectory.tool_calls, start=1)]
    hidden = len(calls) - _HEAD_CALLS - _TAIL_CALLS
    if hidden > 0:
        calls = [*calls[:_HEAD_CALLS], f"... ({hidden} more tool calls) ...", *calls[-_TAIL_CALLS:]]
    failure = []
    if trajectory.failure_reason:
        failure.append(_head(trajectory.failure_reason.strip(), _FAILURE))
    if trajectory.validator_signal:
        failure.append(f"Validator output: {_tail(trajectory.validator_signal.strip(), _SIGNAL)}")
    return REFLECTION_PROMPT.format(
        task=_head(trajectory.user_request.strip() or "(no request recorded)", _TASK),
        actions="\n".join(calls) or "(no tool calls)",
        final_response=_tail(trajectory.final_response.strip() or "(empty)", _RESPONSE),
        failure="\n".join(failure) or "(no reason recorded)",
    )


# -- the Reflector -------------------------------------------------------------------


class Reflector:
    """Reflects on failed trajectories and stores each reflection as a trajectory.

    `reflect_one` and `run` may run at the same time in different threads or
    processes: the claim table makes sure each source is reflected at most once.

    Args:
        store: the database with trajectories, corrections and claims.
        model: the critique model.
        config: settings; None means `ReflectorConfig()`.
        sink: called after each stored reflection, outside the transaction; an
            exception from it is logged and reported, and keeps the reflection.
    """

    def __init__(
        self,
        store: Store,
        model: ChatModel,
        config: ReflectorConfig | None = None,
        sink: ReflectionSink | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.config = config or ReflectorConfig()
        self.sink = sink

    def pending(self, limit: int | None = None) -> list[Trajectory]:
        """Trajectories waiting for a reflection (at most `limit`), newest first.

        Those whose effective outcome (corrections overlaid) is `failed`, that
        are not reflections nor eval tasks, and that have no `done`/`unparseable` claim nor an
        `in_progress` claim younger than `stale_claim_s`.
        """
        sql = (
            "SELECT t.id FROM trajectories_effective t "
            "LEFT JOIN reflection_claims c ON c.trajectory_id = t.id "
            "WHERE t.outcome = 'failed' AND t.task_kind NOT IN (?, ?) "
            "AND (c.trajectory_id IS NULL OR (c.status = 'in_progress' AND c.claimed_at < ?)) "
            "ORDER BY t.timestamp DESC, t.id DESC"
        )
        params: list[Any] = [
            REFLECTION_TASK_KIND,
            EVAL_TASK_KIND,
            time.time() - self.config.stale_claim_s,
        ]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        found = [self.store.get_trajectory(row[0]) for row in self.store.query(sql, params)]
        return [t for t in found if t is not None and _skip_reason(t) is None]

    def reflect_one(self, trajectory: Trajectory) -> ReflectOutcome:
        """Reflect on one trajectory now (the real-time path).

        Only the id is used: the stored record with its corrections overlaid
        (redacted) decides whether the outcome is `failed` and is what the
        model sees. A claim held by either path means `skipped`. Per-trajectory
        problems come back as the outcome, not as exceptions.

        Raises:
            KeyboardInterrupt, StoreError, or a non-infrastructure model error:
                re-raised after releasing the claim.
        """
        source = self.store.get_trajectory(trajectory.id)
        reason = _skip_reason(source)
        if source is None or reason is not None:
            return ReflectOutcome("skipped", trajectory.id, None, reason or "not stored")
        claimed_at, held = self._claim(source.id)
        if held is not None:
            detail = "in progress" if held == "in_progress" else f"already reflected ({held})"
            return ReflectOutcome("skipped", source.id, None, detail)
        try:
            return self._reflect_claimed(source, claimed_at)
        except BaseException:
            self._release(source.id, claimed_at)
            raise

    def run(
        self, limit: int = 10, *, on_outcome: Callable[[ReflectOutcome], None] | None = None
    ) -> ReflectRunReport:
        """Reflect on up to `limit` pending trajectories, newest first (the backlog path).

        Stops early after `max_failures_per_run` errors, so a dead model server
        costs a bounded number of calls; their claims are released for a later
        run. `on_outcome` is called after each trajectory (progress reporting).
        """
        outcomes: list[ReflectOutcome] = []
        stopped_early = False
        for trajectory in self.pending(limit):
            outcomes.append(self.reflect_one(trajectory))
            if on_outcome is not None:
                on_outcome(outcomes[-1])
            errors = sum(o.status == "error" for o in outcomes)
            if errors >= self.config.max_failures_per_run:
                logger.warning("reflection run stopped after %d errors", errors)
                stopped_early = True
                break
        n = Counter(o.status for o in outcomes)
        counts = (n["reflected"], n["skipped"], n["unparseable"], n["error"])
        return ReflectRunReport(len(outcomes), *counts, outcomes, stopped_early)

    def _reflect_claimed(self, source: Trajectory, claimed_at: float) -> ReflectOutcome:
        messages: list[Message] = [
            {"role": "system", "content": REFLECTION_SYSTEM_PROMPT},
            {"role": "user", "content": build_prompt(source)},
        ]
        start = time.perf_counter()
        try:
            completion = self._call_model(messages)
        except TimeoutError:
            detail = f"timeout after {self.config.per_call_timeout_s:g}s"
        except InfrastructureError as exc:
            detail = f"{type(exc).__name__}: {exc}"
        else:
            return self._record(source, claimed_at, messages[1]["content"], completion, start)
        self._release(source.id, claimed_at)
        logger.warning("reflection on %s failed, a later pass retries: %s", source.id, detail)
        return ReflectOutcome("error", source.id, None, detail)

    def _call_model(self, messages: list[Message]) -> Completion:
        """Run `model.complete` in a worker thread; TimeoutError after `per_call_timeout_s`.

        A timed-out call cannot be killed: its thread is left to finish, unjoined,
        and its reply is dropped.
        """
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="nightschool-reflect")
        try:
            future = pool.submit(
                self.model.complete,
                messages,
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                seed=self.config.seed,
                grammar=self.config.grammar,
            )
            return future.result(timeout=self.config.per_call_timeout_s)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _record(
        self, source: Trajectory, claimed_at: float, prompt: str, reply: Completion, start: float
    ) -> ReflectOutcome:
        """Store the outcome of a reply (claim finished in the same transaction); run the sink."""
        lost = ReflectOutcome("skipped", source.id, None, "claim lost (stale, reclaimed)")
        parsed = parse_reflection(reply.text)
        if parsed is None:
            logger.debug("unparseable reflection response for %s: %r", source.id, reply.text)
            if not self._finish(source.id, claimed_at, "unparseable"):
                return lost
            return ReflectOutcome("unparseable", source.id, None, "unparseable reflection response")
        diagnosis, plan = parsed
        record = Trajectory(
            session_id=source.session_id,
            task_kind=REFLECTION_TASK_KIND,
            cluster=source.cluster,
            tier=source.tier,
            model=self.model.name,
            temperature=self.config.temperature,
            system_prompt=REFLECTION_SYSTEM_PROMPT,
            user_request=prompt,
            planning_output="\n".join(f"{i}. {step}" for i, step in enumerate(plan, start=1)),
            n_steps=1,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            duration_s=time.perf_counter() - start,
            outcome=Outcome.UNKNOWN,  # a reflection has no verdict yet
            extra={
                "reflected_from": source.id,
                "diagnosis": diagnosis,
                "revised_plan": plan,
                "source_task_kind": source.task_kind,
                "source_failure_reason": source.failure_reason or "",
                "finish_reason": reply.finish_reason,
            },
            final_response=reply.text,
        )
        with self.store.transaction():
            if not self._finish(source.id, claimed_at, "done", record.id):
                return lost
            stored = self.store.append_trajectory(record)
        reflection = Reflection(
            source.id, stored.extra["diagnosis"], list(stored.extra["revised_plan"]), stored.id
        )
        logger.info("reflected on %s: %s", source.id, _head(reflection.diagnosis, 200))
        if self.sink is None:
            return ReflectOutcome("reflected", source.id, reflection, "stored")
        try:
            result = self.sink(reflection, source)
        except Exception as exc:
            logger.warning("reflection sink failed for %s: %s", source.id, exc, exc_info=True)
            detail = f"stored; sink failed: {type(exc).__name__}: {exc}"
            return ReflectOutcome("reflected", source.id, reflection, detail)
        return ReflectOutcome("reflected", source.id, reflection, "stored; sink ran", result)

    def _claim(self, source_id: str) -> tuple[float, ClaimStatus | None]:
        """Claim `source_id`: (our claimed_at, None), or (0.0, the status holding it)."""
        now = time.time()
        with self.store.transaction() as conn:
            row = conn.execute(
                "SELECT status, claimed_at FROM reflection_claims WHERE trajectory_id = ?",
                (source_id,),
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO reflection_claims(trajectory_id, status, claimed_at) "
                    "VALUES (?, 'in_progress', ?)",
                    (source_id, now),
                )
                return now, None
            if row[0] == "in_progress" and row[1] < now - self.config.stale_claim_s:
                logger.info("reclaiming the abandoned reflection claim on %s", source_id)
                conn.execute(
                    "UPDATE reflection_claims SET claimed_at = ?, detail = 'reclaimed' "
                    "WHERE trajectory_id = ?",
                    (now, source_id),
                )
                return now, None
            return 0.0, row[0]

    def _release(self, source_id: str, claimed_at: float) -> None:
        """Delete our `in_progress` claim so a later pass retries (best effort)."""
        try:
            with self.store.transaction() as conn:
                conn.execute(
                    "DELETE FROM reflection_claims WHERE trajectory_id = ? "
                    "AND status = 'in_progress' AND claimed_at = ?",
                    (source_id, claimed_at),
                )
        except sqlite3.Error:
            logger.warning("could not release the reflection claim on %s", source_id, exc_info=True)

    def _finish(
        self, source_id: str, claimed_at: float, status: ClaimStatus, reflection_id: str = ""
    ) -> bool:
        """Mark our claim `status`; False when it is not ours any more (reclaimed as stale).

        Joins the caller's transaction when there is one.
        """
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "UPDATE reflection_claims SET status = ?, finished_at = ?, "
                "reflection_trajectory_id = ?, detail = ? "
                "WHERE trajectory_id = ? AND status = 'in_progress' AND claimed_at = ?",
                (status, time.time(), reflection_id or None, status, source_id, claimed_at),
            )
            return cursor.rowcount == 1


def _skip_reason(source: Trajectory | None) -> str | None:
    if source is None:
        return "not in the store (only stored trajectories are reflected on)"
    if source.task_kind == REFLECTION_TASK_KIND or "reflected_from" in source.extra:
        return "is a reflection (reflections are never reflected on)"
    if source.task_kind == EVAL_TASK_KIND:
        return "is an eval task (benchmark items never become lessons)"
    if source.infrastructure_error:
        return f"ended by an infrastructure error ({source.infrastructure_error})"
    if source.outcome != Outcome.FAILED:
        return f"outcome is {source.outcome.value} (only failed trajectories are reflected on)"
    return None
