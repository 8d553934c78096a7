"""The idle watchdog's self-play and dream phases on a cycle the budget router stops.

A saved router that says `stop` skips the cycle (0 attempts, stored as `unknown`); the
phase says so and counts it apart, never as "failed after 0 attempt(s)". Real parts:
bubblewrap, SQLite, the playbook with a hashing embedder; the model is scripted and
never called.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.learn.router import RouterParams, _Logit, router_path, save_router
from nightschool.learn.steps import REQUEST_FEATURES
from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.watchdog.work import DREAM_PHASE_CYCLES, NightschoolWork


def save_stop_router(home: Path) -> None:
    """A router checkpoint whose p_first and p_any are ~0 for every request: always `stop`."""
    never = _Logit(tuple([0.0] * len(REQUEST_FEATURES)), -10.0)
    save_router(router_path(home), RouterParams(never, never, 0.8, 0.05, 3, version=1))


@pytest.fixture
def playbook(store: Store) -> Iterator[SkillMemory]:
    memory = SkillMemory(store, HashingEmbedder())
    yield memory
    memory.close()


def test_a_stopped_cycle_is_a_skipped_phase_not_a_failure(
    store: Store, playbook: SkillMemory, tmp_path: Path
) -> None:
    home = tmp_path / "router-home"
    save_stop_router(home)
    model = ScriptedModel([])  # any model call would raise: a stop spends nothing
    work = NightschoolWork(store, model, Sandbox(), playbook=playbook, verify_k=2, home=home)

    selfplay = work.run("selfplay")
    assert selfplay.status == "skipped", selfplay
    assert "skipped: the budget router said stop" in selfplay.detail, selfplay.detail
    assert "failed" not in selfplay.detail and "attempt(s)" not in selfplay.detail
    assert str(selfplay.record["skipped"]).startswith("the budget router said stop")
    assert selfplay.record["cooldown_s"] == 5.0  # no frontier run: the cool-off stays

    dream = work.run("dream")
    assert dream.status == "ok"
    n = DREAM_PHASE_CYCLES
    assert dream.detail == f"{n} cycle(s), 0 passed, {n} skipped; 0 reflection(s)", dream.detail
    assert dream.record["skipped"] == n and dream.record["passed"] == 0
    assert model.calls == []
    counts = store.counts()
    assert counts["unknown"] == n + 1 and counts["failed"] == 0
    assert counts["frontier_runs"] == 0
