"""The watchdog's loop: phases, their anchors and cooldowns, and pre-emption.

What the watchdog does and why is the package docstring (`nightschool.watchdog`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nightschool.llm.preempt import Foreground, Preempted
from nightschool.store import Store
from nightschool.watchdog._log import PhaseLog, PhaseRow

logger = logging.getLogger("nightschool.watchdog")

TICK_S = 60.0
"""Seconds between checks for a due phase (PRIOR-ART's 60 s tick), times `scale`."""
MIN_TICK_S = 0.05
"""Floor of the scaled tick, seconds."""


@dataclass(frozen=True)
class PhaseSpec:
    """One idle phase.

    Attributes:
        name: its name in `phase_runs`, `status` and the diary.
        min_idle_s: idle seconds before it may run.
        max_idle_s: idle seconds after which it no longer runs (None: no end).
        cooldown_s: seconds from its anchor before it may run again.
        what: one line for `nightschool status`.
        adaptive: the cooldown comes from the last run's `record["cooldown_s"]`
            (self-play's adaptive cool-off) when there is one.
    """

    name: str
    min_idle_s: float
    max_idle_s: float | None
    cooldown_s: float
    what: str
    adaptive: bool = False


PHASES: tuple[PhaseSpec, ...] = (
    PhaseSpec("journal", 120, None, 60, "reflect on failed chat turns left by the real-time path"),
    PhaseSpec("dream", 600, 3600, 30 * 60, "a few self-play cycles, then consolidation"),
    PhaseSpec("reflection", 900, 3600, 40 * 60, "reflect on the backlog of failed trajectories"),
    PhaseSpec("skills", 900, 3600, 2 * 3600, "verify skills whose verification never finished"),
    PhaseSpec("retrain", 900, 3600, 3 * 3600, "retrain the process reward model"),
    PhaseSpec("diary", 900, 3600, 3600, "consolidate the diary's narrative"),
    PhaseSpec(
        "prompts", 3600, None, 12 * 3600, "optimise the solver prompt with GEPA behind the gate"
    ),
    PhaseSpec("selfplay", 3600, None, 60, "one self-play cycle at a time", adaptive=True),
)
"""The phases in firing order, PRIOR-ART's windows and cooldowns (seconds, unscaled)."""


@dataclass(frozen=True)
class PhaseResult:
    """What a phase did.

    Attributes:
        status: `ok` (it did something) or `skipped` (nothing to do).
        detail: one readable line.
        record: JSON details; `cooldown_s` (unscaled seconds) sets an adaptive
            phase's next cool-off.
    """

    status: str
    detail: str
    record: Mapping[str, Any] = field(default_factory=dict)


def phase_cooldown_s(log: PhaseLog, spec: PhaseSpec, scale: float) -> float:
    """Seconds from a phase's anchor until it may run again, times `scale`.

    An adaptive phase (self-play) takes the `cooldown_s` its last run recorded
    (unscaled seconds), else its spec's.
    """
    cooldown = spec.cooldown_s
    if spec.adaptive and (last := log.last_closed(spec.name)) is not None:
        value = last.record.get("cooldown_s")
        if isinstance(value, int | float) and value >= 0:
            cooldown = float(value)
    return cooldown * scale


class IdleWork(Protocol):
    """The work behind the phases (`nightschool.watchdog.work.NightschoolWork`)."""

    def unavailable(self, phase: str) -> str | None:
        """Why `phase` cannot run in this installation (None: it can)."""
        ...

    def run(self, phase: str) -> PhaseResult:
        """Run `phase` once.

        Raises:
            Preempted: a user turn started.
            Exception: any fault; recorded as the phase's failure.
        """
        ...

    def after(self, phase: str, started_at: float, status: str) -> None:
        """Called after every run (the diary writes its entry here); must not raise."""
        ...


@dataclass(frozen=True)
class PhaseStatus:
    """A phase as `nightschool status` shows it.

    Attributes:
        spec: the phase.
        last: its latest closing row, or None.
        next_at: epoch seconds when its cooldown ends (None: never ran).
        unavailable: why it cannot run here, or None.
    """

    spec: PhaseSpec
    last: PhaseRow | None
    next_at: float | None
    unavailable: str | None


class Watchdog:
    """Runs idle phases while no user turn is in flight.

    Args:
        store: the database (phase anchors, the latest chat turn).
        work: what each phase does.
        foreground: user turns of this process.
        phases: the phases, in firing order.
        scale: multiplies windows, cooldowns and the tick (`Settings.idle_scale`).
        clock: epoch seconds (injectable for tests).
        on_event: receives one line per phase start and end.
        defer: while it returns True no phase starts (other background work
            holds the model: the chat agent's `self_play_loop`); None: never.
    """

    def __init__(
        self,
        store: Store,
        work: IdleWork,
        *,
        foreground: Foreground | None = None,
        phases: Sequence[PhaseSpec] = PHASES,
        scale: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_event: Callable[[str], None] | None = None,
        defer: Callable[[], bool] | None = None,
    ) -> None:
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.store = store
        self.work = work
        self.foreground = foreground or Foreground(clock)
        self.phases = tuple(phases)
        self.scale = scale
        self.clock = clock
        self.log = PhaseLog(store, clock)
        self.started_at = clock()
        self.on_event = on_event or (lambda line: logger.info("%s", line))
        self.defer = defer or (lambda: False)
        self.running: str | None = None
        """The phase running now, or None."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- when ------------------------------------------------------------------

    def last_activity(self) -> float:
        """Epoch seconds idle time counts from: the latest user turn, or the start."""
        moments = [self.started_at]
        if (seen := self.foreground.last_seen()) is not None:
            moments.append(seen)
        rows = self.store.query("SELECT MAX(timestamp) FROM trajectories WHERE task_kind = 'chat'")
        if rows and rows[0][0] is not None:
            moments.append(float(rows[0][0]))
        return max(moments)

    def idle_s(self) -> float:
        """Seconds without a user turn (0 while one is in flight)."""
        if self.foreground.busy:
            return 0.0
        return max(0.0, self.clock() - self.last_activity())

    def cooldown_s(self, spec: PhaseSpec) -> float:
        """The phase's scaled cooldown (an adaptive phase's from its last run)."""
        return phase_cooldown_s(self.log, spec, self.scale)

    def statuses(self) -> list[PhaseStatus]:
        """Every phase's last run and next eligibility."""
        out = []
        for spec in self.phases:
            anchor = self.log.latest(spec.name)
            next_at = None if anchor is None else anchor.timestamp + self.cooldown_s(spec)
            out.append(
                PhaseStatus(
                    spec, self.log.last_closed(spec.name), next_at, self.work.unavailable(spec.name)
                )
            )
        return out

    def due(self) -> PhaseSpec | None:
        """The first phase that may run now, or None (always None while `defer()` is True)."""
        if self.foreground.busy or self.defer():
            return None
        idle = self.idle_s()
        now = self.clock()
        for spec in self.phases:
            if idle < spec.min_idle_s * self.scale:
                continue
            if spec.max_idle_s is not None and idle > spec.max_idle_s * self.scale:
                continue
            anchor = self.log.latest(spec.name)
            if anchor is not None and now - anchor.timestamp < self.cooldown_s(spec):
                continue
            if self.work.unavailable(spec.name) is not None:
                continue
            return spec
        return None

    # -- running ---------------------------------------------------------------

    def run_phase(self, spec: PhaseSpec) -> PhaseRow:
        """Run one phase with the anchor discipline; returns its closing row.

        A user turn (`Preempted`) ends it as `interrupted`, an exception as
        `failed` (logged, not raised); KeyboardInterrupt is recorded as
        `interrupted` and re-raised.
        """
        run_id = self.log.start(spec.name)
        started = self.clock()
        self.running = spec.name
        self.on_event(f"idle {self.idle_s():.0f}s: {spec.name} starts ({spec.what})")
        status, detail, record = "failed", "", {}
        try:
            result = self.work.run(spec.name)
            status, detail, record = result.status, result.detail, dict(result.record)
        except Preempted as exc:
            status, detail = "interrupted", f"a user turn started ({exc})"
        except KeyboardInterrupt:
            status, detail = "interrupted", "stopped by Ctrl-C"
            raise
        except Exception as exc:
            logger.warning("idle phase %s failed", spec.name, exc_info=True)
            status, detail = "failed", f"{type(exc).__name__}: {exc}"
            record = {"error": type(exc).__name__}
        finally:
            self.running = None
            record["duration_s"] = round(self.clock() - started, 3)
            self.log.finish(spec.name, run_id, status, detail, record)
            self.on_event(f"{spec.name} {status}: {detail}")
            try:
                self.work.after(spec.name, started, status)
            except Exception:
                logger.warning("after-phase hook of %s failed", spec.name, exc_info=True)
        closed = self.log.last_closed(spec.name)
        assert closed is not None
        return closed

    def tick(self) -> PhaseRow | None:
        """Run the due phase, if any; returns its closing row."""
        spec = self.due()
        return None if spec is None else self.run_phase(spec)

    def loop(self) -> None:
        """Tick until `stop()`; sleeps `TICK_S * scale` between idle checks.

        A phase that ran is followed at once by the next check, so a chain of
        due phases runs back to back.
        """
        pause = max(MIN_TICK_S, TICK_S * self.scale)
        while not self._stop.is_set():
            try:
                ran = self.tick()
            except Exception:  # the database went away, ...: keep the server alive
                logger.exception("idle watchdog tick failed")
                ran = None
            if ran is None:
                self._stop.wait(pause)

    def start(self) -> None:
        """Run `loop` in a daemon thread."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self.loop, name="nightschool-idle", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float | None = 30.0) -> None:
        """Ask the loop to stop after the current phase and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
