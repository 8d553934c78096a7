"""A chat request's checks before its turn runs.

Message validation, the previous exchange, reply fingerprints for the correction
check (`ChatPipeline.handle`, step 1), and session directory names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from nightschool.errors import UserError
from nightschool.llm import Message

CORRECTION_CACHE_SIZE = 32
"""Reply fingerprints remembered for the correction check (seed 002: enough for
several concurrent conversations without unbounded growth)."""

FINGERPRINT_CHARS = 500
"""Characters of the (whitespace-collapsed, lower-cased) reply that are fingerprinted."""

_ROLES = ("system", "user", "assistant")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def reply_fingerprint(content: str) -> str:
    """md5 hex of `content`: whitespace collapsed, lower-cased, first `FINGERPRINT_CHARS` chars."""
    normal = " ".join(content.split()).lower()[:FINGERPRINT_CHARS]
    return hashlib.md5(normal.encode("utf-8"), usedforsecurity=False).hexdigest()


def session_dir_name(session_id: str) -> str:
    """A safe directory name for a session id (sanitised; hashed suffix when changed)."""
    safe = _UNSAFE.sub("_", session_id).strip("_")[:48]
    if safe == session_id and safe:
        return safe
    digest = hashlib.md5(session_id.encode("utf-8"), usedforsecurity=False).hexdigest()[:10]
    return f"{safe or 'session'}-{digest}"


def validate_messages(messages: Sequence[Message]) -> None:
    if not messages:
        raise UserError("messages is empty; the last message must be the user's request")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise UserError(f"message {index} needs a role of system, user or assistant")
        if not isinstance(message.get("content"), str):
            raise UserError(f"message {index} needs text content")
    if messages[-1]["role"] != "user":
        raise UserError("the last message must be the user's request (role user)")


def previous_exchange(messages: Sequence[Message]) -> tuple[str, str | None] | None:
    """(previous assistant content, the user message before it) or None."""
    for index in range(len(messages) - 2, -1, -1):
        if messages[index]["role"] == "assistant":
            for earlier in range(index - 1, -1, -1):
                if messages[earlier]["role"] == "user":
                    return messages[index]["content"], messages[earlier]["content"]
            return messages[index]["content"], None
    return None
