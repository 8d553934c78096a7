"""The background self-play loop records when it gave way to a user turn (issue 29, part 6).

`LoopRun.gave_way_at` / `gave_way_in` / `turn_started_at` / `preempt_delay_s`, as
`GET /admin/self-play` shows them. Real parts: bubblewrap runs every solution, the
store records every cycle; the model is scripted (its code fails the validator).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nightschool.agent.self_play import SelfPlayTools
from nightschool.llm import Message, ScriptedModel
from nightschool.llm.preempt import Foreground

WRONG = "```python\nprint('no idea')\n```"


@pytest.fixture
def make_tools(make_self_play_tools: Callable[..., SelfPlayTools]) -> Callable[..., SelfPlayTools]:
    return make_self_play_tools


def test_a_model_call_in_progress_gives_way_and_the_delay_is_recorded(
    foreground: Foreground,
    make_tools: Callable[..., SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    entered, release = threading.Event(), threading.Event()

    def reply(_messages: Sequence[Message]) -> str:
        if not entered.is_set():
            entered.set()
            release.wait(10)  # a long decode; a scripted model cannot abort, it returns
        return WRONG

    tools = make_tools(ScriptedModel(reply))
    tools.call("self_play_loop", {})
    assert entered.wait(30)
    run = tools.latest()
    assert run is not None and run.running_at is not None and run.gave_way_at is None
    with foreground.turn():
        turn_started = foreground.started_at(foreground.turns)
        time.sleep(0.2)
        release.set()  # the call returns while the turn is in flight: it gives way
        wait_until(lambda: run.state == "stopped", 10, "the loop to stop")
    assert run.gave_way_in == "model call"
    assert run.turn_started_at == turn_started
    assert run.gave_way_at is not None and run.preempt_delay_s is not None
    assert 0.2 <= run.preempt_delay_s < 5.0
    assert run.stopped_at is not None and run.gave_way_at <= run.stopped_at
    shown = tools.status()["runs"][-1]
    assert shown["gave_way_in"] == "model call"
    assert shown["preempt_delay_s"] == pytest.approx(run.preempt_delay_s)
    assert shown["running_at"] == run.running_at


def test_the_cool_off_gives_way_within_its_poll(
    foreground: Foreground,
    make_tools: Callable[..., SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    calls: list[float] = []

    def reply(_messages: Sequence[Message]) -> str:
        calls.append(time.monotonic())
        return WRONG

    tools = make_tools(ScriptedModel(reply), cooldown_scale=100.0)  # minutes of cool-off
    tools.call("self_play_loop", {})
    run = tools.latest()
    assert run is not None
    wait_until(lambda: len(run.cycles) >= 1, 60, "a cycle")
    wait_until(lambda: time.monotonic() - calls[-1] > 1.0, 30, "the cool-off (no model call)")
    with foreground.turn():
        wait_until(lambda: run.state == "stopped", 10, "the loop to stop")
    assert run.gave_way_in == "cool-off"
    assert run.preempt_delay_s is not None and 0 <= run.preempt_delay_s < 1.0


def test_a_stop_that_is_not_a_user_turn_records_no_pre_emption(
    make_tools: Callable[..., SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    tools = make_tools(ScriptedModel(lambda _m: WRONG))
    tools.call("self_play_loop", {})
    run = tools.latest()
    assert run is not None
    wait_until(lambda: run.state == "running", 30, "the loop to run")
    assert tools.stop("stopped via the admin API")
    assert run.gave_way_at is None and run.gave_way_in is None
    assert run.preempt_delay_s is None
    assert tools.status()["runs"][-1]["preempt_delay_s"] is None
