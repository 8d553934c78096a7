"""The key that says two renderings are the same task as the solver sees it."""

from __future__ import annotations

import hashlib

__all__ = ["prompt_sha"]


def prompt_sha(prompt: str) -> str:
    """First 16 hex digits of sha256 over the whitespace-normalised task text.

    Two renderings with the same text are the same task as the solver sees it,
    whatever their hidden tests: a skill made from one is never shown for the other.
    """
    return hashlib.sha256(" ".join(prompt.split()).encode("utf-8")).hexdigest()[:16]
