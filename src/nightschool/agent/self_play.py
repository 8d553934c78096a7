"""The chat agent's self-play tools: `self_play`, `self_play_loop`, `stop_self_play`.

Issue 10's manual triggers, for a user who asks the agent to practise:

- `self_play` runs one dream cycle inside the turn, on the same curriculum as
  `nightschool dream` (`practice.open_practice`), and reports it. Its
  verification is left to idle time (`verify_k=0`): a kept skill stays
  unverified until the idle watchdog's skills phase verifies it, and a
  failure waits for the reflection phase. Verifying inside the turn would
  cost 2 x 6 more solver runs (minutes on the embedded model).
- `self_play_loop` starts cycles on a background thread once the current turn
  has ended (`practice.run_loop`: consolidation and the adaptive
  cool-off between cycles, verification on). Every model call goes through a
  `PreemptibleModel`, so the next user message (a new `Foreground` turn, in
  any session: the model is one) stops the loop at once, as does
  `stop_self_play` or `max_cycles`. One loop at a time per process. The run
  records when it gave way to that message and how long after the message's
  turn started (`LoopRun.preempt_delay_s`, shown by `GET /admin/self-play`
  and logged): the measure of issue 29's "pre-empted within 1 s".
- `stop_self_play` stops the loop and reports what it did.

A model or sandbox fault inside `self_play` raises (`InfrastructureError`), as
the other tools' sandbox faults do: the turn is recorded as an infrastructure
error, never as the agent's failure. In the background loop a fault ends the
loop and is reported in its status.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nightschool.agent.tools import SELF_PLAY_TOOL_SPECS, ToolOutcome
from nightschool.dream.loop import CycleCutShort, CycleResult
from nightschool.errors import InfrastructureError
from nightschool.llm import ChatModel
from nightschool.llm.preempt import Foreground, Preempted, PreemptibleModel
from nightschool.sandbox import Sandbox
from nightschool.store import Store

if TYPE_CHECKING:
    from nightschool.playbook import SkillMemory

logger = logging.getLogger("nightschool.agent")

SESSION_ID = "chat-self-play"
"""Session id recorded on the trajectories the self-play tools produce."""
MAX_LOOP_CYCLES = 1000
"""Largest `max_cycles` `self_play_loop` accepts."""
POLL_S = 0.1
"""How often the background loop looks for a new user turn while it waits, seconds."""


def describe_cycle(cycle: CycleResult) -> str:
    """One line for the model and the user: the challenge, the verdict, what was kept.

    A skipped cycle (the budget router's `stop`: no attempt) says `SKIPPED` and
    why, never `FAILED`; one a user turn cut short after it was stored names
    the follow-up that was stopped.
    """
    head = f"{cycle.cluster}/{cycle.template} (tier {cycle.tier}, {cycle.source}): "
    if cycle.skipped is not None:
        parts = [f"{head}SKIPPED ({cycle.skipped}) in {cycle.duration_s:.1f} s"]
    else:
        verdict = "PASSED" if cycle.passed else "FAILED"
        if cycle.infrastructure_error:
            verdict = f"NOT JUDGED ({cycle.infrastructure_error})"
        parts = [f"{head}{verdict} after {cycle.attempts} attempt(s) in {cycle.duration_s:.1f} s"]
    if cycle.lessons_shown:
        parts.append(f"{len(cycle.lessons_shown)} lesson(s) shown")
    if cycle.skill is not None and cycle.skill.status in ("written", "reinforced"):
        verified = "verified" if cycle.skill.verified else "not verified yet"
        parts.append(f"skill {cycle.skill.status} ({verified})")
    if cycle.lesson is not None:
        parts.append(f"lesson {cycle.lesson.status}")
    if cycle.cut_short is not None:
        parts.append(f"{cycle.cut_short} cut short by a user turn")
    return "; ".join(parts) + f" [trajectory {cycle.trajectory_id[:12]}]"


@dataclass
class LoopRun:
    """One background loop: its state, its cycles and why it stopped.

    Attributes:
        number: 1 for the first loop of the process, then 2, ...
        max_cycles: the cap (None: until stopped).
        turn_mark: `Foreground.turns` when it was started; a higher count means
            the user's next message arrived.
        state: `waiting` (for the turn that started it to end), `running`,
            `stopped`.
        cycles: one line per cycle whose trajectory was stored
            (`describe_cycle`): the run's cycle count. It equals the run's
            stored `selfplay` trajectories (session `SESSION_ID`): a cycle a
            user turn stops before its trajectory is written stores nothing
            and is not counted; one stopped after (in its skill or lesson
            follow-up: `CycleResult.cut_short`) keeps its real verdict and is
            counted. The exception is a cycle an infrastructure fault ends:
            stored as `unknown`, it ends the loop (`stop_reason`) uncounted.
        passed: cycles whose solution passed.
        failed: cycles judged and failed (the agent's failures).
        skipped: cycles not attempted (the budget router's `stop`): neither
            passed nor failed.
        trajectory_ids: the stored trajectory of each counted cycle, in order.
        started_at, stopped_at: epoch seconds (stopped_at None while it runs).
        stop_reason: why it stopped, None while it runs.
        running_at: epoch seconds when it began practising (None while waiting).
        gave_way_at: epoch seconds when it gave way to the user's next turn:
            a model call stopped (an embedded decode aborts mid-reply), its
            cool-off woke, or it stopped between steps; None if no user turn
            stopped it.
        gave_way_in: where it was then: `model call` (one in progress),
            `before a model call`, `cool-off` or `between steps`.
        turn_started_at: epoch seconds when that user turn started (the first
            turn after `turn_mark`), None if not known.
    """

    number: int
    max_cycles: int | None
    turn_mark: int
    state: str = "waiting"
    cycles: list[str] = field(default_factory=list)
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    trajectory_ids: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    stopped_at: float | None = None
    stop_reason: str | None = None
    running_at: float | None = None
    gave_way_at: float | None = None
    gave_way_in: str | None = None
    turn_started_at: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def preempt_delay_s(self) -> float | None:
        """Seconds from the user turn's start to the loop giving way; None if not both known."""
        if self.gave_way_at is None or self.turn_started_at is None:
            return None
        return self.gave_way_at - self.turn_started_at

    def record(self, cycle: CycleResult) -> None:
        """Count a cycle whose trajectory was stored (see `cycles`)."""
        self.cycles.append(describe_cycle(cycle))
        self.trajectory_ids.append(cycle.trajectory_id)
        if cycle.skipped is not None:
            self.skipped += 1
        elif cycle.passed:
            self.passed += 1
        elif cycle.infrastructure_error is None:
            self.failed += 1

    def summary(self) -> str:
        """A few lines: how many cycles, how many passed, why it stopped, the last cycles."""
        head = f"background self-play run {self.number}: {len(self.cycles)} cycle(s)"
        head += f", {self.passed} passed, {self.failed} failed"
        if self.skipped:
            head += f", {self.skipped} skipped"
        head += f"; {self.state}" + (f" ({self.stop_reason})" if self.stop_reason else "")
        tail = [f"- {line}" for line in self.cycles[-5:]]
        return "\n".join([head, *tail])

    def as_json(self) -> dict[str, Any]:
        """The run as JSON (for `GET /admin/self-play`)."""
        return {
            "run": self.number,
            "state": self.state,
            "max_cycles": self.max_cycles,
            "cycles": len(self.cycles),
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "trajectory_ids": list(self.trajectory_ids),
            "started_at": self.started_at,
            "stopped_at": self.stopped_at,
            "stop_reason": self.stop_reason,
            "running_at": self.running_at,
            "gave_way_at": self.gave_way_at,
            "gave_way_in": self.gave_way_in,
            "turn_started_at": self.turn_started_at,
            "preempt_delay_s": self.preempt_delay_s,
            "recent": self.cycles[-5:],
        }


class PracticeRoot(Protocol):
    """How a practice session is wired: the module `nightschool.practice` satisfies it.

    The CLI passes it in, so the agent never imports the composition root that
    sits above it (`open_practice(store, model, sandbox, ...)` is a context
    manager yielding a `Practice`; `run_loop(practice, ...)` runs cycles).
    """

    open_practice: Callable[..., Any]
    run_loop: Callable[..., Any]


class SelfPlayTools:
    """Runs the self-play tools for a chat pipeline (`nightschool.agent.tools.PracticeTools`).

    Args:
        store: the database the cycles are recorded in.
        model: the agent's own model (the background loop wraps it in a
            `PreemptibleModel`).
        sandbox: where solutions run.
        foreground: the user-turn signal the chat pipeline's turns raise
            (`cli._idle.ForegroundService`).
        playbook: the pipeline's skill playbook (shared), or None.
        temperature, max_tokens: the solver's settings.
        verify_k: fresh renderings per arm when the background loop verifies a
            lesson or skill (`self_play` defers verification to idle time).
        cooldown_scale: factor on the loop's adaptive 5-180 s cool-off
            (`NIGHTSCHOOL_IDLE_SCALE`).
        home: the nightschool home whose learned router the solver may use
            (None: none).
        practice_root: what opens and runs a practice session
            (`nightschool.practice`).
        verify_share: the background loop's verification budget
            (`NIGHTSCHOOL_VERIFY_SHARE`; None: every candidate at once).
    """

    def __init__(
        self,
        store: Store,
        model: ChatModel,
        sandbox: Sandbox,
        *,
        foreground: Foreground,
        playbook: SkillMemory | None = None,
        temperature: float = 0.2,
        max_tokens: int = 512,
        verify_k: int = 6,
        cooldown_scale: float = 1.0,
        home: Path | None = None,
        practice_root: PracticeRoot,
        verify_share: float | None = None,
    ) -> None:
        self.verify_share = verify_share
        self.practice_root = practice_root
        self.store = store
        self.home = home
        self.model = model
        self.sandbox = sandbox
        self.foreground = foreground
        self.playbook = playbook
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.verify_k = verify_k
        self.cooldown_scale = cooldown_scale
        self._lock = threading.Lock()
        self._runs: list[LoopRun] = []
        self._practised: tuple[int, str] | None = None
        """(the `Foreground.turns` value, the report) of the latest `self_play`."""

    # -- the tools --------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run self-play tool `name` (see the module docstring).

        Raises:
            InfrastructureError: `self_play` hit a model or sandbox fault (its
                trajectory is stored as `unknown` first).
        """
        if name == "self_play":
            return self.self_play()
        if name == "self_play_loop":
            return self.self_play_loop(arguments.get("max_cycles"))
        if name == "stop_self_play":
            return self.stop_self_play()
        return ToolOutcome(
            None, f"unknown tool {name!r}; available: {', '.join(SELF_PLAY_TOOL_SPECS)}"
        )

    def self_play(self) -> ToolOutcome:
        """Run one cycle now and describe it; a second call in the same user turn runs none.

        Measured on Qwen2.5-Coder-1.5B (`bench/bench_self_play_tools.py`): asked
        for one challenge, it called `self_play` twice in the turn (208 s).

        Raises:
            InfrastructureError: a model or sandbox fault.
        """
        turn = self.foreground.turns
        if self.foreground.busy and self._practised is not None and self._practised[0] == turn:
            return ToolOutcome(
                f"{self._practised[1]}\n(Already practised in this turn: answer the user now.)"
            )
        with self._practice(self.model, verify_k=0) as practice:
            cycle = practice.loop.run_cycle()
        note = ""
        if not cycle.passed and not cycle.infrastructure_error and cycle.skipped is None:
            note = "\nThe failure will be reflected on while the user is away."
        elif cycle.skill is not None and cycle.skill.skill_id and not cycle.skill.verified:
            note = "\nThe skill is verified while the user is away."
        report = f"practised one challenge: {describe_cycle(cycle)}{note}"
        self._practised = (turn, report)
        return ToolOutcome(report)

    def self_play_loop(self, max_cycles: Any = None) -> ToolOutcome:
        """Start the background loop (if none runs) and say so; returns at once."""
        cap = _parse_cap(max_cycles)
        if isinstance(cap, str):
            return ToolOutcome(None, cap)
        with self._lock:
            current = self._runs[-1] if self._runs else None
            if current is not None and current.state != "stopped":
                return ToolOutcome(
                    f"background self-play is already on (run {current.number}, "
                    f"{len(current.cycles)} cycle(s) so far)"
                )
            run = LoopRun(len(self._runs) + 1, cap, turn_mark=self.foreground.turns)
            run.thread = threading.Thread(
                target=self._loop, args=(run,), name="nightschool-self-play-loop", daemon=True
            )
            self._runs.append(run)
            run.thread.start()
        until = f"{cap} cycle(s), " if cap is not None else ""
        return ToolOutcome(
            f"background self-play started (run {run.number}): it practises after this reply "
            f"for {until}until the user's next message or stop_self_play"
        )

    def stop_self_play(self) -> ToolOutcome:
        """Stop the background loop (waiting for it to wind down) and report it."""
        with self._lock:
            run = self._runs[-1] if self._runs else None
        if run is None:
            return ToolOutcome("no background self-play has run")
        if run.state == "stopped":
            return ToolOutcome(f"not running; the last one ended.\n{run.summary()}")
        self._stop(run, reason="stopped by stop_self_play")
        return ToolOutcome(run.summary())

    # -- status and shutdown ----------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The loops of this process as JSON, newest last.

        Returns:
            `{"active": bool, "verify_k": int, "runs": [...]}`; `verify_k` is the
            background loop's fresh renderings per arm (0: it verifies nothing).
        """
        with self._lock:
            runs = [run.as_json() for run in self._runs]
        active = bool(runs) and runs[-1]["state"] != "stopped"
        return {"active": active, "verify_k": self.verify_k, "runs": runs}

    def running(self) -> bool:
        """True while a background loop waits or runs (the idle watchdog defers to it)."""
        run = self.latest()
        return run is not None and run.state != "stopped"

    def latest(self) -> LoopRun | None:
        """The newest loop, or None."""
        with self._lock:
            return self._runs[-1] if self._runs else None

    def stop(self, reason: str = "stopped", timeout_s: float = 30.0) -> bool:
        """Stop the running loop, if any; True when none is left running.

        The cycle in progress is dropped (its decode aborts), nothing half-written.
        """
        run = self.latest()
        if run is None or run.state == "stopped":
            return True
        return self._stop(run, reason=reason, timeout_s=timeout_s)

    # -- internals --------------------------------------------------------------

    def _practice(self, model: ChatModel, *, verify_k: int) -> Any:
        return self.practice_root.open_practice(
            self.store,
            model,
            self.sandbox,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            verify_k=verify_k,
            playbook=self.playbook,
            session_id=SESSION_ID,
            home=self.home,
            # the one-off tool (verify_k 0) verifies nothing: no budget, no queue loaded
            verify_share=self.verify_share if verify_k else None,
        )

    def _stop(self, run: LoopRun, *, reason: str, timeout_s: float = 30.0) -> bool:
        if run.stop_reason is None:
            run.stop_reason = reason
        run.stop.set()
        if run.thread is not None and run.thread is not threading.current_thread():
            run.thread.join(timeout_s)
            return not run.thread.is_alive()
        return True

    def _superseded(self, run: LoopRun) -> bool:
        """A newer user turn started, the process is closing, or the loop was told to stop."""
        return run.stop.is_set() or self.foreground.closed or self.foreground.turns > run.turn_mark

    def _gave_way(self, run: LoopRun, where: str) -> None:
        """Note that `run` gives way now, if a user turn is why; only the first time counts."""
        if run.gave_way_at is not None or self.foreground.turns <= run.turn_mark:
            return
        run.gave_way_at = time.time()  # the clock of `Foreground` as the server builds it
        run.gave_way_in = where
        run.turn_started_at = self.foreground.started_at(run.turn_mark + 1)
        delay = run.preempt_delay_s
        logger.info(
            "background self-play run %d gave way to a user turn %s after it started (%s)",
            run.number,
            "?" if delay is None else f"{delay:.3f} s",
            where,
        )

    def _sleep(self, run: LoopRun, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self._superseded(run):
                break
            run.stop.wait(min(left, POLL_S))
        if self._superseded(run):
            self._gave_way(run, "cool-off")
            return True
        return False

    def _loop(self, run: LoopRun) -> None:
        reason = "finished"
        try:
            while self.foreground.busy and not self._superseded(run):
                run.stop.wait(POLL_S)  # the turn that started the loop is still answering
            if self._superseded(run):
                reason = "the user's next message arrived before it started"
                if self.foreground.closed:
                    reason = "shutting down before it started"
                return
            run.running_at = time.time()
            run.state = "running"
            # a newer turn that already ended (a refused request) stops it too
            model = PreemptibleModel(
                self.model,
                self.foreground,
                stop=lambda: self._superseded(run),
                on_preempted=lambda where: self._gave_way(run, where),
            )
            with self._practice(model, verify_k=self.verify_k) as practice:
                self.practice_root.run_loop(
                    practice,
                    should_stop=lambda: self._superseded(run),
                    sleep=lambda seconds: self._sleep(run, seconds),
                    on_cycle=lambda _index, cycle: run.record(cycle),
                    max_cycles=run.max_cycles,
                    cooldown_scale=self.cooldown_scale,
                )
            if run.max_cycles is not None and len(run.cycles) >= run.max_cycles:
                reason = f"ran its {run.max_cycles} cycle(s)"
            elif self.foreground.turns > run.turn_mark:
                reason = "the user's next message arrived"
                self._gave_way(run, "between steps")
        except Preempted as exc:  # `_stop` already named the reason when it was told to stop
            self._gave_way(run, "between steps")  # unless a model call already noted it
            dropped = "the cycle in progress was dropped"
            if isinstance(exc, CycleCutShort):  # stored, and counted by run_loop
                dropped = f"the last cycle's {exc.cycle.cut_short} was cut short"
            reason = f"stopped ({dropped})"
            if self.foreground.closed:
                reason = f"shutting down ({dropped})"
            elif self.foreground.turns > run.turn_mark:
                reason = f"the user's next message arrived ({dropped})"
        except InfrastructureError as exc:
            reason = f"infrastructure fault: {type(exc).__name__}: {exc}"
            logger.warning("background self-play stopped by a fault: %s", exc)
        except Exception as exc:  # a bug: keep the server up, say what happened
            reason = f"crashed: {type(exc).__name__}: {exc}"
            logger.exception("background self-play crashed")
        finally:
            if run.stop_reason is None:
                run.stop_reason = reason
            run.state = "stopped"
            run.stopped_at = time.time()
            logger.info("background self-play run %d: %s", run.number, run.summary())


def _parse_cap(value: Any) -> int | str | None:
    """`max_cycles` as an int in 1..MAX_LOOP_CYCLES, None when absent, or an error message."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        cap = int(str(value).strip())
    except ValueError:
        return f"max_cycles must be a whole number, got {value!r}"
    if not 1 <= cap <= MAX_LOOP_CYCLES:
        return f"max_cycles must be between 1 and {MAX_LOOP_CYCLES}, got {cap}"
    return cap
