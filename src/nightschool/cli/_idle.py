"""`nightschool watch` (the idle watchdog without a server) and the phase table of `status`."""

from __future__ import annotations

import signal
import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    UnsandboxedCodeOpt,
    err,
    errors_to_exit_codes,
    open_store,
    preflight,
    with_model_options,
)

if TYPE_CHECKING:
    from nightschool.config import Settings
    from nightschool.llm import ChatModel
    from nightschool.llm.preempt import Foreground
    from nightschool.playbook import SkillMemory
    from nightschool.sandbox import Sandbox
    from nightschool.store import Store
    from nightschool.watchdog import Watchdog


class ForegroundService:
    """A chat pipeline whose every turn counts as foreground (pre-empts idle work).

    Delegates everything to `pipeline`; `handle` runs inside `foreground.turn()`.
    """

    def __init__(self, pipeline: Any, foreground: Foreground) -> None:
        self._pipeline = pipeline
        self.foreground = foreground

    def handle(self, *args: Any, **kwargs: Any) -> Any:
        """Run one chat turn as foreground work."""
        with self.foreground.turn():
            return self._pipeline.handle(*args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._pipeline, attribute)


def build_watchdog(
    settings: Settings,
    store: Store,
    model: ChatModel,
    sandbox: Sandbox,
    *,
    foreground: Foreground,
    playbook: SkillMemory | None = None,
    on_event: Any = None,
    defer: Any = None,
) -> tuple[Watchdog, Any]:
    """The watchdog over real parts; returns (watchdog, work) — close the work after stopping.

    The phases' model is `PreemptibleModel(model, foreground)`, the same model
    object the foreground uses (one lock, one copy of the weights). No phase
    starts while `defer()` is True (`Watchdog`'s `defer`).
    """
    # function-local: CLI start-up time (the watchdog, ~80 modules, ~130 ms)
    from nightschool.llm.preempt import PreemptibleModel
    from nightschool.watchdog import Watchdog
    from nightschool.watchdog.work import NightschoolWork

    work = NightschoolWork(
        store,
        PreemptibleModel(model, foreground),
        sandbox,
        playbook=playbook,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        scale=settings.idle_scale,
        home=settings.home_dir(),
        verify_share=settings.verify_share,
    )
    dog = Watchdog(
        store,
        work,
        foreground=foreground,
        scale=settings.idle_scale,
        on_event=on_event,
        defer=defer,
    )
    return dog, work


@with_model_options
def watch(
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    unsandboxed: UnsandboxedCodeOpt = False,
    once: Annotated[
        bool, typer.Option("--once", help="Run the phase due now (if any) and exit.")
    ] = False,
) -> None:
    """Run the idle watchdog without a server: practise, reflect and write the diary while idle.

    Idle time counts from the latest chat turn in the database. Phases, windows
    and cooldowns: `nightschool status`. NIGHTSCHOOL_IDLE_SCALE=0.01 makes every
    window and cooldown 100 times shorter. Ctrl-C (or SIGTERM) stops it; the phase
    in progress is recorded as interrupted and nothing is half-written.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (llm loads httpx, ~60 modules, ~100 ms)
        from nightschool.llm.preempt import Foreground

        settings = model_choice.settings()
        sandbox, chat_model = preflight(settings, unsandboxed=unsandboxed, runs="generated code")
        store = open_store(settings)
        foreground = Foreground()

        def on_event(line: str) -> None:
            err.print(f"[dim]{datetime.now():%H:%M:%S}[/] {line}", highlight=False)

        dog, work = build_watchdog(
            settings, store, chat_model, sandbox, foreground=foreground, on_event=on_event
        )
        try:
            if once:
                ran = dog.tick()
                err.print("no phase is due" if ran is None else f"{ran.phase}: {ran.status}")
                return
            err.print(
                f"watching · model [bold]{chat_model.name}[/] · database "
                f"{settings.database_label()} · idle scale {settings.idle_scale:g} · Ctrl-C stops",
                highlight=False,
            )
            stopped = threading.Event()

            def on_term(_signum: int, _frame: Any) -> None:
                stopped.set()
                foreground.close()  # the phase in progress gives way at its next model call

            previous = signal.signal(signal.SIGTERM, on_term)
            try:
                dog.start()
                while not stopped.wait(0.5):
                    pass
            except KeyboardInterrupt:
                err.print("stopping: the phase in progress gives way ...")
                foreground.close()
            finally:
                dog.stop(timeout_s=60)
                signal.signal(signal.SIGTERM, previous)
            err.print("stopped")
        finally:
            work.close()
            store.close()


def phase_table(store: Store, settings: Settings) -> Table:
    """The watchdog's phases: window, cooldown, last run, next eligibility."""
    # function-local: CLI start-up time (the watchdog, ~80 modules, ~130 ms)
    from nightschool.watchdog import PHASES, PhaseLog, phase_cooldown_s

    scale = settings.idle_scale
    log = PhaseLog(store)
    table = Table(title=f"idle phases (scale {scale:g})")
    for column in ("phase", "idle window", "cooldown", "last run", "next eligible", "does"):
        table.add_column(column)
    now = time.time()
    for spec in PHASES:
        window = f"> {_span(spec.min_idle_s * scale)}"
        if spec.max_idle_s is not None:
            window = f"{_span(spec.min_idle_s * scale)}-{_span(spec.max_idle_s * scale)}"
        latest = log.latest(spec.name)
        closed = log.last_closed(spec.name)
        cooldown = phase_cooldown_s(log, spec, scale)
        last = "never"
        if closed is not None:
            last = f"{_ago(now - closed.timestamp)} {closed.status}"
            if latest is not None and latest.status == "started":
                last = f"started {_ago(now - latest.timestamp)}, no end recorded"
        elif latest is not None:
            last = f"started {_ago(now - latest.timestamp)}, no end recorded"
        if latest is None:
            nxt = "when idle long enough"
        else:
            wait = latest.timestamp + cooldown - now
            nxt = "now (when idle)" if wait <= 0 else f"in {_span(wait)}"
        table.add_row(
            spec.name,
            window,
            "adaptive 5s-3m" if spec.adaptive else _span(cooldown),
            last,
            nxt,
            spec.what,
        )
    return table


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s" if seconds >= 1 else f"{seconds:.2f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _ago(seconds: float) -> str:
    return f"{_span(max(0.0, seconds))} ago"


def show_phases(store: Store, settings: Settings) -> None:
    """Print the phase table (used by `nightschool status`)."""
    Console().print(phase_table(store, settings))
