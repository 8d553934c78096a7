"""`serve`'s background self-play loop opens its dream loop with the verification budget.

`nightschool serve` passes `NIGHTSCHOOL_VERIFY_SHARE` (default 0.25) to
`SelfPlayTools`; real parts: the store, the sandbox's configuration, the playbook.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from nightschool.agent.self_play import SelfPlayTools
from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.store import Store


@pytest.fixture
def playbook(store: Store) -> Iterator[SkillMemory]:
    memory = SkillMemory(store, HashingEmbedder())
    yield memory
    memory.close()


def test_the_background_self_play_loop_opens_its_loop_with_the_share(
    playbook: SkillMemory, make_self_play_tools: Callable[..., SelfPlayTools]
) -> None:
    tools = make_self_play_tools(ScriptedModel([]), playbook=playbook, verify_share=0.4)
    with tools._practice(tools.model, verify_k=6) as practice:
        assert practice.loop.budget is not None and practice.loop.budget.share == 0.4
    with tools._practice(tools.model, verify_k=0) as practice:  # the one-off tool verifies nothing
        assert practice.loop.budget is None
