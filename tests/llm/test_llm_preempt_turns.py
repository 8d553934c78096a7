"""`Foreground.started_at`: when the n-th user turn started (issue 29, part 6)."""

from __future__ import annotations

import itertools

from nightschool.llm.preempt import REMEMBERED_STARTS, Foreground


def test_started_at_answers_for_each_remembered_turn() -> None:
    ticks = itertools.count(100)
    foreground = Foreground(clock=lambda: float(next(ticks)))
    assert foreground.started_at(1) is None
    with foreground.turn():  # start 100, end 101
        pass
    with foreground.turn(), foreground.turn():  # starts 102 and 103
        assert foreground.started_at(2) == 102.0
        assert foreground.started_at(3) == 103.0
    assert foreground.started_at(1) == 100.0
    assert foreground.started_at(0) is None
    assert foreground.started_at(4) is None


def test_started_at_forgets_turns_older_than_its_window() -> None:
    ticks = itertools.count()
    foreground = Foreground(clock=lambda: float(next(ticks)))
    for _ in range(REMEMBERED_STARTS + 5):
        with foreground.turn():
            pass
    assert foreground.started_at(5) is None
    assert foreground.started_at(6) == 10.0  # turn n starts at tick 2 (n - 1)
    assert foreground.started_at(foreground.turns) == 2.0 * (foreground.turns - 1)
