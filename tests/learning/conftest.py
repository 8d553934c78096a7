"""Fixtures for the learning tests: every challenge a test renders, so a scripted
model can answer the challenge it is asked."""

from __future__ import annotations

import pytest

from nightschool.challenges import Challenge
from nightschool.challenges._templates._kit import TemplateBase


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> dict[str, Challenge]:
    """Every challenge rendered in the test, by prompt (what the scripted model sees)."""
    seen: dict[str, Challenge] = {}
    original = TemplateBase.render

    def spy(self: TemplateBase, tier: str, seed: int) -> Challenge:
        challenge = original(self, tier, seed)
        seen[challenge.prompt] = challenge
        return challenge

    monkeypatch.setattr(TemplateBase, "render", spy)
    return seen
