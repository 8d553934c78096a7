"""The idle watchdog: windows, order, persisted anchors, crashes and pre-emption (unit level)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from nightschool.llm import ScriptedModel
from nightschool.llm.preempt import Foreground, Preempted, PreemptibleModel
from nightschool.store import Store
from nightschool.watchdog import PHASES, PhaseResult, Watchdog


class Clock:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class Work:
    """Records the phases it ran; `fail` / `preempt` name phases that raise."""

    def __init__(self, clock: Clock, *, cost_s: float = 1.0) -> None:
        self.clock = clock
        self.cost_s = cost_s
        self.ran: list[str] = []
        self.after_calls: list[tuple[str, str]] = []
        self.fail: set[str] = set()
        self.preempt: set[str] = set()

    def unavailable(self, phase: str) -> str | None:
        return "not built" if phase == "retrain" else None

    def run(self, phase: str) -> PhaseResult:
        self.ran.append(phase)
        self.clock.now += self.cost_s
        if phase in self.fail:
            raise RuntimeError(f"{phase} exploded")
        if phase in self.preempt:
            raise Preempted("user is back")
        return PhaseResult("ok", f"{phase} done", {"cooldown_s": 7.0})

    def after(self, phase: str, started_at: float, status: str) -> None:
        self.after_calls.append((phase, status))


def _walk(dog: Watchdog, clock: Clock, until_idle_s: float, step_s: float = 10.0) -> None:
    """Advance the clock in steps, ticking after each, until idle reaches `until_idle_s`."""
    while clock.now - dog.last_activity() < until_idle_s:
        dog.tick()
        clock.now += step_s


def test_phases_fire_in_order_within_their_windows(store: Store) -> None:
    clock = Clock()
    work = Work(clock)
    dog = Watchdog(store, work, clock=clock)
    assert dog.tick() is None  # just started: not idle yet
    _walk(dog, clock, 4000)
    first_seen = list(dict.fromkeys(work.ran))
    assert first_seen == [
        "journal",
        "dream",
        "reflection",
        "skills",
        "diary",
        "prompts",
        "selfplay",
    ]
    assert "retrain" not in work.ran  # unavailable here
    # dream fires only inside its 600-3600 s window, once per 30 min cooldown
    assert work.ran.count("dream") == 2
    # every phase wrote a started and a closing row
    rows = store.query("SELECT phase, status FROM phase_runs ORDER BY id")
    assert rows[0] == ("journal", "started") and rows[1] == ("journal", "ok")
    assert all(status in ("started", "ok") for _, status in rows)


def test_no_phase_while_a_user_turn_is_in_flight(store: Store) -> None:
    clock = Clock()
    foreground = Foreground(clock)
    dog = Watchdog(store, Work(clock), foreground=foreground, clock=clock)
    clock.now += 5000
    with foreground.turn():
        assert dog.idle_s() == 0.0
        assert dog.due() is None
    # the turn just ended: idle counts from its end, so nothing is due yet
    assert dog.due() is None
    clock.now += 121
    due = dog.due()
    assert due is not None and due.name == "journal"


def test_no_phase_while_other_background_work_holds_the_model(store: Store) -> None:
    clock = Clock()
    practising = [True]  # the chat agent's self_play_loop is on
    dog = Watchdog(store, Work(clock), clock=clock, defer=lambda: practising[0])
    clock.now += 5000
    assert dog.due() is None and dog.tick() is None
    practising[0] = False
    due = dog.due()
    assert due is not None and due.name == "journal"


def test_idle_counts_from_the_latest_chat_turn_in_the_store(store: Store) -> None:
    from datetime import UTC, datetime

    from nightschool.trajectory import Trajectory

    clock = Clock(datetime(2030, 1, 1, tzinfo=UTC).timestamp())
    dog = Watchdog(store, Work(clock), clock=clock)
    clock.now += 700
    assert dog.idle_s() == pytest.approx(700)
    turn = Trajectory(task_kind="chat", timestamp=datetime.fromtimestamp(clock.now - 30, UTC))
    store.append_trajectory(turn)
    assert dog.idle_s() == pytest.approx(30)


def test_anchors_survive_a_restart(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "a.db"
    with Store.open(path) as store:
        dog = Watchdog(store, Work(clock), clock=clock)
        clock.now += 130
        ran = dog.tick()
        assert ran is not None and ran.phase == "journal"
    clock.now += 10  # restart 10 s later; the journal's 60 s cooldown still runs
    with Store.open(path) as store:
        work = Work(clock)
        dog = Watchdog(store, work, clock=clock)
        dog.started_at = clock.now - 200  # the user has been away since before the restart
        assert dog.tick() is None
        clock.now += 60
        ran = dog.tick()
        assert ran is not None and ran.phase == "journal" and work.ran == ["journal"]


def test_a_crashing_phase_is_recorded_and_waits_out_its_cooldown(store: Store) -> None:
    clock = Clock()
    work = Work(clock)
    work.fail.add("journal")
    dog = Watchdog(store, work, clock=clock)
    clock.now += 130
    closed = dog.tick()
    assert closed is not None and closed.status == "failed"
    assert "exploded" in closed.detail
    for _ in range(5):  # ticks inside the cooldown do not re-fire it
        clock.now += 5
        assert dog.tick() is None
    assert work.ran == ["journal"]
    assert work.after_calls == [("journal", "failed")]


def test_a_preempted_phase_is_recorded_as_interrupted(store: Store) -> None:
    clock = Clock()
    work = Work(clock)
    work.preempt.add("journal")
    dog = Watchdog(store, work, clock=clock)
    clock.now += 130
    closed = dog.tick()
    assert closed is not None and closed.status == "interrupted"
    assert store.query("SELECT status FROM phase_runs") == [("started",), ("interrupted",)]


def test_adaptive_cooldown_of_selfplay_comes_from_its_last_run(store: Store) -> None:
    clock = Clock()
    work = Work(clock, cost_s=0.0)
    phases = [p for p in PHASES if p.name == "selfplay"]
    dog = Watchdog(store, work, phases=phases, clock=clock)
    clock.now += 3700
    assert dog.tick() is not None
    clock.now += 6  # the run reported cooldown_s 7.0
    assert dog.tick() is None
    clock.now += 1
    assert dog.tick() is not None


def test_scale_shrinks_windows_and_cooldowns(store: Store) -> None:
    clock = Clock()
    dog = Watchdog(store, Work(clock), clock=clock, scale=0.01)
    clock.now += 1.1
    assert dog.due() is None
    clock.now += 0.2  # 1.3 s > 120 s x 0.01
    due = dog.due()
    assert due is not None and due.name == "journal"
    with pytest.raises(ValueError):
        Watchdog(store, Work(clock), scale=0)


def test_preemptible_model_gives_way_before_during_and_after_a_call() -> None:
    foreground = Foreground()
    model = PreemptibleModel(ScriptedModel(["fine", "dropped"]), foreground)
    assert model.complete([{"role": "user", "content": "hi"}]).text == "fine"
    with foreground.turn(), pytest.raises(Preempted):
        model.complete([{"role": "user", "content": "hi"}])
    # a turn that starts while the call runs: the reply is dropped

    entered = threading.Event()
    release = threading.Event()

    def slow(_messages: Any) -> str:
        entered.set()
        release.wait(5)
        return "late"

    slow_model = PreemptibleModel(ScriptedModel(slow), foreground)
    errors: list[BaseException] = []

    def background() -> None:
        try:
            slow_model.complete([{"role": "user", "content": "hi"}])
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=background)
    thread.start()
    assert entered.wait(5)
    with foreground.turn():
        release.set()
        thread.join(5)
    assert len(errors) == 1 and isinstance(errors[0], Preempted)
    assert foreground.preemptions == 2


def test_a_stop_callable_makes_idle_work_give_way_without_a_user_turn() -> None:
    foreground = Foreground()
    stop = threading.Event()
    model = PreemptibleModel(ScriptedModel(["x", "y"]), foreground, stop=stop.is_set)
    assert model.complete([{"role": "user", "content": "hi"}]).text == "x"
    stop.set()
    with pytest.raises(Preempted, match="told to stop"):
        model.complete([{"role": "user", "content": "hi"}])
    assert foreground.preemptions == 0  # not counted as a user turn's pre-emption


def test_foreground_close_makes_idle_work_give_way() -> None:
    foreground = Foreground()
    model = PreemptibleModel(ScriptedModel(["x"]), foreground)
    foreground.close()
    assert foreground.busy
    with pytest.raises(Preempted):
        model.complete([{"role": "user", "content": "hi"}])


def test_foreground_service_marks_each_turn() -> None:
    from nightschool.cli._idle import ForegroundService

    foreground = Foreground()
    seen: list[bool] = []

    class Pipeline:
        def handle(self, *_a: Any, **_k: Any) -> str:
            seen.append(foreground.busy)
            return "reply"

        def pending_background(self) -> int:
            return 0

    service = ForegroundService(Pipeline(), foreground)
    assert service.handle() == "reply"
    assert seen == [True] and not foreground.busy
    assert service.pending_background() == 0
    assert foreground.last_seen() is not None
