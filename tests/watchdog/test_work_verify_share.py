"""The verification budget reaches idle dreaming.

`NIGHTSCHOOL_VERIFY_SHARE` (default 0.25) is passed by `nightschool watch` /
`serve` to the watchdog's dream phase, which opens its dream loop with that
budget, so what waits is kept in the store for the next phase
(`nightschool.dream.queue`). Real parts: SQLite or Postgres,
the bubblewrap sandbox's configuration, the playbook with a hashing embedder.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.watchdog.work import NightschoolWork


@pytest.fixture
def playbook(store: Store) -> Iterator[SkillMemory]:
    memory = SkillMemory(store, HashingEmbedder())
    yield memory
    memory.close()


def test_the_dream_phase_opens_its_loop_with_the_share(store: Store, playbook: SkillMemory) -> None:
    model = ScriptedModel([])
    work = NightschoolWork(store, model, Sandbox(), playbook=playbook, verify_share=0.25)
    with work._practice() as practice:
        assert practice.loop.budget is not None and practice.loop.budget.share == 0.25
    unbudgeted = NightschoolWork(store, model, Sandbox(), playbook=playbook)
    with unbudgeted._practice() as practice:
        assert practice.loop.budget is None  # None: every candidate verified at once
