"""What the self-play tools count and say: a skipped cycle is not a failure, and a cycle
a user turn cuts short after it was stored is counted with its real verdict.

The reported cycles of a background run are exactly its stored `selfplay` trajectories
(`LoopRun.cycles`). Real parts: bubblewrap runs every solution, SQLite records every
cycle; the model is scripted (its code fails the validator).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from nightschool.agent.self_play import SESSION_ID, SelfPlayTools
from nightschool.learn.router import RouterParams, _Logit, router_path, save_router
from nightschool.learn.steps import REQUEST_FEATURES
from nightschool.llm import Message, ScriptedModel
from nightschool.llm.preempt import Foreground
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.store import Store
from nightschool.trajectory import Outcome

WRONG = "```python\nprint('no idea')\n```"
EXTRACTION = "You just practised a coding task"
"""How the lesson extractor's prompt starts (`nightschool.lessons.extraction`)."""


def save_stop_router(home: Path) -> None:
    """A router checkpoint whose p_first and p_any are ~0 for every request: always `stop`."""
    never = _Logit(tuple([0.0] * len(REQUEST_FEATURES)), -10.0)
    save_router(router_path(home), RouterParams(never, never, 0.8, 0.05, 3, version=1))


def self_play_cycles(store: Store) -> list[tuple[str, str]]:
    """(id, outcome) of the stored self-play cycle trajectories, oldest first."""
    rows = store.query(
        "SELECT id, outcome FROM trajectories WHERE session_id = ? AND task_kind = 'selfplay' "
        "ORDER BY timestamp",
        (SESSION_ID,),
    )
    return [(str(row[0]), str(row[1])) for row in rows]


@pytest.fixture
def playbook(store: Store) -> Iterator[SkillMemory]:
    memory = SkillMemory(store, HashingEmbedder())
    yield memory
    memory.close()


@pytest.fixture
def make_tools(
    make_self_play_tools: Callable[..., SelfPlayTools], playbook: SkillMemory
) -> Callable[..., SelfPlayTools]:
    return functools.partial(make_self_play_tools, playbook=playbook)


def test_a_skipped_cycle_is_reported_as_skipped_not_failed(
    store: Store,
    tmp_path: Path,
    make_tools: Callable[..., SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    home = tmp_path / "router-home"
    save_stop_router(home)
    model = ScriptedModel([])  # any model call would raise: a stop spends nothing
    tools = make_tools(model, home=home)

    once = tools.call("self_play", {}).result
    assert once is not None and "SKIPPED (the budget router said stop" in once, once
    assert "FAILED" not in once and "attempt(s)" not in once
    assert "reflected on" not in once  # there is no failure to reflect on

    tools.call("self_play_loop", {"max_cycles": 2})
    run = tools.latest()
    assert run is not None
    wait_until(lambda: run.state == "stopped", 60, "two skipped cycles")
    assert model.calls == []
    assert len(run.cycles) == 2 and run.stop_reason == "ran its 2 cycle(s)"
    assert (run.passed, run.failed, run.skipped) == (0, 0, 2)
    assert all("SKIPPED" in line and "FAILED" not in line for line in run.cycles)
    summary = run.summary()
    assert "2 cycle(s), 0 passed, 0 failed, 2 skipped" in summary, summary
    shown = tools.status()["runs"][-1]
    assert (shown["cycles"], shown["passed"], shown["failed"], shown["skipped"]) == (2, 0, 0, 2)
    stored = self_play_cycles(store)
    assert [outcome for _, outcome in stored] == [Outcome.UNKNOWN.value] * 3  # no verdict
    assert shown["trajectory_ids"] == [tid for tid, _ in stored[1:]]  # the loop's two
    assert store.counts()["frontier_runs"] == 0


def test_a_cycle_cut_short_after_it_was_stored_is_counted_with_its_verdict(
    store: Store,
    foreground: Foreground,
    playbook: SkillMemory,
    make_tools: Callable[..., SelfPlayTools],
    wait_until: Callable[..., Any],
) -> None:
    extracting, release = threading.Event(), threading.Event()

    def reply(messages: Sequence[Message]) -> str:
        if messages[0]["content"].startswith(EXTRACTION):
            extracting.set()  # the failed attempt is stored; its lesson is being drawn
            release.wait(10)  # a long decode; a scripted model cannot abort, it returns
        return WRONG

    tools = make_tools(ScriptedModel(reply), verify_k=2)  # verification on: lessons extracted
    tools.call("self_play_loop", {})
    assert extracting.wait(60)
    run = tools.latest()
    assert run is not None and run.cycles == []
    ((stored_id, outcome),) = self_play_cycles(store)  # written before the follow-up
    assert outcome == Outcome.FAILED.value
    with foreground.turn():  # the user's next message, while the extraction call runs
        release.set()
        wait_until(lambda: run.state == "stopped", 10, "the loop to stop")
    assert run.gave_way_in == "model call"
    assert run.stop_reason == (
        "the user's next message arrived (the last cycle's lesson extraction was cut short)"
    )
    # counted, with its real verdict: reported cycles == stored self-play rows
    assert len(run.cycles) == 1 and run.trajectory_ids == [stored_id]
    assert (run.passed, run.failed, run.skipped) == (0, 1, 0)
    assert "FAILED after" in run.cycles[0]
    assert "lesson extraction cut short by a user turn" in run.cycles[0]
    assert self_play_cycles(store) == [(stored_id, outcome)]  # nothing more after it gave way
    assert store.counts()["frontier_runs"] == 1  # the attempt was real evidence
    assert playbook.count(kind="lesson") == 0  # the cut-short extraction wrote nothing
