"""Helpers for scripted models in the learning tests."""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.challenges import Challenge
from nightschool.llm import Message


def asked(seen: dict[str, Challenge], messages: Sequence[Message]) -> Challenge | None:
    """The rendered challenge whose prompt is in the call's first user message, if any."""
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    return next((c for p, c in seen.items() if p in prompt), None)
