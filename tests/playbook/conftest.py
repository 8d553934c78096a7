"""Fixtures for the playbook tests: a SkillMemory on a fresh store with the hashing embedder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nightschool.playbook import HashingEmbedder, LearnResult, SkillMemory
from nightschool.store import Store


@pytest.fixture
def memory(store: Store) -> SkillMemory:
    return SkillMemory(store, HashingEmbedder())


@pytest.fixture
def learn(memory: SkillMemory) -> Callable[..., LearnResult]:
    """`learn(trigger, correct, **overrides)` with sensible defaults; asserts it was written."""

    def _learn(trigger: str, correct: str = "do the right thing", **kw: Any) -> LearnResult:
        args: dict[str, Any] = {
            "trigger": trigger,
            "anti_pattern": kw.pop("anti_pattern", ""),
            "correct_pattern": correct,
            "domains": kw.pop("domains", ["python_general"]),
            "source": kw.pop("source", "reflection"),
        }
        args.update(kw)
        result = memory.learn(**args)
        assert result.status == "written", result
        return result

    return _learn
